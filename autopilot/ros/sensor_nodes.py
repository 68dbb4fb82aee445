"""GNSS and IMU nodes: what the sensor drivers delivered, as standard messages.

- GNSS: sensor_msgs/NavSatFix (status, service, APPROXIMATED covariance from the receiver's CEP) and the velocity
  over ground as geometry_msgs/TwistWithCovarianceStamped (ENU, like nmea_navsat_driver's `vel`).
- IMU: sensor_msgs/Imu (FLU, orientation_covariance[0] = -1: the LSM9DS1 gives no orientation) and
  sensor_msgs/MagneticField (FLU, tesla).
Sensor-data QoS (best effort; autopilot/ros/interface.py). Frame ids and topic names from the boat config.

In the composed boat process the autopilot node polls the backend and hands each batch to `publish_batch()`
(no second trip through DDS for the control loop). Run on its own (`nodes: [gnss]` in another process), a node
polls its own SensorSource on a timer and publishes what it gets.
"""
from __future__ import annotations

from typing import Optional

from geometry_msgs.msg import TwistWithCovarianceStamped
from rclpy.node import Node
from sensor_msgs.msg import Imu, MagneticField, NavSatFix

from autopilot.ros import messages
from autopilot.ros.interface import BY_KEY
from autopilot.ros.messages import CEP_TO_SIGMA, TimeBase
from autopilot.ros.qos import qos_for, quiet_publisher


class GnssNode(Node):
    def __init__(self, cfg, vessel, time_base: TimeBase, source=None, poll_rate_hz: float = 10.0,
                 context=None):
        ros = cfg.ros
        super().__init__(f"{ros.node_prefix}_gnss", namespace=ros.namespace or None, context=context,
                         start_parameter_services=False)
        self.tb = time_base
        self.frame_id = ros.frames.gnss
        self.vel_frame_id = ros.frames.odom        # the velocity is in ENU axes, not the antenna's
        self.speed_std_mps = vessel.sensors.gnss.speed_noise_mps
        self.fix_pub = quiet_publisher(self, NavSatFix, ros.topics.gnss_fix, qos_for(BY_KEY["gnss_fix"].qos, ros))
        self.vel_pub = quiet_publisher(self, TwistWithCovarianceStamped, ros.topics.gnss_vel,
                                       qos_for(BY_KEY["gnss_vel"].qos, ros))
        self.published = 0
        self._source = source
        if source is not None:
            self.create_timer(1.0 / poll_rate_hz, self._poll)

    def _poll(self) -> None:
        t = self.tb.from_ns(self.get_clock().now().nanoseconds)
        self.publish_batch(self._source.poll(t))

    def publish_batch(self, batch) -> None:
        for fix in batch.gps:
            self.fix_pub.publish(messages.gps_fix_to_navsatfix(fix, self.frame_id, self.tb))
            vel = messages.gps_velocity_to_twist(fix, self.vel_frame_id, self.tb, self.speed_std_mps)
            if vel is not None:
                self.vel_pub.publish(vel)
            self.published += 1


class ImuNode(Node):
    def __init__(self, cfg, vessel, time_base: TimeBase, source=None, poll_rate_hz: Optional[float] = None,
                 context=None):
        ros = cfg.ros
        super().__init__(f"{ros.node_prefix}_imu", namespace=ros.namespace or None, context=context,
                         start_parameter_services=False)
        self.tb = time_base
        self.frame_id = ros.frames.imu
        s = vessel.sensors
        self.gyro_std, self.accel_std, self.mag_noise = s.imu.gyro_noise_rps, s.imu.accel_noise_mps2, s.mag.noise_t
        self.imu_pub = quiet_publisher(self, Imu, ros.topics.imu, qos_for(BY_KEY["imu"].qos, ros))
        self.mag_pub = quiet_publisher(self, MagneticField, ros.topics.mag, qos_for(BY_KEY["mag"].qos, ros))
        self._imu_msg: Optional[Imu] = None          # reused for every sample (see messages.fill_imu)
        self._mag_msg: Optional[MagneticField] = None
        self.published = 0
        self._source = source
        if source is not None:
            self.create_timer(1.0 / (poll_rate_hz or vessel.control.loop_rate_hz), self._poll)

    def _poll(self) -> None:
        t = self.tb.from_ns(self.get_clock().now().nanoseconds)
        self.publish_batch(self._source.poll(t))

    def publish_batch(self, batch) -> None:
        for s in batch.imu:
            if self._imu_msg is None:
                self._imu_msg = messages.imu_sample_to_imu(s, self.frame_id, self.tb, self.gyro_std,
                                                           self.accel_std)
            self.imu_pub.publish(messages.fill_imu(self._imu_msg, s, self.tb))
            self.published += 1
        for m in batch.mag:
            if self._mag_msg is None:
                self._mag_msg = messages.mag_sample_to_magnetic_field(m, self.frame_id, self.tb, self.mag_noise)
            self.mag_pub.publish(messages.fill_magnetic_field(self._mag_msg, m, self.tb))


__all__ = ["GnssNode", "ImuNode", "CEP_TO_SIGMA"]
