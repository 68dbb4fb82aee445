"""The boat's health by component (GNSS, IMU, EKF, Compass, Turning, Battery, ESC, loop timing), with or without
ROS.

`component_statuses(runtime, now_s, sensor_timeout_s)` is what the ROS diagnostics publish
(autopilot/ros/diagnostics_node.py) and what `HealthLog` logs without ROS: levels as diagnostic_msgs has them
(OK 0, WARN 1, ERROR 2, STALE 3), a one-line message, the device's hardware id and its figures. A sensor silent
longer than the timeout is ERROR; components the core reports through `Autopilot.health(t)` are merged in, the
worse level winning. Nothing here raises for a component that cannot say (the core's health() failing is
itself a status).
"""
from __future__ import annotations

import math
from typing import Callable, Dict, Optional

OK, WARN, ERROR, STALE = 0, 1, 2, 3          # diagnostic_msgs/DiagnosticStatus levels
LEVEL_NAMES = {OK: "OK", WARN: "WARN", ERROR: "ERROR", STALE: "STALE"}
_LEVEL_NAMES = {"OK": OK, "WARN": WARN, "WARNING": WARN, "ERROR": ERROR, "STALE": STALE}


def _silence(last_s: Optional[float], now: float, what: str, timeout_s: float) -> tuple[int, str, float]:
    if last_s is None:
        return ERROR, f"no {what} received", math.inf
    age = now - last_s
    if age > timeout_s:
        return ERROR, f"{what} silent for {age:.1f} s", age
    return OK, f"{what} OK", age

def component_statuses(ap, now: float, sensor_timeout_s: float) -> list:
    """(component, level, message, hardware_id, values) for GNSS, IMU, EKF, Compass, Turning, ESC and loop
    timing of the runtime `ap` at core time `now` [s], merged with the core's own `health(now)`; a sensor silent
    longer than `sensor_timeout_s` [s] is ERROR. Levels are OK, WARN, ERROR, STALE."""
    watch = ap.sensors
    hw = getattr(ap.backend, "hardware_ids", {})
    out = []

    lv, msg, age = _silence(watch.last_s["gnss"], now, "GNSS data", sensor_timeout_s)
    fix = watch.last_fix
    vals = {"fixes": watch.counts["gnss"], "age_s": age}
    if fix is not None:
        vals.update({"fix_quality": fix.fix_quality, "sats": fix.sats, "hdop": fix.hdop,
                     "pos_std_m": fix.pos_std_m, "lat_deg": fix.lat_deg, "lon_deg": fix.lon_deg})
    if lv == OK:
        vlv, vmsg, vage = _silence(watch.last_s["gnss_valid"], now, "valid fix", sensor_timeout_s)
        if vlv != OK:
            lv, msg = WARN, vmsg
        else:
            msg = f"fix quality {fix.fix_quality}, {fix.sats} sats, HDOP {fix.hdop:.1f}"
    out.append(("GNSS", lv, msg, hw.get("gnss", ""), vals))

    lv, msg, age = _silence(watch.last_s["imu"], now, "IMU data", sensor_timeout_s)
    mlv, mmsg, mage = _silence(watch.last_s["mag"], now, "magnetometer data", sensor_timeout_s)
    vals = {"samples": watch.counts["imu"], "age_s": age, "mag_samples": watch.counts["mag"], "mag_age_s": mage,
            "stale_samples": watch.stale["imu"], "mag_stale_samples": watch.stale["mag"]}
    if lv == OK and mlv != OK:
        lv, msg = WARN, mmsg
    out.append(("IMU", lv, msg, hw.get("imu", ""), vals))

    health = ap.estimator_health(now)
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

    battery = getattr(ap.backend, "battery_health", None)
    report = battery(now) if callable(battery) else None
    if report is not None:           # the pack's power monitor (drivers/power_monitor/)
        level, msg, vals = report
        out.append(("Battery", _LEVEL_NAMES[level], msg, hw.get("battery", ""), vals))

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
        out = _merge(out, extra)
    return out

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


class HealthLog:
    """Without ROS, the diagnostics as log lines: `check(now_s)` (call it under the runtime's lock, about once a
    second) logs each component whose level changed since the last check, with its message and device: worse
    as a warning, better as information. The first check logs only what is not OK."""

    def __init__(self, runtime, sensor_timeout_s: float, warn: Callable[[str], object],
                 info: Callable[[str], object]):
        self.runtime = runtime
        self.timeout_s = sensor_timeout_s
        self._warn, self._info = warn, info
        self.levels: Dict[str, int] = {}

    def check(self, now_s: float) -> None:
        for name, level, message, hardware_id, _values in component_statuses(self.runtime, now_s, self.timeout_s):
            before = self.levels.get(name, OK)
            self.levels[name] = level
            if level == before:
                continue
            where = f" ({hardware_id})" if hardware_id else ""
            line = f"[health] {name}: {LEVEL_NAMES.get(level, level)}: {message}{where}"
            (self._warn if level > before else self._info)(line)
