"""The bench ESC test (the web page's hold-to-run button, through the operator desk): disarmed only, one thruster
at a time, at most 20 % of its range, back to neutral half a second after the last renewal, never carried into
flight."""
from __future__ import annotations

from autopilot.commands.desk import OperatorDesk
from autopilot.vehicle import ESC_TEST_HOLD_S, Autopilot
from autopilot.vocab.config import load_mission, load_vessel
from autopilot.vocab.types import SensorBatch
from tests.support.paths import REPO


def _boat():
    vessel = load_vessel("foka")
    ap = Autopilot(vessel, load_mission(REPO / "config/missions/demo.yaml"))
    clock = {"t": 0.0}
    said = []
    desk = OperatorDesk(ap, vessel, lambda: clock["t"], on_event=lambda text, err: said.append(text))
    return ap, desk, clock, said


def _pulses(ap, t):
    return ap.step(t, SensorBatch()).pulses.pulse_us


def test_one_thruster_runs_while_held_and_stops_half_a_second_after_the_last_renewal():
    ap, desk, clock, said = _boat()
    neutral = ap.neutral_pulses.pulse_us
    assert desk.esc_test(1, 0.1, "web 10.0.0.7").ok
    p = _pulses(ap, 0.02)
    assert p[0] == neutral[0] and p[1] > neutral[1]           # the right one forward, the left one still
    for k in range(1, 5):                                     # the button held: renewed every 0.2 s
        clock["t"] = 0.2 * k
        assert desk.esc_test(1, 0.1, "web 10.0.0.7").ok
        assert _pulses(ap, clock["t"] + 0.02)[1] > neutral[1]
    last = clock["t"]
    assert _pulses(ap, last + ESC_TEST_HOLD_S - 0.05)[1] > neutral[1]
    assert _pulses(ap, last + ESC_TEST_HOLD_S + 0.02) == neutral      # let go: neutral, by itself
    assert sum("operator ESC test stream" in t for t in said) == 1    # a held button is logged once
    clock["t"] = 5.0
    assert desk.esc_test(0, -0.2, "web").ok and _pulses(ap, 5.02)[0] < neutral[0]     # astern
    assert desk.esc_test(0, 0.0, "web").ok and _pulses(ap, 5.04) == neutral           # 0 stops at once


def test_it_is_refused_beyond_its_limit_for_an_unknown_thruster_and_when_armed():
    ap, desk, clock, said = _boat()
    for args in ((0, 0.5), (0, float("nan")), (7, 0.1), (-1, 0.1)):
        answer = desk.esc_test(*args, origin="web")
        assert not answer.ok and "ESC test refused" in answer.text, args
    assert _pulses(ap, 0.02) == ap.neutral_pulses.pulse_us
    ap.armed = True                                            # however it got armed
    answer = desk.esc_test(0, 0.1, "web")
    assert not answer.ok and "only while disarmed" in answer.text


def test_arming_ends_a_test_in_progress():
    ap, desk, clock, said = _boat()
    assert desk.esc_test(0, 0.2, "web").ok
    ap.armed = False
    ap.arm(0.01)                                               # refused or not, the test is over
    ap.armed = False
    assert _pulses(ap, 0.02) == ap.neutral_pulses.pulse_us


def test_a_timed_test_runs_for_its_time_then_neutral_and_a_time_beyond_the_limit_is_refused():
    """MAV_CMD_DO_MOTOR_TEST's timeout: one command runs that long, no renewal needed."""
    from autopilot.vehicle import ESC_TEST_MAX_HOLD_S
    ap, desk, clock, said = _boat()
    neutral = ap.neutral_pulses.pulse_us
    assert desk.esc_test(0, 0.15, "gcs", hold_s=2.0).ok
    assert _pulses(ap, 1.9)[0] > neutral[0]
    assert _pulses(ap, 2.05) == neutral
    for hold in (0.0, -1.0, float("nan"), ESC_TEST_MAX_HOLD_S + 1.0):
        answer = desk.esc_test(0, 0.1, "gcs", hold_s=hold)
        assert not answer.ok and "test time" in answer.text, hold
    assert _pulses(ap, 2.1) == neutral
