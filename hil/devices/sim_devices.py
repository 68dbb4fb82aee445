"""The simulator's devices at the byte and register level, so the real drivers run in every simulation.

- GNSS: plant truth -> emulated L76K (NMEA sentences at the module's baud) -> in-memory serial line -> the
  real L76K driver (framing, pynmea2, epoch merge).
- IMU: plant truth -> register-level LSM9DS1 emulator -> the real Adafruit driver over our smbus adapter.
- ESC: the autopilot's pulses -> the real ESC output (arming, trim, reverse, slew) -> in-process pigpio
  stand-in -> the pulse on each GPIO -> thrust through the thruster's map, as the ESC and motor would.

`ByteLevelSensors.sample(truth)` has the same contract as `hil.sim.sensor_models.TypedSensorSuite.sample`, and
`SimEscs` gives the thrust demand the plant should feel, so the runner can use either level.
"""
from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING, Callable, Dict, Optional, Protocol, Sequence

from autopilot.vocab.config import VesselConfig
from autopilot.vocab.geodesy import LocalFrame
from autopilot.vocab.types import PulseCommand, SensorBatch
from hil.devices.fake_pigpiod import FakePi
from hil.devices.gnss_emitter import GnssTruth, antenna_truth

if TYPE_CHECKING:
    from drivers.esc.contract import EscBackend, EscPort


class ByteLevelSensors:
    """GNSS and IMU through emulated devices and the real drivers (fast in-memory path)."""

    def __init__(self, vessel: VesselConfig, frame: LocalFrame, seed: int, gps_noise: str = "realistic",
                 gps_rate_hz: Optional[float] = None, truth0=None, mag_calibration=None):
        from drivers.gnss import l76k_commands as cmd
        from drivers.lsm9ds1 import Lsm9ds1Source
        from hil.devices.gnss_device import GnssSimSource
        from hil.devices.gnss_emitter import L76KEmitter
        from hil.devices.lsm9ds1_emulator import Lsm9ds1Emulator

        gcfg = vessel.sensors.gnss
        if gps_rate_hz is not None:
            gcfg = dataclasses.replace(gcfg, rate_hz=gps_rate_hz)
        selection = cmd.FACTORY_SELECTION
        if gcfg.rate_hz > 1.0:
            # what `bench gps --configure` does on the boat: 115200 baud and only GGA + RMC
            gcfg = dataclasses.replace(gcfg, baud=cmd.FAST_BAUD)
            selection = cmd.FAST_SELECTION
        if gps_noise == "white":
            gcfg = dataclasses.replace(gcfg, bias_sigma_m=0.0)
        elif gps_noise != "realistic":
            raise ValueError(f"gps_noise {gps_noise!r}: use 'white' or 'realistic'")
        self.frame = frame
        self._truth = truth0
        emitter = L76KEmitter(gcfg, seed=seed, selection=selection)
        # the L76K stops at 5 Hz; a faster rate is simulated as a faster receiver on the same line
        beyond = gcfg.rate_hz not in cmd.FIX_INTERVALS_MS
        self.gnss = GnssSimSource(gcfg, self._gnss_truth, transport="memory", seed=seed, emitter=emitter,
                                  beyond_l76k_rate=beyond)
        self.imu_emulator = Lsm9ds1Emulator(vessel.sensors.imu, vessel.sensors.mag, seed=seed + 1)
        self.imu_emulator.update(0.0 if truth0 is None else truth0.time_s, truth0)
        emu = self.imu_emulator
        # the driver's re-initialisation interval runs on simulated time (the emulator's clock), as on the boat
        self.imu = Lsm9ds1Source.open_emulated(vessel.sensors.imu, vessel.sensors.mag, emu,
                                               mag_calibration=mag_calibration, clock=lambda: emu.t_s)
        self._gnss_cfg = gcfg
        self.gnss_offset_ne = (0.0, 0.0)     # added to the position the receiver computes (gps-glitch fault) [m]

    def _gnss_truth(self, t_s: float) -> GnssTruth:
        """The antenna's position (plus any glitch offset) and velocity: the CG's plus r x lever arm, which a
        receiver off the CG measures in every turn."""
        tr = self._truth
        off_n, off_e = self.gnss_offset_ne
        return antenna_truth(self.frame, self._gnss_cfg, tr.north_m + off_n, tr.east_m + off_e, tr.heading_rad,
                             tr.surge_mps, tr.sway_mps, tr.yaw_rate_rps)

    def sample(self, truth) -> SensorBatch:
        self._truth = truth
        self.imu_emulator.update(truth.time_s, truth)
        batch = self.gnss.poll(truth.time_s)
        imu = self.imu.poll(truth.time_s)
        batch.imu.extend(imu.imu)
        batch.mag.extend(imu.mag)
        return batch

    def close(self) -> None:
        self.gnss.close()


def simulated_mag_calibration(vessel: VesselConfig, trim_roll_rad: float = 0.0, trim_pitch_rad: float = 0.0):
    """The exact calibration of the simulator's magnetometer: its configured hard iron (offset) and the inverse
    of its soft iron (matrix), so m_corr = inv(S) (S b + h - h) = b. The simulator knows its distortion, so
    it needs no `autopilot calibrate mag` run; the pre-arm check counts this as the calibration present.

    A hull floating with a trim (roll, pitch) is calibrated as it floats: level turns on the water see the
    vertical field leak into the sensor's x and y by the same amount at every heading, and the 2-D fit takes
    that leak into its offset. With a trim, this is that on-water calibration (method "2d")."""

    import numpy as np

    from estimation.heading.mag_calibration import MagCalibration

    m = vessel.sensors.mag
    soft = np.asarray(m.soft_iron, dtype=float).reshape(3, 3)
    if trim_roll_rad == 0.0 and trim_pitch_rad == 0.0:
        return MagCalibration(offset_t=tuple(m.hard_iron_t), matrix=tuple(map(tuple, np.linalg.inv(soft))),
                              method="3d")
    b_down = m.field_t * math.sin(math.radians(m.inclination_deg))
    cp = math.cos(trim_pitch_rad)
    leak = np.array([-math.sin(trim_pitch_rad) * b_down, math.sin(trim_roll_rad) * cp * b_down, 0.0])
    offset = np.asarray(m.hard_iron_t, dtype=float) + soft @ leak
    return MagCalibration(offset_t=tuple(offset.tolist()), matrix=tuple(map(tuple, np.linalg.inv(soft))),
                          method="2d")


class SimEscs:
    """The real ESC output on an emulated output stage; reads back the thrust each thruster makes.

    `backend`: pigpio (an in-process pigpiod stand-in), kernel_pwm (the real sysfs writes of
    drivers/esc/kernel_pwm.py on a fake /sys/class/pwm tree in a temporary folder, a Pi 4's two channels) or
    pca9685 (the Adafruit library on a register-level PCA9685 behind an emulated I2C bus, outputs 0, 1, ...).
    The plant sees the pulses on the emulated lines, so whatever the driver gets wrong, the boat feels.

    `unplug()` takes the output stage away, as when pigpiod dies or the PWM hardware stops answering: the ESC
    signals stop (the motors stop) and every call raises, so the ESC output counts the fault and reports
    `connected` False; `plug()` brings it back (the output reopens its port on its next write and arms the ESCs
    again)."""

    def __init__(self, vessel: VesselConfig, maps: Sequence, clock, backend: str = "pigpio"):
        from drivers.esc.output import EscOutput

        self.line = _LINES[backend](vessel, clock)
        self.output = EscOutput.from_vessel(vessel, self.line.port, backend=self.line.backend, watchdog=False,
                                            clock=clock, pi_factory=self.line.reopen, reconnect_interval_s=1.0)
        self.channels = self.output.channels
        self.maps = list(maps)

    def unplug(self) -> None:
        self.line.unplug([ch.gpio for ch in self.channels])

    def plug(self) -> None:
        self.line.plugged = True

    @property
    def connected(self) -> bool:
        return self.output.connected

    @property
    def outages(self) -> int:
        """The ESC output's outage count (drivers.esc.output.EscOutput.outages)."""
        return self.output.outages

    def arm(self, t_s: float) -> None:
        self.output.arm(t_s)

    def ready(self, t_s: float) -> bool:
        """True once the ESCs have finished their arming sequence (until then they get neutral only)."""
        return self.output.armed(t_s)

    def write(self, t_s: float, pulses: PulseCommand) -> None:
        self.output.write(t_s, pulses)

    def thrust_n(self) -> list:
        """Thrust each motor makes for the pulse on its line (undoing the channel's trim and reversal)."""
        out = []
        for ch, m, pulse in zip(self.channels, self.maps, self.pulses_us):
            out.append(0.0 if pulse == 0 else m.pulse_to_thrust(ch.unshape(pulse)))
        return out

    @property
    def pulses_us(self) -> list:
        """The pulse on each ESC's line [us] (0: no signal), as a scope would read it."""
        return [self.line.pulse_us(ch.gpio) if self.line.plugged else 0 for ch in self.channels]

    def close(self) -> None:
        self.output.close()
        self.line.close()


class _EscLine(Protocol):
    """What SimEscs needs of a simulated ESC line (one per backend, in _LINES)."""

    plugged: bool

    @property
    def port(self) -> object: ...

    @property
    def backend(self) -> Optional[EscBackend]: ...

    def reopen(self) -> EscPort: ...

    def unplug(self, outputs: Sequence[int]) -> None: ...

    def pulse_us(self, out: int) -> float: ...

    def close(self) -> None: ...


class _PigpioLine:
    def __init__(self, vessel, clock):
        from hil.devices.fake_pigpiod import GpioState
        self.state = GpioState(clock=clock)
        self.port = _PluggablePi(self.state)
        self.backend = None

    def reopen(self):
        if not self.plugged:
            raise ConnectionError("pigpiod is not running (simulated)")
        self.port.connected = True
        return self.port

    def unplug(self, outputs) -> None:
        self.plugged = False
        self.port.connected = False
        for out in outputs:
            self.state.set_servo_pulsewidth(out, 0)

    def pulse_us(self, out: int) -> float:
        return self.state.pulse_us(out)

    def close(self) -> None:
        pass

    @property
    def plugged(self) -> bool:
        return self.port.plugged

    @plugged.setter
    def plugged(self, value: bool) -> None:
        self.port.plugged = value


class _KernelPwmLine:
    MODEL = "Raspberry Pi 4 Model B Rev 1.5"

    def __init__(self, vessel, clock):
        import tempfile

        from drivers.esc.contract import EscBackend
        from drivers.esc.kernel_pwm import KernelPwmPort
        from drivers.esc.output import channels_from_vessel
        from hil.devices.fake_sysfs_pwm import FakePwmSysfs
        self.fake = FakePwmSysfs(tempfile.mkdtemp(prefix="sim-pwm-"), chips={0: 2})
        self.plugged = True
        self.backend = EscBackend(kind="kernel_pwm", sysfs_root=str(self.fake.root), sysfs_files=self.fake.files,
                                  boot_config="none")
        outputs = [c.gpio for c in channels_from_vessel(vessel, self.backend)]
        self._open = lambda: KernelPwmPort.open(self.backend, outputs, model=self.MODEL)
        self.port = self._open()

    def reopen(self):
        if not self.plugged:
            raise OSError(5, "PWM hardware not answering (simulated)")
        self.fake.failing = False
        self.port = self._open()
        return self.port

    def unplug(self, outputs) -> None:
        self.plugged = False
        self.fake.failing = True

    def pulse_us(self, out: int) -> float:
        return self.fake.pulse_us(self.port.chip, self.port.channel_of[out])

    def close(self) -> None:
        self.fake.remove()


class _Pca9685Line:
    def __init__(self, vessel, clock):
        from drivers.esc.contract import EscBackend
        from hil.devices.pca9685_emulator import Pca9685Emulator
        self.chip = Pca9685Emulator()
        self.plugged = True
        n = len(vessel.thrusters)
        self.backend = EscBackend(kind="pca9685", pca9685_channels=tuple(range(n)), smbus=self.chip.smbus())
        self.port = self.reopen()

    def reopen(self):
        from drivers.esc.ports import open_port
        if not self.plugged:
            raise OSError(121, "Remote I/O error (simulated: PCA9685 not answering)")
        self.chip.present = True
        self.port = open_port(self.backend, list(self.backend.pca9685_channels))
        return self.port

    def unplug(self, outputs) -> None:
        self.plugged = False
        self.chip.present = False

    def pulse_us(self, out: int) -> float:
        return self.chip.pulse_us(out)

    def close(self) -> None:
        pass


_LINES: Dict[str, Callable[..., _EscLine]] = {"pigpio": _PigpioLine, "kernel_pwm": _KernelPwmLine,
                                              "pca9685": _Pca9685Line}


class _PluggablePi(FakePi):
    """FakePi whose calls raise while unplugged, as a pigpio client's do once pigpiod has gone."""

    plugged = True

    def set_servo_pulsewidth(self, user_gpio, pulsewidth):
        if not self.plugged:
            raise ConnectionError("pigpiod connection lost (simulated)")
        return super().set_servo_pulsewidth(user_gpio, pulsewidth)
