"""The one angle-wrapping function, used everywhere (controllers, guidance, EKF residuals)."""
from __future__ import annotations

import math

import numpy as np


def wrap_pi(angle_rad):
    """Wrap an angle (scalar or array) to [-pi, pi). Inputs of any magnitude are accepted."""
    if isinstance(angle_rad, np.ndarray):
        return (angle_rad + np.pi) % (2.0 * np.pi) - np.pi
    return (float(angle_rad) + math.pi) % (2.0 * math.pi) - math.pi
