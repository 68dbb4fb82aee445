"""What the web page shows, read from the autopilot between two cycles (call these from the loop thread).

`StatusReader(autopilot)`. `status(t_s)` is a JSON-ready dict (the schema below), `geometry()` the mission,
fence and home in the mission's local frame, `compass()` CALIBRATE_ON_WATER's samples so far and the last
fit's figures. Units: metres (local frame: north_m, east_m from the mission origin), degrees (headings clockwise
from north, 0..360), m/s, volts, seconds on the core clock. A value the autopilot does not have is None.

status(): t_s, mode, armed, modes (selectable names), nav {valid, north_m, east_m, lat_deg, lon_deg,
heading_deg, speed_mps, pos_std_m}, gnss {fix_quality, sats, hdop, age_s} | None, health {converged, pos_std_m,
heading_std_deg, since_gps_s, since_mag_s} | None, battery {v, low_v} , link {heartbeat_age_s}, failsafes
[{kind, action}], prearm [reasons] (for arming in the current mode), thrusters {vouched, why, pulses_us},
mission {name, index, total, complete, cleared}, events [texts of core events since the last call, newest last],
geometry_rev (changes whenever geometry() would).
"""
from __future__ import annotations

import math
from typing import Any, Dict, List, Optional

from autopilot.vocab.modes import ModeName

_SELECTABLE = tuple(m.value for m in ModeName if m.needs.selectable)
MAX_COMPASS_POINTS = 600


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
            "thrusters": {"vouched": connected is not False, "why": why, "pulses_us": [int(p) for p in pulses]},
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
