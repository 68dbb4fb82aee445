"""Fault runs in the simulator: each fault injected below the real drivers, the failsafe it must trigger, and
what the boat then does (true position, from the plant)."""
import json
import math

import numpy as np
import pytest

from autopilot.cli.main import main as cli_main
from autopilot.guidance.path_following import mission_frame, point_to_ned
from autopilot.safety.geofence import Geofence
from autopilot.vocab.config import CONFIG_DIR, load_mission, load_vessel
from hil.sim.environment import EnvironmentConfig
from hil.sim.faults import GLITCH_M, parse_fault
from hil.sim.metrics import distance_to_path_m
from hil.sim.runner import SimOptions, run_sim

pytestmark = pytest.mark.slow   # the quick tier leaves this file out (scripts/test.sh --quick)

DEMO = CONFIG_DIR / "missions/demo.yaml"
ENV = EnvironmentConfig(current_speed_mps=0.2, current_toward_deg=90, wind_speed_mps=3.0, wind_from_deg=45)


def fly(*faults, duration=200.0, mission=DEMO, env=ENV, **kw):
    opts = SimOptions(seed=1, env=env, gps_noise="white", duration_s=duration,
                      faults=tuple(parse_fault(f) for f in faults), **kw)
    return run_sim(load_vessel("foka"), load_mission(mission), opts)


def failsafes(res):
    return [(round(e.time_s, 1), e.failsafe, e.action) for e in res.events if e.kind == "failsafe"]


def modes(res):
    return [(round(e.time_s, 1), e.message) for e in res.events if e.kind == "mode"]


def window(res, t0, t1):
    t = res.trace["t"]
    return (t >= t0) & (t < t1)


def path_distance(res, mask):
    path = [res.start_ned] + list(res.waypoints_ned)
    tr = res.trace
    return np.array([distance_to_path_m(path, n, e) for n, e in zip(tr["truth_n"][mask], tr["truth_e"][mask])])


def test_fault_option_syntax():
    f = parse_fault("gps-loss@60:30")
    assert (f.kind, f.start_s, f.duration_s, f.end_s, f.label) == ("gps-loss", 60.0, 30.0, 90.0, "gps-loss@60:30")
    assert parse_fault("link-loss@12.5").end_s == math.inf
    g = parse_fault("gps-glitch@60:10=20")
    assert (g.size_m, g.label) == (20.0, "gps-glitch@60:10=20")
    h = parse_fault("mag-shift@300=10")
    assert (h.kind, h.start_s, h.size_m, h.end_s, h.label) == ("mag-shift", 300.0, 10.0, math.inf, "mag-shift@300=10")
    assert parse_fault("mag-shift@5=-4").size_m == -4.0 and parse_fault("mag-shift@5").size_m is None
    for text in ("mag-shift@5=0", "mag-shift@5=nan", "mag-shift@5=2000"):
        with pytest.raises(ValueError, match="mag-shift size"):
            parse_fault(text)
    for text, msg in (
        ("imu-loss@5:1=3", "only for gps-glitch"),
        ("gps-glitch@5:1=-2", "must be > 0 m"),
        ("gps-glitch@5:1=big", "must be numbers"),
        ("gps@1", "unknown fault kind 'gps'"),
        ("gps-loss", "expected KIND@START_S"),
        ("imu-loss@x", "must be numbers"),
        ("imu-loss@5:0", "duration must be > 0"),
        ("imu-loss@-1", "start must be a time >= 0"),
    ):
        with pytest.raises(ValueError, match=msg):
            parse_fault(text)


def test_gnss_loss_of_60_s_in_auto_dead_reckons_on_the_path_then_degrades_as_configured():
    res = fly("gps-loss@60:60", duration=180.0)
    fs = failsafes(res)
    assert [k[1:] for k in fs] == [("gps-loss", "dead-reckon"), ("gps-loss", "slow"), ("gps-loss", "loiter"),
                                   ("gps-loss", "recovered")]
    t_dr, t_slow, t_loiter, t_back = (k[0] for k in fs)
    # the last fix before the loss came at ~59 s: 3 s to notice, 30 s of dead reckoning, 15 s slow, then LOITER
    assert 62.0 <= t_dr <= 63.5 and t_slow == pytest.approx(t_dr + 27, abs=1.0)
    assert t_loiter == pytest.approx(t_slow + 15, abs=0.2) and 120.0 <= t_back <= 123.0
    assert [m for _, m in modes(res)][-2:] == ["AUTO -> HEADING_HOLD: gps-loss failsafe",
                                               "HEADING_HOLD -> LOITER: gps-loss failsafe"]
    dr = path_distance(res, window(res, 60.0, t_slow))
    assert dr.max() <= 5.0, f"dead reckoning left the path by {dr.max():.1f} m"
    assert res.report["faults"][0]["max_distance_from_path_m"] <= 5.0
    assert res.report["final_mode"] == "LOITER" and res.report["armed_at_end"]
    assert [e["kind"] for e in res.report["failsafe_events"]] == ["gps-loss"] * 4


def test_a_50_m_gnss_glitch_is_ignored():
    res = fly("gps-glitch@60:10", duration=120.0)
    assert [k[1:] for k in failsafes(res)] == [("gps-glitch", "dead-reckon"), ("gps-glitch", "recovered")]
    assert [m for _, m in modes(res)] == ["HOLD -> AUTO: simulation start"]         # AUTO throughout
    tr, m = res.trace, window(res, 55.0, 90.0)
    est_err = np.hypot(tr["est_n"][m] - tr["truth_n"][m], tr["est_e"][m] - tr["truth_e"][m])
    assert est_err.max() < 3.0 < GLITCH_M
    assert res.report["faults"][0]["max_distance_from_path_m"] < 2.0


def test_a_glitch_outlasting_the_gate_makes_the_estimate_jump_and_the_boat_hold():
    res = fly("gps-glitch@60:30", duration=100.0)
    fs = failsafes(res)
    assert fs[0][1:] == ("gps-glitch", "dead-reckon") and fs[1][1:] == ("gps-glitch", "hold")
    assert fs[1][0] == pytest.approx(60 + 15, abs=2.0)                  # failsafe.gnss.glitch_reject_s
    assert modes(res)[-1][1] == "AUTO -> HOLD: gps-glitch failsafe"
    assert res.report["faults"][0]["max_distance_from_path_m"] < 2.0


def test_imu_loss_holds_and_refuses_navigation_until_the_operator_chooses_again():
    refusals = []

    def operator(t, autopilot, truth):
        if abs(t - 70.0) < 1e-6:
            try:
                autopilot.set_mode("AUTO", "operator")
            except ValueError as e:
                refusals.append(str(e))

    res = fly("imu-loss@60:20", duration=100.0, on_cycle=operator)
    fs = failsafes(res)
    assert fs[0][1:] == ("imu-loss", "hold") and 60.3 <= fs[0][0] <= 60.5
    assert ("imu-loss", "recovered") in [k[1:] for k in fs]
    assert refusals == ["mode AUTO refused: imu-loss failsafe active (no heading to navigate on)"]
    t = res.trace["t"]
    assert not res.thrust_n[t > fs[0][0] + 0.05].any()                  # neutral from then on (no auto-resume)
    assert res.report["final_mode"] == "HOLD"


def test_magnetometer_loss_holds():
    res = fly("mag-loss@60:20", duration=90.0)
    kinds = {k[1:] for k in failsafes(res)}
    assert ("mag-loss", "hold") in kinds and ("mag-loss", "recovered") in kinds
    # the magnetometer is its own device on the bus: the gyro and accelerometer carry on
    assert not any(k[0] == "imu-loss" for k in kinds)
    assert res.report["final_mode"] == "HOLD"


FENCED = """name: fenced-pond
anchor: {lat_deg: 51.11, lon_deg: 17.06}
start:
  point: {north_m: 0.0, east_m: 0.0}
  heading_deg: 0
waypoints:
  - {north_m: 10.0, east_m: 0.0}
cruise_speed_mps: 0.8
acceptance_radius_m: 2.0
geofence:
  - {north_m: -20.0, east_m: -30.0}
  - {north_m: 40.0, east_m: -30.0}
  - {north_m: 40.0, east_m: 30.0}
  - {north_m: -20.0, east_m: 30.0}
"""


@pytest.mark.parametrize("size_ut", [10.0, -6.0])
def test_mag_shift_steps_the_field_the_driver_reads_by_the_size_along_the_bow(size_ut):
    """The field the driver delivers minus the Earth's field in body axes (from the true heading): zero before
    the fault, (size, 0, 0) uT after, for the whole window (not one sample), and only the magnetometer moves."""
    from hil.devices.lsm9ds1_emulator import body_motion
    from hil.sim.faults import MAG_SHIFT_DIRECTION
    vessel = load_vessel("foka")
    m = vessel.sensors.mag
    inc, dec = math.radians(m.inclination_deg), math.radians(m.declination_deg)
    b_ned = (m.field_t * math.cos(inc) * math.cos(dec), m.field_t * math.cos(inc) * math.sin(dec),
             m.field_t * math.sin(inc))
    rows = []

    def log(t, ap, batch, res, truth):
        earth = body_motion(truth, b_ned)[2]
        rows.extend((s.time_s, *(s.field_t[i] - earth[i] for i in range(3))) for s in batch.mag)

    res = fly(f"mag-shift@20={size_ut:g}", duration=40.0, on_result=log)
    d = np.array(rows)
    before, after = d[(d[:, 0] > 5) & (d[:, 0] < 19.5)], d[d[:, 0] > 20.5]
    assert len(before) > 200 and len(after) > 500
    assert np.abs(before[:, 1:].mean(axis=0)).max() < 0.3e-6
    np.testing.assert_allclose(after[:, 1:].mean(axis=0), size_ut * 1e-6 * np.array(MAG_SHIFT_DIRECTION),
                               atol=0.3e-6)
    assert np.abs(after[:, 1:] - after[:, 1:].mean(axis=0)).max() < 3e-6     # a step, not a drift
    assert res.report["faults"][0]["fault"] == f"mag-shift@20={size_ut:g}"


def test_driving_at_the_geofence_stops_short_of_it_then_returns_home(tmp_path):
    path = tmp_path / "fenced.yaml"
    path.write_text(FENCED)

    def operator(t, autopilot, truth):            # the operator keeps pushing ahead, north, at the fence
        autopilot.operator_command(t, 0.5, 0.0)

    res = fly(mission=path, duration=150.0, env=EnvironmentConfig(), initial_mode="MANUAL", on_cycle=operator)
    fs = failsafes(res)
    assert fs[0][1:] == ("geofence", "brake-rtl")
    ms = [m for _, m in modes(res)]
    assert ms[:4] == ["HOLD -> MANUAL: simulation start", "MANUAL -> BRAKE: geofence failsafe",
                      "BRAKE -> RTL: stopped; rtl after braking", "RTL -> LOITER: home reached"]
    mission = load_mission(path)
    frame = mission_frame(mission)
    fence = Geofence(point_to_ned(p, frame) for p in mission.geofence)
    tr = res.trace
    margins = np.array([fence.signed_distance_m(n, e) for n, e in zip(tr["truth_n"], tr["truth_e"])])
    assert margins.min() > 1.0, f"came within {margins.min():.2f} m of the fence"
    assert tr["truth_n"].max() > 25.0                 # it did get going toward the fence before stopping


def test_link_loss_returns_home_and_loiters_there_within_its_radius():
    res = fly("link-loss@60", duration=260.0)
    assert failsafes(res)[0][1:] == ("link-loss", "rtl") and failsafes(res)[0][0] == pytest.approx(69.0, abs=1.5)
    ms = modes(res)
    assert ms[-2][1] == "AUTO -> RTL: link-loss failsafe" and ms[-1][1] == "RTL -> LOITER: home reached"
    t_home = ms[-1][0]
    arm = [e for e in res.events if e.kind == "arm"][0]
    tr, late = res.trace, window(res, t_home + 10.0, 260.0)
    k_arm = int(round(arm.time_s * 50)) - 1
    home = (tr["truth_n"][k_arm], tr["truth_e"][k_arm])     # where the boat was armed
    d = np.hypot(tr["truth_n"][late] - home[0], tr["truth_e"][late] - home[1])
    assert late.sum() > 50 * 60 and np.mean(d <= 2.0) >= 0.95


def test_esc_disconnect_is_reported_and_disarms():
    res = fly("esc-disconnect@60", duration=80.0)
    fs = failsafes(res)
    assert fs == [(pytest.approx(60.1, abs=0.15), "esc-disconnect", "disarm")]
    assert [e.message for e in res.events if e.kind == "disarm"] == ["disarmed: esc-disconnect failsafe"]
    after = res.trace["t"] > fs[0][0] + 0.05
    assert not res.report["armed_at_end"] and not res.thrust_n[after].any()
    assert not res.pulses_us[res.trace["t"] > 60.0].any()             # the ESC signals stopped with pigpiod


@pytest.mark.parametrize("outage_s", [0.02, 0.03])
def test_an_esc_outage_over_before_the_next_failsafe_check_still_disarms(outage_s):
    # the output reconnects within a cycle or two, before the 0.1 s check looks at `connected`; the ESCs
    # re-arm and would drive again with nobody having re-armed the boat
    res = fly(f"esc-disconnect@60.01:{outage_s}", duration=64.0)
    assert failsafes(res) == [(pytest.approx(60.1, abs=0.15), "esc-disconnect", "disarm")]
    assert not res.report["armed_at_end"]


def test_low_battery_returns_home():
    res = fly("low-battery@60", duration=120.0)
    fs = failsafes(res)
    assert fs[0][1:] == ("low-battery", "rtl") and fs[0][0] == pytest.approx(65.0, abs=0.3)
    assert modes(res)[-1][1] == "AUTO -> RTL: low-battery failsafe"


def test_cli_reports_failsafe_events_and_distance_from_the_path(tmp_path, capsys):
    report = tmp_path / "r.json"
    rc = cli_main(["sim", str(DEMO), "--gps-noise", "white", "--duration", "40", "--fault", "imu-loss@20:5",
                   "--fault", "low-battery@30", "--report", str(report)])
    out = capsys.readouterr().out
    assert rc == 0 and "failsafe at" in out and "fault imu-loss@20:5: max distance from the path" in out
    r = json.loads(report.read_text())
    assert [e["kind"] for e in r["failsafe_events"]][:1] == ["imu-loss"]
    assert [f["fault"] for f in r["faults"]] == ["imu-loss@20:5", "low-battery@30"]
    assert all(isinstance(f["max_distance_from_path_m"], float) for f in r["faults"])


@pytest.mark.parametrize("size_m", [20.0, 50.0])
def test_a_glitch_is_still_a_glitch_on_a_hull_that_is_not_its_file(size_m):
    """The drift gate takes gradual disagreement as model drift; a receiver jump must still be rejected and, if
    it outlasts the gate, still make the boat hold, with the model 2.5x off in drag."""
    from hil.sim.plant_spec import PlantSpec
    spec = PlantSpec.resolve(load_vessel("foka"), 1, mismatch={"x_u": 2.5, "x_uu": 2.5, "iz": 0.43})
    short = fly(f"gps-glitch@60:10={size_m:g}", duration=120.0, plant_spec=spec)
    assert [m for _, m in modes(short)] == ["HOLD -> AUTO: simulation start"]            # AUTO throughout
    tr, m = short.trace, window(short, 55.0, 90.0)
    assert np.hypot(tr["est_n"][m] - tr["truth_n"][m], tr["est_e"][m] - tr["truth_e"][m]).max() < 3.0
    long = fly(f"gps-glitch@60:30={size_m:g}", duration=100.0, plant_spec=spec)
    assert [k[1:] for k in failsafes(long)][:2] == [("gps-glitch", "dead-reckon"), ("gps-glitch", "hold")]
