"""Diagnostics: one diagnostic_msgs/DiagnosticStatus per component (GNSS, IMU, EKF, Compass, Turning, ESC, loop
timing) at 1 Hz. Compass: the magnetic heading against the GNSS course (mag_consistency_deg) and the continuous
calibration's updates. Turning: the measured yaw rate in hard turns against the vessel file's (turn_rate_scale,
WARN below 0.8: guidance flies that boat's corners slower and begins them earlier).

Shape as rqt_robot_monitor, diagnostic_aggregator and Foxglove expect: `name` is "NODE: Component", `level`
OK/WARN/ERROR/STALE, a one-line `message`, `hardware_id` naming the device (port, bus, topic), and `values` as
string key/value pairs with units in the keys. Runs beside the autopilot node (same process) and reads its
counters directly; a sensor that stops delivering shows as ERROR once it has been silent longer than
`ros.sensor_timeout_s`. Components the core reports through `Autopilot.health(t)` (when it has one) are
merged in, the worse level winning.
"""
from __future__ import annotations

import math

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rclpy.node import Node
from rclpy.parameter import Parameter

from autopilot.ros.interface import BY_KEY
from autopilot.ros.qos import qos_for, quiet_publisher
from autopilot.runtime.health import component_statuses


def _fmt(v) -> str:
    if isinstance(v, float):
        return "nan" if math.isnan(v) else f"{v:.6g}"
    return str(v)


def _status(name: str, level: int, message: str, hardware_id: str, values: dict) -> DiagnosticStatus:
    st = DiagnosticStatus()
    st.name, st.message, st.hardware_id = name, message, hardware_id
    st.level = bytes([level]) if isinstance(DiagnosticStatus().level, bytes) else level
    st.values = [KeyValue(key=str(k), value=_fmt(v)) for k, v in values.items()]
    return st


def level_of(status: DiagnosticStatus) -> int:
    lv = status.level
    return lv[0] if isinstance(lv, (bytes, bytearray)) else int(lv)


class DiagnosticsNode(Node):
    def __init__(self, cfg, autopilot_node, use_sim_time: bool = False, context=None):
        ros = cfg.ros
        super().__init__(f"{ros.node_prefix}_diagnostics", namespace=ros.namespace or None, context=context,
                         start_parameter_services=False,
                         parameter_overrides=[Parameter("use_sim_time", Parameter.Type.BOOL, use_sim_time)])
        self.ap = autopilot_node
        self.timeout_s = ros.sensor_timeout_s
        self.pub = quiet_publisher(self, DiagnosticArray, ros.topics.diagnostics,
                                   qos_for(BY_KEY["diagnostics"].qos, ros))
        self.create_timer(1.0 / ros.diagnostics_rate_hz, self.publish)
        self.prefix = ros.node_prefix

    def statuses(self, now: float) -> list:
        """One DiagnosticStatus per component (autopilot/runtime/health.py), named "NODE: Component"."""
        return [_status(f"{self.prefix}: {name}", lv, msg, hid, vals)
                for name, lv, msg, hid, vals in component_statuses(self.ap.runtime, now, self.timeout_s)]

    def publish(self) -> None:
        now = self.ap.now_s()
        arr = DiagnosticArray()
        arr.header.stamp = self.ap.tb.to_stamp(now)
        with self.ap.lock:             # the control loop runs in its own thread
            arr.status = self.statuses(now)
        self.pub.publish(arr)
