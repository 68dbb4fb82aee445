"""The heading loop learns the yaw response the boat shows (autopilot/control/yaw_adaptation.py) and designs on it."""
import math

import numpy as np
import pytest

from autopilot.control.heading_speed import HeadingController
from autopilot.control.yaw_adaptation import YawModelEstimator
from autopilot.vocab.config import load_vessel

DT = 0.02


def _fly(est, m, d, drr, gain, lag_s, seconds=120.0, seed=1, max_yaw=100.0, moment=None, noise_rps=0.004):
    """A yaw plant m r_dot = -d r - drr r|r| + gain * tau_lag, driven by a switching moment (or `moment(t)`),
    its measured rate fed to `est` as the controller would."""
    rng = np.random.default_rng(seed)
    r = tau_lag = 0.0
    tau = 0.0
    for k in range(int(seconds / DT)):
        t = k * DT
        if moment is not None:
            tau = moment(t)
        elif k % int(3.0 / DT) == 0:                 # a new moment every 3 s, as turns and corrections give
            tau = float(rng.uniform(-0.7, 0.7)) * max_yaw
        est.update(t, r + noise_rps * rng.standard_normal(), tau)
        tau_lag += (1.0 - math.exp(-DT / lag_s)) * (tau - tau_lag) if lag_s > 0 else tau - tau_lag
        r += DT * (-d * r - drr * r * abs(r) + gain * tau_lag) / m
    return est


@pytest.mark.parametrize("gain,d_scale", [(1.0, 1.0), (0.4, 1.0), (1.0, 2.5), (1.5, 0.6)])
def test_it_learns_the_moment_the_hull_needs_per_unit_of_turn(gain, d_scale):
    m, d, drr = 40.0, 30.0, 10.0
    est = YawModelEstimator(m, d, 100.0, drr_nms2=drr, thrust_lag_s=0.15)
    _fly(est, m, d * d_scale, drr, gain, 0.15)
    assert est.trusted
    # per unit of commanded moment the boat behaves as m/gain, d/gain
    assert est.m_hat == pytest.approx(m / gain, rel=0.15)
    assert est.d_hat == pytest.approx(d * d_scale / gain, rel=0.25)


def test_the_file_stands_until_the_fit_is_trusted_and_saturated_moments_teach_nothing():
    est = YawModelEstimator(40.0, 30.0, 100.0, thrust_lag_s=0.15)
    assert not est.trusted and (est.m_hat, est.d_hat) == (40.0, 30.0)
    # a moment held at its limit: the allocation may deliver less than asked, so nothing is learned from it
    _fly(est, 40.0, 30.0, 0.0, 0.4, 0.15, seconds=60.0, moment=lambda t: 100.0 if int(t / 5) % 2 else -100.0)
    assert est.rows == 0 and not est.trusted and est.m_hat == 40.0
    est.update(1e3, float("nan"), 1.0)
    est.update(1e3, 0.0, float("inf"))
    assert est.m_hat == 40.0


def test_estimates_stay_within_a_factor_of_three_of_the_file():
    est = YawModelEstimator(40.0, 30.0, 100.0, thrust_lag_s=0.15)
    _fly(est, 40.0, 30.0, 0.0, 0.1, 0.15)                # a tenth of the filed authority
    assert est.trusted and est.m_hat == pytest.approx(120.0)
    assert est.d_hat == pytest.approx(90.0)


def test_a_heading_loop_on_a_hull_with_less_authority_keeps_its_designed_step_response():
    """WAM-V preset, motors at 0.4 of their table: a 30 deg heading step, learned gains against the file's."""
    vessel = load_vessel("wamv")
    m = vessel.hull.iz_kgm2 - vessel.hull.n_rdot
    d, drr = -vessel.hull.n_r, -vessel.hull.n_rr

    def step_response(adaptive):
        """Mean |heading error| [deg] over the last 100 s of +-10 deg steps every 20 s."""
        ctl = HeadingController(vessel, 400.0)
        if not adaptive:
            ctl.yaw_model = None
        rng = np.random.default_rng(3)
        psi = r = tau_lag = 0.0
        ref = 0.0
        errors = []
        for k in range(int(300.0 / DT)):
            t = k * DT
            if k % int(20.0 / DT) == 0:
                ref = math.radians(10.0) * (1 if (k // int(20.0 / DT)) % 2 else -1)
            tau = ctl.update(t, psi + 0.002 * rng.standard_normal(), r + 0.004 * rng.standard_normal(), ref)
            tau_lag += (1.0 - math.exp(-DT / 0.3)) * (tau - tau_lag)
            r += DT * (-d * r - drr * r * abs(r) + 0.4 * tau_lag) / m
            psi += DT * r
            if t > 200.0:                               # learned by then
                errors.append(abs(math.degrees(psi - ref)))
        return float(np.mean(errors))

    fixed, adaptive = step_response(False), step_response(True)
    assert adaptive < 0.8 * fixed, (adaptive, fixed)


@pytest.mark.parametrize("told", [True, False])
def test_it_learns_from_the_moment_delivered_when_the_allocator_gives_less_than_asked(told):
    """WAM-V preset, its file true, but the allocator gives at most 0.6 of the controller's limit (a boat asked
    to slow down turns on what the thrusters give at zero surge). Told what was delivered, the fit finds the
    file's hull; fed only its own output, it would take the cut moments for a heavier, less damped hull."""
    vessel = load_vessel("wamv")
    m = vessel.hull.iz_kgm2 - vessel.hull.n_rdot
    d, drr = -vessel.hull.n_r, -vessel.hull.n_rr
    ctl = HeadingController(vessel, 400.0)
    rng = np.random.default_rng(5)
    psi = r = tau_lag = 0.0
    for k in range(int(400.0 / DT)):
        t = k * DT
        ref = math.radians(40.0) * (1 if (k // int(15.0 / DT)) % 2 else -1)
        tau = ctl.update(t, psi + 0.002 * rng.standard_normal(), r + 0.004 * rng.standard_normal(), ref)
        tau = max(-240.0, min(240.0, tau))
        if told:
            ctl.delivered(tau)
        tau_lag += (1.0 - math.exp(-DT / 0.3)) * (tau - tau_lag)
        r += DT * (-d * r - drr * r * abs(r) + tau_lag) / m
        psi += DT * r
    ym = ctl.yaw_model
    assert ym.trusted
    off = max(abs(ym.m_hat / m - 1.0), abs(ym.d_hat / d - 1.0))
    if told:
        assert off < 0.15, (ym.m_hat / m, ym.d_hat / d)
    else:
        assert off > 0.15, (ym.m_hat / m, ym.d_hat / d)
