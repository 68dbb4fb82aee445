"""Which Raspberry Pi this is, from the device tree: the ESC backends that depend on the board ask here."""
from __future__ import annotations

from pathlib import Path
from typing import Optional, Sequence

PI5_MODEL_FILES = ("/proc/device-tree/model", "/sys/firmware/devicetree/base/model")


def raspberry_pi_model(paths: Sequence[str] = PI5_MODEL_FILES, cpuinfo: str = "/proc/cpuinfo") -> Optional[str]:
    """The board's model string from the device tree (or the `Model` line of /proc/cpuinfo), None if unknown."""
    for path in paths:
        try:
            return Path(path).read_bytes().rstrip(b"\x00\n").decode("ascii", "replace")
        except OSError:
            continue
    try:
        for line in Path(cpuinfo).read_text(errors="replace").splitlines():
            if line.startswith("Model") and ":" in line:
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def is_raspberry_pi_5(model: Optional[str]) -> bool:
    return model is not None and "Raspberry Pi 5" in model
