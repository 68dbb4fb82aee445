"""Run logs into identification data: which columns of state.csv a hull fit uses, and how.

A run directory (autopilot run / autopilot sim with --log) logged at 10 Hz or more gives, per row:
  thrust   applied_thrust_n_<i> (the thrust of the pulses the ESCs output, slew included); older logs without
           it: pulse_us_<i> through the thruster's map at battery_v. Each thruster's first-order lag
           (time_constant_s of the vessel file) is applied here, then X = sum T_i, N = -sum y_i T_i, Y = 0.
  motion   velocities from one of three sources (`velocities`):
             smoother  (default) the kinematic smoother of estimation/identification/track_smoother.py on gnss_north_m /
                       gnss_east_m / gnss_speed_mps / gnss_course_deg (each fix at the time it was stamped:
                       its row's time less gps_age_s; the receiver's latency behind that stamp is estimated
                       from the run), accel_x/y_mps2, and heading_deg held to gyro_z_dps (the gyro integrated,
                       the logged heading at low frequency; that heading is also the run's psi): independent
                       of the vessel file's hull (its gnss noise figures set the smoother's);
             estimate  the autopilot's surge_mps / sway_mps (its EKF leans on the vessel file's hull model);
             truth     the simulator's truth_surge_mps / truth_sway_mps / truth_yaw_rate_dps (sim logs only);
           yaw rate from gyro_z_dps (smoother), yaw_rate_dps (estimate) or the truth column.
  track    for validation of x, y, psi: the smoother's track and heading (smoother), north_m / east_m /
           heading_deg (estimate: the EKF's, which lean on the hull model) or the truth columns.
The rows used are the longest armed stretch of the log. Refusals are IdentificationError naming the run and
what is missing.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from autopilot.runlog import read_run
from drivers.gnss.l76k_epoch import CEP_TO_SIGMA
from estimation.identification.hull_least_squares import IdentificationError, RunData
from estimation.identification.track_smoother import smooth_track

VELOCITY_SOURCES = ("smoother", "estimate", "truth")
MIN_LOG_RATE_HZ = 10.0
MIN_ROWS = 200


SEGMENT_EVENT = re.compile(r"identification segment (\d+)/(\d+): set (\d+) ")
SEGMENT_END_EVENT = re.compile(r"identification segment (\d+)/(\d+) ended")


@dataclass(frozen=True)
class IdentRun:
    """One run, ready to fit: RunData for the regression (its time from 0 at the first row used) plus the track
    for validating x, y, psi, and where an identification mission's segments start (same time base) with
    their set numbers."""
    name: str
    data: RunData
    north_m: np.ndarray
    east_m: np.ndarray
    psi_rad: np.ndarray           # unwrapped heading [rad]
    source: str
    rate_hz: float
    segment_starts_s: tuple = ()  # ((t_s, set), ...) from the run's events
    segment_ends_s: tuple = ()    # (t_s, ...) where the open-loop segments ended (the way back follows)


def load_ident_run(run_dir, vessel, velocities: str = "smoother") -> IdentRun:
    """Read `run_dir` and turn it into identification data for `vessel` (see the module docstring)."""
    if velocities not in VELOCITY_SOURCES:
        raise ValueError(f"velocities must be one of {', '.join(VELOCITY_SOURCES)}")
    if any(t.azimuth is not None for t in vessel.thrusters):
        raise IdentificationError(f"vessel {vessel.name!r} has azimuth pods: run logs carry no pod angles yet, so "
                                  f"the yaw moment of a logged run is unknown; identify the hull with fixed pods "
                                  f"(a vessel file without the azimuth blocks)")
    path = Path(run_dir)
    name = path.name or str(path)
    if not (path / "state.csv").is_file() and not path.is_file():
        raise IdentificationError(f"{run_dir}: no state.csv (not a run directory)")
    try:
        run = read_run(path)
    except (OSError, ValueError) as e:
        raise IdentificationError(f"{run_dir}: cannot read the log: {e}") from None
    cols = run.columns
    if len(run) < MIN_ROWS:
        damaged = f" ({run.skipped_lines} damaged lines skipped)" if run.skipped_lines else ""
        raise IdentificationError(f"{name}: {len(run)} rows{damaged}; identification needs at least {MIN_ROWS}")
    rows = _longest_armed_stretch(cols)
    if rows.stop - rows.start < MIN_ROWS:
        raise IdentificationError(f"{name}: the longest armed stretch has {rows.stop - rows.start} rows; "
                                  f"identification needs at least {MIN_ROWS}")
    t = cols["time_s"][rows]
    dt = float(np.median(np.diff(t)))
    rate = 1.0 / dt if dt > 0 else 0.0
    if rate < MIN_LOG_RATE_HZ * 0.95:
        raise IdentificationError(f"{name}: logged at {rate:.1f} Hz; identification needs {MIN_LOG_RATE_HZ:g} Hz "
                                  f"or more (--log-rate-hz 50)")
    thrust = _applied_thrust(cols, rows, vessel, name)
    thrust = _lagged(thrust, t, [th.time_constant_s for th in vessel.thrusters])
    x_n = thrust.sum(axis=1)
    n_nm = -(thrust * np.array([th.y_m for th in vessel.thrusters])).sum(axis=1)

    def need(*keys):
        missing = [k for k in keys if k not in cols or not np.isfinite(cols[k][rows]).any()]
        if missing:
            raise IdentificationError(f"{name}: no {', '.join(missing)} in the log "
                                      + ("(a simulation log has them)" if velocities == "truth" else
                                         "(logged since the identification columns were added)"))
        return [_filled(cols[k][rows]) for k in keys]

    if velocities == "truth":
        u, v, r_dps, n_m, e_m, psi_deg = need("truth_surge_mps", "truth_sway_mps", "truth_yaw_rate_dps",
                                             "truth_north_m", "truth_east_m", "truth_heading_deg")
    elif velocities == "estimate":
        u, v, r_dps, n_m, e_m, psi_deg = need("surge_mps", "sway_mps", "yaw_rate_dps", "north_m", "east_m",
                                             "heading_deg")
    else:
        r_dps, ax, ay, psi_deg = need("gyro_z_dps", "accel_x_mps2", "accel_y_mps2", "heading_deg")
        need("gnss_north_m", "gnss_east_m")
        gn, ge, sog, cog = _fixes_at_their_time(cols, rows, t)
        g = vessel.sensors.gnss
        sigma = g.cep_m * CEP_TO_SIGMA            # the receiver's total horizontal noise per axis
        try:
            track = smooth_track(t, np.radians(psi_deg), ax, ay, gn, ge, sog, cog,
                                 pos_std_m=math.sqrt(max(sigma ** 2 - g.bias_sigma_m ** 2, 0.25 * sigma ** 2)),
                                 vel_std_mps=max(g.speed_noise_mps, 0.02), pos_bias_std_m=g.bias_sigma_m,
                                 pos_bias_tau_s=g.bias_tau_s, gyro_z_rps=np.radians(r_dps))
        except ValueError as e:
            raise IdentificationError(f"{name}: {e}") from None
        u, v = track.u_mps, track.v_mps
        psi_deg = np.degrees(track.heading_rad)
        n_m, e_m = track.north_m, track.east_m
    psi = np.unwrap(np.radians(psi_deg))
    data = RunData(t - t[0], u, v, np.radians(r_dps), x_n, np.zeros_like(x_n), n_nm)
    starts, ends = [], []
    for ev in run.events:
        text, te = str(ev.get("message", "")), float(ev.get("time_s", -1.0))
        if not t[0] <= te <= t[-1]:
            continue
        m = SEGMENT_EVENT.search(text)
        if m:
            starts.append((te - t[0], int(m.group(3))))
        elif SEGMENT_END_EVENT.search(text):
            ends.append(te - t[0])
    return IdentRun(name, data, n_m, e_m, psi, velocities, rate, tuple(starts), tuple(ends))


def split_last_set(run: IdentRun):
    """(fit, validate): an identification mission's run cut where its last set of segments starts; None when
    the run holds fewer than two sets."""
    sets = sorted({k for _, k in run.segment_starts_s})
    if len(sets) < 2:
        return None
    t_cut = min(t for t, k in run.segment_starts_s if k == sets[-1])
    cut = int(np.searchsorted(run.data.t_s, t_cut))

    def part(sl, label, starts):
        d = run.data
        data = RunData(d.t_s[sl] - d.t_s[sl][0], d.u[sl], d.v[sl], d.r[sl], d.x_n[sl], d.y_n[sl], d.n_nm[sl])
        t0, t1 = d.t_s[sl][0], d.t_s[sl][-1]
        return IdentRun(f"{run.name} ({label})", data, run.north_m[sl], run.east_m[sl], run.psi_rad[sl],
                        run.source, run.rate_hz, tuple((t - t0, k) for t, k in starts),
                        tuple(t - t0 for t in run.segment_ends_s if t0 <= t <= t1))
    return (part(slice(0, cut), f"sets {sets[0]}-{sets[-2]}" if len(sets) > 2 else f"set {sets[0]}",
                 [(t, k) for t, k in run.segment_starts_s if k != sets[-1]]),
            part(slice(cut, len(run.data.t_s)), f"set {sets[-1]}",
                 [(t, k) for t, k in run.segment_starts_s if k == sets[-1]]))


def _fixes_at_their_time(cols, rows: slice, t: np.ndarray):
    """(north, east, speed, course [rad]) arrays on the rows' time base, each fix moved to the row nearest the
    time it was taken. A fix is logged in the row where the driver delivered it, once its epoch is complete (at
    9600 baud the L76K's RMC comes about 0.85 s after the epoch); that row's gps_age_s is how long before it the
    epoch's first sentence arrived, which is the fix's time. Left where it was logged if gps_age_s is missing."""
    n = len(t)
    out = [np.full(n, np.nan) for _ in range(4)]
    src = [cols["gnss_north_m"][rows], cols["gnss_east_m"][rows],
           cols.get("gnss_speed_mps", np.full(len(cols["time_s"]), np.nan))[rows],
           np.radians(cols.get("gnss_course_deg", np.full(len(cols["time_s"]), np.nan))[rows])]
    age = cols.get("gps_age_s", np.full(len(cols["time_s"]), np.nan))[rows]
    for k in np.where(np.isfinite(src[0]) & np.isfinite(src[1]))[0]:
        a = age[k] if np.isfinite(age[k]) and 0.0 <= age[k] < 5.0 else 0.0
        j = min(max(int(np.searchsorted(t, t[k] - a)), 0), n - 1)
        for dst, col in zip(out, src):
            dst[j] = col[k]
    return out


def _longest_armed_stretch(cols) -> slice:
    armed = np.asarray(cols.get("armed", np.ones(len(cols["time_s"]))), float) > 0.5
    best, start = slice(0, 0), None
    for k, a in enumerate(np.append(armed, False)):
        if a and start is None:
            start = k
        elif not a and start is not None:
            if k - start > best.stop - best.start:
                best = slice(start, k)
            start = None
    return best


def _applied_thrust(cols, rows: slice, vessel, name: str) -> np.ndarray:
    """(rows, thrusters) thrust [N]: the applied columns, or the pulses through the maps at the logged voltage."""
    n = len(vessel.thrusters)
    if all(f"applied_thrust_n_{i}" in cols for i in range(n)):
        out = np.stack([cols[f"applied_thrust_n_{i}"][rows] for i in range(n)], axis=1)
        if np.all(np.isfinite(out)):
            return out
    if not all(f"pulse_us_{i}" in cols for i in range(n)):
        raise IdentificationError(f"{name}: the log has neither applied_thrust_n_<i> nor pulse_us_<i> for the "
                                  f"vessel's {n} thrusters (a log of another boat?)")
    from drivers.thrust_map import make_thrust_map
    volts = cols.get("battery_v")
    v_log = float(np.nanmedian(volts[rows])) if volts is not None and np.isfinite(volts[rows]).any() else None
    maps = [make_thrust_map(th, vessel, v_log) for th in vessel.thrusters]
    pulses = np.stack([cols[f"pulse_us_{i}"][rows] for i in range(n)], axis=1)
    return np.array([[m.pulse_to_thrust(p) if math.isfinite(p) else 0.0 for m, p in zip(maps, row)]
                     for row in pulses])


def _lagged(thrust: np.ndarray, t: np.ndarray, time_constants_s) -> np.ndarray:
    """Each thruster's first-order lag (the vessel file's time_constant_s) applied to its demanded thrust."""
    out = thrust.copy()
    for i, tau in enumerate(time_constants_s):
        if tau <= 0:
            continue
        for k in range(1, len(t)):
            a = (t[k] - t[k - 1]) / (tau + t[k] - t[k - 1])
            out[k, i] = out[k - 1, i] + a * (thrust[k, i] - out[k - 1, i])
    return out


def _filled(a: np.ndarray) -> np.ndarray:
    """Gaps (NaN) filled by linear interpolation in sample index, ends held."""
    a = np.asarray(a, float)
    ok = np.isfinite(a)
    if ok.all():
        return a
    idx = np.arange(len(a))
    return np.interp(idx, idx[ok], a[ok])
