"""How many vertices a geofence may have: a limit every path checks before any geometry is built (the vocabulary
layer, so the config schema can check it too; autopilot/safety/geofence.py re-exports both names)."""
from __future__ import annotations

from typing import Optional

MAX_FENCE_VERTICES = 2000
"""The most vertices a geofence may have, from any source (mission YAML, .plan, a MAVLink upload, the vessel's
failsafe.geofence.polygon). A lake's shore traced every 5 m round a 10 km lake; ArduPilot keeps fence points in
its small parameter storage (FENCE_TOTAL) and holds far fewer. It bounds what a signed but careless file or
upload can cost: the simple-polygon check of 2,000 vertices takes tens of ms on a Pi, and a MAVLink upload of
2,000 items one request at a time over a 57,600 baud telemetry radio about half a minute."""


def fence_size_problem(count: int, max_vertices: Optional[int] = MAX_FENCE_VERTICES) -> Optional[str]:
    """Why a fence of `count` vertices is refused by size (None: it is not): the text every path shows."""
    if max_vertices is not None and count > max_vertices:
        return (f"{count} vertices is more than the {max_vertices} a geofence may have (MAX_FENCE_VERTICES); "
                f"draw it with fewer points")
    return None
