"""Backends as the ROS runner sees them: where sensor samples come from and where the cycle's output goes.

A backend has `poll(t_s) -> SensorBatch`, `write(t_s, thrust_n, pulses_us)` (it uses the one its actuators
take: pulse widths for ESCs, newtons for Gazebo), `neutral()`, `connected`, `close()`, `hardware_ids` (component
-> hardware_id for diagnostics) and `last_input_wall_s` (perf_counter() when the newest sample handed over by
the last poll arrived; None when unknown). The backend is chosen by the boat config:

- gazebo: hil.gazebo_backend.GazeboBackend (ros_gz_bridge topics, newtons, /clock).
- sim: SimBackend below, the built-in plant and typed sensor models advanced by the runner's clock, taking ESC
  pulse widths back through the vessel's thrust maps like an ESC and thruster would.
- hw: the drivers' backend (L76K, LSM9DS1, pigpio ESCs).
- topics: TopicSensorSource, our own sensor topics from GNSS/IMU nodes running in other processes.
"""
from __future__ import annotations

import time
from typing import Optional

from autopilot.types import SensorBatch


class SimBackend:
    """The built-in simulator as a backend for `autopilot run` (backend: sim): real time on the runner's clock."""

    consumes = "pulses"

    def __init__(self, vessel, mission, frame, seed: int = 1, env=None, gps_noise: str = "realistic",
                 perf_clock=time.perf_counter):
        from drivers.thrust_map import make_thrust_map
        from hil.environment import EnvironmentConfig
        from hil.plant import Plant
        from hil.sensor_models import TypedSensorSuite
        from hil.sim_runner import initial_pose
        from autopilot.guidance import point_to_ned

        wps = [point_to_ned(p, frame) for p in mission.waypoints]
        n0, e0, psi0 = initial_pose(mission, frame, wps)
        self.plant = Plant(vessel, env or EnvironmentConfig(), seed, n0, e0, psi0)
        self.sensors = TypedSensorSuite(vessel, frame, seed, gps_noise=gps_noise)
        self.maps = [make_thrust_map(t, vessel, vessel.battery.voltage_v) for t in vessel.thrusters]
        self._demand = [0.0] * len(self.maps)
        self._perf = perf_clock
        self.last_input_wall_s: Optional[float] = None
        self.hardware_ids = {"gnss": "sim L76K model", "imu": "sim LSM9DS1 model", "esc": "sim thrusters"}
        self.truth = None

    def poll(self, t_s: float) -> SensorBatch:
        if t_s <= self.plant.time_s:
            return SensorBatch()
        self.truth = self.plant.step_to(t_s, self._demand)
        batch = self.sensors.sample(self.truth)
        self.last_input_wall_s = self._perf()
        return batch

    def write(self, t_s: float, thrust_n, pulses_us) -> None:
        self._demand = [m.pulse_to_thrust(p) for m, p in zip(self.maps, pulses_us)]

    def neutral(self) -> None:
        self._demand = [0.0] * len(self.maps)

    @property
    def connected(self) -> bool:
        return True

    def close(self) -> None:
        self.neutral()


def make_backend(cfg, vessel, mission, frame, node, time_base, seed: int = 1):
    """The backend the boat config asks for, wired to `node` (for topic backends) and the runner's clock."""
    if cfg.backend == "gazebo":
        from hil.gazebo_backend import GazeboBackend
        return GazeboBackend(node, cfg.gazebo, vessel, time_base, namespace=cfg.ros.namespace,
                             sensor_depth=cfg.ros.qos.sensor_depth)
    if cfg.backend == "sim":
        return SimBackend(vessel, mission, frame, seed=seed)
    return make_hardware_backend(cfg, vessel, node, time_base)


def make_hardware_backend(cfg, vessel, node, time_base):
    """The boat's own devices, through the drivers package; the drivers get the node's clock as their clock."""
    try:
        from drivers.backend import HardwareBackend
    except ImportError as e:
        raise RuntimeError(f"backend hw: the hardware drivers are not available ({e}); "
                           "use backend sim or gazebo in the boat config") from None

    def clock_s() -> float:
        return time_base.from_ns(node.get_clock().now().nanoseconds)

    return HardwareBackend(vessel, clock=clock_s)
