"""The parameters of an MMG-type twin-propeller catamaran (hil.sim.mmg_plant), read from a YAML file.

`load_mmg_params(path)` returns MmgParams or raises autopilot.vocab.schema.ConfigError naming the file, the key
(dotted, e.g. `hull.y_v`) and the reason: a missing file, a missing or unknown key, a value that is not a finite
number, or one outside its range (masses, lengths, diameters, time constants and shaft speeds > 0; the
propeller's K_T must be positive at J = 0; the pulse range must hold the neutral pulse and its dead band).
Units are in the key names; hull derivatives are non-dimensional (see the YAML's header).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Mapping, Tuple

import yaml

from autopilot.vocab.schema import ConfigError

PLANTS_DIR = Path(__file__).resolve().parent / "plants"
HULL_KEYS = ("r_0", "x_vv", "x_vr", "x_rr", "x_vvvv", "y_v", "y_r", "y_vvv", "y_vvr", "y_vrr", "y_rrr",
             "n_v", "n_r", "n_vvv", "n_vvr", "n_vrr", "n_rrr")


@dataclass(frozen=True)
class Geometry:
    length_m: float
    draft_m: float
    beam_m: float
    hull_offset_m: float


@dataclass(frozen=True)
class AddedMass:
    m_x: float
    m_y: float
    j_z: float


@dataclass(frozen=True)
class LowSpeed:
    blend_low_mps: float
    blend_high_mps: float
    cross_flow_cd: float
    x_u: float
    y_v: float
    n_r: float
    r_prime_max: float
    v_prime_max: float
    astern_resistance_factor: float


@dataclass(frozen=True)
class Propellers:
    diameter_m: float
    x_m: float
    y_m: Tuple[float, ...]
    k0: float
    k1: float
    k2: float
    reverse_kt_factor: float
    wake_fraction: float
    thrust_deduction: float
    max_shaft_rps: float
    motor_time_constant_s: float


@dataclass(frozen=True)
class Esc:
    pulse_min_us: float
    pulse_neutral_us: float
    pulse_max_us: float
    dead_band_us: float


@dataclass(frozen=True)
class Wind:
    area_frontal_m2: float
    area_lateral_m2: float
    cx: float
    cy: float
    cn: float
    air_density_kgpm3: float


@dataclass(frozen=True)
class MmgParams:
    name: str
    source: str
    geometry: Geometry
    rho_kgpm3: float
    mass_kg: float
    iz_kgm2: float
    added_mass: AddedMass
    hull: Mapping[str, float]
    low_speed: LowSpeed
    propellers: Propellers
    esc: Esc
    wind: Wind


def _number(file, key, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ConfigError(file, key, f"must be a finite number, got {value!r}")
    return float(value)


def _section(file, data: dict, key: str, cls):
    raw = data.get(key)
    if not isinstance(raw, dict):
        raise ConfigError(file, key, "missing section (a mapping)")
    names = [f.name for f in fields(cls)]
    unknown = sorted(set(raw) - set(names))
    if unknown:
        raise ConfigError(file, f"{key}.{unknown[0]}", f"unknown key (expected one of {', '.join(names)})")
    values: dict = {}
    for name in names:
        if name not in raw:
            raise ConfigError(file, f"{key}.{name}", "missing")
        if name == "y_m":
            ys = raw[name]
            if not isinstance(ys, list) or len(ys) != 2:
                raise ConfigError(file, f"{key}.{name}", "expected a list of two offsets [port, starboard]")
            values[name] = tuple(_number(file, f"{key}.{name}", y) for y in ys)
        else:
            values[name] = _number(file, f"{key}.{name}", raw[name])
    return cls(**values)


def _positive(file, key: str, value: float) -> None:
    if value <= 0.0:
        raise ConfigError(file, key, f"must be > 0, got {value:g}")


def load_mmg_params(path) -> MmgParams:
    """Read and check an MMG catamaran parameter file (see the module docstring for what is refused)."""
    file = Path(path)
    try:
        data = yaml.safe_load(file.read_text())
    except OSError as e:
        raise ConfigError(file, "", f"cannot read: {e.strerror or e}") from None
    except yaml.YAMLError as e:
        raise ConfigError(file, "", f"not valid YAML: {e}") from None
    if not isinstance(data, dict):
        raise ConfigError(file, "", "expected a mapping of sections")
    known = {"name", "geometry", "rho_kgpm3", "mass_kg", "iz_kgm2", "added_mass", "hull", "low_speed",
             "propellers", "esc", "wind"}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ConfigError(file, unknown[0], "unknown key")
    hull_raw = data.get("hull")
    if not isinstance(hull_raw, dict):
        raise ConfigError(file, "hull", "missing section (a mapping)")
    extra = sorted(set(hull_raw) - set(HULL_KEYS))
    if extra:
        raise ConfigError(file, f"hull.{extra[0]}", f"unknown derivative (expected {', '.join(HULL_KEYS)})")
    hull = {}
    for k in HULL_KEYS:
        if k not in hull_raw:
            raise ConfigError(file, f"hull.{k}", "missing")
        hull[k] = _number(file, f"hull.{k}", hull_raw[k])
    for k in ("rho_kgpm3", "mass_kg", "iz_kgm2"):
        if k not in data:
            raise ConfigError(file, k, "missing")
    p = MmgParams(name=str(data.get("name") or file.stem), source=str(file),
                  geometry=_section(file, data, "geometry", Geometry),
                  rho_kgpm3=_number(file, "rho_kgpm3", data["rho_kgpm3"]),
                  mass_kg=_number(file, "mass_kg", data["mass_kg"]),
                  iz_kgm2=_number(file, "iz_kgm2", data["iz_kgm2"]),
                  added_mass=_section(file, data, "added_mass", AddedMass), hull=hull,
                  low_speed=_section(file, data, "low_speed", LowSpeed),
                  propellers=_section(file, data, "propellers", Propellers),
                  esc=_section(file, data, "esc", Esc), wind=_section(file, data, "wind", Wind))
    for key, value in (("rho_kgpm3", p.rho_kgpm3), ("mass_kg", p.mass_kg), ("iz_kgm2", p.iz_kgm2),
                       ("geometry.length_m", p.geometry.length_m), ("geometry.draft_m", p.geometry.draft_m),
                       ("geometry.beam_m", p.geometry.beam_m),
                       ("propellers.diameter_m", p.propellers.diameter_m),
                       ("propellers.max_shaft_rps", p.propellers.max_shaft_rps),
                       ("propellers.motor_time_constant_s", p.propellers.motor_time_constant_s),
                       ("propellers.k0", p.propellers.k0),
                       ("low_speed.blend_high_mps", p.low_speed.blend_high_mps),
                       ("low_speed.r_prime_max", p.low_speed.r_prime_max),
                       ("low_speed.v_prime_max", p.low_speed.v_prime_max),
                       ("low_speed.astern_resistance_factor", p.low_speed.astern_resistance_factor)):
        _positive(file, key, value)
    for key, value in (("added_mass.m_x", p.added_mass.m_x), ("added_mass.m_y", p.added_mass.m_y),
                       ("added_mass.j_z", p.added_mass.j_z), ("low_speed.cross_flow_cd", p.low_speed.cross_flow_cd),
                       ("low_speed.blend_low_mps", p.low_speed.blend_low_mps),
                       ("propellers.reverse_kt_factor", p.propellers.reverse_kt_factor)):
        if value < 0.0:
            raise ConfigError(file, key, f"must be >= 0, got {value:g}")
    for key, value in (("low_speed.x_u", p.low_speed.x_u), ("low_speed.y_v", p.low_speed.y_v),
                       ("low_speed.n_r", p.low_speed.n_r)):
        if value > 0.0:
            raise ConfigError(file, key, f"damping must be <= 0 (Fossen's sign), got {value:g}")
    if not p.low_speed.blend_low_mps < p.low_speed.blend_high_mps:
        raise ConfigError(file, "low_speed.blend_low_mps", "must be below blend_high_mps")
    for key, value in (("propellers.wake_fraction", p.propellers.wake_fraction),
                       ("propellers.thrust_deduction", p.propellers.thrust_deduction)):
        if not 0.0 <= value < 1.0:
            raise ConfigError(file, key, f"must be in [0, 1), got {value:g}")
    esc = p.esc
    if not (esc.pulse_min_us < esc.pulse_neutral_us - esc.dead_band_us
            <= esc.pulse_neutral_us + esc.dead_band_us < esc.pulse_max_us):
        raise ConfigError(file, "esc", "need pulse_min_us < neutral - dead_band_us <= neutral + dead_band_us "
                                       "< pulse_max_us")
    return p


def plant_file(name: str) -> Path:
    """The parameter file of a named plant model shipped in hil/sim/plants/ ("mmg-catamaran" ->
    mmg_catamaran.yaml)."""
    return PLANTS_DIR / (name.replace("-", "_") + ".yaml")
