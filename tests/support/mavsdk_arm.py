"""Arming a boat from MAVSDK the way a ground-station user does: retried while the boat refuses (its ESCs still
arming, the EKF not yet converged), up to a deadline."""
from __future__ import annotations

import asyncio
import time


async def arm_when_ready(drone, timeout_s: float = 60.0) -> None:
    """drone.action.arm() retried once a second until accepted; the last ActionError after timeout_s [s]."""
    from mavsdk.action import ActionError
    end = time.monotonic() + timeout_s
    while True:
        try:
            await drone.action.arm()
            return
        except ActionError:
            if time.monotonic() > end:
                raise
            await asyncio.sleep(1.0)
