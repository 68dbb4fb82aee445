"""Azimuth pods (issue 13, paper 002 Sec. 2.2): allocation signs, saturation and slew; the plant's thrust vector;
the vessel file's checks; a short closed-loop flight on wamv_pods and on a mismatched plant; refusal on the
hardware backend, which has no servo output."""
from __future__ import annotations

import math

import pytest

from autopilot.control.azimuth_allocation import AzimuthAllocator, make_allocator, wrench_of_pods
from autopilot.vocab.config import ConfigError, load_vessel
from autopilot.vocab.types import Wrench
from drivers.thrust_map import make_thrust_maps
from hil.sim.environment import EnvironmentConfig
from hil.sim.plant import Plant


@pytest.fixture(scope="module")
def pods():
    return load_vessel("wamv_pods")


def fresh(vessel):
    return make_allocator(vessel, make_thrust_maps(vessel))


def delivered(alloc, cmd):
    return wrench_of_pods(alloc._xs, alloc._ys0, cmd.thrust_n, cmd.angle_rad)


def test_wamv_pods_gets_the_azimuth_allocator_and_consistent_limits(pods):
    alloc = fresh(pods)
    assert isinstance(alloc, AzimuthAllocator)
    assert not isinstance(fresh(load_vessel("wamv")), AzimuthAllocator)
    assert alloc.max_surge_n == pytest.approx(1000.0)          # both pods straight, full forward
    assert alloc.min_surge_n == pytest.approx(-500.0)          # both astern at half
    # the largest yaw either way is reachable: ask for it with a little surge and let the pods turn
    for sign in (1, -1):
        a = fresh(pods)
        for k in range(200):
            cmd = a.allocate(Wrench(300.0, sign * a.max_yaw_nm), t_s=k * 0.02)
        assert delivered(a, cmd).yaw_nm == pytest.approx(sign * a.max_yaw_nm, rel=0.03)
    assert alloc.max_yaw_nm > fresh(load_vessel("wamv")).max_yaw_nm    # steering adds to the differential arm


@pytest.mark.parametrize("sign", [1, -1])
def test_yaw_to_starboard_points_the_stern_pods_thrust_to_port(pods, sign):
    """Positive yaw (bow to starboard): the stern must go to port, so the thrust points to port (angle < 0) and
    the port pod pushes harder; mirrored for negative yaw."""
    alloc = fresh(pods)
    cmd = alloc.allocate(Wrench(300.0, sign * 150.0))
    assert cmd.angle_rad[0] == cmd.angle_rad[1]
    assert math.copysign(1, cmd.angle_rad[0]) == -sign and abs(cmd.angle_rad[0]) > math.radians(3)
    port, stbd = cmd.thrust_n
    assert (port - stbd) * sign > 0
    got = delivered(alloc, cmd)
    assert got.surge_n == pytest.approx(300.0) and got.yaw_nm == pytest.approx(sign * 150.0)


def test_paper_002_equations_8_and_10_for_equal_pods():
    """Equal thrust T at equal angle delta on pods at (-LCG, +-B/2): X = 2 T cos delta, N = -2 LCG T sin delta."""
    lcg, t, d = 1.4, 180.0, math.radians(20)
    w = wrench_of_pods((-lcg, -lcg), (-1.03, 1.03), (t, t), (d, d))
    assert w.surge_n == pytest.approx(2 * t * math.cos(d))
    assert w.yaw_nm == pytest.approx(-2 * lcg * t * math.sin(d))


def test_zero_demand_and_astern_keep_the_pods_straight(pods):
    alloc = fresh(pods)
    cmd = alloc.allocate(Wrench(0.0, 0.0))
    assert cmd.thrust_n == (0.0, 0.0) and cmd.angle_rad == (0.0, 0.0)
    cmd = alloc.allocate(Wrench(-200.0, 100.0))
    assert cmd.angle_rad == (0.0, 0.0)                          # astern: steered by differential thrust only
    assert delivered(alloc, cmd).yaw_nm == pytest.approx(100.0)
    cmd = alloc.allocate(Wrench(float("nan"), float("inf")))
    assert cmd.thrust_n == (0.0, 0.0)


def test_saturation_keeps_angles_and_thrust_within_limits_and_yaw_first(pods):
    lim = math.radians(pods.thrusters[0].azimuth.max_deg)
    alloc = fresh(pods)
    for s, n in [(5000, 3000), (5000, -3000), (100, 4000), (-3000, 2000), (2000, 10)]:
        cmd = alloc.allocate(Wrench(s, n))
        assert all(abs(a) <= lim + 1e-12 for a in cmd.angle_rad)
        assert all(-250.0 - 1e-6 <= t <= 500.0 + 1e-6 for t in cmd.thrust_n)
    # beyond reach: the yaw moment is kept (to what the pods can give at this angle), surge gives way
    alloc = fresh(pods)
    cmd = alloc.allocate(Wrench(1000.0, 600.0))
    got = delivered(alloc, cmd)
    assert got.yaw_nm == pytest.approx(600.0) and got.surge_n < 1000.0 - 100.0


def test_pod_angle_moves_no_faster_than_its_slew_rate(pods):
    slew = math.radians(pods.thrusters[0].azimuth.slew_dps)
    alloc = fresh(pods)
    alloc.allocate(Wrench(200.0, 0.0), t_s=0.0)
    angles = [alloc.allocate(Wrench(200.0, 800.0), t_s=0.02 * k).angle_rad[0] for k in range(1, 60)]
    steps = [abs(b - a) for a, b in zip([0.0] + angles, angles)]
    assert max(steps) <= slew * 0.02 + 1e-12
    assert angles[0] == pytest.approx(-slew * 0.02)             # turning toward port thrust, one step's worth
    assert angles[-1] == pytest.approx(-math.radians(45))       # got there, within the limit
    # while slewing, the thrusts are right for the angle reached: the yaw moment asked is still delivered
    alloc2 = fresh(pods)
    alloc2.allocate(Wrench(400.0, 0.0), t_s=0.0)
    cmd = alloc2.allocate(Wrench(400.0, 200.0), t_s=0.02)
    assert abs(cmd.angle_rad[0]) < math.radians(2)
    assert delivered(alloc2, cmd).yaw_nm == pytest.approx(200.0)


def test_plant_pushes_along_the_pod_angle_and_turns_the_right_way(pods):
    def turn(angle_deg):
        p = Plant(pods, EnvironmentConfig(), 1, 0.0, 0.0, 0.0, surge_mps=1.0)
        for k in range(1, 201):
            t = p.step_to(0.01 * k, [200.0, 200.0], [math.radians(angle_deg)] * 2)
        return t
    left, straight = turn(-20.0), turn(0.0)
    assert straight.yaw_rate_rps == pytest.approx(0.0, abs=1e-9)
    assert left.yaw_rate_rps > 0.02                      # thrust to port at the stern: bow to starboard
    assert turn(20.0).yaw_rate_rps == pytest.approx(-left.yaw_rate_rps, rel=1e-6)
    assert left.angle_rad == pytest.approx((math.radians(-20.0),) * 2, abs=1e-6)
    # the servo slews: 0.1 s after a command of 45 deg the pods are at most 6 deg round (60 deg/s)
    p = Plant(pods, EnvironmentConfig(), 1, 0.0, 0.0, 0.0)
    t = p.step_to(0.1, [0.0, 0.0], [math.radians(90.0)] * 2)
    assert 0.0 < t.angle_rad[0] <= math.radians(6.0) + 1e-9
    for k in range(2, 300):
        t = p.step_to(0.1 * k, [0.0, 0.0])                  # no angle: the last command holds
    assert t.angle_rad[0] == pytest.approx(math.radians(45.0))   # clamped to the pod's limit


def test_plant_refuses_angles_for_fixed_thrusters_and_bad_angles(pods):
    fixed = Plant(load_vessel("wamv"), EnvironmentConfig(), 1, 0.0, 0.0, 0.0)
    with pytest.raises(ValueError, match="no azimuth thrusters"):
        fixed.step_to(0.1, [0.0, 0.0], [0.1, 0.1])
    p = Plant(pods, EnvironmentConfig(), 1, 0.0, 0.0, 0.0)
    with pytest.raises(ValueError, match="angle_rad"):
        p.step_to(0.1, [0.0, 0.0], [float("nan"), 0.0])


def test_vessel_file_rejects_mixed_and_unequal_pods(pods, tmp_path):
    import yaml
    src = yaml.safe_load(open(pods.source_file))
    mixed = dict(src, thrusters=[src["thrusters"][0], {k: v for k, v in src["thrusters"][1].items()
                                                       if k != "azimuth"}])
    path = tmp_path / "mixed.yaml"
    path.write_text(yaml.safe_dump(mixed))
    with pytest.raises(ConfigError, match="azimuth"):
        load_vessel(str(path))
    for change, match in [(lambda t: t[1]["azimuth"].__setitem__("max_deg", 30), "max_deg and slew_dps"),
                          (lambda t: [x.__setitem__("x_m", 0.5) for x in t], "aft of the CG"),
                          (lambda t: t[0]["azimuth"].__setitem__("slew_dps", 0), "slew_dps")]:
        bad = yaml.safe_load(open(pods.source_file))
        change(bad["thrusters"])
        path.write_text(yaml.safe_dump(bad))
        with pytest.raises(ConfigError, match=match) as err:
            load_vessel(str(path))
        assert str(path) in str(err.value)


def test_hardware_backend_refuses_a_vessel_with_pods(pods):
    from autopilot.runtime.backends import refuse_unsteerable_pods
    with pytest.raises(ValueError, match="azimuth pods .* no output for their angle servos"):
        refuse_unsteerable_pods("hw", pods)
    refuse_unsteerable_pods("sim", pods)
    refuse_unsteerable_pods("hw", load_vessel("wamv"))


def _short_mission(tmp_path):
    from autopilot.vocab.config import load_mission
    path = tmp_path / "two_legs.yaml"
    path.write_text("""name: two_legs
anchor: {lat_deg: -33.73, lon_deg: 150.67}
start: {point: {north_m: 0.0, east_m: 0.0}, heading_deg: 0}
waypoints:
  - {north_m: 40.0, east_m: 0.0}
  - {north_m: 40.0, east_m: 40.0}
cruise_speed_mps: 2.0
acceptance_radius_m: 6.0
guidance: {law: ilos, lookahead_m: 15.0}
on_complete: hold
""")
    return load_mission(path)


@pytest.mark.slow
@pytest.mark.parametrize("mismatch", [None, {"random": 0.3, "tau": 2.0}])
def test_wamv_pods_flies_two_legs_on_its_own_and_a_mismatched_plant(pods, tmp_path, mismatch):
    from hil.sim.plant_spec import PlantSpec
    from hil.sim.runner import SimOptions, run_sim
    spec = PlantSpec.resolve(pods, 2, mismatch=mismatch) if mismatch else None
    angles, commanded = [], []

    def record(t, ap, b, r, truth):
        angles.append(truth.angle_rad[0])
        if r.thrust.angle_rad is not None:
            commanded.append(r.thrust.angle_rad[0])
    res = run_sim(pods, _short_mission(tmp_path), SimOptions(
        seed=2, devices="typed", gps_noise="white", plant_spec=spec,
        env=EnvironmentConfig(wind_speed_mps=3.0, wind_from_deg=90.0), on_result=record))
    rep = res.report
    assert rep["mission_complete"], rep
    assert rep["xte_max_m"] < 4.0, rep
    # the pods did the steering: they turned to port thrust (bow to starboard) for the right-angle turn east
    assert min(angles) < math.radians(-10)
    # and the autopilot never asked them to turn faster than their slew rate (50 Hz cycles)
    step = math.radians(pods.thrusters[0].azimuth.slew_dps) / pods.control.loop_rate_hz
    assert max(abs(b - a) for a, b in zip(commanded, commanded[1:])) <= step + 1e-9


def test_plant_vessel_without_pods_is_refused_for_a_pods_autopilot(pods):
    from hil.sim.plant_spec import PlantSpec
    with pytest.raises(ValueError, match="fixed thrusters but the autopilot's 'wamv_pods' has azimuth pods"):
        PlantSpec.resolve(pods, 1, plant_vessel=load_vessel("wamv"))


@pytest.mark.slow
def test_check_flags_a_boat_config_that_cannot_steer_its_pods(repo_root, tmp_path):
    from autopilot.files.check import check_config
    ok = check_config(repo_root / "config/gazebo/wamv_pods_boat.yaml")
    assert ok.ok, ok.problems
    text = (repo_root / "config/gazebo/wamv_pods_boat.yaml").read_text()
    vessels = (repo_root / "config/vessels").as_posix()
    text = text.replace("vessel: wamv_pods", f"vessel: {vessels}/wamv_pods.yaml").replace(
        "mission: ../missions/hexagon_002.yaml",
        f"mission: {(repo_root / 'config/missions/hexagon_002.yaml').as_posix()}",
    )
    for name, body, key in [
            ("hw.yaml", text.replace("backend: gazebo", "backend: hw"), "backend"),
            ("no_angle.yaml", text.replace(", angle_topic: /wamv/thrusters/left/pos", ""),
             "gazebo.thrusters[0].angle_topic")]:
        path = tmp_path / name
        path.write_text(body.replace("bridge_config: vrx_wamv_pods.yaml", ""))
        report = check_config(path)
        assert not report.ok
        assert any(p.key == key and str(path) in p.file for p in report.problems), report.problems


def test_ros_sim_backend_hands_the_pod_angles_to_its_plant(pods, tmp_path):
    from autopilot.guidance.path_following import mission_frame
    from hil.sim.backend import SimBackend
    mission = _short_mission(tmp_path)
    backend = SimBackend(pods, mission, mission_frame(mission))
    pulses = [m.thrust_to_pulse(150.0) for m in backend.maps]
    backend.write(0.0, (150.0, 150.0), pulses, angle_rad=(-0.4, -0.4))
    for k in range(1, 101):
        backend.poll(0.02 * k)
    assert backend.truth.angle_rad == pytest.approx((-0.4, -0.4), abs=1e-6)
    assert backend.truth.yaw_rate_rps > 0.02


def test_hull_identification_refuses_pods_it_cannot_account_for(pods, tmp_path):
    from autopilot.identification.runs import IdentificationError, load_ident_run
    with pytest.raises(IdentificationError, match="no pod angles"):
        load_ident_run(tmp_path, pods)
