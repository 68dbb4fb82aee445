"""NED/FRD <-> ENU/FLU conversions (REP-103/105) and the core types <-> ROS messages, both ways."""
import math

import numpy as np
import pytest

from autopilot.ros import frames, messages
from autopilot.ros.messages import TimeBase
from autopilot.vocab.geodesy import LocalFrame
from autopilot.vocab.types import GpsFix, ImuSample, MagSample, NavState
from tests.support import ros_env  # noqa: F401  (fails without rclpy)

HEADINGS_DEG = [0, 45, 90, 135, 179.999, -180, -135, -90, -45, 1e-9]


def test_points_and_body_vectors_round_trip_both_ways():
    rng = np.random.default_rng(3)
    for v in rng.normal(size=(50, 3)) * 100:
        assert frames.enu_to_ned(frames.ned_to_enu(v)) == pytest.approx(tuple(v))
        assert frames.ned_to_enu(frames.enu_to_ned(v)) == pytest.approx(tuple(v))
        assert frames.flu_to_frd(frames.frd_to_flu(v)) == pytest.approx(tuple(v))
        assert frames.frd_to_flu(frames.flu_to_frd(v)) == pytest.approx(tuple(v))


def test_axes_map_as_rep103_says():
    # 10 m north, 5 m east, 1 m down -> x east 5, y north 10, z up -1
    assert frames.ned_to_enu((10.0, 5.0, 1.0)) == (5.0, 10.0, -1.0)
    # level and still, an FRD accelerometer reads -g on z; the FLU one reads +g
    assert frames.frd_to_flu((0.0, 0.0, -9.81)) == (0.0, 0.0, 9.81)
    # turning to starboard is +r in FRD and negative angular.z in FLU
    assert frames.yaw_rate_frd_to_flu(0.2) == -0.2


@pytest.mark.parametrize("heading_deg", HEADINGS_DEG)
def test_heading_round_trips_through_enu_yaw_and_quaternion(heading_deg):
    h = math.radians(heading_deg)
    yaw = frames.heading_to_enu_yaw(h)
    assert math.cos(frames.enu_yaw_to_heading(yaw) - h) == pytest.approx(1.0)
    q = frames.heading_to_quat_enu(h)
    assert np.linalg.norm(q) == pytest.approx(1.0)
    assert math.cos(frames.quat_enu_to_heading(q) - h) == pytest.approx(1.0, abs=1e-12)


def test_compass_points_have_the_right_enu_yaw():
    assert frames.heading_to_enu_yaw(0.0) == pytest.approx(math.pi / 2)          # north: +y
    assert frames.heading_to_enu_yaw(math.pi / 2) == pytest.approx(0.0)          # east: +x
    assert abs(frames.heading_to_enu_yaw(-math.pi / 2)) == pytest.approx(math.pi)  # west: -x
    # a boat heading east has its FLU x axis along ENU +x, its left (FLU +y) toward north
    r = frames.matrix_from_quat(frames.heading_to_quat_enu(math.pi / 2))
    assert r @ np.array([1, 0, 0]) == pytest.approx([1, 0, 0], abs=1e-12)
    assert r @ np.array([0, 1, 0]) == pytest.approx([0, 1, 0], abs=1e-12)


def test_full_attitude_round_trips_and_maps_body_axes():
    rng = np.random.default_rng(7)
    for roll, pitch, heading in zip(rng.uniform(-1, 1, 40), rng.uniform(-1.2, 1.2, 40), rng.uniform(-3.1, 3.1, 40)):
        q = frames.attitude_ned_frd_to_enu_flu(roll, pitch, heading)
        assert frames.attitude_enu_flu_to_ned_frd(q) == pytest.approx((roll, pitch, heading), abs=1e-9)
        # the same physical forward axis, seen in both conventions
        fwd_ned = frames.matrix_from_rpy(roll, pitch, heading) @ np.array([1.0, 0, 0])
        fwd_enu = frames.matrix_from_quat(q) @ np.array([1.0, 0, 0])
        assert frames.ned_to_enu(fwd_ned) == pytest.approx(tuple(fwd_enu), abs=1e-12)
        # and the starboard axis is FLU -y
        stb_ned = frames.matrix_from_rpy(roll, pitch, heading) @ np.array([0, 1.0, 0])
        stb_enu = frames.matrix_from_quat(q) @ np.array([0, -1.0, 0])
        assert frames.ned_to_enu(stb_ned) == pytest.approx(tuple(stb_enu), abs=1e-12)


def test_quaternion_matrix_round_trip_near_180_degrees():
    for q in [(1.0, 0, 0, 0), (0, 1.0, 0, 0), (0, 0, 1.0, 0), (0.7071, 0.7071, 0, 1e-9)]:
        r = frames.matrix_from_quat(q)
        assert frames.matrix_from_quat(frames.quat_from_matrix(r)) == pytest.approx(r, abs=1e-9)
    with pytest.raises(ValueError):
        frames.matrix_from_quat((0, 0, 0, 0))


def test_covariances_swap_axes():
    c = np.array([[4.0, 1.0, 0.0], [1.0, 9.0, 0.5], [0.0, 0.5, 1.0]])      # NED: var_n 4, var_e 9
    enu = frames.cov3_ned_to_enu(c)
    assert enu[0, 0] == 9.0 and enu[1, 1] == 4.0 and enu[2, 2] == 1.0
    assert enu[0, 2] == -0.5                                                 # east x up = -(east x down)
    assert frames.cov3_enu_to_ned(enu) == pytest.approx(c)
    assert frames.cov3_flu_to_frd(frames.cov3_frd_to_flu(c)) == pytest.approx(c)


# ------------------------------------------------------------------------------ messages
TB = TimeBase(origin_ns=1_700_000_000_250_000_000)


def test_time_base_round_trips_stamps():
    for t in (0.0, 0.02, 12.345678, 3600.5):
        st = TB.to_stamp(t)
        assert 0 <= st.nanosec < 1_000_000_000
        assert TB.from_stamp(st) == pytest.approx(t, abs=1e-9)


def test_gps_fix_navsatfix_round_trip_with_status_and_covariance():
    fix = GpsFix(time_s=5.0, lat_deg=51.11, lon_deg=17.06, alt_m=120.0, fix_quality=2, sats=9, pos_std_m=1.7,
                 sog_mps=1.2, cog_rad=math.radians(30))
    msg = messages.gps_fix_to_navsatfix(fix, "gnss_link", TB)
    assert msg.header.frame_id == "gnss_link"
    assert msg.status.status == msg.status.STATUS_SBAS_FIX
    assert msg.position_covariance_type == msg.COVARIANCE_TYPE_APPROXIMATED
    assert msg.position_covariance[0] == pytest.approx(1.7 ** 2) and msg.position_covariance[4] == pytest.approx(2.89)
    vel = messages.gps_velocity_to_twist(fix, "gnss_link", TB, 0.1)
    assert vel.twist.twist.linear.x == pytest.approx(1.2 * math.sin(math.radians(30)))    # east
    assert vel.twist.twist.linear.y == pytest.approx(1.2 * math.cos(math.radians(30)))    # north
    back = messages.navsatfix_to_gps_fix(msg, TB, default_std_m=5.0, assumed_sats=9, velocity=vel)
    assert back.valid and back.fix_quality == 2
    assert (back.lat_deg, back.lon_deg, back.alt_m) == (51.11, 17.06, 120.0)
    assert back.time_s == pytest.approx(5.0)
    assert back.pos_std_m == pytest.approx(1.7)
    assert back.sog_mps == pytest.approx(1.2) and back.cog_rad == pytest.approx(math.radians(30))


def test_no_fix_is_marked_and_unknown_covariance_uses_default():
    msg = messages.gps_fix_to_navsatfix(GpsFix(time_s=1.0, lat_deg=0, lon_deg=0, fix_quality=0, valid=False),
                                        "gnss_link", TB)
    assert msg.status.status == msg.status.STATUS_NO_FIX and math.isnan(msg.latitude)
    assert not messages.navsatfix_to_gps_fix(msg, TB, 2.0).valid
    msg.status.status = msg.status.STATUS_FIX
    msg.latitude, msg.longitude = 10.0, 20.0
    msg.position_covariance_type = msg.COVARIANCE_TYPE_UNKNOWN      # what ros_gz_bridge sends
    fix = messages.navsatfix_to_gps_fix(msg, TB, default_std_m=2.5)
    assert fix.valid and fix.pos_std_m == 2.5 and fix.sog_mps is None


def test_imu_and_mag_round_trip_with_frame_change():
    s = ImuSample(time_s=2.0, accel_mps2=(0.3, -0.2, -9.81), gyro_rps=(0.01, 0.02, 0.3))
    msg = messages.imu_sample_to_imu(s, "imu_link", TB, gyro_std_rps=0.002, accel_std_mps2=0.05)
    assert msg.orientation_covariance[0] == -1.0
    assert msg.linear_acceleration.z == pytest.approx(9.81)
    assert msg.angular_velocity.z == pytest.approx(-0.3)
    assert msg.angular_velocity_covariance[4] == pytest.approx(0.002 ** 2)
    assert messages.imu_orientation_heading(msg) is None
    back = messages.imu_to_imu_sample(msg, TB)
    assert back.accel_mps2 == pytest.approx(s.accel_mps2) and back.gyro_rps == pytest.approx(s.gyro_rps)
    m = MagSample(time_s=2.0, field_t=(2e-5, -1e-5, 4e-5))
    mm = messages.mag_sample_to_magnetic_field(m, "imu_link", TB, 3e-7)
    assert mm.magnetic_field.z == pytest.approx(-4e-5)
    assert messages.magnetic_field_to_mag_sample(mm, TB).field_t == pytest.approx(m.field_t)


def test_a_reused_sensor_message_carries_exactly_what_a_fresh_one_would():
    tb = messages.TimeBase.from_seconds(1.7e9)
    a = ImuSample(time_s=2.0, accel_mps2=(0.3, -0.2, -9.81), gyro_rps=(0.01, 0.02, 0.3))
    b = ImuSample(time_s=2.02, accel_mps2=(-0.1, 0.4, -9.7), gyro_rps=(-0.02, 0.0, -0.1))
    reused = messages.imu_sample_to_imu(a, "imu_link", tb, 0.002, 0.05)
    assert messages.fill_imu(reused, b, tb) == messages.imu_sample_to_imu(b, "imu_link", tb, 0.002, 0.05)
    ma, mb = MagSample(time_s=2.0, field_t=(2e-5, -1e-5, 4e-5)), MagSample(time_s=2.025, field_t=(1e-5, 3e-5, 4e-5))
    reused_m = messages.mag_sample_to_magnetic_field(ma, "imu_link", tb, 3e-7)
    assert (messages.fill_magnetic_field(reused_m, mb, tb)
            == messages.mag_sample_to_magnetic_field(mb, "imu_link", tb, 3e-7))
    assert messages.TimeBase.from_seconds(0).to_stamp(2.02) != reused.header.stamp     # the origin is applied
    assert tb.from_stamp(reused.header.stamp) == pytest.approx(2.02, abs=1e-9)


def test_imu_orientation_gives_compass_heading():
    from sensor_msgs.msg import Imu
    msg = Imu()
    q = frames.heading_to_quat_enu(math.radians(-120))
    msg.orientation.x, msg.orientation.y, msg.orientation.z, msg.orientation.w = q
    assert math.degrees(messages.imu_orientation_heading(msg)) == pytest.approx(-120)


def test_mag_from_heading_points_north_in_body_frame():
    field = messages.earth_field_ned(50e-6, math.radians(60), 0.0)
    ahead = messages.mag_from_heading(0.0, 0.0, field)
    assert ahead.field_t[0] > 0 and abs(ahead.field_t[1]) < 1e-12
    east = messages.mag_from_heading(0.0, math.pi / 2, field)      # facing east, north is to port: -y in FRD
    assert east.field_t[1] < 0 and abs(east.field_t[0]) < 1e-12


def test_odometry_round_trip_pose_in_odom_twist_in_base_link():
    nav = NavState(time_s=3.0, north_m=10.0, east_m=-4.0, heading_rad=math.radians(100), surge_mps=1.1,
                   sway_mps=0.2, yaw_rate_rps=0.05, pos_std_m=0.8, heading_std_rad=0.03)
    odom = messages.nav_state_to_odometry(nav, "odom", "base_link", TB)
    assert (odom.header.frame_id, odom.child_frame_id) == ("odom", "base_link")
    assert (odom.pose.pose.position.x, odom.pose.pose.position.y) == (-4.0, 10.0)
    assert odom.twist.twist.linear.y == pytest.approx(-0.2) and odom.twist.twist.angular.z == pytest.approx(-0.05)
    assert odom.pose.covariance[0] == pytest.approx(0.64) and odom.pose.covariance[35] == pytest.approx(0.0009)
    assert odom.pose.covariance[14] == messages.UNOBSERVED_VARIANCE
    back = messages.odometry_to_nav_state(odom, TB)
    for f in ("time_s", "north_m", "east_m", "heading_rad", "surge_mps", "sway_mps", "yaw_rate_rps", "pos_std_m",
              "heading_std_rad"):
        assert getattr(back, f) == pytest.approx(getattr(nav, f)), f


def test_filtered_fix_and_path_are_in_the_mission_frame():
    frame = LocalFrame(51.11, 17.06)
    nav = NavState(time_s=1.0, north_m=100.0, east_m=50.0, heading_rad=0.0, surge_mps=0, sway_mps=0,
                   yaw_rate_rps=0, pos_std_m=1.0)
    fix = messages.nav_state_to_navsatfix(nav, frame, "base_link", TB)
    assert frame.to_ned(fix.latitude, fix.longitude) == pytest.approx((100.0, 50.0), abs=1e-6)
    wps = [(0.0, 0.0), (0.0, 80.0), (20.0, 80.0)]
    path = messages.mission_to_path(wps, "odom", TB, 1.0)
    assert path.header.frame_id == "odom" and len(path.poses) == 3
    assert messages.path_to_waypoints_ned(path) == [pytest.approx(w) for w in wps]
    # the second pose faces along the leg into it (east), the third north
    q2 = path.poses[1].pose.orientation
    assert math.degrees(frames.quat_enu_to_heading((q2.x, q2.y, q2.z, q2.w))) == pytest.approx(90)
    q3 = path.poses[2].pose.orientation
    assert math.degrees(frames.quat_enu_to_heading((q3.x, q3.y, q3.z, q3.w))) == pytest.approx(0, abs=1e-9)
