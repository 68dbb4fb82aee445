"""MAVSDK (its own mavsdk_server, from the wheel) as a ground station flying a mission of its own on one
`autopilot sim --realtime --mavlink udpout:...` process shared by the tests below, in their order: health and
home before arming, a MissionRaw upload that downloads identical, the mission started and flown to its last
waypoint (a parameter set on the way leaves that mission flying), HOLD, RTL at a speed set, and a clear. Each
test asserts what the boat did, as MAVSDK's telemetry shows it."""
from __future__ import annotations

import asyncio
import math
import socket
import time

import mavsdk  # noqa: F401  (the gcs extra, installed by scripts/test.sh: without it this fails, never skips)
import pytest

from tests.support.mavlink_gcs import SimBoat, free_udp_port
from tests.support.mavsdk_arm import arm_when_ready

pytestmark = pytest.mark.slow   # the quick tier leaves this file out (scripts/test.sh --quick)

WALL_TIME_S = 110.0
START = (51.1099101, 17.0598572)       # tests/data/mavlink_pond.yaml's launch point
M_PER_DEG_LAT = 111_320.0
ACCEPT_M = 2.0                         # the pond's acceptance radius
# the mission: three waypoints 20 m apart (north, east of the launch point [m]), flown at 1.5 m/s
LEGS_NE_M = ((20.0, 0.0), (20.0, 20.0), (0.0, 20.0))
CRUISE_MPS = 1.5
MAV_CMD_NAV_WAYPOINT, MAV_CMD_DO_CHANGE_SPEED = 16, 178
FRAME_GLOBAL, FRAME_GLOBAL_RELATIVE_ALT_INT, FRAME_MISSION = 0, 6, 2


def _free_tcp_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _offset(north_m: float, east_m: float) -> tuple:
    lat0, lon0 = START
    return lat0 + north_m / M_PER_DEG_LAT, lon0 + east_m / (M_PER_DEG_LAT * math.cos(math.radians(lat0)))


def _distance_m(lat1, lon1, lat2, lon2) -> float:
    return math.hypot((lat1 - lat2) * M_PER_DEG_LAT, (lon1 - lon2) * M_PER_DEG_LAT * math.cos(math.radians(lat1)))


def _mission_items() -> list:
    from mavsdk.mission_raw import MissionItem

    def item(seq, frame, command, params, lat_lon=(0.0, 0.0)):
        lat, lon = lat_lon
        return MissionItem(seq, frame, command, int(seq == 0), 1, *params, int(round(lat * 1e7)),
                           int(round(lon * 1e7)), 0.0, 0)
    items = [item(0, FRAME_GLOBAL, MAV_CMD_NAV_WAYPOINT, (0, 0, 0, 0), START),
             item(1, FRAME_MISSION, MAV_CMD_DO_CHANGE_SPEED, (1, CRUISE_MPS, -1, 0))]
    for n, e in LEGS_NE_M:
        items.append(item(len(items), FRAME_GLOBAL_RELATIVE_ALT_INT, MAV_CMD_NAV_WAYPOINT, (0, ACCEPT_M, 0, 0),
                          _offset(n, e)))
    return items


def _as_tuple(it) -> tuple:
    return (it.seq, it.frame, it.command, it.autocontinue, round(it.param1, 4), round(it.param2, 4),
            round(it.param3, 4), round(it.param4, 4), it.x, it.y, round(it.z, 3), it.mission_type)


class Station:
    """One MAVSDK System on its own event loop, kept for the module; `run(coro, timeout_s)` runs one step."""

    def __init__(self, port: int):
        self.loop = asyncio.new_event_loop()
        self.port = port
        self.drone = None
        self.progress: list = []       # every MissionProgress MAVSDK gave (it gives one when the item changes)
        self._watch = None

    def run(self, coro, timeout_s: float):
        return self.loop.run_until_complete(asyncio.wait_for(coro, timeout_s))

    async def connect(self) -> None:
        from mavsdk import System
        self.drone = System(port=_free_tcp_port())      # its own mavsdk_server: another one may run here
        await self.drone.connect(system_address=f"udpin://127.0.0.1:{self.port}")
        async for state in self.drone.core.connection_state():
            if state.is_connected:
                break
        self._watch = asyncio.ensure_future(self._keep_progress())

    async def _keep_progress(self) -> None:
        async for p in self.drone.mission_raw.mission_progress():
            self.progress.append((p.current, p.total))

    async def first(self, aiter, timeout_s: float, what: str):
        async def get():
            async for item in aiter:
                return item
        try:
            return await asyncio.wait_for(get(), timeout_s)
        except asyncio.TimeoutError:
            pytest.fail(f"MAVSDK gave no {what} within {timeout_s:g} s")

    async def until(self, aiter, cond, timeout_s: float, what: str):
        """The first item of `aiter` for which cond holds; fails, naming `what` and the last item, otherwise."""
        last = None

        async def get():
            nonlocal last
            async for item in aiter:
                last = item
                if cond(item):
                    return item
        try:
            return await asyncio.wait_for(get(), timeout_s)
        except asyncio.TimeoutError:
            pytest.fail(f"{what} not within {timeout_s:g} s (last seen: {last})")

    async def position(self):
        return await self.first(self.drone.telemetry.position(), 10.0, "position")

    async def mode(self):
        return await self.first(self.drone.telemetry.flight_mode(), 10.0, "flight mode")

    def close(self) -> None:
        if self._watch is not None:
            self._watch.cancel()
            self.loop.run_until_complete(asyncio.gather(self._watch, return_exceptions=True))
        stop = getattr(self.drone, "_stop_mavsdk_server", None)
        if stop is not None:
            try:
                stop()
            except Exception:
                pass
        self.drone = None                 # its __del__ (stopping the server again) now, not at interpreter exit
        self.loop.close()


@pytest.fixture(scope="module")
def station(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("mavsdk-mission")
    port = free_udp_port()
    sim = SimBoat(tmp, port)
    st = Station(port)
    try:
        st.run(st.connect(), 60.0)
        yield st
    finally:
        st.close()
        sim.stop()
        assert "Traceback" not in sim.out_path.read_text(), sim.out_path.read_text()[-3000:]


def test_health_and_home_are_good_before_arming(station):
    async def look():
        drone = station.drone
        health = await station.until(drone.telemetry.health(),
                                     lambda h: h.is_global_position_ok and h.is_local_position_ok
                                     and h.is_home_position_ok, 60.0, "global, local and home position ok")
        armed = await station.first(drone.telemetry.armed(), 10.0, "armed state")
        home = await station.first(drone.telemetry.home(), 20.0, "home")
        return health, armed, home
    health, armed, home = station.run(look(), 90.0)
    assert armed is False                                       # all of it before any arm
    assert _distance_m(home.latitude_deg, home.longitude_deg, *START) < 3.0, home


def test_a_mission_uploaded_with_mission_raw_downloads_identical(station):
    async def round_trip():
        drone = station.drone
        await drone.mission_raw.upload_mission(_mission_items())
        return await drone.mission_raw.download_mission()
    back = station.run(round_trip(), 60.0)
    assert [_as_tuple(it) for it in back] == [_as_tuple(it) for it in _mission_items()]


def test_a_parameter_set_while_the_mission_flies_leaves_that_mission_flying(station):
    """Started with MAVSDK (AUTO); WP_RADIUS set on the way to waypoint 2: the boat flies on to the uploaded
    waypoint 2, the progress keeps the uploaded numbering, and a download is still the upload."""
    from mavsdk.telemetry import FlightMode

    async def fly():
        drone = station.drone
        await arm_when_ready(drone)        # the ESCs' arming time and the EKF come first
        await drone.mission_raw.start_mission()
        mode = await station.until(drone.telemetry.flight_mode(), lambda m: m == FlightMode.MISSION, 10.0,
                                   "MISSION (Rover's AUTO) after start_mission")
        total = len(_mission_items()) - 1
        # heading for the second waypoint (item 3): waypoint 1 reached
        end = time.monotonic() + 60.0
        while not (station.progress and station.progress[-1][0] >= 3):
            assert time.monotonic() < end, f"progress never at item 3 (the first waypoint reached): {station.progress}"
            await asyncio.sleep(0.2)
        seen = len(station.progress)
        await drone.param.set_param_float("WP_RADIUS", 2.5)
        radius = await drone.param.get_param_float("WP_RADIUS")
        back = await drone.mission_raw.download_mission()
        wp2 = _offset(*LEGS_NE_M[1])
        start = await station.position()
        closest = await station.until(drone.telemetry.position(),
                                      lambda p: _distance_m(p.latitude_deg, p.longitude_deg, *wp2) <= 3.0, 40.0,
                                      "the boat within 3 m of the uploaded waypoint 2")
        return mode, total, radius, station.progress[seen - 1:], back, start, closest
    mode, total, radius, after, back, start, closest = station.run(fly(), 180.0)
    assert radius == pytest.approx(2.5)
    # from the set on: the uploaded numbering (MAVSDK's total as before it), item 3 until waypoint 2 is reached
    n = total + 1                                                      # MAVSDK counts home too
    assert after[0] == (3, n) and all(p in ((3, n), (4, n)) for p in after), after
    assert [_as_tuple(it) for it in back] == [_as_tuple(it) for it in _mission_items()]
    assert _distance_m(start.latitude_deg, start.longitude_deg, *_offset(*LEGS_NE_M[1])) > 5.0, start


def test_the_mission_runs_to_its_last_waypoint_and_is_finished(station):
    async def finish():
        drone = station.drone
        total = len(_mission_items()) - 1
        finished = False
        end = time.monotonic() + 60.0
        while not finished and time.monotonic() < end:
            finished = await drone.mission_raw.is_mission_finished()
            await asyncio.sleep(0.5)
        pos = await station.position()
        mode = await station.mode()
        return total, finished, pos, mode
    total, finished, pos, mode = station.run(finish(), 120.0)
    from mavsdk.telemetry import FlightMode
    # MAVSDK counts the items with home (5) and shows current == total once the last one is done
    assert station.progress[-1] == (total + 1, total + 1), station.progress
    assert finished, station.progress
    last = _offset(*LEGS_NE_M[-1])
    assert _distance_m(pos.latitude_deg, pos.longitude_deg, *last) <= ACCEPT_M + 2.0, pos
    assert mode == FlightMode.HOLD                                 # the pond's on_complete: hold


def test_hold_stops_the_boat_near_where_it_was(station):
    """The mission again from waypoint 1 (25 m away); under way, action.hold(): the boat stops near where it was
    and MAVSDK shows HOLD."""
    from mavsdk.telemetry import FlightMode

    async def hold():
        drone = station.drone
        await drone.mission_raw.set_current_mission_item(2)
        await drone.mission_raw.start_mission()
        await station.until(drone.telemetry.flight_mode(), lambda m: m == FlightMode.MISSION, 10.0, "MISSION")
        await station.until(drone.telemetry.velocity_ned(), lambda v: math.hypot(v.north_m_s, v.east_m_s) > 1.0,
                            30.0, "the boat under way at over 1 m/s")
        at = await station.position()
        await drone.action.hold()
        mode = await station.until(drone.telemetry.flight_mode(), lambda m: m == FlightMode.HOLD, 10.0, "HOLD")
        await station.until(drone.telemetry.velocity_ned(), lambda v: math.hypot(v.north_m_s, v.east_m_s) < 0.2,
                            30.0, "the boat stopped (under 0.2 m/s)")
        await asyncio.sleep(3.0)
        stopped = await station.position()
        return at, mode, stopped
    at, mode, stopped = station.run(hold(), 90.0)
    assert mode == FlightMode.HOLD
    # drifting to a stop from about 1.5 m/s, with nothing steering it back: within a few boat lengths
    assert _distance_m(at.latitude_deg, at.longitude_deg, stopped.latitude_deg, stopped.longitude_deg) < 8.0


def test_return_to_launch_takes_the_boat_back_toward_home_at_the_speed_set(station):
    """action.return_to_launch(), then action.set_current_speed(0.8) (MAV_CMD_DO_CHANGE_SPEED): the boat heads
    home at 0.8 m/s instead of the mission's 1.5."""
    from mavsdk.telemetry import FlightMode

    async def rtl():
        drone = station.drone
        home = await station.first(drone.telemetry.home(), 20.0, "home")

        def to_home_m(p) -> float:
            return _distance_m(p.latitude_deg, p.longitude_deg, home.latitude_deg, home.longitude_deg)
        d0 = to_home_m(await station.position())
        await drone.action.return_to_launch()
        mode = await station.until(drone.telemetry.flight_mode(), lambda m: m == FlightMode.RETURN_TO_LAUNCH,
                                   10.0, "RETURN_TO_LAUNCH")
        await drone.action.set_current_speed(0.8)
        await station.until(drone.telemetry.position(), lambda p: to_home_m(p) < d0 - 4.0, 40.0,
                            "the boat 4 m closer to home")
        speeds = []
        end = time.monotonic() + 40.0
        async for p in drone.telemetry.position():                  # from 4 to 8 m closer: its speed home
            v = await station.first(drone.telemetry.velocity_ned(), 5.0, "velocity")
            speeds.append(math.hypot(v.north_m_s, v.east_m_s))
            if to_home_m(p) < d0 - 8.0 or time.monotonic() > end:
                break
        return d0, mode, to_home_m(await station.position()), speeds
    d0, mode, d1, speeds = station.run(rtl(), 100.0)
    assert d0 > 12.0                                               # it had a way to go
    assert mode == FlightMode.RETURN_TO_LAUNCH
    assert d1 < d0 - 8.0, (d0, d1)
    assert sum(speeds) / len(speeds) == pytest.approx(0.8, abs=0.2), speeds


def test_a_cleared_mission_leaves_the_boat_holding_with_nothing_to_download(station):
    from mavsdk.mission_raw import MissionRawError
    from mavsdk.telemetry import FlightMode

    async def clear():
        drone = station.drone
        await drone.mission_raw.upload_mission(_mission_items())
        await drone.mission_raw.start_mission()
        await station.until(drone.telemetry.flight_mode(), lambda m: m == FlightMode.MISSION, 10.0, "MISSION")
        await drone.mission_raw.clear_mission()
        mode = await station.until(drone.telemetry.flight_mode(), lambda m: m == FlightMode.HOLD, 10.0,
                                   "HOLD after the clear")
        back = await drone.mission_raw.download_mission()
        try:
            await drone.mission_raw.start_mission()
            restarted = True
        except MissionRawError:
            restarted = False
        await asyncio.sleep(2.0)
        mode_after = await station.mode()
        return mode, back, restarted, mode_after
    mode, back, restarted, mode_after = station.run(clear(), 60.0)
    assert mode == FlightMode.HOLD
    assert [it for it in back if it.seq > 0] == [], back            # home alone (item 0), as ArduPilot downloads
    assert not restarted and mode_after == FlightMode.HOLD           # AUTO refused: nothing to fly
