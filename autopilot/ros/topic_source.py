"""A SensorSource fed by ROS topics: NavSatFix (+ optional ENU velocity), Imu, MagneticField.

Used by the gazebo backend (ros_gz_bridge topics) and by an autopilot node whose GNSS and IMU nodes run in other
processes (our own topics). Sensor-data QoS (best effort), which also matches reliable publishers. Samples are
queued as they arrive (FLU -> FRD, stamps -> core seconds) and handed over in time order by `poll()`.
A fix takes the velocity of its own epoch: DDS does not order messages across topics, so a velocity stamped like
the fix may arrive after it (the fix is then completed if not yet polled); a velocity newer than the previous fix
is taken as this epoch's (drivers that stamp the two differently); an older one is never attached.
"""
from __future__ import annotations

import math
import time
from typing import Optional

from geometry_msgs.msg import TwistWithCovarianceStamped
from sensor_msgs.msg import Imu, MagneticField, NavSatFix

from autopilot.ros import messages
from autopilot.ros.messages import TimeBase
from autopilot.ros.qos import quiet_subscription, sensor_qos
from autopilot.vocab.types import SensorBatch


class TopicSensorSource:
    def __init__(self, node, time_base: TimeBase, gnss_topic: str, imu_topic: str, mag_topic: str = "",
                 gnss_vel_topic: str = "", gps_std_m: float = 1.7, assumed_sats: int = 0,
                 mag_field_ned_t: Optional[tuple] = None, depth: int = 10, perf_clock=time.perf_counter,
                 on_stamp=None):
        """`mag_field_ned_t` set: derive a magnetometer sample from each Imu orientation (models without one).
        `on_stamp(kind, stamp_ns)`, when given, is told the header stamp of every message received (kind: gnss,
        imu, mag)."""
        self._on_stamp = on_stamp
        self.newest_polled_s: Optional[float] = None    # core time of the newest sample the last polls handed over
        self.tb = time_base
        self._perf = perf_clock
        self._gps_std_m, self._sats = gps_std_m, assumed_sats
        self._field_ned = mag_field_ned_t
        self._batch = SensorBatch()
        self._last_vel: Optional[TwistWithCovarianceStamped] = None
        self._last_fix_ns: Optional[int] = None          # stamp of the previous fix
        self._waiting_fix: Optional[tuple] = None         # (stamp ns, NavSatFix) queued without its velocity
        self._pending_wall_s: Optional[float] = None
        self.last_input_wall_s: Optional[float] = None
        self.counts = {"gnss": 0, "imu": 0, "mag": 0}
        self.topics = {"gnss": gnss_topic, "imu": imu_topic}
        q = sensor_qos(depth)
        self._subs = [quiet_subscription(node, NavSatFix, gnss_topic, self._on_fix, q),
                      quiet_subscription(node, Imu, imu_topic, self._on_imu, q)]
        if gnss_vel_topic:
            self.topics["gnss_vel"] = gnss_vel_topic
            self._subs.append(quiet_subscription(node, TwistWithCovarianceStamped, gnss_vel_topic, self._on_vel, q))
        if mag_topic:
            self.topics["mag"] = mag_topic
            self._subs.append(quiet_subscription(node, MagneticField, mag_topic, self._on_mag, q))

    def _note(self, kind: str, msg) -> None:
        if self._on_stamp is not None:
            st = msg.header.stamp
            self._on_stamp(kind, st.sec * 1_000_000_000 + st.nanosec)

    @staticmethod
    def _ns(msg) -> int:
        return msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec

    def _on_fix(self, msg: NavSatFix) -> None:
        self._note("gnss", msg)
        stamp, vel = self._ns(msg), self._last_vel
        if vel is not None and self._ns(vel) != stamp and (self._last_fix_ns is None
                                                          or self._ns(vel) <= self._last_fix_ns):
            vel = None                                   # a previous epoch's: its own may still come
        self._waiting_fix = (stamp, msg) if vel is None else None
        self._last_fix_ns = stamp
        self._batch.gps.append(messages.navsatfix_to_gps_fix(msg, self.tb, self._gps_std_m, self._sats, vel))
        self.counts["gnss"] += 1
        self._pending_wall_s = self._perf()

    def _on_vel(self, msg: TwistWithCovarianceStamped) -> None:
        self._last_vel = msg
        waiting = self._waiting_fix
        if waiting is None or waiting[0] != self._ns(msg):
            return
        self._waiting_fix = None
        t = self.tb.from_stamp(waiting[1].header.stamp)
        for i, fix in enumerate(self._batch.gps):        # not yet polled: complete it with its velocity
            if fix.time_s == t and fix.sog_mps is None:
                self._batch.gps[i] = messages.navsatfix_to_gps_fix(waiting[1], self.tb, self._gps_std_m,
                                                                   self._sats, msg)

    def _on_imu(self, msg: Imu) -> None:
        self._note("imu", msg)
        sample = messages.imu_to_imu_sample(msg, self.tb)
        self._batch.imu.append(sample)
        self.counts["imu"] += 1
        if self._field_ned is not None:
            heading = messages.imu_orientation_heading(msg)
            if heading is not None:
                self._batch.mag.append(messages.mag_from_heading(sample.time_s, heading, self._field_ned))
                self.counts["mag"] += 1
        self._pending_wall_s = self._perf()

    def _on_mag(self, msg: MagneticField) -> None:
        self._note("mag", msg)
        self._batch.mag.append(messages.magnetic_field_to_mag_sample(msg, self.tb))
        self.counts["mag"] += 1
        self._pending_wall_s = self._perf()

    def poll(self, t_s: float) -> SensorBatch:
        """Everything received with a stamp <= t_s, in time order; newer samples wait for the next poll."""
        out, keep = SensorBatch(), SensorBatch()
        for name in ("gps", "imu", "mag"):
            for s in sorted(getattr(self._batch, name), key=lambda s: s.time_s):
                getattr(out if s.time_s <= t_s + 1e-9 else keep, name).append(s)
        self._batch = keep
        for name in ("gps", "imu", "mag"):
            got = getattr(out, name)
            if got and (self.newest_polled_s is None or got[-1].time_s > self.newest_polled_s):
                self.newest_polled_s = got[-1].time_s
        self.last_input_wall_s = self._pending_wall_s
        self._pending_wall_s = None
        return out


def cep_sigma_m(cep_m: float) -> float:
    return cep_m * messages.CEP_TO_SIGMA


def earth_field_for(vessel) -> tuple:
    mag = vessel.sensors.mag
    return messages.earth_field_ned(mag.field_t, math.radians(mag.inclination_deg),
                                    math.radians(mag.declination_deg))
