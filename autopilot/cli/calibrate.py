"""`autopilot calibrate mag`: fit the magnetometer's hard- and soft-iron correction and write it to a YAML file.

Three sources of readings:
  --bus N --duration S --out FILE   live, from the LSM9DS1 on /dev/i2c-N while you turn the boat
                                    (on the water: two slow full turns, level; on the bench: all orientations)
  --from-log LOG --out FILE         a CSV log with a header row holding the columns mag_x_t, mag_y_t, mag_z_t:
                                    the uncalibrated field in body FRD, tesla, one reading per row (other
                                    columns are ignored; rows with an empty or non-numeric field are skipped)
  --sim [--report FILE.json]        the simulated distorted magnetometer (hard iron, soft iron, noise);
                                    reports hard_iron_err_ut, soft_iron_err_pct, heading_err_rms_deg_before,
                                    heading_err_rms_deg_after
--method 2d fits level turns (x-y only), 3d the full ellipsoid; auto (default) takes 3d when the readings
cover enough orientations and 2d otherwise. A fit that fails its quality limits is refused with the reason
(exit code 2) and no file is written unless --force is given.
"""
from __future__ import annotations

import argparse
import csv
import dataclasses
import json
import math
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import List, Tuple

import numpy as np

from autopilot.vocab.config import load_vessel
from autopilot.vocab.schema import ConfigError
from hil.sim.mag_distortion import heading_errors_deg, sim_distortion, simulate_readings


def register(subparsers) -> None:
    cal = subparsers.add_parser("calibrate", help="calibrate a sensor (magnetometer)",
                                description="Sensor calibration procedures.")
    sub = cal.add_subparsers(dest="sensor", metavar="SENSOR")
    sub.required = True
    p = sub.add_parser("mag", help="hard/soft-iron calibration of the magnetometer",
                       description=__doc__.split("\n\n", 1)[1], formatter_class=argparse.RawDescriptionHelpFormatter)
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--bus", type=int, metavar="N", help="live: I2C bus number of the LSM9DS1 (/dev/i2c-N)")
    src.add_argument("--from-log", metavar="LOG", help="CSV with mag_x_t, mag_y_t, mag_z_t columns [T]")
    src.add_argument("--sim", action="store_true", help="against the simulated distorted magnetometer")
    p.add_argument("--vessel", default="foka", help="preset name or vessel YAML (field strength, dip, IMU)")
    p.add_argument("--duration", type=float, default=120.0, metavar="S", help="live recording time [s]")
    p.add_argument("--out", metavar="FILE", help="calibration YAML to write")
    p.add_argument("--method", choices=("auto", "2d", "3d"), default="auto",
                   help="2d: level turns (x-y only); 3d: the full ellipsoid; auto (default): 3d when the readings "
                        "cover enough orientations, else 2d")
    p.add_argument("--force", action="store_true", help="write the file even when the fit is refused")
    p.add_argument("--report", metavar="FILE.json", help="--sim: write the figures as JSON")
    p.add_argument("--seed", type=int, default=1, help="--sim: random seed")
    p.add_argument("--hard-iron-ut", type=float, default=30.0, help="--sim: hard-iron magnitude [uT]")
    p.add_argument("--soft-iron-pct", type=float, default=10.0, help="--sim: soft-iron scale error [%%]")
    p.add_argument("--noise-ut", type=float, default=1.0, help="--sim: white noise per axis [uT]")
    p.set_defaults(func=run)


def run(args) -> int:
    try:
        vessel = load_vessel(args.vessel)
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    if args.duration <= 0:
        print("error: --duration must be > 0 seconds", file=sys.stderr)
        return 1
    if not args.sim and not args.out:
        print("error: --out FILE is required with --bus or --from-log", file=sys.stderr)
        return 1
    try:
        if args.sim:
            return _run_sim(args, vessel)
        if args.from_log:
            readings = read_log(args.from_log)
        else:
            readings = record_live(vessel, args.bus, args.duration)
        return _fit_and_write(args, vessel, readings)
    except (OSError, ValueError, RuntimeError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1


# ------------------------------------------------------------------------------------------------ fitting
def _fit(readings, vessel, method):
    from estimation.heading.mag_calibration import MagFitLimits, coverage_of, fit_calibration

    mag = vessel.sensors.mag
    if method == "auto":
        method = "3d" if coverage_of(readings, "3d") >= MagFitLimits().min_coverage_3d else "2d"
    return fit_calibration(readings, mag.field_t, method, mag.inclination_deg)


def _fit_and_write(args, vessel, readings) -> int:
    from estimation.heading.mag_calibration import write_calibration

    fit = _fit(readings, vessel, args.method)
    _print_fit(fit)
    if fit.accepted or args.force:
        stamp = datetime.now(timezone.utc).isoformat(timespec="seconds")
        write_calibration(args.out, fit, stamp, vessel.name)
        print(f"wrote {args.out}" + ("" if fit.accepted else " (refused fit, written because of --force)"))
        print(f"point the vessel config at it: sensors: mag: calibration_file: {args.out}")
    return 0 if fit.accepted else 2


def _print_fit(fit) -> None:
    f, cal = fit.figures, fit.calibration
    print(f"method {cal.method}: {f['n_samples']} readings, coverage {f['coverage']:.0%}, residual "
          f"{f['residual_rms_t'] * 1e6:.2f} uT ({f['residual_rms_pct']:.1f} %), field ratio {f['field_ratio']:.2f}, "
          f"anisotropy {f['anisotropy']:.2f}")
    print("hard iron [uT]: " + ", ".join(f"{x * 1e6:.2f}" for x in cal.offset_t))
    print("soft-iron correction: " + "; ".join(", ".join(f"{x:.4f}" for x in row) for row in cal.matrix))
    print("ACCEPTED" if fit.accepted else f"REFUSED: {fit.reason}")


# ------------------------------------------------------------------------------------------------ sources
def read_log(path) -> np.ndarray:
    """Readings (n, 3) [T] from a CSV with a header naming mag_x_t, mag_y_t, mag_z_t (see module doc)."""
    path = Path(path)
    with path.open(newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        cols = ("mag_x_t", "mag_y_t", "mag_z_t")
        missing = [c for c in cols if c not in (reader.fieldnames or ())]
        if missing:
            raise ValueError(f"{path}: missing column(s) {', '.join(missing)}; the header must name "
                             f"mag_x_t, mag_y_t, mag_z_t (field in tesla, body FRD)")
        rows = []
        for row in reader:
            try:
                v = [float(row[c]) for c in cols]
            except (TypeError, ValueError):
                continue
            if all(map(math.isfinite, v)):
                rows.append(v)
    if not rows:
        raise ValueError(f"{path}: no numeric magnetometer readings")
    return np.array(rows)


def record_live(vessel, bus: int, duration_s: float, out=None, source=None, clock=None,
                sleep=None) -> np.ndarray:
    """Read the LSM9DS1 on /dev/i2c-<bus> for duration_s, printing sample count and coverage each second.

    `source` (a SensorSource giving uncalibrated MagSamples), `clock` and `sleep` default to the hardware
    driver and the wall clock; tests pass the emulated chip and a simulated clock."""
    import time

    from estimation.heading.mag_calibration import coverage_of

    out = out or sys.stdout
    clock = clock or time.monotonic
    sleep = sleep or time.sleep
    owned = source is None
    if owned:
        from drivers.lsm9ds1 import ImuError, Lsm9ds1Source
        imu_cfg = dataclasses.replace(vessel.sensors.imu, bus=bus)
        try:
            source = Lsm9ds1Source.open_hw(imu_cfg, vessel.sensors.mag)   # no calibration: raw readings
        except ImuError as e:
            raise RuntimeError(str(e)) from None
    period = 1.0 / vessel.sensors.mag.rate_hz
    print(f"recording {duration_s:.0f} s: turn the boat slowly (on the water two full turns; on the bench "
          f"through all orientations)", file=out)
    readings: List[Tuple[float, float, float]] = []    # field_t of each MagSample [T]
    t0 = clock()
    next_report = 1.0
    try:
        while True:
            t = clock() - t0
            if t >= duration_s:
                break
            batch = source.poll(t)
            readings.extend(s.field_t for s in batch.mag if not s.stale)
            if t >= next_report:
                next_report += 1.0
                c3, c2 = coverage_of(readings, "3d"), coverage_of(readings, "2d")
                print(f"\r{t:5.0f} s  {len(readings):5d} readings  coverage 3-D {c3:4.0%}  level turn {c2:4.0%}",
                      end="", file=out, flush=True)
            sleep(period)
    finally:
        if owned:
            source.driver.close()
    print(file=out)
    if len(readings) < 6:
        raise RuntimeError(f"only {len(readings)} magnetometer readings in {duration_s:.0f} s: check the wiring")
    return np.array(readings)


def sim_report(vessel, method: str = "3d", hard_iron_ut: float = 30.0, soft_iron_pct: float = 10.0,
               noise_ut: float = 1.0, seed: int = 1):
    """Run the calibration against the simulated magnetometer; returns (fit, report dict)."""
    from estimation.heading.mag_calibration import soft_iron_error_pct

    rng = np.random.default_rng(seed)
    h, S = sim_distortion(vessel, hard_iron_ut, soft_iron_pct)
    if method == "auto":
        method = "3d"
    readings, _ = simulate_readings(vessel, h, S, noise_ut * 1e-6, method, rng)
    fit = _fit(readings, vessel, method)
    cal = fit.calibration
    n = 2 if cal.method == "2d" else 3
    hard_err = float(np.linalg.norm(np.asarray(cal.offset_t)[:n] - h[:n])) * 1e6
    if cal.method == "2d":
        # a level-turn fit also absorbs S's x-z / y-z coupling of the vertical field into its offset
        mag = vessel.sensors.mag
        bz = mag.field_t * math.sin(math.radians(mag.inclination_deg))
        hard_err = float(np.linalg.norm(np.asarray(cal.offset_t)[:2] - (h[:2] + S[:2, 2] * bz))) * 1e6
    before, after, scatter = heading_errors_deg(vessel, h, S, noise_ut * 1e-6, cal, rng)
    report = dict(method=cal.method, accepted=fit.accepted, reason=fit.reason, vessel=vessel.name, seed=seed,
                  hard_iron_ut=hard_iron_ut, soft_iron_pct=soft_iron_pct, noise_ut=noise_ut,
                  hard_iron_err_ut=hard_err, soft_iron_err_pct=soft_iron_error_pct(cal.matrix, S, cal.method),
                  heading_err_rms_deg_before=before, heading_err_rms_deg_after=after,
                  heading_noise_rms_deg_per_reading=scatter,
                  figures={k: v for k, v in fit.figures.items()})
    return fit, report


def _run_sim(args, vessel) -> int:
    from estimation.heading.mag_calibration import SIM_WRITTEN_BY, write_calibration

    fit, report = sim_report(vessel, args.method, args.hard_iron_ut, args.soft_iron_pct, args.noise_ut, args.seed)
    _print_fit(fit)
    print(f"simulated {args.hard_iron_ut:g} uT hard iron, {args.soft_iron_pct:g} % soft iron, "
          f"{args.noise_ut:g} uT noise on {vessel.name}:")
    print(f"  hard-iron error {report['hard_iron_err_ut']:.3f} uT, soft-iron error {report['soft_iron_err_pct']:.2f} %")
    print(f"  heading error RMS {report['heading_err_rms_deg_before']:.1f} deg before, "
          f"{report['heading_err_rms_deg_after']:.2f} deg after (noise-free readings; one noisy reading "
          f"scatters by {report['heading_noise_rms_deg_per_reading']:.1f} deg RMS more)")
    if args.report:
        Path(args.report).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {args.report}")
    if args.out and (fit.accepted or args.force):
        write_calibration(args.out, fit, datetime.now(timezone.utc).isoformat(timespec="seconds"), vessel.name,
                          written_by=SIM_WRITTEN_BY)
        print(f"wrote {args.out}")
    return 0 if fit.accepted else 2
