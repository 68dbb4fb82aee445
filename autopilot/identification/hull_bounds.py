"""The physical bounds of the hull fit's z1..z9, taken from the vessel-file schema `autopilot check` enforces.

Each hull key of autopilot/vocab/config.py HullConfig carries its schema bounds (the added masses and the
dampings: max 0). The fit's parameters are z1 = m - x_udot, z2 = m - y_vdot, z3 = Iz - n_rdot and z4..z9 =
-x_u, -x_uu, -y_v, -y_vv, -n_r, -n_rr, so a key bound key <= max becomes z >= base - max (base: the file's mass
or Iz for the three inertias, 0 for the dampings), and key >= min becomes z <= base - min. With the schema as
it is: z1 >= m, z2 >= m, z3 >= Iz, z4..z9 >= 0, no upper bounds.
"""
from __future__ import annotations

import dataclasses
from typing import Dict, Tuple

import numpy as np

from estimation.identification.hull_least_squares import NAMES

HULL_KEYS = ("x_udot", "y_vdot", "n_rdot", "x_u", "x_uu", "y_v", "y_vv", "n_r", "n_rr")     # z1..z9 order

# what a parameter held at its bound suggests (its physical floor: an added mass of 0, a damping of 0)
AT_BOUND_ADVICE = {
    "z1": "z1 at the rigid-body mass: the measured mass may be too high, or surge added mass is negligible",
    "z2": "z2 at the rigid-body mass: the measured mass may be too high, or sway added mass is negligible",
    "z3": "z3 at the rigid-body Iz: the measured Iz may be too high, or yaw added inertia is negligible",
    "z4": "z4 at 0: linear surge damping negligible beside the quadratic (or the runs are too fast to show it)",
    "z5": "z5 at 0: quadratic surge damping negligible (or the runs are too slow to show it)",
    "z6": "z6 at 0: linear sway damping negligible beside the quadratic",
    "z7": "z7 at 0: quadratic sway damping negligible (or the turns too gentle to make the hull slide)",
    "z8": "z8 at 0: linear yaw damping negligible beside the quadratic",
    "z9": "z9 at 0: quadratic yaw damping negligible (or the turns too slow to show it)",
}


def schema_key_bounds() -> Dict[str, Tuple[float, float]]:
    """Each hull key's (min, max) of the schema, -inf/+inf where the schema sets none."""
    from autopilot.vocab.config import HullConfig
    fields = {f.name: f for f in dataclasses.fields(HullConfig)}
    out = {}
    for key in HULL_KEYS:
        meta = fields[key].metadata
        lo, hi = meta.get("min"), meta.get("max")
        out[key] = (-np.inf if lo is None else float(lo), np.inf if hi is None else float(hi))
    return out


def zeta_bounds(mass_kg: float, iz_kgm2: float) -> Tuple[np.ndarray, np.ndarray]:
    """(lower, upper) bounds (9,) of z1..z9 for a hull of rigid-body mass `mass_kg` [kg] and yaw inertia
    `iz_kgm2` [kg m^2] as the vessel file gives them: the values whose hull keys the schema accepts. ValueError
    for a mass or Iz that is not a positive finite number."""
    if not (np.isfinite(mass_kg) and mass_kg > 0 and np.isfinite(iz_kgm2) and iz_kgm2 > 0):
        raise ValueError(f"mass_kg and iz_kgm2 must be positive, got {mass_kg!r}, {iz_kgm2!r}")
    base = {"x_udot": mass_kg, "y_vdot": mass_kg, "n_rdot": iz_kgm2}
    lo, hi = np.empty(len(NAMES)), np.empty(len(NAMES))
    for i, (key, (kmin, kmax)) in enumerate(schema_key_bounds().items()):
        b = base.get(key, 0.0)
        lo[i], hi[i] = b - kmax, b - kmin          # z = b - key: key <= kmax <=> z >= b - kmax
    return lo, hi
