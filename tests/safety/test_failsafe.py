"""Failsafe policy (autopilot/safety/failsafe.py) on scripted estimator health, sensor and operator inputs, and the
`failsafe:` section of the vessel config."""
import dataclasses
import math

import pytest

from autopilot.safety.failsafe import FailsafeManager
from autopilot.safety.geofence import Geofence
from autopilot.vocab.config import ConfigError, load_vessel
from tests.support.failsafe_rig import CFG, health, nav, run


def test_gnss_loss_dead_reckons_then_holds_heading_slowly_then_loiters_and_reports_recovery():
    fm = FailsafeManager(CFG)
    last_fix = 10.0
    # fixes stop at t=10 (the receiver reports no position: invalid fixes counted), come back at t=80

    def h(t):
        if t < last_fix or t >= 80.0:
            return health(t, accepted=int(t) + (5 if t >= 80 else 0))
        return health(t, since_gps=t - last_fix, invalid=int(t - last_fix), accepted=int(last_fix))

    def mode(out):
        acts = [tr.action for _, tr in out]
        return "LOITER" if "loiter" in acts else "HEADING_HOLD" if "slow" in acts else "AUTO"

    out = run(fm, 0.0, 90.0, mode, h)
    got = [(t, tr.kind, tr.action) for t, tr in out]
    assert got[0][1:] == ("gps-loss", "dead-reckon") and got[0][0] == pytest.approx(13.1, abs=0.15)
    assert got[1][1:] == ("gps-loss", "slow") and got[1][0] == pytest.approx(10 + 30, abs=0.15)
    assert got[2][1:] == ("gps-loss", "loiter") and got[2][0] == pytest.approx(10 + 45, abs=0.15)
    assert got[3][1:] == ("gps-loss", "recovered") and got[3][0] == pytest.approx(80, abs=0.15)
    assert "receiver reports no position" in out[0][1].detail
    assert fm.blocked("AUTO") is None and not fm.active


def test_while_dead_reckoning_has_run_out_auto_and_rtl_are_refused_and_rtl_becomes_the_gnss_fallback():
    fm = FailsafeManager(CFG)
    run(fm, 0.0, 50.0, "HEADING_HOLD", lambda t: health(t, since_gps=t + 1.0))
    assert fm.gnss_degraded
    assert "dead reckoning ran out" in fm.blocked("AUTO") and fm.blocked("RTL")
    assert fm.blocked("LOITER") is None and fm.blocked("MANUAL") is None
    assert fm.resolve("rtl") == "loiter"
    hold_cfg = dataclasses.replace(CFG, gnss=dataclasses.replace(CFG.gnss, then="hold"))
    fm2 = FailsafeManager(hold_cfg)
    run(fm2, 0.0, 50.0, "HEADING_HOLD", lambda t: health(t, since_gps=t + 1.0))
    assert fm2.resolve("rtl") == "hold" and fm2.resolve("brake-rtl") == "brake-hold"


def test_rejected_fixes_are_a_glitch_and_a_far_reacquisition_means_hold():
    fm = FailsafeManager(CFG)

    def h(t):
        if t < 10.0:
            return health(t, accepted=int(t))
        if t < 25.0:   # fixes arrive but the EKF's gate rejects them
            return health(t, since_gps=t - 10.0, rejected=int(t - 10.0), accepted=10)
        return health(t, accepted=30, rejected=15, reacq=1)

    out = run(fm, 0.0, 30.0, "AUTO", h, offset=lambda: 48.0)
    got = [(tr.kind, tr.action) for _, tr in out]
    assert got[0] == ("gps-glitch", "dead-reckon")
    assert "rejected by the EKF" in out[0][1].detail
    assert ("gps-glitch", "hold") in got and "moved 48 m" in out[got.index(("gps-glitch", "hold"))][1].detail
    # a small move at re-acquisition (after an outage the filter accounted for) is only reported
    fm2 = FailsafeManager(CFG)
    out2 = run(fm2, 0.0, 30.0, "AUTO", h, offset=lambda: 3.0)
    assert ("gps-glitch", "report") in [(tr.kind, tr.action) for _, tr in out2]
    assert ("gps-glitch", "hold") not in [(tr.kind, tr.action) for _, tr in out2]


def test_estimate_too_uncertain_to_loiter_on_means_hold():
    fm = FailsafeManager(CFG)
    out = run(fm, 0.0, 20.0, "LOITER", lambda t: health(t, since_gps=t + 1, pos_std=2.0 + t))
    acts = [(tr.kind, tr.action) for _, tr in out]
    assert acts[-1] == ("gps-loss", "hold") and "exceeds 10 m" in out[-1][1].detail
    assert fm.blocked("LOITER") and fm.resolve("loiter") == "hold"


def test_a_filter_restart_while_navigating_means_hold():
    fm = FailsafeManager(CFG)
    out = run(fm, 0.0, 4.0, "AUTO", lambda t: health(t, resets=0 if t < 2.0 else 1))
    assert [(tr.kind, tr.action) for _, tr in out] == [("ekf-unhealthy", "hold")]
    assert "restarted" in out[0][1].detail


def test_sensors_that_never_delivered_are_not_lost():
    fm = FailsafeManager(CFG)            # armed in HOLD before the first fix, the filter still at its prior
    out = run(fm, 0.0, 40.0, "HOLD", lambda t: health(t, since_gps=math.inf, since_mag=math.inf, pos_std=100.0))
    assert out == [] and fm.blocked("AUTO") is None


def test_imu_loss_holds_blocks_navigating_modes_and_overrides_a_link_loss_rtl():
    fm = FailsafeManager(CFG)
    fm.operator_heartbeat(0.0)
    out = run(fm, 0.0, 3.0, "AUTO", lambda t: health(t, since_imu=max(0.01, t - 1.0)))
    assert [(tr.kind, tr.action) for _, tr in out] == [("imu-loss", "hold")]
    assert out[0][0] == pytest.approx(1.0 + CFG.imu.imu_timeout_s, abs=0.15)   # IMU silent from t = 1 s
    for m in ("AUTO", "LOITER", "RTL"):
        assert "imu-loss" in fm.blocked(m)
    assert fm.blocked("HOLD") is None and fm.blocked("MANUAL") is None
    out = run(fm, 3.0, 12.0, "HOLD", lambda t: health(t, since_imu=t - 1.0))
    assert [(tr.kind, tr.action) for _, tr in out] == [("link-loss", "none")]
    assert fm.resolve("rtl") == "hold"
    out = run(fm, 12.0, 13.0, "HOLD", lambda t: health(t))
    assert ("imu-loss", "recovered") in [(tr.kind, tr.action) for _, tr in out]


def test_magnetometer_loss_in_manual_is_reported_without_taking_the_helm():
    fm = FailsafeManager(CFG)
    out = run(fm, 0.0, 10.0, "MANUAL", lambda t: health(t, since_mag=t))
    assert [(tr.kind, tr.action) for _, tr in out] == [("mag-loss", "none")]


def test_link_loss_only_once_a_heartbeat_was_seen_unless_always_expected():
    fm = FailsafeManager(CFG)
    assert run(fm, 0.0, 30.0, "AUTO", health) == []          # no ground station in use: nothing to lose
    fm.operator_heartbeat(30.0)
    out = run(fm, 30.0, 45.0, "AUTO", health)
    assert [(tr.kind, tr.action) for _, tr in out] == [("link-loss", "rtl")]
    assert out[0][0] == pytest.approx(40.1, abs=0.15)
    fm.operator_heartbeat(45.0)
    out = run(fm, 45.0, 46.0, "RTL", health)
    assert [(tr.kind, tr.action) for _, tr in out] == [("link-loss", "recovered")]
    always = FailsafeManager(dataclasses.replace(CFG, link=dataclasses.replace(CFG.link, expect="always")))
    always.reset(0.0)
    out = run(always, 0.0, 11.0, "AUTO", health)
    assert [(tr.kind, tr.action) for _, tr in out] == [("link-loss", "rtl")]
    off = FailsafeManager(dataclasses.replace(CFG, link=dataclasses.replace(CFG.link, expect="off")))
    off.operator_heartbeat(0.0)
    assert run(off, 0.0, 30.0, "AUTO", health) == []


def test_link_loss_without_home_returns_to_nothing_and_holds():
    fm = FailsafeManager(CFG)
    fm.operator_heartbeat(0.0)
    got = []
    t = 0.0
    while t < 12.0:
        got += fm.update(t, nav(), "AUTO", health_fn=health, home_known=False)
        t += 0.1
    assert [(tr.kind, tr.action) for tr in got] == [("link-loss", "hold")]


def test_low_battery_must_last_the_delay_then_rtl_once():
    fm = FailsafeManager(CFG, low_voltage_v=17.5)
    assert run(fm, 0.0, 10.0, "AUTO", health, battery=18.0) == []
    out = run(fm, 10.0, 12.0, "AUTO", health, battery=17.0)        # sag for 2 s: not yet
    assert out == []
    out = run(fm, 12.0, 30.0, "AUTO", health, battery=17.2)
    assert [(tr.kind, tr.action) for _, tr in out] == [("low-battery", "rtl")]
    assert out[0][0] == pytest.approx(15.0, abs=0.15)
    disabled = FailsafeManager(CFG, low_voltage_v=0.0)
    assert run(disabled, 0.0, 20.0, "AUTO", health, battery=3.0) == []


def test_overruns_are_reported_then_hold_after_the_configured_count():
    fm = FailsafeManager(CFG)
    fm.report_overrun(1.0, 0.005)                  # 5 ms late: under the 20 ms threshold, ignored
    assert run(fm, 1.0, 1.1, "AUTO", health) == []
    got = []
    for i in range(10):
        fm.report_overrun(2.0 + 0.1 * i, 0.05)
        got += [(tr.kind, tr.action) for tr in fm.update(2.0 + 0.1 * i, nav(), "AUTO", health_fn=health)]
    assert got[0] == ("overrun", "report") and got[-1] == ("overrun", "hold") and len(got) == 2
    out = run(fm, 3.0, 10.0, "HOLD", health)
    assert [(tr.kind, tr.action) for _, tr in out] == [("overrun", "recovered")]


def test_esc_disconnect_disarms_whatever_the_mode():
    fm = FailsafeManager(CFG)
    out = run(fm, 0.0, 1.0, "HOLD", health, connected=False)
    assert [(tr.kind, tr.action) for _, tr in out] == [("esc-disconnect", "disarm")]


def test_geofence_brakes_when_the_fence_ahead_is_within_stopping_distance_plus_margin():
    fm = FailsafeManager(CFG, stop_decel_mps2=0.3)
    fm.fences = [Geofence([(-50, -50), (50, -50), (50, 50), (-50, 50)])]
    # 0.8 m/s north: 0.64/0.6 + 0.8 * 1.1 + 3 = 4.95 m
    assert run(fm, 0.0, 0.5, "AUTO", health, nav=nav(44.9, 0.0, 0.0, 0.8)) == []
    out = run(fm, 0.5, 1.0, "AUTO", health, nav=nav(45.1, 0.0, 0.0, 0.8))
    assert [(tr.kind, tr.action) for _, tr in out] == [("geofence", "brake-rtl")]
    assert "4.9 m to the fence" in out[0][1].detail
    # moving along the fence (course east) is no approach; a stopped boat has no course
    fm2 = FailsafeManager(CFG, stop_decel_mps2=0.3)
    fm2.fences = fm.fences
    assert run(fm2, 0.0, 1.0, "AUTO", health, nav=nav(48.0, 0.0, math.pi / 2, 0.8)) == []
    assert run(fm2, 1.0, 2.0, "MANUAL", health, nav=nav(49.0, 0.0, 0.0, 0.05)) == []
    out = run(fm2, 2.0, 3.0, "AUTO", health, nav=nav(51.0, 0.0, 0.0, 0.5))
    assert [(tr.kind, tr.action) for _, tr in out] == [("geofence", "rtl")]
    assert "outside the geofence by 1.0 m" in out[0][1].detail


def test_failsafe_section_of_the_vessel_config_overrides_defaults_and_validates(tmp_path, repo_root):
    base = (repo_root / "config/vessels/foka.yaml").read_text()
    ok = tmp_path / "boat.yaml"
    ok.write_text(base + "failsafe:\n  gnss: {dead_reckon_s: 20, then: hold}\n  link: {expect: always}\n"
                         "  geofence:\n    polygon: [{lat_deg: 51.1, lon_deg: 17.0}, {lat_deg: 51.2, lon_deg: 17.0},"
                         " {lat_deg: 51.2, lon_deg: 17.1}]\n")
    v = load_vessel(str(ok))
    assert v.failsafe.gnss.dead_reckon_s == 20.0 and v.failsafe.gnss.then == "hold"
    assert v.failsafe.link.expect == "always" and len(v.failsafe.geofence.polygon) == 3
    assert v.failsafe.imu.imu_timeout_s == 0.35          # untouched defaults stay
    for extra, key in (("failsafe:\n  gnss: {then: drift}\n", "failsafe.gnss.then"),
                       ("failsafe:\n  link: {timeout_s: -1}\n", "failsafe.link.timeout_s"),
                       ("failsafe:\n  battery: {delay: 3}\n", "failsafe.battery.delay"),
                       ("failsafe:\n  geofence: {polygon: [{lat_deg: 51.1, lon_deg: 17.0}]}\n",
                        "failsafe.geofence.polygon")):
        bad = tmp_path / "bad.yaml"
        bad.write_text(base + extra)
        with pytest.raises(ConfigError) as e:
            load_vessel(str(bad))
        assert e.value.key == key, str(e.value)


def test_a_clock_jump_is_one_failsafe_and_the_sensors_ages_count_from_its_end():
    # the simulator ran from t=10 to t=13 without us: samples stop at 10, the clock comes back at 13
    fm = FailsafeManager(CFG)
    run(fm, 0.0, 10.0, "AUTO", lambda t: health(t, accepted=int(t)))
    fm.clock_jump(10.0, 13.0, limit_s=1.0)
    gap = lambda t: health(t, since_gps=t - 10.0, since_imu=t - 10.0, since_mag=t - 10.0, accepted=10)  # noqa: E731
    (first,) = run(fm, 13.0, 13.1, "AUTO", gap)
    assert (first[1].kind, first[1].action) == ("clock-jump", "hold") and "3.00 s" in first[1].detail
    # nothing arrives after the jump either: then they are lost, timed from the jump's end (13 s), not from 10 s
    later = run(fm, 13.1, 16.5, "HOLD", gap)
    assert [(t, tr.kind) for t, tr in later] == [(13.4, "imu-loss"), (16.1, "gps-loss")], later


def test_a_short_clock_jump_takes_no_action():
    fm = FailsafeManager(CFG)
    run(fm, 0.0, 10.0, "AUTO", lambda t: health(t, accepted=int(t)))
    fm.clock_jump(10.0, 10.4, limit_s=1.0)
    assert run(fm, 10.4, 12.0, "AUTO", lambda t: health(t, accepted=int(t))) == []
