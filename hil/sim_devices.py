"""The simulator's devices at the byte and register level, so the real drivers run in every simulation.

- GNSS: plant truth -> emulated L76K (NMEA sentences at the module's baud) -> in-memory serial line -> the
  real L76K driver (framing, pynmea2, epoch merge).
- IMU: plant truth -> register-level LSM9DS1 emulator -> the real Adafruit driver over our smbus adapter.
- ESC: the autopilot's pulses -> the real ESC output (arming, trim, reverse, slew) -> in-process pigpio
  stand-in -> the pulse on each GPIO -> thrust through the thruster's map, as the ESC and motor would.

`ByteLevelSensors.sample(truth)` has the same contract as `hil.sensor_models.TypedSensorSuite.sample`, and
`SimEscs` gives the thrust demand the plant should feel, so the runner can use either level.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Optional, Sequence

from autopilot.config import VesselConfig
from autopilot.types import PulseCommand, SensorBatch
from estimation.geodesy import LocalFrame


class ByteLevelSensors:
    """GNSS and IMU through emulated devices and the real drivers (fast in-memory path)."""

    def __init__(self, vessel: VesselConfig, frame: LocalFrame, seed: int, gps_noise: str = "realistic",
                 gps_rate_hz: Optional[float] = None, truth0=None, mag_calibration=None):
        from drivers import l76k_commands as cmd
        from drivers.lsm9ds1 import Lsm9ds1Source
        from hil.gnss_device import GnssSimSource
        from hil.gnss_emitter import L76KEmitter
        from hil.lsm9ds1_emulator import Lsm9ds1Emulator

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
        self.imu = Lsm9ds1Source.open_emulated(vessel.sensors.imu, vessel.sensors.mag, self.imu_emulator,
                                               mag_calibration=mag_calibration)
        self._ax, self._ay = vessel.sensors.gnss.antenna_x_m, vessel.sensors.gnss.antenna_y_m

    def _gnss_truth(self, t_s: float):
        from hil.gnss_emitter import GnssTruth
        tr = self._truth
        c, s = math.cos(tr.heading_rad), math.sin(tr.heading_rad)
        n = tr.north_m + c * self._ax - s * self._ay
        e = tr.east_m + s * self._ax + c * self._ay
        lat, lon = self.frame.to_wgs84(n, e)
        vn, ve = tr.velocity_ned_mps
        return GnssTruth(lat_deg=lat, lon_deg=lon, sog_mps=math.hypot(vn, ve), cog_rad=math.atan2(ve, vn))

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


class SimEscs:
    """The real ESC output on an in-process pigpio stand-in; reads back the thrust each thruster makes."""

    def __init__(self, vessel: VesselConfig, maps: Sequence, clock):
        from drivers.esc import EscOutput, channels_from_vessel
        from hil.fake_pigpiod import FakePi, GpioState

        self.state = GpioState(clock=clock)
        self.pi = FakePi(self.state)
        self.output = EscOutput.from_vessel(vessel, self.pi, watchdog=False, clock=clock)
        self.channels = channels_from_vessel(vessel)
        self.maps = list(maps)

    def arm(self, t_s: float) -> None:
        self.output.arm(t_s)

    def write(self, t_s: float, pulses: PulseCommand) -> None:
        self.output.write(t_s, pulses)

    def thrust_n(self) -> list:
        """Thrust each motor makes for the pulse on its GPIO (undoing the channel's trim and reversal)."""
        out = []
        for ch, m in zip(self.channels, self.maps):
            pulse = self.state.pulse_us(ch.gpio)
            if pulse == 0:
                out.append(0.0)
                continue
            p = pulse - ch.trim_us
            if ch.reverse:
                p = 2 * ch.pulse_neutral_us - p
            out.append(m.pulse_to_thrust(p))
        return out

    @property
    def pulses_us(self) -> list:
        return [self.state.pulse_us(ch.gpio) for ch in self.channels]

    def close(self) -> None:
        self.output.close()
