"""The autopilot's narrow types <-> standard ROS 2 messages (sensor_msgs, nav_msgs, geometry_msgs, std_msgs).

Every frame change goes through `autopilot.ros.frames` (NED/FRD inside, ENU/FLU on the wire). Every conversion
here is a pure function of its arguments: times come in as core seconds plus a `TimeBase` that maps them to and
from ROS stamps, frame ids come from the boat config.

Covariance conventions (what robot_localization, rviz and Foxglove expect):
- NavSatFix: `position_covariance` in ENU [m^2]; type APPROXIMATED when derived from the receiver's CEP/HDOP,
  UNKNOWN (all zeros) when the source gives nothing (ros_gz_bridge does this).
- Imu: `orientation_covariance[0] = -1` when no orientation is given; a zero matrix means "unknown".
- Odometry/TwistWithCovariance: 6x6 row-major (x, y, z, rot x, rot y, rot z); axes the estimator does not
  observe carry UNOBSERVED_VARIANCE.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Optional, Sequence

from builtin_interfaces.msg import Time as TimeMsg
from geometry_msgs.msg import PoseStamped, TwistWithCovarianceStamped
from nav_msgs.msg import Odometry, Path
from sensor_msgs.msg import Imu, MagneticField, NavSatFix, NavSatStatus

from autopilot.ros import frames
from autopilot.vocab.types import GpsFix, ImuSample, MagSample, NavState

UNOBSERVED_VARIANCE = 1.0e6          # variance given to axes nobody measures (a large value, not -1, per REP-145)
CEP_TO_SIGMA = 1.0 / math.sqrt(2.0 * math.log(2.0))   # 50 % circle radius -> 1-sigma per axis (circular normal)


@dataclass(frozen=True)
class TimeBase:
    """Maps ROS time (stamps, node clock) to the core's seconds: core = ros - origin.

    The origin is taken once when a node starts (0 under /clock from a simulator), so core times stay small and
    exact in a float64 while stamps on the wire are ordinary ROS time. Kept in integer nanoseconds: an epoch
    time in a float64 would lose a quarter of a microsecond.
    """

    origin_ns: int = 0

    @classmethod
    def from_seconds(cls, origin_s: float) -> "TimeBase":
        return cls(int(round(origin_s * 1e9)))

    def _sec_nanosec(self, t_s: float) -> tuple[int, int]:
        return divmod(int(round(t_s * 1e9)) + self.origin_ns, 1_000_000_000)

    def to_stamp(self, t_s: float) -> TimeMsg:
        sec, nanosec = self._sec_nanosec(t_s)
        return TimeMsg(sec=sec, nanosec=nanosec)

    def fill_stamp(self, stamp: TimeMsg, t_s: float) -> None:
        """Write core time t_s into an existing stamp (no new message object: the 50 Hz publishers reuse theirs)."""
        stamp.sec, stamp.nanosec = self._sec_nanosec(t_s)

    def from_stamp(self, stamp) -> float:
        return (stamp.sec * 1_000_000_000 + stamp.nanosec - self.origin_ns) * 1e-9

    def from_ns(self, ros_ns: int) -> float:
        """Core seconds of a ROS time given in nanoseconds (rclpy Time.nanoseconds)."""
        return (ros_ns - self.origin_ns) * 1e-9


# ------------------------------------------------------------------------------------------ GNSS
_QUALITY_TO_STATUS = {0: NavSatStatus.STATUS_NO_FIX, 1: NavSatStatus.STATUS_FIX, 2: NavSatStatus.STATUS_SBAS_FIX,
                      3: NavSatStatus.STATUS_FIX, 4: NavSatStatus.STATUS_GBAS_FIX, 5: NavSatStatus.STATUS_GBAS_FIX,
                      6: NavSatStatus.STATUS_FIX}
_STATUS_TO_QUALITY = {NavSatStatus.STATUS_FIX: 1, NavSatStatus.STATUS_SBAS_FIX: 2, NavSatStatus.STATUS_GBAS_FIX: 4}


def gps_fix_to_navsatfix(fix: GpsFix, frame_id: str, tb: TimeBase,
                         service: int = NavSatStatus.SERVICE_GPS) -> NavSatFix:
    """A receiver epoch -> NavSatFix with status and an APPROXIMATED ENU covariance from `pos_std_m`."""
    msg = NavSatFix()
    msg.header.stamp = tb.to_stamp(fix.time_s)
    msg.header.frame_id = frame_id
    usable = fix.valid and fix.fix_quality > 0
    msg.status.status = _QUALITY_TO_STATUS.get(fix.fix_quality, NavSatStatus.STATUS_FIX) if usable \
        else NavSatStatus.STATUS_NO_FIX
    msg.status.service = service
    msg.latitude = float(fix.lat_deg) if usable else math.nan
    msg.longitude = float(fix.lon_deg) if usable else math.nan
    msg.altitude = float(fix.alt_m) if usable else math.nan
    var_h = float(fix.pos_std_m) ** 2
    msg.position_covariance = [var_h, 0.0, 0.0, 0.0, var_h, 0.0, 0.0, 0.0, 4.0 * var_h]
    msg.position_covariance_type = NavSatFix.COVARIANCE_TYPE_APPROXIMATED
    return msg


def navsatfix_to_gps_fix(msg: NavSatFix, tb: TimeBase, default_std_m: float, assumed_sats: int = 0,
                         velocity: Optional[TwistWithCovarianceStamped] = None) -> GpsFix:
    """NavSatFix (+ optional ENU velocity) -> GpsFix.

    `default_std_m` (1-sigma per horizontal axis) is used when the covariance type is UNKNOWN, as it is from
    ros_gz_bridge. NavSatFix carries no satellite count or HDOP: `assumed_sats` stands in (config), HDOP stays 1.
    """
    valid = msg.status.status >= NavSatStatus.STATUS_FIX and math.isfinite(msg.latitude) \
        and math.isfinite(msg.longitude)
    if msg.position_covariance_type != NavSatFix.COVARIANCE_TYPE_UNKNOWN:
        cov = msg.position_covariance
        std = math.sqrt(max(cov[0], cov[4], 0.0)) or default_std_m
    else:
        std = default_std_m
    sog = cog = None
    if velocity is not None:
        ve, vn = velocity.twist.twist.linear.x, velocity.twist.twist.linear.y
        sog = math.hypot(ve, vn)
        cog = math.atan2(ve, vn)
    return GpsFix(time_s=tb.from_stamp(msg.header.stamp),
                  lat_deg=float(msg.latitude) if valid else 0.0,
                  lon_deg=float(msg.longitude) if valid else 0.0,
                  alt_m=float(msg.altitude) if valid and math.isfinite(msg.altitude) else 0.0,
                  fix_quality=_STATUS_TO_QUALITY.get(msg.status.status, 1) if valid else 0,
                  sats=assumed_sats, hdop=1.0, sog_mps=sog, cog_rad=cog, pos_std_m=std, valid=valid)


def gps_velocity_to_twist(fix: GpsFix, frame_id: str, tb: TimeBase,
                          speed_std_mps: float) -> Optional[TwistWithCovarianceStamped]:
    """Speed and course over ground -> ENU velocity (x east, y north) like nmea_navsat_driver's `vel`, stamped
    with `frame_id`, which should be an ENU frame (the autopilot uses its odom frame; nmea_navsat_driver stamps
    its antenna frame, and navsatfix_to_gps_fix reads either); None if the epoch has no velocity."""
    if not fix.valid or fix.sog_mps is None or fix.cog_rad is None:
        return None
    msg = TwistWithCovarianceStamped()
    msg.header.stamp = tb.to_stamp(fix.time_s)
    msg.header.frame_id = frame_id
    vn, ve = fix.sog_mps * math.cos(fix.cog_rad), fix.sog_mps * math.sin(fix.cog_rad)
    x, y, z = frames.ned_to_enu((vn, ve, 0.0))
    msg.twist.twist.linear.x, msg.twist.twist.linear.y, msg.twist.twist.linear.z = x, y, z
    var = float(speed_std_mps) ** 2
    cov = [0.0] * 36
    cov[0], cov[7], cov[14] = var, var, UNOBSERVED_VARIANCE
    cov[21] = cov[28] = cov[35] = UNOBSERVED_VARIANCE
    msg.twist.covariance = cov
    return msg


# ------------------------------------------------------------------------------------------ IMU / magnetometer
def _diag3(var: float) -> list:
    return [var, 0.0, 0.0, 0.0, var, 0.0, 0.0, 0.0, var]


def imu_sample_to_imu(s: ImuSample, frame_id: str, tb: TimeBase, gyro_std_rps: float,
                      accel_std_mps2: float) -> Imu:
    """FRD gyro/accelerometer -> sensor_msgs/Imu in the FLU sensor frame, no orientation (covariance[0] = -1)."""
    msg = Imu()
    msg.header.frame_id = frame_id
    msg.orientation.w = 1.0
    msg.orientation_covariance = [-1.0] + [0.0] * 8
    msg.angular_velocity_covariance = _diag3(float(gyro_std_rps) ** 2)
    msg.linear_acceleration_covariance = _diag3(float(accel_std_mps2) ** 2)
    return fill_imu(msg, s, tb)


def fill_imu(msg: Imu, s: ImuSample, tb: TimeBase) -> Imu:
    """Write the parts of `msg` that change with each sample (stamp, rates, accelerations; FRD -> FLU) and
    return it. `msg` is one imu_sample_to_imu built: a node publishing every sample reuses one message object
    (rclpy serialises at publish()) instead of building a new one with all its covariances each time."""
    tb.fill_stamp(msg.header.stamp, s.time_s)
    gx, gy, gz = frames.frd_to_flu(s.gyro_rps)
    ax, ay, az = frames.frd_to_flu(s.accel_mps2)
    av, la = msg.angular_velocity, msg.linear_acceleration
    av.x, av.y, av.z = gx, gy, gz
    la.x, la.y, la.z = ax, ay, az
    return msg


def imu_to_imu_sample(msg: Imu, tb: TimeBase) -> ImuSample:
    """sensor_msgs/Imu (FLU) -> ImuSample (FRD). Orientation, if any, is not part of ImuSample."""
    av, la = msg.angular_velocity, msg.linear_acceleration
    return ImuSample(time_s=tb.from_stamp(msg.header.stamp),
                     accel_mps2=frames.flu_to_frd((la.x, la.y, la.z)),
                     gyro_rps=frames.flu_to_frd((av.x, av.y, av.z)))


def imu_orientation_heading(msg: Imu) -> Optional[float]:
    """Compass heading from an Imu orientation (FLU in ENU), or None when the message has no orientation."""
    if msg.orientation_covariance[0] == -1.0:
        return None
    q = (msg.orientation.x, msg.orientation.y, msg.orientation.z, msg.orientation.w)
    if sum(c * c for c in q) < 1e-12:
        return None
    return frames.quat_enu_to_heading(q)


def mag_sample_to_magnetic_field(s: MagSample, frame_id: str, tb: TimeBase, noise_t: float) -> MagneticField:
    """FRD field [T] -> sensor_msgs/MagneticField in the FLU sensor frame, per-axis noise as its covariance."""
    msg = MagneticField()
    msg.header.frame_id = frame_id
    msg.magnetic_field_covariance = _diag3(float(noise_t) ** 2)
    return fill_magnetic_field(msg, s, tb)


def fill_magnetic_field(msg: MagneticField, s: MagSample, tb: TimeBase) -> MagneticField:
    """Stamp and field of `s` into a message mag_sample_to_magnetic_field built (see fill_imu)."""
    tb.fill_stamp(msg.header.stamp, s.time_s)
    f = msg.magnetic_field
    f.x, f.y, f.z = frames.frd_to_flu(s.field_t)
    return msg


def magnetic_field_to_mag_sample(msg: MagneticField, tb: TimeBase) -> MagSample:
    f = msg.magnetic_field
    return MagSample(time_s=tb.from_stamp(msg.header.stamp), field_t=frames.flu_to_frd((f.x, f.y, f.z)))


def earth_field_ned(field_t: float, inclination_rad: float, declination_rad: float) -> tuple:
    """The local geomagnetic field vector in NED [T] (inclination positive down, declination east of north)."""
    h = field_t * math.cos(inclination_rad)
    return (h * math.cos(declination_rad), h * math.sin(declination_rad), field_t * math.sin(inclination_rad))


def mag_from_heading(t_s: float, heading_rad: float, field_ned_t: Sequence[float]) -> MagSample:
    """What an ideal level magnetometer reads (FRD) at a compass heading: used when a simulator gives an IMU
    orientation but no magnetometer (the VRX WAM-V), so the heading still reaches the estimator as a field."""
    c, s = math.cos(heading_rad), math.sin(heading_rad)
    n, e, d = field_ned_t
    return MagSample(time_s=t_s, field_t=(c * n + s * e, -s * n + c * e, d))


# ------------------------------------------------------------------------------------------ estimate
def nav_state_to_odometry(nav: NavState, odom_frame: str, base_frame: str, tb: TimeBase,
                          speed_std_mps: Optional[float] = None,
                          yaw_rate_std_rps: Optional[float] = None) -> Odometry:
    """NavState -> Odometry: pose of base_link (FLU) in odom (ENU), twist in base_link.

    Pose covariance: x, y from `pos_std_m` (the larger axis, so conservative), yaw from `heading_std_rad`;
    z, roll and pitch are not estimated (UNOBSERVED_VARIANCE). The twist covariance uses the estimator's speed
    and yaw-rate standard deviations when given (from its health report), else UNOBSERVED_VARIANCE.
    """
    msg = Odometry()
    msg.header.stamp = tb.to_stamp(nav.time_s)
    msg.header.frame_id = odom_frame
    msg.child_frame_id = base_frame
    x, y, z = frames.ned_to_enu((nav.north_m, nav.east_m, 0.0))
    p = msg.pose.pose
    p.position.x, p.position.y, p.position.z = x, y, z
    qx, qy, qz, qw = frames.heading_to_quat_enu(nav.heading_rad)
    p.orientation.x, p.orientation.y, p.orientation.z, p.orientation.w = qx, qy, qz, qw
    pc = [0.0] * 36
    pc[0] = pc[7] = float(nav.pos_std_m) ** 2
    pc[14] = pc[21] = pc[28] = UNOBSERVED_VARIANCE
    pc[35] = float(nav.heading_std_rad) ** 2
    msg.pose.covariance = pc
    vx, vy, _ = frames.frd_to_flu((nav.surge_mps, nav.sway_mps, 0.0))
    t = msg.twist.twist
    t.linear.x, t.linear.y = vx, vy
    t.angular.z = frames.yaw_rate_frd_to_flu(nav.yaw_rate_rps)
    tc = [0.0] * 36
    tc[0] = tc[7] = speed_std_mps ** 2 if speed_std_mps is not None else UNOBSERVED_VARIANCE
    tc[14] = tc[21] = tc[28] = UNOBSERVED_VARIANCE
    tc[35] = yaw_rate_std_rps ** 2 if yaw_rate_std_rps is not None else UNOBSERVED_VARIANCE
    msg.twist.covariance = tc
    return msg


def odometry_to_nav_state(msg: Odometry, tb: TimeBase) -> NavState:
    """The inverse of nav_state_to_odometry (for consumers of the estimate and for tests)."""
    p = msg.pose.pose
    n, e, _ = frames.enu_to_ned((p.position.x, p.position.y, p.position.z))
    heading = frames.quat_enu_to_heading((p.orientation.x, p.orientation.y, p.orientation.z, p.orientation.w))
    u, v, _ = frames.flu_to_frd((msg.twist.twist.linear.x, msg.twist.twist.linear.y, 0.0))
    pc = msg.pose.covariance
    return NavState(time_s=tb.from_stamp(msg.header.stamp), north_m=n, east_m=e, heading_rad=heading,
                    surge_mps=u, sway_mps=v, yaw_rate_rps=frames.yaw_rate_flu_to_frd(msg.twist.twist.angular.z),
                    pos_std_m=math.sqrt(max(pc[0], pc[7])), heading_std_rad=math.sqrt(pc[35]))


def nav_state_to_navsatfix(nav: NavState, frame, frame_id: str, tb: TimeBase) -> NavSatFix:
    """The filtered position as a NavSatFix (what a GNSS consumer wants), from the local frame's origin."""
    msg = NavSatFix()
    msg.header.stamp = tb.to_stamp(nav.time_s)
    msg.header.frame_id = frame_id
    msg.status.service = NavSatStatus.SERVICE_GPS
    if nav.valid:
        lat, lon = frame.to_wgs84(nav.north_m, nav.east_m)
        msg.status.status = NavSatStatus.STATUS_FIX
        msg.latitude, msg.longitude, msg.altitude = lat, lon, 0.0
    else:
        msg.status.status = NavSatStatus.STATUS_NO_FIX
        msg.latitude = msg.longitude = msg.altitude = math.nan
    var = float(nav.pos_std_m) ** 2
    msg.position_covariance = [var, 0.0, 0.0, 0.0, var, 0.0, 0.0, 0.0, UNOBSERVED_VARIANCE]
    msg.position_covariance_type = NavSatFix.COVARIANCE_TYPE_APPROXIMATED
    return msg


# ------------------------------------------------------------------------------------------ mission
def mission_to_path(waypoints_ned: Iterable[Sequence[float]], frame_id: str, tb: TimeBase, t_s: float,
                    start_ned: Optional[Sequence[float]] = None) -> Path:
    """The mission's waypoints as a nav_msgs/Path in ENU, each pose facing along the leg that reaches it."""
    pts = [tuple(map(float, p[:2])) for p in waypoints_ned]
    msg = Path()
    msg.header.stamp = tb.to_stamp(t_s)
    msg.header.frame_id = frame_id
    prev = tuple(start_ned[:2]) if start_ned is not None else None
    for i, (n, e) in enumerate(pts):
        if prev is None or math.hypot(n - prev[0], e - prev[1]) < 1e-6:
            nxt = pts[i + 1] if i + 1 < len(pts) else None
            heading = math.atan2(nxt[1] - e, nxt[0] - n) if nxt is not None else 0.0
        else:
            heading = math.atan2(e - prev[1], n - prev[0])
        ps = PoseStamped()
        ps.header = msg.header
        x, y, z = frames.ned_to_enu((n, e, 0.0))
        ps.pose.position.x, ps.pose.position.y, ps.pose.position.z = x, y, z
        qx, qy, qz, qw = frames.heading_to_quat_enu(heading)
        ps.pose.orientation.x, ps.pose.orientation.y, ps.pose.orientation.z, ps.pose.orientation.w = qx, qy, qz, qw
        msg.poses.append(ps)
        prev = (n, e)
    return msg


def path_to_waypoints_ned(msg: Path) -> list:
    return [frames.enu_to_ned((p.pose.position.x, p.pose.position.y, p.pose.position.z))[:2] for p in msg.poses]
