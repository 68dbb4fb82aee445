"""The velocity controller and the reference models: signs, the inverse-dynamics terms, limits, and closed-loop
steps on a plant that is not the vessel file's model."""
from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from autopilot.control.allocation import Allocator
from autopilot.control.reference_models import HeadingReference, SecondOrderReference
from autopilot.control.velocity import VelocityController
from autopilot.vocab.config import load_vessel
from drivers.thrust_map import make_thrust_map
from hil.sim.environment import EnvironmentConfig
from hil.sim.plant import Plant
from hil.sim.plant_spec import apply_mismatch


def _controller(name="wamv", **velocity):
    vessel = load_vessel(name)
    if velocity:
        cfg = dataclasses.replace(vessel.control.velocity, **velocity)
        vessel = dataclasses.replace(vessel, control=dataclasses.replace(vessel.control, velocity=cfg))
    alloc = Allocator(vessel, [make_thrust_map(t, vessel) for t in vessel.thrusters])
    return vessel, alloc, VelocityController(vessel, alloc.max_surge_n, alloc.min_surge_n, alloc.max_yaw_nm)


def test_signs_ahead_and_to_starboard():
    _, _, vc = _controller(reference_model=False)
    w = vc.update(0.0, 0.0, 0.0, 0.0, 1.0, math.radians(10))
    assert w.surge_n > 0 and w.yaw_nm > 0
    vc.reset()
    w = vc.update(0.0, 0.0, 0.0, 0.0, -0.5, math.radians(-10))
    assert w.surge_n < 0 and w.yaw_nm < 0


def test_steady_state_output_is_the_models_damping_and_coriolis():
    """At the reference, with no integral yet, the wrench is exactly C(nu)nu + D(nu)nu of the file's model."""
    vessel, _, vc = _controller(reference_model=False, ki_u_per_s2=0.0, ki_r_per_s2=0.0)
    h = vessel.hull
    u, v, r = 1.5, 0.1, 0.2
    w = vc.update(0.0, u, v, r, u, r)
    m11, m22 = h.mass_kg - h.x_udot, h.mass_kg - h.y_vdot
    assert w.surge_n == pytest.approx(-m22 * v * r + (-h.x_u - h.x_uu * u) * u)
    assert w.yaw_nm == pytest.approx((m22 - m11) * u * v + (-h.n_r - h.n_rr * r) * r)


def test_drag_is_not_compensated_beyond_the_reference():
    """A boat faster than asked gets no drag help (that would be positive feedback), only the P term."""
    vessel, _, vc = _controller(reference_model=False, ki_u_per_s2=0.0)
    w = vc.update(0.0, 2.0, 0.0, 0.0, 1.0, 0.0)
    h = vessel.hull
    expected = (h.mass_kg - h.x_udot) * (-vc.kp_u * 1.0) + (-h.x_u - h.x_uu * 1.0) * 1.0
    assert w.surge_n == pytest.approx(max(vc.min_surge_n, expected))


def test_outputs_and_integrals_stay_within_the_limits():
    _, alloc, vc = _controller(reference_model=False)
    for k in range(2000):       # 40 s asking for far more than the boat can do, standing still
        w = vc.update(k * 0.02, 0.0, 0.0, 0.0, 50.0, 5.0)
        assert alloc.min_surge_n <= w.surge_n <= alloc.max_surge_n
        assert abs(w.yaw_nm) <= alloc.max_yaw_nm
    # the command was clamped to the hull's top speed and the configured turn rate, and once the boat is there
    # the wound-up integral must not hold the output at the limit for long
    assert vc.surge_ref_mps == pytest.approx(vc.max_speed_mps)
    assert vc.yaw_rate_ref_rps == pytest.approx(vc.max_yaw_rate_rps)
    assert abs(vc.integral_u_n) <= alloc.max_surge_n - alloc.min_surge_n


def test_non_finite_input_gives_zero_and_keeps_state():
    _, _, vc = _controller()
    vc.update(0.0, 1.0, 0.0, 0.0, 1.5, 0.0)
    before = vc.integral_u_n
    w = vc.update(0.02, float("nan"), 0.0, 0.0, 1.5, 0.0)
    assert (w.surge_n, w.yaw_nm) == (0.0, 0.0)
    assert vc.integral_u_n == before


def test_second_order_reference_has_no_overshoot_and_unit_gain():
    ref = SecondOrderReference(1.3, 1.0)
    ref.update(0.0, 2.0, 0.0)
    xs = [ref.update(k * 0.02, 2.0, 0.0)[0] for k in range(1, 1000)]
    assert max(xs) <= 2.0 + 1e-9
    assert xs[-1] == pytest.approx(2.0, abs=1e-4)
    # critically damped second order: 98 % of the step after about 5.8 / w
    t98 = next(k for k, x in enumerate(xs, start=1) if x >= 0.98 * 2.0) * 0.02
    assert t98 == pytest.approx(5.83 / 1.3, rel=0.03)


def test_heading_reference_turns_the_short_way_across_north():
    ref = HeadingReference(0.6, 1.0)
    ref.update(0.0, math.radians(-170), math.radians(170))
    for k in range(1, 3000):
        psi, r = ref.update(k * 0.02, math.radians(-170), math.radians(170))
        assert r >= -1e-9              # clockwise through north, never back the long way
    assert math.degrees(psi) == pytest.approx(-170.0, abs=0.01)


def _step(vessel, alloc, vc, plant, seconds=25.0, u_cmd=2.0, r_cmd_dps=15.0):
    thrust, us, rs = [0.0] * len(alloc.maps), [], []
    for k in range(1, int(seconds / 0.02)):
        t = k * 0.02
        tr = plant.step_to(t, thrust)
        thrust = list(alloc.allocate(vc.update(t, tr.surge_mps, tr.sway_mps, tr.yaw_rate_rps, u_cmd,
                                               math.radians(r_cmd_dps))).thrust_n)
        us.append(tr.surge_mps)
        rs.append(math.degrees(tr.yaw_rate_rps))
    return np.array(us), np.array(rs)


@pytest.mark.parametrize("factors", [{}, {"iz_kgm2": 1.5, "n_r": 0.5, "x_u": 0.5, "x_uu": 0.5},
                                     {"x_udot": 2.0, "y_vdot": 2.0, "n_rdot": 2.0}])
def test_joint_step_tracks_without_steady_error_on_a_different_hull(factors):
    """Paper 002 Fig. 11's joint step (2 m/s, 15 deg/s) on WAM-V plants unlike the file: the integral takes
    the model error, the boat reaches both references and stays there."""
    vessel, alloc, vc = _controller()
    hull = dataclasses.replace(vessel.hull, **{k: getattr(vessel.hull, k) * f for k, f in factors.items()})
    plant = Plant(dataclasses.replace(vessel, hull=hull), EnvironmentConfig(), seed=1, north_m=0.0, east_m=0.0,
                  heading_rad=0.0)
    us, rs = _step(vessel, alloc, vc, plant)
    late = slice(-250, None)            # the last 5 s
    assert np.max(np.abs(us[late] - 2.0)) < 0.02
    assert np.max(np.abs(rs[late] - 15.0)) < 0.3
    # half the file's damping is fed forward twice over while accelerating: 8 % and 10 % overshoot (measured)
    assert np.max(us) < 2.0 * 1.15 and np.max(rs) < 15.0 * 1.15


def test_apply_mismatch_is_what_the_parametrised_hulls_use():
    """Guard the test above against a silent no-op: the scaled hull really differs from the file's."""
    vessel = load_vessel("wamv")
    assert apply_mismatch(vessel, {"iz": 1.5}).hull.iz_kgm2 == pytest.approx(1.5 * vessel.hull.iz_kgm2)
