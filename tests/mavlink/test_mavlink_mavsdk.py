"""MAVSDK as a real companion-computer client (its own mavsdk_server, from the wheel) against `autopilot sim
config/missions/demo.yaml --realtime --mavlink udpout:127.0.0.1:PORT` in its own process, on a plant unlike its
vessel file in wind and current: action.goto_location takes the boat to the point in GUIDED (MAVSDK shows
Rover's GUIDED as OFFBOARD), and offboard velocity setpoints drive it, until they stop."""
from __future__ import annotations

import asyncio
import math
import socket
import time

import mavsdk  # noqa: F401  (the gcs extra, installed by scripts/test.sh: without it this fails, never skips)
import pytest

from tests.support.mavlink_gcs import SimBoat, free_udp_port
from tests.support.mavsdk_arm import arm_when_ready
from tests.support.paths import REPO

pytestmark = pytest.mark.slow   # the quick tier leaves this file out (scripts/test.sh --quick)

ACCEPT_M = 2.0                         # config/missions/demo.yaml's acceptance radius
M_PER_DEG_LAT = 111_320.0
ROUGH = ("--wind", "3,60", "--current", "0.15,200", "--mismatch", "damping=0.7,thrust=0.85,iz=1.3")


def _free_tcp_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _distance_m(lat1, lon1, lat2, lon2):
    return math.hypot((lat1 - lat2) * M_PER_DEG_LAT, (lon1 - lon2) * M_PER_DEG_LAT * math.cos(math.radians(lat1)))


async def _first(aiter, timeout_s):
    async def get():
        async for item in aiter:
            return item
    return await asyncio.wait_for(get(), timeout_s)


async def _fly(port: int) -> dict:
    from mavsdk import System
    from mavsdk.offboard import VelocityNedYaw
    from mavsdk.telemetry import FlightMode

    seen: dict = {}
    drone = System(port=_free_tcp_port())            # its own mavsdk_server: another one may run on this machine
    await drone.connect(system_address=f"udpin://127.0.0.1:{port}")
    async for state in drone.core.connection_state():
        if state.is_connected:
            break
    await arm_when_ready(drone)        # the ESCs' arming time and the EKF come first
    start = await _first(drone.telemetry.position(), 10.0)
    lat = start.latitude_deg + 12.0 / M_PER_DEG_LAT          # 12 m north, 8 m west of where it is
    lon = start.longitude_deg - 8.0 / (M_PER_DEG_LAT * math.cos(math.radians(start.latitude_deg)))
    await drone.action.goto_location(lat, lon, start.absolute_altitude_m, 0.0)
    seen["mode_after_goto"] = await _first(drone.telemetry.flight_mode(), 10.0)
    closest, end = math.inf, time.monotonic() + 60.0
    async for pos in drone.telemetry.position():
        closest = min(closest, _distance_m(pos.latitude_deg, pos.longitude_deg, lat, lon))
        if closest <= ACCEPT_M or time.monotonic() > end:
            break
    seen["closest_m"] = closest
    seen["mode_at_point"] = await _first(drone.telemetry.flight_mode(), 10.0)

    # offboard: 0.7 m/s due east over ground (bow east), streamed by MAVSDK, in GUIDED
    await drone.offboard.set_velocity_ned(VelocityNedYaw(0.0, 0.7, 0.0, 90.0))
    await drone.offboard.start()
    samples, end = [], time.monotonic() + 14.0
    async for v in drone.telemetry.velocity_ned():
        left = end - time.monotonic()
        if left < 6.0:
            samples.append((v.north_m_s, v.east_m_s))
        if left < 0.0:
            break
    seen["offboard_mode"] = await _first(drone.telemetry.flight_mode(), 10.0)
    seen["velocity_ne"] = (sum(s[0] for s in samples) / len(samples), sum(s[1] for s in samples) / len(samples))
    await drone.offboard.stop()
    seen["offboard"] = FlightMode.OFFBOARD
    return seen


def test_mavsdk_goto_location_and_offboard_velocity_fly_the_boat_in_guided(tmp_path):
    port = free_udp_port()
    sim = SimBoat(tmp_path, port, *ROUGH, mission=REPO / "config" / "missions" / "demo.yaml")
    try:
        seen = asyncio.run(asyncio.wait_for(_fly(port), 240.0))
    finally:
        sim.stop()
    out = sim.out_path.read_text()
    assert "Traceback" not in out
    assert seen["mode_after_goto"] == seen["offboard"], seen              # Rover's GUIDED, as MAVSDK names it
    assert seen["closest_m"] <= ACCEPT_M, seen
    assert seen["offboard_mode"] == seen["offboard"], seen
    vn, ve = seen["velocity_ne"]
    assert abs(ve - 0.7) < 0.2 and abs(vn) < 0.2, seen
