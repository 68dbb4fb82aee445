"""A YAML file of navigation-filter tuning (estimation.navekf.tuning.EkfTuning fields), as `autopilot log replay
--ekf-tuning FILE` takes it:

    # only what differs from the run's own tuning; units as in EkfTuning (SI: m, s, rad)
    gps_gate: 9.21
    heading_floor_rad: 0.03
    adaptive_noise: false

Validated like every config file: an unknown key, a value of the wrong type, a non-finite or negative number
is a ConfigError naming the file, the key and the reason.
"""
from __future__ import annotations

import dataclasses
import math
import os
from typing import TYPE_CHECKING, Dict, Tuple, Union

from autopilot.vocab.schema import ConfigError

if TYPE_CHECKING:
    from estimation.navekf.tuning import EkfTuning

# fields that divide or scale something: zero is no tuning but a crash or a frozen filter
_POSITIVE = {"attitude_time_constant_s", "trim_time_constant_s", "output_smoothing_s", "heading_smoothing_s",
             "adaptive_max_scale", "gps_gate", "gps_vel_gate", "mag_gate", "unknown_thrust_factor",
             "output_max_rate_mps", "output_max_rate_rps"}
_TILT_REFERENCES = ("auto", "absolute", "dynamic")


def load_ekf_tuning(path: Union[str, "os.PathLike[str]"], base: EkfTuning
                    ) -> Tuple[EkfTuning, Dict[str, Tuple[object, object]]]:
    """(base with the file's fields replaced, {field: (old, new)} for the values that changed)."""
    from autopilot.vocab.config import read_yaml
    data = read_yaml(path)
    fields = {f.name: f for f in dataclasses.fields(base)}
    values = {}
    for key, value in data.items():
        if key not in fields:
            raise ConfigError(path, str(key), "not an EKF tuning field; known: " + ", ".join(sorted(fields)))
        values[key] = _checked(path, key, value, getattr(base, key))
    tuning = dataclasses.replace(base, **values)
    changed = {k: (getattr(base, k), v) for k, v in values.items() if getattr(base, k) != v}
    return tuning, changed


def _checked(path, key: str, value, current):
    """The value, checked against the type of the field's current value."""
    if isinstance(current, bool):
        if not isinstance(value, bool):
            raise ConfigError(path, key, f"must be true or false, got {value!r}")
        return value
    if isinstance(current, int):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ConfigError(path, key, f"must be a whole number of at least 1, got {value!r}")
        return value
    if isinstance(current, float):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(path, key, f"must be a number, got {value!r}")
        value = float(value)
        if not math.isfinite(value):
            raise ConfigError(path, key, f"must be a finite number, got {value}")
        if key in _POSITIVE and not value > 0:
            raise ConfigError(path, key, f"must be greater than 0, got {value:g}")
        if value < 0:
            raise ConfigError(path, key, f"must be at least 0, got {value:g}")
        return value
    if key == "tilt_reference":
        if value not in _TILT_REFERENCES:
            raise ConfigError(path, key, f"must be one of {', '.join(_TILT_REFERENCES)}, got {value!r}")
        return value
    raise ConfigError(path, key, "cannot be set from a file")
