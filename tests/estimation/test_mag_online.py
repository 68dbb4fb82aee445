"""Continuous magnetometer calibration (estimation/heading/mag_online.py) on synthetic tracks: a hard-iron step
corrected from turns and checked against the GNSS course, never from a straight line, never against the GNSS."""
from __future__ import annotations

import math

import numpy as np
import pytest

from autopilot.vocab.angles import wrap_pi
from estimation.heading.mag_calibration import MagCalibration, fit_calibration
from estimation.heading.mag_online import (
    OnlineCalLimits,
    OnlineMagCalibration,
    compose,
    fit_hard_iron,
    heading_arc_deg,
    headings_rad,
)
from estimation.heading.tilt_compensated import tilt_compensated_heading_rad

FIELD_T, INCL_DEG, DECL_DEG = 50e-6, 67.0, 6.5
H_T = FIELD_T * math.cos(math.radians(INCL_DEG))
Z_T = FIELD_T * math.sin(math.radians(INCL_DEG))


def body_field(heading_rad, shift_t=(0.0, 0.0, 0.0)):
    """Level boat: the Earth's field in FRD at a true heading, plus a hard iron."""
    psi_m = heading_rad - math.radians(DECL_DEG)
    return np.array([H_T * math.cos(psi_m) + shift_t[0], -H_T * math.sin(psi_m) + shift_t[1], Z_T + shift_t[2]])


def lawnmower(t_end_s, leg_s=60.0, turn_rate_rps=math.radians(10.0), start_rad=math.radians(90.0)):
    """Heading [rad] and yaw rate every 0.1 s: straight legs of leg_s, 90-degree turns, left, left, right, right,
    then back the other way (a survey there and back)."""
    turns = [-1, -1, 1, 1, 1, 1, -1, -1]
    t, psi, out, k = 0.0, start_rad, [], 0
    while t < t_end_s:
        for _ in range(int(leg_s / 0.1)):
            out.append((t, psi, 0.0))
            t += 0.1
        sign, turned = turns[k % len(turns)], 0.0
        k += 1
        while turned < math.pi / 2:
            out.append((t, psi, sign * turn_rate_rps))
            psi += sign * turn_rate_rps * 0.1
            turned += turn_rate_rps * 0.1
            t += 0.1
    return [r for r in out if r[0] < t_end_s]


def fly(cal, track, shift_t=(10e-6, 0.0, 0.0), shift_at_s=math.inf, ref_noise_deg=1.0, crab_rad=0.05,
        noise_t=0.3e-6, seed=1, speed_mps=0.8, ref_bias_fn=None):
    """Feed the track into `cal`: fields at 10 Hz, GNSS fixes at 1 Hz (COG = heading + crab, with noise).
    Returns the proposals and the (t, true heading, corrected magnetic heading) rows."""
    rng = np.random.default_rng(seed)
    props, rows = [], []
    for t, psi, r in track:
        shift = shift_t if t >= shift_at_s else (0.0, 0.0, 0.0)
        m = body_field(psi, shift) + noise_t * rng.standard_normal(3)
        cal.add_sample(t, m)
        if abs(t - round(t)) < 1e-6:
            cog = psi + crab_rad + math.radians(ref_noise_deg) * rng.standard_normal()
            if ref_bias_fn is not None:
                cog += ref_bias_fn(psi)
            cal.add_reference(t + 0.05, cog, speed_mps, crab_rad, r)
        p = cal.update(t)
        if p is not None:
            props.append(p)
        c = cal.correct(m)
        rows.append((t, psi, tilt_compensated_heading_rad(*c, 0.0, 0.0, math.radians(DECL_DEG))))
    return props, np.array(rows)


def new_cal(**kw):
    return OnlineMagCalibration(FIELD_T, INCL_DEG, DECL_DEG, OnlineCalLimits(**kw) if kw else None)


def rms_err_deg(rows, t0, t1):
    m = (rows[:, 0] >= t0) & (rows[:, 0] < t1)
    e = wrap_pi(rows[m, 2] - rows[m, 1])
    return float(np.degrees(np.sqrt(np.mean(e ** 2))))


def test_vectorised_heading_is_the_scalar_one():
    rng = np.random.default_rng(2)
    f = rng.normal(size=(50, 3)) * 30e-6
    roll, pitch = rng.uniform(-0.3, 0.3, 50), rng.uniform(-0.3, 0.3, 50)
    got = headings_rad(f, roll, pitch, 0.1)
    want = [tilt_compensated_heading_rad(*f[i], roll[i], pitch[i], 0.1) for i in range(50)]
    np.testing.assert_allclose(wrap_pi(got - np.array(want)), 0.0, atol=1e-12)


def test_heading_arc_spans_the_circle_the_short_way():
    assert heading_arc_deg(np.radians([350.0, 10.0, 0.0])) == pytest.approx(20.0)
    assert heading_arc_deg(np.radians(np.arange(0, 360, 10.0))) == pytest.approx(350.0)
    assert heading_arc_deg(np.array([1.0])) == 0.0


def test_compose_is_applying_one_after_the_other():
    rng = np.random.default_rng(3)
    a = MagCalibration(offset_t=(1e-6, -2e-6, 3e-6), matrix=((1.1, 0.05, 0), (0.05, 0.9, 0.02), (0, 0.02, 1.0)))
    b = MagCalibration(offset_t=(4e-6, 1e-6, 0.0), matrix=((0.95, 0.0, 0), (0.0, 1.05, 0), (0, 0, 1.0)))
    m = rng.normal(size=(20, 3)) * 40e-6
    np.testing.assert_allclose(compose(b, a).apply(m), b.apply(a.apply(m)), atol=1e-15)


def test_hard_iron_fit_finds_a_step_from_a_half_turn():
    psi = np.radians(np.linspace(60, 240, 200))
    f = np.array([body_field(p, (8e-6, -5e-6, 0.0)) for p in psi])
    fit = fit_hard_iron(f, FIELD_T, INCL_DEG)
    assert fit.accepted, fit.reason
    np.testing.assert_allclose(fit.calibration.offset_t[:2], (8e-6, -5e-6), atol=0.05e-6)
    assert fit.figures["coverage"] == pytest.approx(0.5, abs=0.01) and fit.figures["residual_rms_pct"] < 0.1
    refused = fit_hard_iron(f[:40], FIELD_T, INCL_DEG)            # 36 degrees of turning
    assert not refused.accepted and "needs 150 deg of turning" in refused.reason
    with pytest.raises(ValueError, match="non-finite"):
        fit_hard_iron(np.full((10, 3), np.nan), FIELD_T, INCL_DEG)


@pytest.mark.slow
def test_a_hard_iron_step_is_corrected_from_survey_turns_and_checked_against_the_gnss():
    cal = new_cal()
    track = lawnmower(900.0)
    props, rows = fly(cal, track, shift_at_s=300.0)
    accepted = [p for p in props if p.accepted]
    assert len(accepted) >= 1 and cal.updates == len(accepted)
    first = accepted[0]
    assert 300.0 < first.time_s <= 300.0 + 180.0
    assert all(p.time_s > 300.0 for p in accepted)               # nothing to correct before the step
    assert first.consistency_before_deg > 10.0 and first.consistency_after_deg < 2.0
    assert first.n_refs >= 20 and first.method in ("hard-iron", "2d")
    # the running correction recovers the step
    np.testing.assert_allclose(cal.delta.offset_t[:2], (10e-6, 0.0), atol=0.5e-6)
    assert rms_err_deg(rows, 200.0, 300.0) < 1.0
    assert first.time_s < first.decided_s < first.time_s + 1.0     # fitted over a few cycles
    assert rms_err_deg(rows, 300.0, first.time_s) > 10.0
    assert rms_err_deg(rows, first.decided_s, 900.0) < 1.0
    assert cal.mag_consistency_deg(899.0) < 2.0


def test_straight_running_never_updates_however_wrong_the_heading():
    cal = new_cal()
    # 20 minutes due east (where a hard iron toward the bow errs most) with a 3-degree yaw wobble (waves),
    # the step present from the start
    track = [(k * 0.1, math.radians(90.0 + 3.0 * math.sin(0.6 * k * 0.1)), 0.0) for k in range(12000)]
    props, rows = fly(cal, track, shift_at_s=0.0)
    assert cal.updates == 0 and props and not any(p.accepted for p in props)
    assert all("no fit without 150 deg of turning" in p.reason for p in props)
    assert cal.mag_consistency_deg(1199.0) > 20.0                # the GNSS sees the error; still no update
    assert rms_err_deg(rows, 0.0, 1200.0) > 20.0


def test_a_fit_the_gnss_course_contradicts_is_refused():
    # the magnetometer's turns show a 10 uT hard iron, but the GNSS course agrees with the uncorrected
    # heading (a magnetometer mounted askew by exactly that error, or a wrong crab): no update
    def uncorrected_error(psi):
        return tilt_compensated_heading_rad(*body_field(psi, (10e-6, 0, 0)), 0.0, 0.0,
                                            math.radians(DECL_DEG)) - psi
    cal = new_cal()
    props, _ = fly(cal, lawnmower(600.0), shift_at_s=0.0, ref_bias_fn=uncorrected_error, crab_rad=0.0)
    fitted = [p for p in props if p.delta is not None and p.n_refs >= 20]
    assert fitted, "the fits themselves must pass for this test to mean anything"
    assert cal.updates == 0
    assert all("disagrees with the GNSS course" in p.reason for p in fitted)


def test_without_gnss_course_at_speed_nothing_is_applied():
    cal = new_cal()
    props, _ = fly(cal, lawnmower(600.0), shift_at_s=0.0, speed_mps=0.3)
    assert cal.updates == 0 and cal.mag_consistency_deg(599.0) is None
    assert any("GNSS course fixes" in p.reason for p in props if p.delta is not None)


def test_mag_consistency_is_the_rms_of_heading_minus_course():
    cal = new_cal(consistency_window_s=1000.0)
    # straight north, no noise, references biased by exactly 3 degrees
    track = [(k * 0.1, 0.0, 0.0) for k in range(3000)]
    fly(cal, track, ref_noise_deg=0.0, noise_t=0.0, crab_rad=0.1, ref_bias_fn=lambda psi: math.radians(3.0))
    assert cal.mag_consistency_deg(299.9) == pytest.approx(3.0, abs=1e-6)


def test_a_lone_course_after_a_turn_does_not_make_the_figure():
    """Twelve courses in a minute, straight north with a right compass: eleven 1 degree off, in two blocks, and
    one 40 degrees off alone in its block (a wave's sway, a hull still sliding). One course is no
    mean; it would have put the figure at 12 degrees, past the warning."""
    cal = new_cal()
    for k in range(600):
        cal.add_sample(0.1 * k, body_field(0.0))
    times = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 35.0, 50.0, 51.0, 52.0]
    for t in times:
        error = math.radians(40.0 if t == 35.0 else 1.0)
        cal.add_reference(t, error, 1.0, 0.0, 0.0)
    assert cal.mag_consistency_deg(59.0) == pytest.approx(1.0, abs=0.05)
    every_block = new_cal(min_block_refs=1)
    every_block._rows = cal._rows
    assert every_block.mag_consistency_deg(59.0) > 11.0



def test_leaving_out_a_lone_first_course_keeps_the_other_blocks_as_they_were():
    """A lone course opens the minute, then a block of five courses 10 degrees one way and one of five 10 degrees
    the other. Without the lone course's block the others are what they were: 10 degrees. Blocked afresh from
    the first course left, two of the second block's courses fell in with the first block's and the figure read
    6.5 degrees."""
    cal = new_cal()
    for k in range(600):
        cal.add_sample(0.1 * k, body_field(0.0))
    cal.add_reference(0.5, math.radians(40.0), 1.0, 0.0, 0.0)
    for t in (20.0, 22.0, 24.0, 26.0, 28.0):
        cal.add_reference(t, math.radians(10.0), 1.0, 0.0, 0.0)
    for t in (31.0, 33.0, 35.0, 37.0, 39.0):
        cal.add_reference(t, math.radians(-10.0), 1.0, 0.0, 0.0)
    assert cal.mag_consistency_deg(59.0) == pytest.approx(10.0, abs=0.05)

def test_bad_input_is_ignored_or_refused_with_a_message():
    cal = new_cal()
    cal.add_sample(1.0, (math.nan, 0.0, 1e-6))
    cal.add_sample(1.0, (0.0, 0.0, 0.0))
    cal.add_sample(1.0, "abc")
    assert cal.ignored_samples == 3 and cal.update(10.0) is None
    assert cal.add_reference(1.0, None, 1.0, 0.0, 0.0) is False
    with pytest.raises(ValueError, match="field_t must be"):
        OnlineMagCalibration(0.0, 60.0)
    with pytest.raises(ValueError, match="inclination_deg"):
        OnlineMagCalibration(50e-6, 90.0)
    with pytest.raises(ValueError, match="windows_s"):
        OnlineCalLimits(windows_s=(60.0, 1e4))
    with pytest.raises(ValueError, match="min_refs"):
        OnlineCalLimits(min_refs=1)
    with pytest.raises(ValueError, match="min_block_refs"):
        OnlineCalLimits(min_block_refs=0)


def test_a_full_circle_uses_the_one_off_2d_fit_and_its_soft_iron():
    cal = new_cal()
    # soft iron 8 % along x plus a hard iron, full slow circles at speed
    s = np.diag([1.08, 1.0, 1.0])
    rng = np.random.default_rng(5)
    methods = []
    for k in range(3000):
        t, psi = k * 0.1, math.radians(2.0 * k * 0.1)
        m = s @ body_field(psi) + np.array([4e-6, -3e-6, 0.0]) + 0.2e-6 * rng.standard_normal(3)
        cal.add_sample(t, m)
        if k % 10 == 0:
            cal.add_reference(t + 0.05, psi, 0.8, 0.0, 0.0)  # a slow circle counts as straight (0.035 rad/s)
        p = cal.update(t)
        if p is not None and p.accepted:
            methods.append(p.method)
    # half a circle gives the hard iron first; the full circle then the one-off fit's soft iron too
    assert methods[:2] == ["hard-iron", "2d"] and cal.updates == len(methods)
    direct = fit_calibration(np.array([s @ body_field(math.radians(a)) + [4e-6, -3e-6, 0] for a in range(360)]),
                             FIELD_T, "2d", INCL_DEG)
    np.testing.assert_allclose(cal.delta.offset_t, direct.calibration.offset_t, atol=0.3e-6)
    np.testing.assert_allclose(np.asarray(cal.delta.matrix)[:2, :2] @ s[:2, :2], np.eye(2), atol=0.02)
