"""GUIDED in the simulator, closed through the EKF, on a plant unlike its vessel file, in wind and current: a
position target is reached and held, a velocity target is flown and goes neutral when it stops coming, the
geofence still acts, and bad targets are refused with the reason."""
from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from autopilot.commands.desk import OperatorDesk
from autopilot.vocab.config import CONFIG_DIR, load_mission, load_vessel
from hil.sim.environment import EnvironmentConfig
from hil.sim.plant_spec import PlantSpec
from hil.sim.runner import SimOptions, run_sim

WINDY = EnvironmentConfig(wind_speed_mps=3.0, wind_from_deg=60.0, current_speed_mps=0.15, current_toward_deg=200.0)
MISMATCH = {"damping": 0.7, "iz": 1.3, "thrust": 0.85}


def _fly(script, duration_s, env=WINDY, mission=None, vessel_name="foka", mismatch=MISMATCH):
    """Fly GUIDED with `script(t, autopilot, desk)` called each cycle once armed; returns (result, samples) with
    samples (t, true north, true east, true surge, mode, armed, estimated north, east)."""
    vessel = load_vessel(vessel_name)
    mission = mission or load_mission(CONFIG_DIR / "missions" / "demo.yaml")
    seen: list = []
    desks: dict = {}

    def operator(t, ap, truth):
        desk = desks.get("desk")
        if desk is None:
            desk = desks["desk"] = OperatorDesk(ap, vessel, lambda: desks["t"])
        desks["t"] = t
        if ap.armed:
            script(t, ap, desk)
        if truth is not None:
            n, e = truth.north_m, truth.east_m
            nav = ap.nav
            seen.append((t, n, e, truth.surge_mps, ap.mode.name, ap.armed,
                         nav.north_m if nav else math.nan, nav.east_m if nav else math.nan))

    spec = PlantSpec.resolve(vessel, 1, mismatch=mismatch)
    res = run_sim(vessel, mission, SimOptions(seed=1, env=env, duration_s=duration_s, initial_mode="GUIDED",
                                              on_cycle=operator, plant_spec=spec, devices="typed"))
    return res, seen, desks["desk"]


@pytest.mark.slow
def test_a_position_target_is_reached_within_the_acceptance_radius_and_held_there_in_wind_and_current():
    mission = load_mission(CONFIG_DIR / "missions" / "demo.yaml")
    answers = []
    target: dict = {}

    def script(t, ap, desk):
        if not answers and ap.nav is not None and ap.nav.valid and t > 5.0:
            # 40 m north-east of where the boat is: nowhere near the mission's own waypoints
            target["ne"] = (ap.nav.north_m + 28.0, ap.nav.east_m + 28.0)
            answers.append(desk.goto(*target["ne"], origin="test"))

    res, seen, _ = _fly(script, 140.0, mission=mission)
    assert answers and answers[0].ok, answers
    n_t, e_t = target["ne"]
    arr = np.array([(t, n, e) for t, n, e, u, mode, armed, *_ in seen if armed and mode == "GUIDED"])
    t, n, e = arr.T
    dist = np.hypot(n - n_t, e - e_t)
    reached = np.flatnonzero(dist <= mission.acceptance_radius_m)
    assert len(reached), f"closest {dist.min():.1f} m"
    assert t[reached[0]] < 100.0, t[reached[0]]
    # then it keeps station at the target, against the wind and the current (LOITER's radius and some)
    after = dist[t > t[reached[0]] + 15.0]
    assert len(after) and after.max() < mission.loiter_radius_m + mission.acceptance_radius_m, after.max()
    assert any("target" in ev.message and "reached" in ev.message for ev in res.events)


def test_with_no_target_guided_keeps_station_where_it_was_armed():
    res, seen, _ = _fly(lambda t, ap, desk: None, 60.0)
    arr = np.array([(t, n, e) for t, n, e, u, mode, armed, *_ in seen if armed and mode == "GUIDED"])
    t, n, e = arr.T
    drift = np.hypot(n - n[0], e - e[0])
    # wind and current alone would carry it tens of metres in a minute; station keeping holds it near
    assert drift[t > t[0] + 20.0].max() < 6.0, drift.max()


def test_a_velocity_target_is_flown_and_goes_neutral_after_the_velocity_timeout():
    vessel = load_vessel("foka")
    timeout = vessel.failsafe.manual.timeout_s

    def script(t, ap, desk):
        if t < 40.0:
            desk.guided_velocity("ground", 0.0, 0.8, "test")      # due east at 0.8 m/s over ground

    res, seen, _ = _fly(script, 60.0, env=EnvironmentConfig())
    arr = np.array([(t, n, e, u) for t, n, e, u, mode, armed, *_ in seen if armed and mode == "GUIDED"])
    t, n, e, u = arr.T
    run = (t > 25.0) & (t < 40.0)
    ve = np.gradient(e[run], t[run])
    vn = np.gradient(n[run], t[run])
    assert abs(np.mean(ve) - 0.8) < 0.15 and abs(np.mean(vn)) < 0.15, (np.mean(vn), np.mean(ve))
    notices = [ev for ev in res.events if "no GUIDED velocity command" in ev.message]
    assert notices and 40.0 < notices[0].time_s <= 40.0 + timeout + 0.2, [(ev.time_s, ev.message) for ev in notices]
    # neutral: the thrusters stop and the boat slows
    cycles = res.trace
    tt, thrust = cycles["t"], np.abs(res.thrust_n).sum(axis=1)
    assert thrust[(tt > 40.0 + timeout + 0.5)].max() == 0.0
    assert np.mean(u[t > 55.0]) < 0.5 * np.mean(u[run])


def _fenced_mission(half_m=40.0):
    """demo.yaml's launch point in a square fence `half_m` [m] each side of it, one waypoint near it."""
    from autopilot.guidance.path_following import mission_frame, point_to_ned
    from autopilot.vocab.config import AnchorConfig, PointConfig
    mission = load_mission(CONFIG_DIR / "missions" / "demo.yaml")
    assert mission.start is not None
    frame = mission_frame(mission)
    n0, e0 = point_to_ned(mission.start.point, frame)
    corners = [(-1, -1), (-1, 1), (1, 1), (1, -1)]
    fence = tuple(PointConfig(north_m=n0 + a * half_m, east_m=e0 + b * half_m) for a, b in corners)
    return dataclasses.replace(mission, geofence=fence, waypoints=(PointConfig(north_m=n0 + 5.0, east_m=e0),),
                               anchor=AnchorConfig(lat_deg=frame.origin_lat_deg, lon_deg=frame.origin_lon_deg))


def test_the_geofence_acts_in_guided_and_targets_outside_it_are_refused():
    mission = _fenced_mission()
    answers: dict = {}

    def script(t, ap, desk):
        nav = ap.nav
        if "outside" not in answers and nav is not None and nav.valid and t > 5.0:
            answers["nan"] = desk.goto(math.nan, 0.0, "test")
            answers["outside"] = desk.goto(nav.north_m + 2000.0, nav.east_m, "test")
            # a ground velocity that runs out of the fence: the failsafe must stop it as in AUTO
        if "outside" in answers and t > 8.0:
            desk.guided_velocity("heading", math.radians(180.0), 1.2, "test")

    res, seen, _ = _fly(script, 120.0, env=EnvironmentConfig(), mission=mission)
    assert not answers["nan"].ok and "finite" in answers["nan"].text, answers["nan"]
    assert not answers["outside"].ok and "geofence" in answers["outside"].text, answers["outside"]
    fence_events = [ev for ev in res.events if ev.kind == "failsafe" and ev.failsafe == "geofence"]
    assert fence_events, [ev.message for ev in res.events][-10:]
    modes_after = [mode for t, n, e, u, mode, armed, *_ in seen if t > fence_events[0].time_s + 1.0]
    assert modes_after and "GUIDED" not in modes_after[-1:], modes_after[-1:]
    # it acted before the boat crossed: the south edge is never passed
    south = min(p.north_m for p in mission.geofence)
    assert min(n for t, n, *_ in seen) > south, (min(n for t, n, *_ in seen), south)



def test_text_commands_and_bad_targets_get_a_clear_refusal_never_a_traceback():
    said: dict = {}

    def script(t, ap, desk):
        nav = ap.nav
        if "done" in said or nav is None or not nav.valid or t < 5.0:
            return
        said["done"] = True
        n, e = nav.north_m, nav.east_m
        lat, lon = ap.frame.to_wgs84(n + 10.0, e)
        said["local"] = desk.text(f"goto local {n + 5.0:.2f} {e:.2f} 0.6", "test")
        said["target"] = ap.guided_target
        said["global"] = desk.text(f"goto global {lat:.8f} {lon:.8f}", "test")
        said["global_target"] = ap.guided_target
        said["zero"] = desk.text("goto global 0 0", "test")
        said["words"] = desk.text("goto local north 3", "test")
        said["frame"] = desk.text("goto sideways 1 2", "test")
        said["speed"] = desk.goto(n, e, "test", speed_mps=-1.0)
        said["far"] = desk.goto(n + 50_000.0, e, "test")
        said["kind"] = desk.guided_velocity("sideways", 1.0, 0.0, "test")
        said["nan_v"] = desk.text("velocity ned nan 0.5", "test")
        said["ned"] = desk.text("velocity ned 0.2 0.3", "test")
        said["mode"] = desk.text("mode GUIDED", "test")

    _fly(script, 12.0, env=EnvironmentConfig())
    assert said["local"].ok and said["target"][1] == 0.6, said["local"]
    (gn, ge), _ = said["global_target"]
    assert said["global"].ok
    local_n = said["target"][0][0] - 5.0
    assert abs(gn - (local_n + 10.0)) < 0.05, (gn, local_n)
    for key, fragment in (("zero", "not a position"), ("words", "numbers"), ("frame", "goto local"),
                          ("speed", "positive"), ("far", "km away"), ("kind", "unknown kind"),
                          ("nan_v", "finite")):
        answer = said[key]
        assert not answer.ok and "refused" in answer.text and fragment in answer.text, (key, answer)
    assert said["ned"].ok and said["mode"].ok


def test_a_goto_outside_guided_is_refused_unless_it_switches_the_mode():
    """A typed or ROS goal does not take the boat out of another mode; MAVLink's DO_REPOSITION with its
    change-mode flag (switch_mode) asks for GUIDED and the target is flown once the mode is in."""
    vessel = load_vessel("foka")
    mission = load_mission(CONFIG_DIR / "missions" / "demo.yaml")
    seen: dict = {}

    def operator(t, ap, truth):
        desk = seen.setdefault("desk", OperatorDesk(ap, vessel, lambda: seen["t"]))
        seen["t"] = t
        nav = ap.nav
        if ap.armed and "plain" not in seen and nav is not None and nav.valid and t > 5.0:
            seen["start"] = (nav.north_m, nav.east_m)
            seen["target"] = (nav.north_m - 15.0, nav.east_m + 5.0)
            seen["plain"] = desk.goto(*seen["target"], "test")
            seen["switch"] = desk.goto(*seen["target"], "test", switch_mode=True)
        if truth is not None and "target" in seen:
            seen.setdefault("closest", math.inf)
            seen["closest"] = min(seen["closest"], math.hypot(truth.north_m - seen["target"][0],
                                                              truth.east_m - seen["target"][1]))
            seen["mode"] = ap.mode.name

    run_sim(vessel, mission, SimOptions(seed=2, env=WINDY, duration_s=70.0, initial_mode="HOLD", on_cycle=operator,
                                        plant_spec=PlantSpec.resolve(vessel, 2, mismatch=MISMATCH), devices="typed"))
    assert not seen["plain"].ok and "not GUIDED" in seen["plain"].text, seen["plain"]
    assert seen["switch"].ok, seen["switch"]
    assert seen["mode"] == "GUIDED" and seen["closest"] <= mission.acceptance_radius_m, seen
