"""Where the ESC pulses go: pigpio, the kernel's PWM (`/sys/class/pwm`) or a PCA9685 board, behind one contract.

drivers/esc.EscOutput does arming, shaping, slew, timeouts and signals; a *port* only puts a pulse on a line.
A port is any object with

    set_servo_pulsewidth(output: int, pulse_us: int) -> None    0 = signal off; raises on a hardware fault
    get_servo_pulsewidth(output: int) -> int                     the pulse being output [us] (0 = off)
    connected: bool                                              False once the port cannot be used
    stop() -> None                                               release the port (outputs keep their pulse)

and `probe(port, output)` asks whether it still answers (pigpio: its tick; the others: a pulse read back).

which is part of `pigpio.pi`, so pigpio is a port as it is. `output` is what the
backend addresses: the BCM GPIO for pigpio and kernel_pwm (the kernel port maps it to its PWM channel), the
board channel 0-15 for pca9685.

`EscBackend` says which backend and how to reach it (the boat config's `esc:` section, or `autopilot sim
--esc-backend`); `open_port(backend, channels)` opens one port (EscError saying what to do when it cannot), and
`backend.to_args()` / `EscBackend.from_args()` carry it to the deadman guardian's command line, which opens a
port of its own: the kernel's PWM and the PCA9685 keep their last pulse when the process that set it dies,
exactly as pigpiod does.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Optional, Protocol, Sequence, Tuple

BACKENDS = ("pigpio", "kernel_pwm", "pca9685")


class EscError(RuntimeError):
    """ESC output cannot start (pigpiod not running, unsupported board, bad channel). Says what to do."""


class EscPort(Protocol):
    """The part of a port (see the module docstring) that is called on one a factory has just opened."""

    def set_servo_pulsewidth(self, output: int, pulse_us: int, /) -> object: ...


@dataclass(frozen=True)
class EscBackend:
    """One ESC output backend and its address.

    pigpio:      host, port of pigpiod.
    kernel_pwm:  sysfs_root (normally /sys/class/pwm), pwm_chip (-1: found from the board), pwm_channels (per
                 thruster in vessel order; empty: from each thruster's GPIO and the board's PWM pins).
    pca9685:     i2c_bus, pca9685_address, pca9685_channels (board output per thruster, vessel order),
                 pulse_scale (true pulse / intended pulse, measured by `autopilot bench esc --calibrate`;
                 its oscillator runs a few % off 25 MHz).
    """

    kind: str = "pigpio"
    host: str = "localhost"
    port: int = 8888
    sysfs_root: str = "/sys/class/pwm"
    pwm_chip: int = -1
    pwm_channels: Tuple[int, ...] = ()
    boot_config: str = ""       # kernel_pwm: the config.txt whose PWM overlay pins are checked ("" = the Pi's
                                # own, "none" = no check: an emulated tree)
    i2c_bus: int = 1
    pca9685_address: int = 0x40
    pca9685_channels: Tuple[int, ...] = ()
    pulse_scale: float = 1.0
    i2c_socket: str = ""  # pca9685 on an emulated bus another process serves (hil/devices/i2c_socket.py), not /dev
    # the emulated devices of `autopilot sim` and the tests put their I2C bus or sysfs rules here (never on a
    # command line: a guardian process opens the real bus, or the same sysfs tree with plain file writes)
    smbus: Optional[object] = field(default=None, compare=False, repr=False)
    sysfs_files: Optional[object] = field(default=None, compare=False, repr=False)

    def __post_init__(self):
        if self.kind not in BACKENDS:
            raise ValueError(f"ESC backend {self.kind!r}: choose one of {', '.join(BACKENDS)}")

    def to_args(self) -> list:
        """The guardian's command-line form (`--backend JSON`)."""
        d = {k: v for k, v in asdict(self).items() if k not in ("smbus", "sysfs_files")}
        return ["--backend", json.dumps(d, sort_keys=True)]

    @classmethod
    def from_json(cls, text: str) -> "EscBackend":
        d = json.loads(text)
        for k in ("pwm_channels", "pca9685_channels"):
            d[k] = tuple(d.get(k, ()))
        return cls(**d)


def outputs_for(backend: EscBackend, thrusters: Sequence) -> list:
    """The `output` each thruster (autopilot.vocab.config.ThrusterConfig, vessel order) is addressed by on `backend`."""
    if backend.kind == "pca9685":
        return list(backend.pca9685_channels)
    return [t.gpio for t in thrusters]


def probe(port, output: int) -> bool:
    """True if `port` still answers (a fault of any kind is False)."""
    try:
        tick = getattr(port, "get_current_tick", None)
        if tick is not None:
            tick()
        else:
            port.get_servo_pulsewidth(output)
        return bool(getattr(port, "connected", True))
    except Exception:         # noqa: BLE001 - any failure means the port is gone
        return False
