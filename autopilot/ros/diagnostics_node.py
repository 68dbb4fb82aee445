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
from typing import Optional

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rclpy.node import Node
from rclpy.parameter import Parameter

from autopilot.ros.interface import BY_KEY
from autopilot.ros.qos import qos_for, quiet_publisher

OK, WARN, ERROR, STALE = (int.from_bytes(x, "little") if isinstance(x, bytes) else int(x) for x in
                          (DiagnosticStatus.OK, DiagnosticStatus.WARN, DiagnosticStatus.ERROR,
                           DiagnosticStatus.STALE))
_LEVEL_NAMES = {"OK": OK, "WARN": WARN, "WARNING": WARN, "ERROR": ERROR, "STALE": STALE}


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

    def _silence(self, last_s: Optional[float], now: float, what: str) -> tuple[int, str, float]:
        if last_s is None:
            return ERROR, f"no {what} received", math.inf
        age = now - last_s
        if age > self.timeout_s:
            return ERROR, f"{what} silent for {age:.1f} s", age
        return OK, f"{what} OK", age

    def statuses(self, now: float) -> list:
        ap, watch = self.ap, self.ap.sensors
        hw = getattr(ap.backend, "hardware_ids", {})
        out = []

        lv, msg, age = self._silence(watch.last_s["gnss"], now, "GNSS data")
        fix = watch.last_fix
        vals = {"fixes": watch.counts["gnss"], "age_s": age}
        if fix is not None:
            vals.update({"fix_quality": fix.fix_quality, "sats": fix.sats, "hdop": fix.hdop,
                         "pos_std_m": fix.pos_std_m, "lat_deg": fix.lat_deg, "lon_deg": fix.lon_deg})
        if lv == OK:
            vlv, vmsg, vage = self._silence(watch.last_s["gnss_valid"], now, "valid fix")
            if vlv != OK:
                lv, msg = WARN, vmsg
            else:
                msg = f"fix quality {fix.fix_quality}, {fix.sats} sats, HDOP {fix.hdop:.1f}"
        out.append(("GNSS", lv, msg, hw.get("gnss", ""), vals))

        lv, msg, age = self._silence(watch.last_s["imu"], now, "IMU data")
        mlv, mmsg, mage = self._silence(watch.last_s["mag"], now, "magnetometer data")
        vals = {"samples": watch.counts["imu"], "age_s": age, "mag_samples": watch.counts["mag"], "mag_age_s": mage,
                "stale_samples": watch.stale["imu"], "mag_stale_samples": watch.stale["mag"]}
        if lv == OK and mlv != OK:
            lv, msg = WARN, mmsg
        out.append(("IMU", lv, msg, hw.get("imu", ""), vals))

        health = ap._estimator_health(now)
        if health is None:
            res = ap.last_result
            valid = bool(res and res.nav.valid)
            out.append(("EKF", OK if valid else ERROR, "estimate valid" if valid else "no valid estimate", "",
                        {"valid": valid}))
        else:
            d = health.as_dict() if hasattr(health, "as_dict") else dict(health.__dict__)
            if health.converged:
                lv, msg = OK, f"converged, position sigma {health.pos_std_m:.2f} m"
            elif health.valid:
                lv, msg = WARN, f"not converged (position sigma {health.pos_std_m:.2f} m)"
            else:
                lv, msg = ERROR, "no valid estimate"
            out.append(("EKF", lv, msg, "", {k: ("none" if v is None else v) for k, v in d.items()}))

        watch = getattr(ap.autopilot, "mag_watch", None)
        if watch is not None:            # the continuous magnetometer calibration (autopilot/calibration/mag_watch.py)
            level, msg, vals = watch.diagnostic()
            out.append(("Compass", _LEVEL_NAMES[level], msg, hw.get("imu", ""), vals))

        turns = getattr(ap.autopilot, "turn_watch", None)
        if turns is not None:            # measured against the file's turn rate (autopilot/guidance/turn_rate_watch.py)
            level, msg, vals = turns.diagnostic()
            out.append(("Turning", _LEVEL_NAMES[level], msg, "", vals))

        res = ap.last_result
        connected = bool(getattr(ap.backend, "connected", True))
        vals = {"connected": connected, "armed": bool(getattr(ap.autopilot, "armed", False))}
        if res is not None:
            for th, f, p in zip(ap.vessel.thrusters, res.thrust.thrust_n, res.pulses.pulse_us):
                vals[f"{th.name}_thrust_n"] = float(f)
                vals[f"{th.name}_pulse_us"] = int(p)
        out.append(("ESC", OK if connected else ERROR, "output connected" if connected else
                    "output not connected", hw.get("esc", ""), vals))

        s = ap.stats.summary()
        period_ms = ap.period_s * 1e3
        if s["cycles"] == 0:
            lv, msg = STALE, "no control cycle yet"
        elif s["cost_p99_ms"] > period_ms:
            lv, msg = ERROR, f"cycle cost p99 {s['cost_p99_ms']:.1f} ms exceeds the {period_ms:.0f} ms period"
        elif s["overruns"] > 0 and s["cost_p99_ms"] > 0.5 * period_ms:
            lv, msg = WARN, f"{s['overruns']} overruns"
        else:
            lv, msg = OK, f"{s['rate_hz']:.1f} Hz, cost p99 {s['cost_p99_ms']:.2f} ms"
        s["period_ms"] = period_ms
        out.append(("Loop timing", lv, msg, "", s))

        core = getattr(ap.autopilot, "health", None)
        if callable(core):
            try:
                extra = core(now)
            except Exception as e:
                extra = {"core": ("ERROR", f"health() failed: {e!r}", {})}
            out = self._merge(out, extra)
        return [_status(f"{self.prefix}: {name}", lv, msg, hid, vals) for name, lv, msg, hid, vals in out]

    @staticmethod
    def _merge(out: list, extra: dict) -> list:
        by_name = {name.lower(): i for i, (name, *_rest) in enumerate(out)}
        for comp, item in (extra or {}).items():
            level, message, values = (tuple(item) + ({},))[:3]
            lv = _LEVEL_NAMES.get(str(level).upper(), level) if not isinstance(level, int) else level
            key = str(comp).lower().replace("_", " ")
            if key in by_name:
                name, olv, omsg, hid, ovals = out[by_name[key]]
                merged = dict(ovals)
                merged.update(values or {})
                out[by_name[key]] = (name, max(olv, lv), message if lv > olv else omsg, hid, merged)
            else:
                out.append((str(comp), lv, message, "", dict(values or {})))
        return out

    def publish(self) -> None:
        now = self.ap.now_s()
        arr = DiagnosticArray()
        arr.header.stamp = self.ap.tb.to_stamp(now)
        with self.ap.lock:             # the control loop runs in its own thread
            arr.status = self.statuses(now)
        self.pub.publish(arr)
