"""ESC pulses from the Linux PWM subsystem (`/sys/class/pwm`): a port for drivers/esc.EscOutput (see esc_backends).

The kernel exposes each PWM controller as `pwmchipN/` with `npwm`, `export` and `unexport`; writing a channel
number to `export` creates `pwmN/` with `period`, `duty_cycle` (both in ns), `enable` (0/1) and `polarity`. The
kernel refuses a duty cycle longer than the period (EINVAL), a second export of a channel (EBUSY) and a channel
beyond `npwm`. A pulse of P us at 50 Hz is period 20 000 000 ns and duty_cycle P x 1000 ns.

The sysfs root is a parameter (an emulated tree in tests), the kernel's error is named in the EscError, and a
pulse can be read back (the guardian verifies its neutral). What is done here is a handful of writes:

  open:  export the channel (unless already exported: a previous run, or the guardian), wait for udev to hand
         its files to the `gpio` group, set the period (duty first to 0 if the old duty would exceed it);
  pulse: duty_cycle = pulse x 1000, then enable = 1 (once); pulse 0 = enable 0 (no signal, as pigpio's 0);
  stop:  nothing: the PWM keeps its last pulse when this process dies, which is why the deadman guardian opens
         a port of its own and sets neutral (and ExecStopPost runs `python -m autopilot.runtime.esc_neutral`).

Which channel a GPIO is: the board's PWM pins (`PWM_CHANNELS`) unless `esc.pwm_channels` says otherwise; which
chip: `esc.pwm_chip`, or found from the board (the only chip, or the one of the SoC's PWM0 block).
Why: docs/design-notes/estimation-and-drivers.md, "ESC output".
"""
from __future__ import annotations

import errno
import os
import time
from pathlib import Path
from typing import Dict, Optional, Sequence

from drivers.esc.contract import EscError
from drivers.esc.pi_board import raspberry_pi_model

PERIOD_NS = 20_000_000              # 50 Hz servo frame
EXPORT_WAIT_S = 1.0                 # udev's chgrp of a freshly exported channel takes ~0.1 s on a Pi
OVERLAY_LINE = "dtoverlay=pwm-2chan,pin=12,func=4,pin2=13,func2=4"
# BCM GPIO -> channel of the SoC's first PWM block, with the pwm-2chan overlay on those pins
PWM_CHANNELS = {"pi5": {12: 0, 13: 1, 18: 2, 19: 3}, "pi4": {12: 0, 18: 0, 13: 1, 19: 1}}
# the PWM block's address in a chip's `device` link: BCM2711/2837 PWM0 at 7e20c000, Pi 5 RP1 PWM0 at 1f00098000
PWM_DEVICES = ("7e20c000", "1f00098000")


class SysfsFiles:
    """Reads and writes sysfs attributes under `root` (one write(2) per value, as the kernel expects)."""

    def __init__(self, root):
        self.root = Path(root)

    def write(self, rel: str, text: str) -> None:
        fd = os.open(self.root / rel, os.O_WRONLY)
        try:
            os.write(fd, text.encode())
        finally:
            os.close(fd)

    def read(self, rel: str) -> str:
        return (self.root / rel).read_text().strip()

    def exists(self, rel: str) -> bool:
        return (self.root / rel).exists()

    def chips(self) -> list:
        return sorted(int(p.name[7:]) for p in self.root.glob("pwmchip*") if p.name[7:].isdigit())

    def device_of(self, chip: int) -> str:
        try:
            return os.path.realpath(self.root / f"pwmchip{chip}" / "device")
        except OSError:
            return ""


BOOT_CONFIGS = ("/boot/firmware/config.txt", "/boot/config.txt")


def overlay_pins(config_txt: str) -> Optional[set]:
    """The GPIOs the PWM overlays in a Raspberry Pi boot config put PWM on (pwm: pin, default 18; pwm-2chan:
    pin and pin2, default 18 and 19); None when the file loads no PWM overlay."""
    pins = None
    for raw in config_txt.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line.startswith("dtoverlay="):
            continue
        name, *params = line[len("dtoverlay="):].split(",")
        if name.strip() not in ("pwm", "pwm-2chan"):
            continue
        kv = dict(p.split("=", 1) for p in params if "=" in p)
        found = {int(kv.get("pin", 18))}
        if name.strip() == "pwm-2chan":
            found.add(int(kv.get("pin2", 19)))
        pins = (pins or set()) | found
    return pins


def _check_overlay(outputs: Sequence[int], boot_config: str) -> None:
    """EscError when the boot config's PWM overlay puts PWM on other pins than the ESCs' ("none": no check)."""
    if boot_config == "none":
        return
    for path in ([boot_config] if boot_config else BOOT_CONFIGS):
        try:
            text = Path(path).read_text(errors="replace")
        except (OSError, ValueError):
            continue
        try:
            pins = overlay_pins(text)
        except ValueError:
            return                                          # a line we cannot read: the kernel will say
        wrong = sorted(set(outputs) - pins) if pins is not None else []
        if wrong:
            assert pins is not None                         # wrong is empty when no overlay loads PWM
            raise EscError(f"{path} puts PWM on GPIO {', '.join(map(str, sorted(pins)))}, but the ESCs are on GPIO "
                           f"{', '.join(map(str, sorted(outputs)))}: the pulses would go to the wrong pins. Move the "
                           f"ESC signal wires, or set thrusters[].gpio to match, or change the line to "
                           f"`{OVERLAY_LINE}` (GPIO12 and 13) and reboot")
        return


def board_of(model: Optional[str]) -> str:
    """"pi5" for a Raspberry Pi 5, else "pi4" (the BCM2711/2837 PWM pins, also right for a Pi 3)."""
    return "pi5" if model and "Raspberry Pi 5" in model else "pi4"


class KernelPwmPort:
    """The port: `output` is the BCM GPIO; see the module docstring."""

    def __init__(self, files: SysfsFiles, chip: int, channel_of: Dict[int, int]):
        self.files = files
        self.chip = chip
        self.channel_of = dict(channel_of)
        self.connected = True
        self._enabled: Dict[int, bool] = {}

    # ------------------------------------------------------------------------------ opening
    @classmethod
    def open(cls, backend, outputs: Sequence[int], model: Optional[str] = None) -> "KernelPwmPort":
        """Export and configure the channel of each GPIO in `outputs`. EscError saying what to do if impossible."""
        files = backend.sysfs_files if getattr(backend, "sysfs_files", None) is not None else SysfsFiles(
            backend.sysfs_root)
        model = raspberry_pi_model() if model is None else model
        board = board_of(model)
        chip = _find_chip(files, backend.pwm_chip, board)
        npwm = int(files.read(f"pwmchip{chip}/npwm"))
        if backend.pwm_channels:
            if len(backend.pwm_channels) != len(outputs):
                raise EscError(f"esc.pwm_channels lists {len(backend.pwm_channels)} channels for "
                               f"{len(outputs)} thrusters: give one per thruster, in the vessel's order")
            channel_of = dict(zip(outputs, backend.pwm_channels))
        else:
            table = PWM_CHANNELS[board]
            if len(outputs) > len(set(table.values())):
                raise EscError(f"{len(outputs)} ESCs, but the {'Pi 5' if board == 'pi5' else 'Pi 4'}'s PWM has "
                               f"{len(set(table.values()))} channels: drive them from a PCA9685 board "
                               f"(`esc: {{backend: pca9685}}`) or pigpio")
            wrong = [g for g in outputs if g not in table]
            if wrong:
                pins = "/".join(str(g) for g in sorted(table))
                raise EscError(f"GPIO {', '.join(map(str, wrong))} has no hardware PWM on this board "
                               f"({model or 'unknown board'}): wire the ESC signals to GPIO {pins} and set "
                               f"thrusters[].gpio to match (`{OVERLAY_LINE}` in /boot/firmware/config.txt "
                               f"puts PWM on GPIO12 and 13), or give esc.pwm_channels")
            channel_of = {g: table[g] for g in outputs}
        if len(set(channel_of.values())) != len(channel_of):
            raise EscError(f"two ESCs share a PWM channel ({channel_of}, GPIO -> channel): GPIO12 and 18 are both "
                           f"channel 0 of a Pi 4's PWM, 13 and 19 channel 1; use one of each pair")
        beyond = {g: ch for g, ch in channel_of.items() if ch >= npwm}
        if beyond:
            raise EscError(f"pwmchip{chip} has {npwm} channels, GPIO -> channel {beyond} is beyond them: the "
                           f"overlay enables fewer channels than the ESCs need (`{OVERLAY_LINE}` gives GPIO12 "
                           f"and 13), or esc.pwm_chip names the wrong chip")
        if not backend.pwm_channels:
            _check_overlay(outputs, getattr(backend, "boot_config", ""))
        port = cls(files, chip, channel_of)
        for gpio in outputs:
            port._prepare(gpio)
        return port

    def _prepare(self, gpio: int) -> None:
        ch = self.channel_of[gpio]
        base = f"pwmchip{self.chip}"
        if not self.files.exists(f"{base}/pwm{ch}"):
            try:
                self.files.write(f"{base}/export", str(ch))
            except OSError as e:
                if e.errno != errno.EBUSY:
                    raise _explain(e, f"{base}/export", self.files) from None
                if not self.files.exists(f"{base}/pwm{ch}"):
                    raise EscError(f"PWM channel {ch} of {base} is in use by a kernel driver (export: device or "
                                   f"resource busy) and cannot drive an ESC: pick another channel") from None
        deadline = time.monotonic() + EXPORT_WAIT_S
        while True:
            try:
                if int(self.files.read(f"{base}/pwm{ch}/period")) != PERIOD_NS:
                    if int(self.files.read(f"{base}/pwm{ch}/duty_cycle")) > PERIOD_NS:
                        self.files.write(f"{base}/pwm{ch}/duty_cycle", "0")
                    self.files.write(f"{base}/pwm{ch}/period", str(PERIOD_NS))
                self._enabled[gpio] = self.files.read(f"{base}/pwm{ch}/enable") == "1"
                return
            except (PermissionError, FileNotFoundError) as e:   # udev has not handed the files over yet
                if time.monotonic() > deadline:
                    raise _explain(e, f"{base}/pwm{ch}", self.files) from None
                time.sleep(0.02)
            except OSError as e:
                raise _explain(e, f"{base}/pwm{ch}", self.files) from None

    # ------------------------------------------------------------------------------ the port contract
    def set_servo_pulsewidth(self, gpio: int, pulse_us: int) -> None:
        """`pulse_us` (500-2500) on GPIO `gpio`; 0 stops the signal. OSError on a sysfs fault."""
        ch = self._channel(gpio)
        base = f"pwmchip{self.chip}/pwm{ch}"
        try:
            if pulse_us == 0:
                self.files.write(f"{base}/enable", "0")
                self._enabled[gpio] = False
                return
            if not 500 <= pulse_us <= 2500:
                raise ValueError(f"pulse {pulse_us} us outside 500-2500 us")
            self.files.write(f"{base}/duty_cycle", str(int(pulse_us) * 1000))
            if not self._enabled.get(gpio):
                self.files.write(f"{base}/enable", "1")
                self._enabled[gpio] = True
        except OSError:
            self.connected = False
            raise

    def get_servo_pulsewidth(self, gpio: int) -> int:
        """The pulse being output on `gpio` [us], 0 when its signal is off. OSError on a sysfs fault."""
        base = f"pwmchip{self.chip}/pwm{self._channel(gpio)}"
        try:
            if self.files.read(f"{base}/enable") != "1":
                return 0
            return int(round(int(self.files.read(f"{base}/duty_cycle")) / 1000.0))
        except OSError:
            self.connected = False
            raise

    def stop(self) -> None:
        """Let go of the port; the channels stay exported and keep their pulse (see the module docstring)."""
        self.connected = False

    def _channel(self, gpio: int) -> int:
        try:
            return self.channel_of[gpio]
        except KeyError:
            raise ValueError(f"GPIO {gpio} is not one of this port's ({sorted(self.channel_of)})") from None


def _find_chip(files: SysfsFiles, wanted: int, board: str) -> int:
    chips = files.chips()
    if not chips:
        raise EscError(f"no PWM controller under {files.root}: the PWM overlay is not loaded. Add "
                       f"`{OVERLAY_LINE}` to /boot/firmware/config.txt (/boot/config.txt on older systems), "
                       f"reboot, and wire the ESC signals to GPIO12 and 13")
    if wanted >= 0:
        if wanted not in chips:
            raise EscError(f"esc.pwm_chip is {wanted} but {files.root} has pwmchip{', pwmchip'.join(map(str, chips))}")
        return wanted
    if len(chips) == 1:
        return chips[0]
    soc = [c for c in chips if any(d in files.device_of(c) for d in PWM_DEVICES)]
    if len(soc) == 1:
        return soc[0]
    raise EscError(f"{files.root} has several PWM controllers (pwmchip{', pwmchip'.join(map(str, chips))}) and "
                   f"none is plainly the {board} PWM0 block: set esc.pwm_chip (`ls -l {files.root}` shows which "
                   f"device each one is)")


def _explain(e: OSError, what: str, files: SysfsFiles) -> EscError:
    if isinstance(e, PermissionError):
        return EscError(f"no permission to write {files.root}/{what}: run the autopilot as a member of the "
                        f"`gpio` group with the udev rule for /sys/class/pwm (systemd/install.sh sets up both)")
    if e.errno == errno.EINVAL:
        return EscError(f"the kernel refused a value for {files.root}/{what} (invalid argument)")
    return EscError(f"{files.root}/{what}: {e.strerror or e}")
