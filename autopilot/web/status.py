"""What the web page shows, read from the autopilot between two cycles (call these from the loop thread).

`StatusReader(autopilot)`. `status(t_s)` is a JSON-ready dict (the schema below), `geometry()` the mission,
fence and home in the mission's local frame, `compass()` CALIBRATE_ON_WATER's samples so far and the last
fit's figures. Units: metres (local frame: north_m, east_m from the mission origin), degrees (headings clockwise
from north, 0..360), m/s, volts, seconds on the core clock. A value the autopilot does not have is None.

status(): t_s, mode, armed, modes (selectable names), nav {valid, north_m, east_m, lat_deg, lon_deg,
heading_deg, speed_mps, pos_std_m}, gnss {fix_quality, sats, hdop, age_s} | None, health {converged, pos_std_m,
heading_std_deg, since_gps_s, since_mag_s} | None, battery {v, low_v} , link {heartbeat_age_s}, failsafes
[{kind, action}], prearm [reasons] (for arming in the current mode), thrusters {vouched, why, pulses_us, names,
neutral_us}, mission {name, index, total, complete, cleared}, events [texts of core events since the last call,
newest last], geometry_rev (changes whenever geometry() would).
"""
from __future__ import annotations

import math
from typing import Any, Dict, List, Optional

from autopilot.vocab.modes import ModeName

_SELECTABLE = tuple(m.value for m in ModeName if m.needs.selectable)
MAX_COMPASS_POINTS = 600
G_MPS2 = 9.80665


def _check(name: str, ok: Optional[bool], text: str) -> Dict[str, Any]:
    return {"check": name, "ok": ok, "text": text}


def _num(x, digits: int = 3) -> Optional[float]:
    """A finite float rounded for JSON, else None (JSON has no NaN or infinity)."""
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return round(v, digits) if math.isfinite(v) else None


def _deg360(rad) -> Optional[float]:
    v = _num(rad, 6)
    return None if v is None else round(math.degrees(v) % 360.0, 1)


class StatusReader:
    def __init__(self, autopilot) -> None:
        self.autopilot = autopilot
        self._events_seen = len(autopilot.events)
        self._geometry_key: Any = None
        self.geometry_rev = 0
        self.last_calibration: Optional[dict] = None     # the last calibration event's figures and text

    # ------------------------------------------------------------------ status
    def status(self, t_s: float) -> Dict[str, Any]:
        ap = self.autopilot
        nav = ap.nav
        valid = bool(nav is not None and nav.valid)
        lat = lon = None
        if valid:
            lat, lon = ap.frame.to_wgs84(nav.north_m, nav.east_m)
        fix = ap.last_fix
        h = ap.health
        res = ap.last_result
        g = ap.guidance
        events: List[str] = []
        new = ap.events[self._events_seen:]
        self._events_seen = len(ap.events)
        for e in new:
            events.append(e.message)
            if e.kind == "calibration" or (e.figures and "accepted" in e.figures):
                self.last_calibration = {"text": e.message, "figures": _jsonable(e.figures or {})}
        connected = None if ap.actuator is None else bool(getattr(ap.actuator, "connected", True))
        pulses = tuple(res.pulses.pulse_us) if res is not None else tuple(ap.neutral_pulses.pulse_us)
        why = ""
        if connected is False:
            why = "the ESC output is not connected: the thrusters are not driven"
        hb = ap.failsafe.last_heartbeat_s
        self._check_geometry()
        return {
            "t_s": _num(t_s, 2), "mode": ap.mode.name, "armed": bool(ap.armed), "modes": list(_SELECTABLE),
            "nav": {"valid": valid, "north_m": _num(nav.north_m, 2) if valid else None,
                    "east_m": _num(nav.east_m, 2) if valid else None,
                    "lat_deg": _num(lat, 7), "lon_deg": _num(lon, 7),
                    "heading_deg": _deg360(nav.heading_rad) if valid else None,
                    "speed_mps": _num(math.hypot(nav.surge_mps, nav.sway_mps), 2) if valid else None,
                    "pos_std_m": _num(nav.pos_std_m, 2) if nav is not None else None},
            "gnss": None if fix is None else {
                "fix_quality": int(fix.fix_quality) if fix.valid else 0, "sats": int(fix.sats),
                "hdop": _num(fix.hdop, 2), "age_s": _num(t_s - fix.time_s, 2)},
            "health": None if h is None else {
                "converged": bool(h.converged), "pos_std_m": _num(h.pos_std_m, 2),
                "heading_std_deg": _num(math.degrees(h.heading_std_rad), 1),
                "since_gps_s": _num(h.since_gps_s, 1), "since_mag_s": _num(h.since_mag_s, 1)},
            "battery": {"v": _num(ap.battery_v, 2), "low_v": _num(ap.vessel.battery.low_voltage_threshold_v, 2)},
            "link": {"heartbeat_age_s": None if hb is None else _num(t_s - hb, 1)},
            "failsafes": [{"kind": str(k), "action": str(v)} for k, v in getattr(ap.failsafe, "active", {}).items()],
            "prearm": [] if ap.armed else [str(r) for r in ap.prearm_failures(t_s)],
            "thrusters": {"vouched": connected is not False, "why": why, "pulses_us": [int(p) for p in pulses],
                          "names": [t.name for t in ap.vessel.thrusters],
                          "neutral_us": [int(p) for p in ap.neutral_pulses.pulse_us]},
            "mission": {"name": ap.mission.name, "index": int(g.index), "total": int(g.waypoints_total),
                        "complete": bool(ap.mission_complete),
                        "cleared": bool(getattr(ap, "mission_cleared", False))},
            "events": events[-20:],
            "geometry_rev": self.geometry_rev,
        }

    # ------------------------------------------------------------------ geometry
    def _check_geometry(self) -> None:
        ap = self.autopilot
        key = (id(ap.mission), id(getattr(ap, "fences", None)), ap.home_ned)
        if key != self._geometry_key:
            self._geometry_key = key
            self.geometry_rev += 1

    def geometry(self) -> Dict[str, Any]:
        from autopilot.guidance.path_following import point_to_ned
        ap = self.autopilot
        wps = [point_to_ned(p, ap.frame) for p in ap.mission.waypoints]
        fences = [[[_num(n, 2), _num(e, 2)] for n, e in f.vertices] for f in getattr(ap, "fences", ())]
        home = None if ap.home_ned is None else [_num(ap.home_ned[0], 2), _num(ap.home_ned[1], 2)]
        self._check_geometry()
        return {"rev": self.geometry_rev, "mission": ap.mission.name,
                "waypoints": [[_num(n, 2), _num(e, 2)] for n, e in wps],
                "acceptance_radius_m": _num(ap.mission.acceptance_radius_m, 2),
                "fences": fences, "home": home,
                "origin": {"lat_deg": _num(ap.frame.origin_lat_deg, 7), "lon_deg": _num(ap.frame.origin_lon_deg, 7)}}

    # ------------------------------------------------------------------ sensors
    def sensors(self, t_s: float) -> Dict[str, Any]:
        """The latest GNSS fix, IMU and magnetometer samples as the sensor path delivered them (body FRD), each
        with its plausibility checks: a list of {check, ok, text}. ok None: not judged (no sample yet, or the
        boat is turning, so the accelerometer does not read gravity alone)."""
        ap = self.autopilot
        arming = ap.vessel.failsafe.arming
        out: Dict[str, Any] = {"t_s": _num(t_s, 2)}
        fix = ap.last_fix
        g_checks = []
        if fix is None:
            g_checks.append(_check("fix", False, "no fix received from the receiver"))
        else:
            age = t_s - fix.time_s
            g_checks += [
                _check("fix", bool(fix.valid), "position fix" if fix.valid else
                       f"no position ({fix.refused or 'receiver reports none'})"),
                _check("satellites", fix.sats >= arming.min_sats, f"{fix.sats} used (arming needs {arming.min_sats})"),
                _check("HDOP", fix.hdop <= arming.max_hdop, f"{fix.hdop:.1f} (arming needs at most "
                                                            f"{arming.max_hdop:g})"),
                _check("age", age < 2.5, f"{age:.1f} s since the last epoch"),
            ]
        out["gnss"] = {"lat_deg": None if fix is None else _num(fix.lat_deg, 7),
                       "lon_deg": None if fix is None else _num(fix.lon_deg, 7),
                       "checks": g_checks}
        imu = ap.last_imu
        i_checks = []
        if imu is None:
            i_checks.append(_check("samples", False, "no IMU sample received"))
            out["imu"] = {"accel_mps2": None, "gyro_dps": None, "checks": i_checks}
        else:
            a = imu.accel_mps2
            g = math.sqrt(sum(x * x for x in a))
            rate = math.degrees(math.sqrt(sum(w * w for w in imu.gyro_rps)))
            still = rate < 3.0
            tilt = math.degrees(math.acos(max(-1.0, min(1.0, -a[2] / g)))) if g > 0 else math.nan
            i_checks += [
                _check("gravity", abs(g - G_MPS2) < 1.0 if still else None,
                       f"|a| {g:.2f} m/s^2 (at rest {G_MPS2:.2f})" + ("" if still else "; turning: not judged")),
                _check("level", tilt < 20.0 if still else None,
                       f"tilt {tilt:.0f} deg from level (z down reads -g when level)"),
                _check("gyro", rate < 30.0, f"{rate:.1f} deg/s"),
                _check("fresh", not imu.stale and t_s - imu.time_s < 0.5,
                       "repeating its last good sample after a fault" if imu.stale else
                       f"{1e3 * (t_s - imu.time_s):.0f} ms old"),
            ]
            out["imu"] = {"accel_mps2": [_num(x, 2) for x in a],
                          "gyro_dps": [_num(math.degrees(w), 2) for w in imu.gyro_rps], "checks": i_checks}
        mag = ap.last_mag
        m_checks = []
        expect = float(ap.vessel.sensors.mag.field_t)
        if mag is None:
            m_checks.append(_check("samples", False, "no magnetometer sample received"))
            out["mag"] = {"field_ut": None, "checks": m_checks}
        else:
            b = math.sqrt(sum(x * x for x in mag.field_t))
            m_checks += [
                _check("strength", abs(b / expect - 1.0) < 0.25,
                       f"|B| {1e6 * b:.1f} uT (the vessel file's field {1e6 * expect:.1f} uT; a calibrated sensor "
                       f"reads within 25 %)"),
                _check("fresh", not mag.stale and t_s - mag.time_s < 1.0,
                       "repeating its last good sample after a fault" if mag.stale else
                       f"{1e3 * (t_s - mag.time_s):.0f} ms old"),
            ]
            out["mag"] = {"field_ut": [_num(1e6 * x, 2) for x in mag.field_t], "checks": m_checks}
        return out

    # ------------------------------------------------------------------ compass
    def compass(self) -> Dict[str, Any]:
        """The running CALIBRATE_ON_WATER's raw samples (horizontal field, uT, at most MAX_COMPASS_POINTS, evenly
        thinned), how far it has turned and the last fit's figures (kept after the mode ended)."""
        ap = self.autopilot
        mode = ap.mode
        out: Dict[str, Any] = {"running": mode.name == ModeName.CALIBRATE_ON_WATER, "samples_ut": [],
                               "turned_deg": None, "target_deg": None, "last": self.last_calibration}
        if out["running"]:
            samples = getattr(mode, "samples", ())
            step = max(1, math.ceil(len(samples) / MAX_COMPASS_POINTS))
            out["samples_ut"] = [[round(s[0] * 1e6, 2), round(s[1] * 1e6, 2)] for s in samples[::step]]
            out["n_samples"] = len(samples)
            out["turned_deg"] = _num(math.degrees(abs(getattr(mode, "turned_rad", 0.0))), 0)
            out["target_deg"] = _num(360.0 * mode.cfg.turns, 0)
        return out


def _jsonable(x):
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, bool) or x is None or isinstance(x, str):
        return x
    if isinstance(x, (int, float)):
        return _num(x, 4)
    return str(x)
