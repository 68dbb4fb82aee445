"""The simulator's "true boat": which hull the plant is, kept apart from the vessel file the autopilot flies with.

A real boat never matches its vessel file. A run's plant is described by
- a plant vessel file (`--plant-vessel FILE`, default: the autopilot's own vessel file),
- scale factors on its coefficients (`--mismatch x_u=0.4,iz=2.3,thrust=0.8` or `--mismatch random=0.5`), and
- what the vessel files' diagonal 3-DOF model leaves out and real hulls have (`PlantExtras`, `--plant-extra`,
  `--force`): sway-yaw coupling, a centre of gravity off the reference point, roll and pitch reaching the
  IMU, per-thruster thrust differences and a constant external force.

Mismatch keys (factors multiply the plant vessel's values; every factor must be > 0):
  mass, iz, x_udot, y_vdot, n_rdot, x_u, y_v, n_r, x_uu, y_vv, n_rr (hull coefficients),
  added_mass (x_udot, y_vdot and n_rdot together), damping (all six damping terms),
  thrust (every thruster's thrust), tau (every thruster's time constant),
  random=F: every coefficient of RANDOM_KEYS gets a log-uniform factor within x/÷ (1 + F), drawn from the
  run's seed; explicit keys given beside random override its draw.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Mapping, Optional, Tuple

import numpy as np

from autopilot.vocab.config import VesselConfig

HULL_KEYS = ("mass", "iz", "x_udot", "y_vdot", "n_rdot", "x_u", "y_v", "n_r", "x_uu", "y_vv", "n_rr")
GROUP_KEYS = {"added_mass": ("x_udot", "y_vdot", "n_rdot"),
              "damping": ("x_u", "y_v", "n_r", "x_uu", "y_vv", "n_rr")}
THRUSTER_KEYS = ("thrust", "tau")
MISMATCH_KEYS = HULL_KEYS + tuple(GROUP_KEYS) + THRUSTER_KEYS
# What a geometric estimate gets wrong; the mass is left out (a boat can be weighed).
RANDOM_KEYS = ("iz", "x_udot", "y_vdot", "n_rdot", "x_u", "y_v", "n_r", "x_uu", "y_vv", "n_rr", "thrust", "tau")
_HULL_FIELD = {"mass": "mass_kg", "iz": "iz_kgm2"}
MAX_FACTOR = 100.0


def parse_mismatch(text: str) -> dict:
    """`KEY=FACTOR,...` (see the module docstring) -> {key: factor}; ValueError naming the bad part."""
    out: dict = {}
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        key, sep, value = part.partition("=")
        key = key.strip()
        if not sep:
            raise ValueError(f"mismatch {part!r}: expected KEY=FACTOR")
        if key != "random" and key not in MISMATCH_KEYS:
            raise ValueError(f"mismatch key {key!r}: use one of {', '.join(MISMATCH_KEYS)} or random")
        try:
            factor = float(value)
        except ValueError:
            raise ValueError(f"mismatch {key}: {value!r} is not a number") from None
        if not math.isfinite(factor):
            raise ValueError(f"mismatch {key}: must be finite")
        if key == "random":
            if not 0.0 <= factor <= 10.0:
                raise ValueError(f"mismatch random: spread must be in [0, 10], got {factor:g}")
        elif not 1.0 / MAX_FACTOR <= factor <= MAX_FACTOR:
            raise ValueError(f"mismatch {key}: factor must be in [{1 / MAX_FACTOR:g}, {MAX_FACTOR:g}], got {factor:g}")
        out[key] = factor
    return out


def resolve_mismatch(spec: Mapping[str, float], seed: int, draw: int = 0) -> dict:
    """The factors a run applies: `random` drawn from (seed, draw) (log-uniform), groups expanded, explicit
    keys last. Keys are HULL_KEYS and THRUSTER_KEYS; coefficients not named keep factor 1 (left out)."""
    factors: dict = {}
    spread = spec.get("random")
    if spread:
        rng = np.random.default_rng([int(seed), 0x6D15, int(draw)])
        width = math.log1p(spread)
        for key, x in zip(RANDOM_KEYS, rng.uniform(-width, width, len(RANDOM_KEYS))):
            factors[key] = float(math.exp(x))
    for key, factor in spec.items():
        if key == "random":
            continue
        for k in GROUP_KEYS.get(key, (key,)):
            factors[k] = float(factor)
    return factors


def apply_mismatch(vessel: VesselConfig, factors: Mapping[str, float]) -> VesselConfig:
    """The vessel with hull coefficients and thruster time constants scaled (`thrust` is applied by the plant,
    as a thruster that pushes harder or softer than its table says); `tau` also scales azimuth pods' servo lag."""
    hull_changes = {_HULL_FIELD.get(k, k): getattr(vessel.hull, _HULL_FIELD.get(k, k)) * f
                    for k, f in factors.items() if k in HULL_KEYS}
    hull = dataclasses.replace(vessel.hull, **hull_changes)
    thrusters = vessel.thrusters
    if "tau" in factors:
        f = factors["tau"]
        thrusters = tuple(dataclasses.replace(
            t, time_constant_s=t.time_constant_s * f,
            azimuth=None if t.azimuth is None else dataclasses.replace(
                t.azimuth, time_constant_s=min(5.0, t.azimuth.time_constant_s * f))) for t in thrusters)
    return dataclasses.replace(vessel, hull=hull, thrusters=thrusters)


@dataclass(frozen=True)
class PlantExtras:
    """Physics of a real hull that a vessel file's diagonal model leaves out. All zero: the file's own model.

    Coefficients follow Fossen's sign convention (damping and added-mass derivatives usually <= 0).
    """

    y_r: float = 0.0                 # sway force per yaw rate [N s/rad] (linear damping coupling)
    n_v: float = 0.0                 # yaw moment per sway speed [N s] (linear damping coupling)
    y_rdot: float = 0.0              # off-diagonal added mass Y_rdot = N_vdot [kg m]
    x_g_m: float = 0.0               # centre of gravity forward of the reference point [m]
    trim_roll_deg: float = 0.0       # resting roll (starboard down +) and pitch (bow up +) seen by the IMU
    trim_pitch_deg: float = 0.0
    wave_motion: bool = False        # roll and pitch follow the wave slope at the hull (a small boat's motion)
    thrust_scale: Tuple[float, ...] = ()   # per thruster, config order (empty: all 1); 0.9 = 10 % weaker
    force_n: float = 0.0             # constant external force (towed line, wind on a superstructure) [N]
    force_toward_deg: float = 0.0    # the direction it pushes toward, clockwise from north [deg]

    def __post_init__(self):
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            values = value if isinstance(value, tuple) else (value,)
            if not all(isinstance(v, (int, float)) and math.isfinite(v) for v in values):
                raise ValueError(f"plant extra {f.name}: must be finite, got {value!r}")
        if any(s < 0.0 or s > 10.0 for s in self.thrust_scale):
            raise ValueError(f"plant extra thrust_scale: factors must be in [0, 10], got {self.thrust_scale}")
        if self.force_n < 0.0:
            raise ValueError("plant extra force_n: must be >= 0 (give the direction in force_toward_deg)")
        for name in ("trim_roll_deg", "trim_pitch_deg"):
            if abs(getattr(self, name)) > 45.0:
                raise ValueError(f"plant extra {name}: must be within +-45 deg")

    @property
    def is_nominal(self) -> bool:
        return self == PlantExtras()


def realistic_extras(vessel: VesselConfig, weak_thruster: float = 0.9) -> PlantExtras:
    """Coupling scaled to the hull (|N_v| = 10 % of |Y_v| * L/2, |Y_r| the same fraction of |N_r| * 2/L,
    Y_rdot 5 % of sqrt(m22 m33)), CG 3 % of the length aft of the reference point, a resting trim, wave
    motion and the last thruster `weak_thruster` as strong as its table."""
    h = vessel.hull
    half_l = 0.5 * h.length_m
    m22, m33 = h.mass_kg - h.y_vdot, h.iz_kgm2 - h.n_rdot
    scale = [1.0] * len(vessel.thrusters)
    scale[-1] = weak_thruster
    return PlantExtras(y_r=0.1 * h.n_r / half_l, n_v=0.1 * h.y_v * half_l, y_rdot=-0.05 * math.sqrt(m22 * m33),
                       x_g_m=-0.03 * h.length_m, trim_roll_deg=1.5, trim_pitch_deg=-2.0, wave_motion=True,
                       thrust_scale=tuple(scale))


def parse_plant_extras(text: str, n_thrusters: int) -> PlantExtras:
    """`y_r=-2,n_v=-1,y_rdot=-0.5,x_g_m=0.05,trim_roll_deg=2,trim_pitch_deg=-1,wave_motion=1,
    thrust_scale=1:0.9` -> PlantExtras; ValueError naming the bad part."""
    values: dict = {}
    names = {f.name for f in dataclasses.fields(PlantExtras)} - {"force_n", "force_toward_deg"}
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        key, sep, value = part.partition("=")
        key = key.strip()
        if not sep or key not in names:
            raise ValueError(f"plant extra {part!r}: expected KEY=VALUE with KEY one of {', '.join(sorted(names))}")
        try:
            if key == "thrust_scale":
                scale = tuple(float(v) for v in value.split(":"))
                if len(scale) != n_thrusters:
                    raise ValueError(f"plant extra thrust_scale: give {n_thrusters} factors separated by ':'")
                values[key] = scale
            elif key == "wave_motion":
                values[key] = value.strip().lower() in ("1", "true", "yes", "on")
            else:
                values[key] = float(value)
        except ValueError as e:
            if "plant extra" in str(e):
                raise
            raise ValueError(f"plant extra {key}: {value!r} is not a number") from None
    return PlantExtras(**values)


@dataclass(frozen=True)
class PlantSpec:
    """The true boat of a run: a vessel file, the mismatch factors applied to it, and the extras."""

    vessel: VesselConfig                      # the plant's vessel, mismatch already applied
    source: str = ""                          # the plant vessel file (or the autopilot's, when none was given)
    mismatch: dict = field(default_factory=dict)   # resolved factors, key -> factor
    extras: PlantExtras = field(default_factory=PlantExtras)

    @classmethod
    def resolve(cls, autopilot_vessel: VesselConfig, seed: int, plant_vessel: Optional[VesselConfig] = None,
                mismatch: Optional[Mapping[str, float]] = None,
                extras: Optional[PlantExtras] = None, draw: int = 0) -> "PlantSpec":
        """`draw` picks another random combination for the same seed (campaigns of many combinations)."""
        base = plant_vessel or autopilot_vessel
        if len(base.thrusters) != len(autopilot_vessel.thrusters):
            raise ValueError(f"plant vessel {base.name!r} has {len(base.thrusters)} thrusters but the autopilot's "
                             f"{autopilot_vessel.name!r} has {len(autopilot_vessel.thrusters)}")
        pods = [t.azimuth is not None for t in (base.thrusters[0], autopilot_vessel.thrusters[0])]
        if pods[0] != pods[1]:
            raise ValueError(f"plant vessel {base.name!r} has {'azimuth pods' if pods[0] else 'fixed thrusters'} "
                             f"but the autopilot's {autopilot_vessel.name!r} has "
                             f"{'azimuth pods' if pods[1] else 'fixed thrusters'}: the pod angles would be "
                             f"{'never commanded' if pods[0] else 'ignored'}")
        factors = resolve_mismatch(mismatch or {}, seed, draw)
        extras = extras or PlantExtras()
        if extras.thrust_scale and len(extras.thrust_scale) != len(base.thrusters):
            raise ValueError(f"plant extra thrust_scale: give {len(base.thrusters)} factors")
        return cls(vessel=apply_mismatch(base, factors), source=base.source_file or base.name,
                   mismatch=factors, extras=extras)

    def thrust_scale(self) -> Tuple[float, ...]:
        n = len(self.vessel.thrusters)
        per = self.extras.thrust_scale or (1.0,) * n
        return tuple(s * self.mismatch.get("thrust", 1.0) for s in per)

    def describe(self) -> dict:
        """For the run report: which boat the simulator flew."""
        extras = {f.name: getattr(self.extras, f.name) for f in dataclasses.fields(self.extras)
                  if getattr(self.extras, f.name) != f.default}
        if "thrust_scale" in extras:
            extras["thrust_scale"] = list(extras["thrust_scale"])
        return {"vessel": self.vessel.name, "source": self.source,
                "mismatch": {k: round(v, 4) for k, v in sorted(self.mismatch.items())},
                "extras": extras}
