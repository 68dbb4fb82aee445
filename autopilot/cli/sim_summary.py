"""What `autopilot sim` prints after a run: the report as text, and the report as JSON (NaN as null)."""
from __future__ import annotations

import math


def _following_lines(mf) -> list:
    if not mf:
        return []
    w, wo, red = mf["with"], mf["without"], mf["reduction_pct"]
    lines = [f"  model following: {w['plant_vessel']} made to follow {w['reference_vessel']}'s model "
             f"(thrust limited on {100 * (w['thrust_limited_frac'] or 0):.1f} % of steps"
             + (f"; sway force rms {w['sway_force_rms_n']:.0f} N, peak {w['sway_force_max_n']:.0f} N)"
                if w.get("sway_force") else "; sway not driven)"),
             "    state  RMSE with / without (cut %)    MAE with / without (cut %)    R^2 with / without"]
    for s in ("u", "v", "r", "x", "y", "psi"):
        a, b, c = w[s], wo[s], red[s]
        lines.append(f"    {s:<5}  {a['rmse']:.4g} / {b['rmse']:.4g} {w['units'][s]} ({_pct(c['rmse'])})"
                     f"    {a['mae']:.4g} / {b['mae']:.4g} ({_pct(c['mae'])})    {_r2(a['r2'])} / {_r2(b['r2'])}")
    return lines


def _pct(x):
    return "-" if x is None else f"{x:.1f} %"


def _r2(x):
    return "-" if x is None else f"{x:.3f}"


def _calibration_lines(r) -> list:
    """The first-day calibration's outcome, figures and the heading error after it."""
    c = r.get("calibrate_on_water")
    if not c:
        return []
    f = c.get("figures") or {}
    out = [f"  calibrate-on-water: {c['outcome']}" + (f" at {c['time_s']:.0f} s" if c.get("time_s") else "")]
    if f.get("coverage") is not None:
        out.append(f"    fit: {f['n_samples']} readings, coverage {f['coverage']:.0%}, residual "
                   f"{f['residual_rms_pct']:.2f} % of the field, field ratio {f['field_ratio']:.2f}, anisotropy "
                   f"{f['anisotropy']:.2f}; circles {f['turned_deg']:.0f} deg in {f['time_s']:.0f} s")
    if c["outcome"] != "accepted" and c.get("message"):
        out.append(f"    {c['message']}")
    h = c.get("heading_err_rms_deg_after")
    if h is not None:
        out.append(f"    heading error in AUTO after the calibration: rms {h:.2f} deg")
    return out


def _track_lines(r) -> list:
    """Cross-track error on the mission's legs; station keeping for a run that held a point in LOITER."""
    out = []
    if r.get("xte_rms_m") is not None and math.isfinite(r["xte_rms_m"]):
        out.append(f"  cross-track error (true position): rms {r['xte_rms_m']:.2f} m, max {r['xte_max_m']:.2f} m")
    if r.get("path_rms_m") is not None and math.isfinite(r["path_rms_m"]):
        out.append(f"  distance from the path, corners included: rms {r['path_rms_m']:.2f} m, "
                   f"max {r['path_max_m']:.2f} m")
    sk = r.get("station_keeping")
    if sk and sk["time_s"] >= 10.0:
        out.append(f"  station keeping in LOITER ({sk['time_s']:.0f} s, true position): "
                   f"{100 * sk['within_radius_frac']:.0f} % within {sk['radius_m']:g} m, "
                   f"{100 * sk['within_2m_frac']:.0f} % within 2 m, p95 {sk['p95_m']:.2f} m, max {sk['max_m']:.2f} m, "
                   f"VRX score {sk['vrx_score']:.2f}")
    if not out:
        out.append("  cross-track error: no mission leg flown")
    tu = r.get("thruster_usage")
    if tu and math.isfinite(tu["reversals_per_min"]):
        out.append(f"  thrusters: {tu['reversals_per_min']:.1f} reversals/min, "
                   f"{100 * tu['saturated_frac']:.1f} % of cycles at a limit")
    return out


def jsonable(value):
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [jsonable(v) for v in value]
    return None if isinstance(value, float) and not math.isfinite(value) else value


def _plant_lines(plant, r_vessel: str) -> list:
    if not plant:
        return []
    if "custom" in plant:
        return [f"  plant: custom model {plant['custom']}"]
    if "model" in plant:
        return [f"  plant: {plant['model']} ({plant['source']}), not the vessel file's model"]
    if plant["vessel"] == r_vessel and not plant["mismatch"] and not plant["extras"]:
        return []
    parts = [f"  plant: {plant['vessel']} ({plant['source']})"]
    if plant["mismatch"]:
        parts.append("mismatch " + ",".join(f"{k}={v:g}" for k, v in plant["mismatch"].items()))
    if plant["extras"]:
        parts.append("extras " + ",".join(f"{k}={v}" for k, v in plant["extras"].items()))
    return [", ".join(parts)]


def _battery_lines(b) -> list:
    if not b:
        return []
    return [f"  battery: {b['start_v']:.2f} V -> {b['end_v']:.2f} V under load, {b['consumed_mah']:.0f} mAh drawn, "
            f"{100.0 * b['soc_end']:.0f} % left"]


def format_summary(r: dict, env) -> str:
    done = "COMPLETE" if r["mission_complete"] else "NOT complete"
    ident = r.get("identification")
    progress = (f"{ident['segments_flown']}/{ident['segments_total']} identification segments, "
                f"{ident['cut_short']} cut short at the box edge" if ident else
                f"{r['waypoints_reached']}/{r['waypoints_total']} waypoints")
    lines = [
        f"mission {r['mission']!r} on {r['vessel']}: {done} ({progress})",
        f"  environment: wind {env.wind_speed_mps:g} m/s from {env.wind_from_deg:g} deg, current "
        f"{env.current_speed_mps:g} m/s toward {env.current_toward_deg:g} deg, waves Hs {env.wave_hs_m:g} m "
        f"Tp {env.wave_tp_s:g} s from {env.wave_from_deg:g} deg",
        f"  GNSS: {r['gps_noise']} noise at {r['gps_rate_hz']:g} Hz",
        *_plant_lines(r.get("plant"), r["vessel"]),
        *_track_lines(r),
        *_following_lines(r.get("model_following") if "with" in (r.get("model_following") or {}) else None),
        f"  position estimate error: rms {r['pos_err_rms_m']:.2f} m, mae {r['pos_err_mae_m']:.2f} m "
        f"(raw GNSS: rms {r['gps_err_rms_m']:.2f} m, mae {r['gps_err_mae_m']:.2f} m)",
        f"  heading estimate error: rms {r['heading_err_rms_deg']:.2f} deg",
        *_calibration_lines(r),
        *_battery_lines(r.get("battery")),
        f"  simulated {r['sim_time_s']:.1f} s in {r['wall_time_s']:.2f} s wall "
        f"({r['realtime_factor']:g}x real time)",
    ]
    if "armed_at_s" in r:
        armed = r["armed_at_s"]
        lines.append("  never armed" if armed is None else
                     f"  armed at {armed:.1f} s (pre-arm checks passed); final mode {r.get('final_mode')}"
                     + ("" if r.get("armed_at_end") else ", disarmed"))
    for f in r.get("faults", []):
        d = f["max_distance_from_path_m"]
        lines.append(f"  fault {f['fault']}: max distance from the path {'-' if d is None else f'{d:.2f} m'}")
    for ev in r.get("failsafe_events", []):
        lines.append(f"  failsafe at {ev['time_s']:7.2f} s: {ev['kind']} -> {ev['action']}")
    return "\n".join(lines)
