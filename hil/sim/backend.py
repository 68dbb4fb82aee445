"""The built-in simulator as a backend of the boat runner (`autopilot run` with `backend: sim`): the plant and the
typed sensor models advanced by the runner's clock, taking ESC pulse widths back through the vessel's thrust maps
like an ESC and thruster would. The CLI registers it with autopilot.runtime.backends.register_simulated.
With a pack to drain (`battery`, a hil.sim.battery.PackSpec, or the vessel's battery.capacity_ah), each batch
carries its voltage [V], current [A] and consumed charge [mAh], and the thrusters push at that voltage."""
from __future__ import annotations

import time
from typing import TYPE_CHECKING, Optional, Tuple

from autopilot.vocab.types import SensorBatch

if TYPE_CHECKING:
    from hil.sim.plant import Truth


class SimBackend:
    """The built-in simulator as a backend for `autopilot run` (backend: sim): real time on the runner's clock."""

    consumes = "pulses"

    def __init__(self, vessel, mission, frame, seed: int = 1, env=None, gps_noise: str = "realistic",
                 perf_clock=time.perf_counter, battery=None):
        from autopilot.guidance.path_following import point_to_ned
        from drivers.thrust_map import make_thrust_map
        from hil.sim.battery import BatteryPack, PackSpec
        from hil.sim.environment import EnvironmentConfig
        from hil.sim.plant import Plant
        from hil.sim.runner import initial_pose
        from hil.sim.sensor_models import TypedSensorSuite

        wps = [point_to_ned(p, frame) for p in mission.waypoints]
        n0, e0, psi0 = initial_pose(mission, frame, wps)
        self.plant = Plant(vessel, env or EnvironmentConfig(), seed, n0, e0, psi0)
        self.sensors = TypedSensorSuite(vessel, frame, seed, gps_noise=gps_noise)
        self.maps = [make_thrust_map(t, vessel, vessel.battery.voltage_v) for t in vessel.thrusters]
        self.vessel = vessel
        spec = battery if battery is not None else PackSpec.from_vessel(vessel)
        self.pack = BatteryPack(spec) if spec is not None else None
        self._maps_v = vessel.battery.voltage_v
        self._demand = [0.0] * len(self.maps)
        self._angle: Optional[Tuple[float, ...]] = None  # pods' commanded angles [rad]; None: hold (or fixed thrusters)
        self._perf = perf_clock
        self.last_input_wall_s: Optional[float] = None
        self.hardware_ids = {"gnss": "sim L76K model", "imu": "sim LSM9DS1 model", "esc": "sim thrusters"}
        self.truth: Optional[Truth] = None

    def poll(self, t_s: float) -> SensorBatch:
        if t_s <= self.plant.time_s:
            return SensorBatch()
        dt = t_s - self.plant.time_s
        self.truth = self.plant.step_to(t_s, self._demand, self._angle)
        batch = self.sensors.sample(self.truth)
        if self.pack is not None:
            from drivers.thrust_map import make_thrust_maps
            from hil.sim.runner import PLANT_MAP_STEP_V
            batch.battery_v = self.pack.step(dt, self._demand)
            batch.battery_a, batch.battery_mah = self.pack.current_a, self.pack.consumed_mah
            if abs(batch.battery_v - self._maps_v) >= PLANT_MAP_STEP_V:
                self._maps_v = batch.battery_v
                self.maps = list(make_thrust_maps(self.vessel, max(batch.battery_v, 0.1)))
        self.last_input_wall_s = self._perf()
        return batch

    def write(self, t_s: float, thrust_n, pulses_us, angle_rad=None) -> None:
        self._demand = [m.pulse_to_thrust(p) for m, p in zip(self.maps, pulses_us)]
        if angle_rad is not None:
            self._angle = tuple(angle_rad)

    def neutral(self) -> None:
        self._demand = [0.0] * len(self.maps)

    @property
    def connected(self) -> bool:
        return True

    def ready(self, t_s: float) -> bool:
        """The plant's thrusters arm nothing: always ready."""
        return True

    def close(self) -> None:
        self.neutral()
