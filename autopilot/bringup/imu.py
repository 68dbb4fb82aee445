"""`autopilot bench imu`: read the LSM9DS1 on its own and stream accel, gyro, field and tilt-compensated heading.

    autopilot bench imu --bus 1 [--vessel foka] [--rate-hz 10] [--count N] [--json] [--emulated]
    autopilot bench imu --config /etc/autopilot/boat.yaml [--emulated]    the boat's vessel: its bus and mounting
    autopilot bench imu --bus 1 --axes-check [--emulated]
    autopilot bench imu --bus 1 --vessel boat.yaml --orientation-check [--mount R,P,Y]
    autopilot bench imu --orientation-check --emulated [--emulated-mount R,P,Y]

Each line shows the Adafruit library's raw values (chip axes: m/s^2, rad/s, gauss) beside the driver's output.
The driver's values are in the vessel's body frame FRD (mounting from the vessel config): accel m/s^2 (specific force,
level
and still reads z = -9.81), gyro rad/s (start-up bias removed), field in microtesla as read (no magnetometer
calibration applied), heading in degrees clockwise from true north using the vessel's declination.
With --json each sample is one JSON object a line: time_s, accel_mps2, gyro_rps, field_ut, heading_deg, stale,
raw (accel_mps2, gyro_rps, mag_gauss as the library gave them);
the last line holds the driver's counters. --emulated reads the built-in emulated chip instead of /dev/i2c-N
(a still boat heading 30 degrees), to try the tool without hardware. Exit status 0, or 1 when the IMU cannot
be opened (the message says why). --axes-check walks the four-step bench check of the board's axes
(autopilot/bringup/imu_axes.py: positions prompted one by one, each judged PASS/FAIL; exit 1 on a FAIL).
--orientation-check walks the four moves of the mounting check with the IMU in the boat
(autopilot/bringup/imu_orientation.py: flat, bow up, starboard down, turn clockwise; exit 0 PASS, 1 FAIL with the
mount_rpy_deg to write or the axis that is mirrored, 2 when a move must be redone). --mount R,P,Y tries a
mounting (roll, pitch, yaw in degrees) instead of the vessel file's; --emulated-mount R,P,Y mounts the emulated
board that way (to see a FAIL without hardware). The prompts and sampling are in autopilot/bringup/imu_session.py.
"""
from __future__ import annotations

import json
import math
import sys
import time

from autopilot.bringup import add_vessel_arguments, bench_vessel, get_bench_subparsers


def register(subparsers) -> None:
    p = get_bench_subparsers(subparsers).add_parser(
        "imu", help="read the LSM9DS1 IMU and print accel, gyro, field and heading",
        description=__doc__.split("\n\n")[0])
    p.add_argument("--bus", type=int, default=None, help="I2C bus number (/dev/i2c-N); default: the vessel's")
    add_vessel_arguments(p, "the I2C bus, mounting, ranges and declination (sensors.imu, sensors.mag)")
    p.add_argument("--rate-hz", type=float, default=10.0, help="printed samples per second (default 10)")
    p.add_argument("--count", type=int, default=0, help="stop after N samples (default: until Ctrl-C)")
    p.add_argument("--json", action="store_true", help="one JSON object a line")
    p.add_argument("--emulated", action="store_true", help="use the built-in emulated LSM9DS1 (no hardware)")
    p.add_argument("--axes-check", action="store_true",
                   help="the four-step axis check: prompts for nine positions, judges each (board unmounted)")
    p.add_argument("--orientation-check", action="store_true",
                   help="the mounting check with the IMU in the boat: four moves (flat, bow up, starboard down, "
                        "turn clockwise) against the vessel file's mount_rpy_deg")
    p.add_argument("--mount", type=_rpy, default=None, metavar="R,P,Y",
                   help="mount_rpy_deg to use instead of the vessel file's (degrees; a leading minus: --mount=-90,0,0)")
    p.add_argument("--emulated-mount", type=_rpy, default=None, metavar="R,P,Y",
                   help="with --emulated: the emulated board's real mounting (default: the vessel file's)")
    p.set_defaults(func=run)


def _rpy(text: str):
    """argparse type: 'R,P,Y' -> three floats in [-180, 180] degrees."""
    import argparse
    try:
        values = tuple(float(v) for v in text.split(","))
    except ValueError:
        values = ()
    if len(values) != 3 or not all(-180.0 <= v <= 180.0 for v in values):
        raise argparse.ArgumentTypeError(f"expected roll,pitch,yaw in degrees within [-180, 180], got {text!r}")
    return values


def run(args) -> int:
    import dataclasses

    from autopilot.vocab.schema import ConfigError
    from drivers.i2c_adapter import I2CBusError
    from drivers.lsm9ds1 import ImuError, Lsm9ds1Driver
    from estimation.heading.tilt_compensated import heading_from_vectors_rad

    try:
        _cfg, vessel = bench_vessel(args)
    except (ConfigError, ValueError) as e:
        print(f"bench imu: {e}", file=sys.stderr)
        return 1
    imu_cfg, mag_cfg = vessel.sensors.imu, vessel.sensors.mag
    if args.axes_check and args.orientation_check:
        print("bench imu: --axes-check (the board in the hand) and --orientation-check (the board in the boat) "
              "are separate checks: give one", file=sys.stderr)
        return 1
    if args.emulated_mount is not None and not args.emulated:
        print("bench imu: --emulated-mount needs --emulated", file=sys.stderr)
        return 1
    if args.mount is not None:
        imu_cfg = dataclasses.replace(imu_cfg, mount_rpy_deg=args.mount)
    if args.axes_check:                         # the board in the hand is the "boat": no mounting rotation
        imu_cfg = dataclasses.replace(imu_cfg, mount_rpy_deg=(0.0, 0.0, 0.0))
    if args.bus is not None:
        imu_cfg = dataclasses.replace(imu_cfg, bus=args.bus)
    if args.rate_hz <= 0:
        print("bench imu: --rate-hz must be > 0", file=sys.stderr)
        return 1
    clock, sleep, emulator, i2c = time.monotonic, time.sleep, None, None
    if args.emulated:
        from autopilot.bringup import stand_ins
        from drivers.i2c_adapter import SMBusI2C
        emulated_cfg = imu_cfg if args.emulated_mount is None else \
            dataclasses.replace(imu_cfg, mount_rpy_deg=args.emulated_mount)
        emulator = stand_ins.make("lsm9ds1", emulated_cfg, mag_cfg, seed=1)
        still = stand_ins.make("truth", 0.0, 0.0, 0.0, math.radians(30.0), 0.0, 0.0, 0.0, 0.0, 0.0, ())
        emulator.update(0.0, still)
        i2c = SMBusI2C(imu_cfg.bus, bus=emulator.smbus())
        sleep = emulator.advance
        clock = lambda: emulator.t_s  # noqa: E731 - the emulated chip's clock
    driver = Lsm9ds1Driver(imu_cfg, mag_cfg, i2c=i2c, clock=clock, sleep=sleep)
    print(f"bench imu: LSM9DS1 on I2C bus {imu_cfg.bus} (0x{imu_cfg.address_xg:02X}, "
          f"0x{imu_cfg.address_mag:02X}); keep it still for the gyro bias ...", file=sys.stderr)
    try:
        driver.start()
    except (ImuError, I2CBusError) as e:
        print(f"bench imu: {e}", file=sys.stderr)
        return 1
    print(f"bench imu: gyro bias {[round(b, 4) for b in driver.gyro_bias_rps]} rad/s "
          f"({'still' if driver.was_still_at_start else 'MOVING during bias measurement'}); "
          f"rates {driver.gyro_rate_hz:g} Hz accel/gyro, {driver.mag_rate_hz:g} Hz magnetometer",
          file=sys.stderr)
    if args.axes_check or args.orientation_check:
        from autopilot.bringup.imu_session import Sampler, axes_check, orientation_check
        sampler = Sampler(driver, emulator, clock)
        try:
            if args.axes_check:
                return 0 if axes_check(sampler) else 1
            return orientation_check(sampler, imu_cfg.mount_rpy_deg, mag_cfg, from_vessel_file=args.mount is None)
        finally:
            driver.close()
    declination = math.radians(mag_cfg.declination_deg)
    period = 1.0 / args.rate_hz
    count, field = 0, None
    t_next = clock()
    try:
        while args.count <= 0 or count < args.count:
            if emulator is not None:
                emulator.advance(period)
            else:
                time.sleep(max(0.0, t_next - clock()))
            t_next += period
            t = clock()
            imu, mag = driver.read(t)
            if mag is not None:
                field = mag.field_t
            if imu is None or field is None:
                continue
            count += 1
            heading = math.degrees(heading_from_vectors_rad(imu.accel_mps2, field, declination)) % 360.0
            print(_line(t, imu, field, heading, args.json, driver), flush=True)
    except KeyboardInterrupt:
        pass
    finally:
        driver.close()
    stats = dataclasses.asdict(driver.stats)
    if args.json:
        print(json.dumps({"stats": stats}), flush=True)
    else:
        print(f"bench imu: {stats}", file=sys.stderr)
    return 0


def _line(t, imu, field_t, heading_deg, as_json: bool, driver) -> str:
    field_ut = [round(v * 1e6, 3) for v in field_t]
    (ra, rg), rm = driver.last_raw_accel_gyro or ((math.nan,) * 3, (math.nan,) * 3), \
        driver.last_raw_mag_gauss or (math.nan,) * 3
    if as_json:
        return json.dumps({"time_s": round(t, 4), "accel_mps2": [round(v, 4) for v in imu.accel_mps2],
                           "gyro_rps": [round(v, 5) for v in imu.gyro_rps], "field_ut": field_ut,
                           "heading_deg": round(heading_deg, 2), "stale": imu.stale,
                           "raw": {"accel_mps2": [round(v, 4) for v in ra], "gyro_rps": [round(v, 5) for v in rg],
                                   "mag_gauss": [round(v, 5) for v in rm]}})
    a, g = imu.accel_mps2, imu.gyro_rps
    return (f"t={t:9.3f}s  library: accel=({ra[0]:+7.3f},{ra[1]:+7.3f},{ra[2]:+7.3f}) "
            f"gyro=({rg[0]:+7.4f},{rg[1]:+7.4f},{rg[2]:+7.4f}) mag=({rm[0]:+6.3f},{rm[1]:+6.3f},{rm[2]:+6.3f}) G  "
            f"| FRD: accel=({a[0]:+7.3f},{a[1]:+7.3f},{a[2]:+7.3f}) m/s2  "
            f"gyro=({g[0]:+7.4f},{g[1]:+7.4f},{g[2]:+7.4f}) rad/s  "
            f"field=({field_ut[0]:+7.2f},{field_ut[1]:+7.2f},{field_ut[2]:+7.2f}) uT  "
            f"heading={heading_deg:6.1f} deg{'  STALE' if imu.stale else ''}")
