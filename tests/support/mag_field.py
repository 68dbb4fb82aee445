"""The earth field a magnetometer reads in the body frame at a heading, from the vessel file's field."""
from __future__ import annotations

import math


def _field_t(vessel, heading_rad):
    """The Earth's field in FRD on a level boat at a true heading (no iron)."""
    mag = vessel.sensors.mag
    incl = math.radians(mag.inclination_deg)
    h, z = mag.field_t * math.cos(incl), mag.field_t * math.sin(incl)
    psi_m = heading_rad - math.radians(mag.declination_deg)
    return (h * math.cos(psi_m), -h * math.sin(psi_m), z)
