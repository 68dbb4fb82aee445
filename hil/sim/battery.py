"""The simulator's battery pack: charge drawn by the thrusters and the electronics, open-circuit voltage by state of
charge, and the sag of the internal resistance under load, so that a long mission drains the pack.

Model (per step of dt [s] at pack current I [A], positive discharging):
  state of charge  soc -= I dt / (3600 capacity_ah), held in [0, 1]
  terminal voltage V = cells x OCV_cell(soc) - I x internal_resistance_ohm, never below 0
  current          I = hotel_current_a + sum_i P_i / V,  P_i = THRUSTER_W_PER_N15 x |T_i|^1.5
The thruster's electrical power follows momentum theory (P ~ T^1.5 at bollard pull); THRUSTER_W_PER_N15 is fitted
to Blue Robotics' T200 tables (about 390 W for 51 N at 16 V) and used for the ApisQueen U5 too (no published
current data). The current is worked out from the voltage of the previous step (the circularity of V and I is
one step long). OCV curves per cell (resting, 25 degC), linear between points, from typical discharge curves:
  li-ion (NMC 18650), lipo, lifepo4, lead-acid (per 2 V cell); "other" uses li-ion scaled to the nominal voltage.

`PackSpec.from_vessel(vessel)` takes the vessel's battery section (capacity_ah, internal_resistance_ohm,
hotel_current_a, cells, chemistry); None when capacity_ah is not set (the pack is not modelled and the simulator
holds the nominal voltage). Bad input: ValueError for a capacity, resistance or start charge out of range.
"""
from __future__ import annotations

import bisect
import math
from dataclasses import dataclass
from typing import Optional, Sequence

THRUSTER_W_PER_N15 = 1.05        # electrical power per thrust^1.5 [W / N^1.5]

_SOC = (0.0, 0.05, 0.10, 0.20, 0.30, 0.40, 0.50, 0.60, 0.70, 0.80, 0.90, 1.0)
OCV_CELL_V = {
    "li-ion": (3.00, 3.30, 3.45, 3.55, 3.62, 3.68, 3.74, 3.80, 3.88, 3.97, 4.07, 4.20),
    "lipo": (3.27, 3.61, 3.69, 3.73, 3.77, 3.80, 3.84, 3.87, 3.95, 4.02, 4.11, 4.20),
    "lifepo4": (2.50, 3.00, 3.13, 3.20, 3.24, 3.26, 3.28, 3.30, 3.31, 3.33, 3.35, 3.60),
    "lead-acid": (1.75, 1.83, 1.88, 1.93, 1.96, 1.99, 2.02, 2.05, 2.07, 2.09, 2.11, 2.13),
}


def ocv_cell_v(chemistry: str, soc: float) -> float:
    """Resting voltage of one cell [V] at state of charge soc (clipped to [0, 1]); KeyError for an unknown
    chemistry."""
    curve = OCV_CELL_V[chemistry]
    s = min(1.0, max(0.0, soc))
    j = min(len(_SOC) - 1, max(1, bisect.bisect_right(_SOC, s)))
    s0, s1 = _SOC[j - 1], _SOC[j]
    return curve[j - 1] + (s - s0) / (s1 - s0) * (curve[j] - curve[j - 1])


def thruster_power_w(thrust_n: float) -> float:
    """Electrical power one thruster draws for thrust_n [N], either way [W]."""
    return THRUSTER_W_PER_N15 * abs(thrust_n) ** 1.5


@dataclass(frozen=True)
class PackSpec:
    cells: int
    chemistry: str
    capacity_ah: float
    internal_resistance_ohm: float = 0.05
    hotel_current_a: float = 0.5
    soc0: float = 1.0
    nominal_v: float = 0.0           # chemistry "other": the full pack's voltage the li-ion curve is scaled to

    def __post_init__(self):
        if not (math.isfinite(self.capacity_ah) and self.capacity_ah > 0):
            raise ValueError(f"capacity_ah must be > 0, got {self.capacity_ah!r}")
        if not (self.internal_resistance_ohm >= 0 and self.hotel_current_a >= 0):
            raise ValueError("internal_resistance_ohm and hotel_current_a must be >= 0")
        if not 0.0 <= self.soc0 <= 1.0:
            raise ValueError(f"soc0 must lie in [0, 1], got {self.soc0!r}")

    @classmethod
    def from_vessel(cls, vessel, soc0: float = 1.0) -> Optional["PackSpec"]:
        b = vessel.battery
        if getattr(b, "capacity_ah", None) is None:
            return None
        return cls(cells=b.cells, chemistry=b.chemistry, capacity_ah=b.capacity_ah,
                   internal_resistance_ohm=b.internal_resistance_ohm, hotel_current_a=b.hotel_current_a,
                   soc0=soc0, nominal_v=b.voltage_v)


class BatteryPack:
    """One pack being drained (see the module docstring). `voltage_v` and `current_a` are the latest step's."""

    def __init__(self, spec: PackSpec):
        self.spec = spec
        self.soc = spec.soc0
        self.consumed_mah = 0.0
        self.current_a = spec.hotel_current_a
        self._chem = spec.chemistry if spec.chemistry in OCV_CELL_V else "li-ion"
        full = spec.cells * OCV_CELL_V[self._chem][-1]
        self._scale = spec.nominal_v / full if spec.chemistry not in OCV_CELL_V and spec.nominal_v > 0 else 1.0
        self.voltage_v = self.open_circuit_v() - self.current_a * spec.internal_resistance_ohm

    def open_circuit_v(self) -> float:
        """The resting pack voltage at the present state of charge [V]."""
        return self._scale * self.spec.cells * ocv_cell_v(self._chem, self.soc)

    def step(self, dt_s: float, thrust_n: Sequence[float]) -> float:
        """Draw the current of `thrust_n` (per thruster [N]) and the electronics for dt_s [s]; the terminal
        voltage under that load [V]. A negative dt is ValueError."""
        if dt_s < 0:
            raise ValueError(f"dt_s must be >= 0, got {dt_s!r}")
        power = sum(thruster_power_w(t) for t in thrust_n)
        self.current_a = self.spec.hotel_current_a + power / max(self.voltage_v, 1.0)
        drawn_ah = self.current_a * dt_s / 3600.0
        self.consumed_mah += 1e3 * drawn_ah
        self.soc = max(0.0, self.soc - drawn_ah / self.spec.capacity_ah)
        self.voltage_v = max(0.0, self.open_circuit_v() - self.current_a * self.spec.internal_resistance_ohm)
        return self.voltage_v
