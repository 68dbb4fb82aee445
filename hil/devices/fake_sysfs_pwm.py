"""A stand-in for the kernel's `/sys/class/pwm`: a real directory tree in a temporary folder, with the kernel's rules.

`FakePwmSysfs(root, chips={0: 2})` creates `root/pwmchipN/` with `npwm`, `export`, `unexport` and a `device`
link named after the PWM block (`1f00098000.pwm` with `device="pi5"`, `7e20c000.pwm` otherwise). Its `files`
(a drivers/esc_kernel_pwm.SysfsFiles) applies what the kernel's drivers/pwm/sysfs.c and pwm_apply_state() do
on each write, then writes the plain file:

  export N:       N >= npwm -> ENODEV; already exported, or claimed by a kernel driver (`busy=`) -> EBUSY;
                  else creates pwmN/ with period 0, duty_cycle 0, enable 0, polarity normal
  unexport N:     not exported -> ENODEV; else removes pwmN/
  period P:       not a number -> EINVAL; P < duty_cycle -> EINVAL
  duty_cycle D:   not a number -> EINVAL; D > period -> EINVAL
  enable E:       not 0/1 -> EINVAL; 1 with period 0 -> EINVAL

`udev_delay_s` makes a freshly exported channel's files refuse writes (PermissionError) for that long, as on a
Pi until udev has handed them to the `gpio` group. Another process (the deadman guardian) can open the same
tree with a plain SysfsFiles: the state is the files. `pulse_us(chip, ch)` is what an oscilloscope on the line
would read: the duty cycle in microseconds while enabled, else 0. `failing = True` makes every access fail
with EIO, as a PWM block that stopped answering.
"""
from __future__ import annotations

import errno
import os
import shutil
import threading
import time
from pathlib import Path
from typing import Dict, Iterable, Optional

from drivers.esc.kernel_pwm import SysfsFiles

DEVICE_NAMES = {"pi5": "1f00098000.pwm", "pi4": "7e20c000.pwm"}


class FakePwmSysfs:
    def __init__(self, root, chips: Optional[Dict[int, int]] = None, device: str = "pi4",
                 busy: Iterable[tuple] = (), udev_delay_s: float = 0.0):
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.busy = {tuple(b) for b in busy}
        self.udev_delay_s = float(udev_delay_s)
        self.failing = False            # True: every access fails with EIO (the PWM block stopped answering)
        self._exported_at: Dict[tuple, float] = {}
        self._lock = threading.Lock()
        for chip, npwm in (chips if chips is not None else {0: 2}).items():
            d = self.root / f"pwmchip{chip}"
            d.mkdir(exist_ok=True)
            (d / "npwm").write_text(f"{npwm}\n")
            (d / "export").write_text("")
            (d / "unexport").write_text("")
            target = self.root / "devices" / f"{DEVICE_NAMES.get(device, device)}{chip}"
            target.mkdir(parents=True, exist_ok=True)
            if not (d / "device").exists():
                os.symlink(target, d / "device")
        self.files = _KernelRules(self)

    def pulse_us(self, chip: int, ch: int) -> float:
        d = self.root / f"pwmchip{chip}" / f"pwm{ch}"
        if not d.exists() or (d / "enable").read_text().strip() != "1":
            return 0.0
        return int((d / "duty_cycle").read_text()) / 1000.0

    def period_ns(self, chip: int, ch: int) -> int:
        return int((self.root / f"pwmchip{chip}" / f"pwm{ch}" / "period").read_text())

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def _oserror(code: int, path) -> OSError:
    return OSError(code, os.strerror(code), str(path))


class _KernelRules(SysfsFiles):
    """SysfsFiles with the kernel's checks and side effects (see the module docstring)."""

    def __init__(self, fake: FakePwmSysfs):
        super().__init__(fake.root)
        self.fake = fake

    def write(self, rel: str, text: str) -> None:
        parts = Path(rel).parts
        if self.fake.failing:
            raise _oserror(errno.EIO, self.root / rel)
        with self.fake._lock:
            if len(parts) == 2 and parts[1] in ("export", "unexport"):
                return self._export(parts[0], parts[1], text)
            if len(parts) == 3 and parts[1].startswith("pwm"):
                self._check_attr(parts, text)
            super().write(rel, text)

    def read(self, rel: str) -> str:
        if self.fake.failing:
            raise _oserror(errno.EIO, self.root / rel)
        return super().read(rel)

    def _export(self, chip_dir: str, verb: str, text: str) -> None:
        chip = int(chip_dir[7:])
        d = self.root / chip_dir
        try:
            ch = int(text.strip())
        except ValueError:
            raise _oserror(errno.EINVAL, d / verb) from None
        npwm = int((d / "npwm").read_text())
        if ch < 0 or ch >= npwm:
            raise _oserror(errno.ENODEV, d / verb)
        pwm = d / f"pwm{ch}"
        if verb == "unexport":
            if not pwm.exists():
                raise _oserror(errno.ENODEV, d / verb)
            shutil.rmtree(pwm)
            return
        if pwm.exists() or (chip, ch) in self.fake.busy:
            raise _oserror(errno.EBUSY, d / verb)
        pwm.mkdir()
        for name, value in (("period", "0"), ("duty_cycle", "0"), ("enable", "0"), ("polarity", "normal")):
            (pwm / name).write_text(value + "\n")
        self.fake._exported_at[(chip, ch)] = time.monotonic()

    def _check_attr(self, parts, text: str) -> None:
        chip, ch = int(parts[0][7:]), int(parts[1][3:])
        pwm = self.root / parts[0] / parts[1]
        path = pwm / parts[2]
        if not pwm.exists():
            raise _oserror(errno.ENOENT, path)
        if time.monotonic() - self.fake._exported_at.get((chip, ch), -1e9) < self.fake.udev_delay_s:
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))
        period = int((pwm / "period").read_text())
        duty = int((pwm / "duty_cycle").read_text())
        try:
            value = int(text.strip()) if parts[2] != "polarity" else None
        except ValueError:
            raise _oserror(errno.EINVAL, path) from None
        if parts[2] == "period" and value is not None and value < duty:           # value: None for polarity only
            raise _oserror(errno.EINVAL, path)
        if parts[2] == "duty_cycle" and value is not None and value > period:
            raise _oserror(errno.EINVAL, path)
        if parts[2] == "enable" and (value not in (0, 1) or (value == 1 and period == 0)):
            raise _oserror(errno.EINVAL, path)
