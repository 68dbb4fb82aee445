"""Backends without ROS: where sensor samples come from and where the cycle's output goes.

A backend has `poll(t_s) -> SensorBatch`, `write(t_s, thrust_n, pulses_us)` (it uses the one its actuators
take: pulse widths for ESCs, newtons for Gazebo), `neutral()`, `connected`, `close()`, `hardware_ids` (component
-> hardware_id for diagnostics) and `last_input_wall_s` (perf_counter() when the newest sample handed over by
the last poll arrived; None when unknown). The boat config's `backend:` chooses:

- hw: the drivers' backend (L76K, LSM9DS1, the ESC output with its deadman), `HardwareBackend`.
- sim: the built-in plant (hil/sim/backend.py), registered by the CLI with `register_simulated`: the runtime
  never imports the simulator itself.
- gazebo: needs ROS 2 (ros_gz_bridge topics, /clock); the ROS rim builds it (autopilot/ros/backends.py).
"""
from __future__ import annotations

import time
from typing import Callable, Optional

from autopilot.vocab.types import SensorBatch

SIMULATED: dict = {}        # backend name -> factory(vessel, mission, frame, seed=) -> backend


def register_simulated(kind: str, factory) -> None:
    """Let `make_backend` build the simulated backend `kind` ("sim") with `factory(vessel, mission, frame,
    seed=...)`. The composition root (the CLI) calls it; the core and the runtime never import the simulator."""
    SIMULATED[kind] = factory


def make_backend(cfg, vessel, mission, frame, clock_s: Callable[[], float], seed: int = 1,
                 allow_sim_calibration: bool = False):
    """The hw or sim backend the boat config asks for; the drivers stamp samples with `clock_s()` [core s].

    ValueError for backend gazebo (it needs the ROS rim), for a sim backend nobody registered, and for a
    vessel with azimuth pods on the hardware backend (the pod servos have no output stage yet) rather than a
    boat that ignores its angles."""
    refuse_unsteerable_pods(cfg.backend, vessel)
    if cfg.backend == "sim":
        factory = SIMULATED.get("sim")
        if factory is None:
            raise ValueError("backend: sim needs the built-in simulator, which `autopilot run` provides; this "
                             "process did not register it (autopilot.runtime.backends.register_simulated)")
        return factory(vessel, mission, frame, seed=seed)
    if cfg.backend == "hw":
        return HardwareBackend(vessel, clock_s, esc_backend=cfg.esc.backend_spec(),
                               allow_sim_calibration=allow_sim_calibration,
                               power_monitor=getattr(cfg, "battery", None))
    raise ValueError(f"backend: {cfg.backend} needs ROS 2 (its sensors and clock arrive as ROS topics)")


class HardwareBackend:
    """The boat's devices: L76K GNSS (reader thread), LSM9DS1 IMU (read once per poll), ESCs through pigpio with
    the deadman guardian, and the pack's power monitor when the boat config has a `battery:` section
    (`power_monitor`, drivers/power_monitor/: read at its own poll rate, its voltage [V], current [A] and
    consumed charge [mAh] in each batch while fresh, None once it is stale). Fixes and samples are stamped with
    the runner's clock (`clock_s`)."""

    consumes = "pulses"

    def __init__(self, vessel, clock_s, perf_clock=time.perf_counter, deadman: bool = True, esc_backend=None,
                 allow_sim_calibration: bool = False, power_monitor=None):
        from drivers.esc.output import EscOutput
        refuse_unsteerable_pods("hw", vessel)
        from drivers.gnss.l76k import L76K
        from drivers.lsm9ds1 import Lsm9ds1Source

        s = vessel.sensors
        from autopilot.calibration.store import load_boat_calibration
        # None on the first day (a file named, not written yet): raw readings, and the pre-arm checks refuse
        # the navigating modes until CALIBRATE_ON_WATER has fitted and written it. ConfigError for a malformed
        # file or a simulator's fit (unless allowed), before any device is opened.
        cal = load_boat_calibration(vessel, "hw", allow_sim=allow_sim_calibration)
        self._perf = perf_clock
        # first: outputs to neutral before anything
        self.esc = EscOutput.from_vessel(vessel, backend=esc_backend, deadman=deadman)
        self.gnss = L76K.from_config(s.gnss, clock=clock_s)
        self.gnss.start()
        self.imu = Lsm9ds1Source.open_hw(s.imu, s.mag, mag_calibration=cal, clock=clock_s)
        self.last_input_wall_s: Optional[float] = None
        self.battery = None
        if power_monitor is not None:
            from drivers.power_monitor import PowerMonitor
            self.battery = PowerMonitor(power_monitor, clock=clock_s)   # opens on its first poll, never raises
        outputs = ",".join(f"{'ch' if esc_backend is not None and esc_backend.kind == 'pca9685' else 'GPIO'}"
                           f"{c.gpio}" for c in self.esc.channels)
        self.hardware_ids = {
            "gnss": f"L76K {s.gnss.port}",
            "imu": f"LSM9DS1 i2c-{s.imu.bus} 0x{s.imu.address_xg:02x}/0x{s.imu.address_mag:02x}",
            "esc": f"{esc_backend.kind if esc_backend is not None else 'pigpio'} {outputs}",
        }
        if self.battery is not None:
            self.hardware_ids["battery"] = self.battery.hardware_id
        self._armed_esc = False

    def poll(self, t_s: float) -> SensorBatch:
        batch = self.imu.poll(t_s)
        batch.gps.extend(self.gnss.poll())
        if self.battery is not None:
            reading = self.battery.poll(t_s)
            if reading is not None:
                batch.battery_v, batch.battery_a = reading.voltage_v, reading.current_a
                batch.battery_mah = reading.consumed_mah
        self.last_input_wall_s = self._perf()
        return batch

    def battery_health(self, t_s: float):
        """(level, message, figures) of the power monitor (PowerMonitor.health); None without one."""
        return None if self.battery is None else self.battery.health(t_s)

    def write(self, t_s: float, thrust_n, pulses_us) -> None:
        from autopilot.vocab.types import PulseCommand
        if not self._armed_esc:
            self.esc.arm(t_s)
            self._armed_esc = True
        self.esc.write(t_s, PulseCommand(tuple(pulses_us)))

    def sent_pulses_us(self) -> list:
        """The pulses the ESCs output now (slew and arming included), as the autopilot's commands read [us]."""
        return self.esc.sent_pulses_us()

    def neutral(self) -> None:
        self.esc.neutral()

    @property
    def connected(self) -> bool:
        return bool(self.esc.connected)

    @property
    def outages(self) -> int:
        """How many times the ESC output stopped being vouched for (EscOutput.outages)."""
        return self.esc.outages

    def ready(self, t_s: float) -> bool:
        """True once the ESCs have had their arming time of neutral (at start and after pigpiod came back)."""
        return self._armed_esc and self.esc.armed(t_s)

    def close(self) -> None:
        try:
            self.esc.close()
        finally:
            self.gnss.close()
            close = getattr(self.imu.driver, "close", None)
            if close is not None:
                close()
            if self.battery is not None:
                self.battery.close()


def refuse_unsteerable_pods(backend: str, vessel) -> None:
    """ValueError when `vessel` has azimuth pods and `backend` cannot command their angles."""
    pods = [t.name for t in vessel.thrusters if t.azimuth is not None]
    if pods and backend not in ("sim", "gazebo"):
        raise ValueError(f"backend {backend!r}: vessel {vessel.name!r} has azimuth pods ({', '.join(pods)}) but "
                         f"the {backend} backend has no output for their angle servos yet; refusing to start a "
                         f"boat that would ignore its pod angles (use backend sim or gazebo, or fixed thrusters)")
