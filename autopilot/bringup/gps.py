"""`autopilot bench gps`: read the L76K on its own and print fixes and line statistics.

    autopilot bench gps --port /dev/serial0 [--baud auto|9600|115200] [--rate-hz 1|2|5] [--configure] [--save]
                        [--count N] [--json] [--timeout-s S]
    autopilot bench gps --config /etc/autopilot/boat.yaml [...]    the port of the boat's vessel (sensors.gnss)
    autopilot bench gps --emulated [--config BOAT.yaml] [...]      an emulated L76K on a pseudo-terminal

--port overrides the port of --config or --vessel (sensors.gnss.port of the vessel file). --emulated reads an
emulated L76K (the vessel's baud and rate, a still boat) instead of a device, to try the tool without hardware.

With --json every fix is one JSON object a line on stdout: time (ISO 8601 UTC), lat, lon [deg], alt_m,
fix_quality, sats, hdop, sog_mps, cog_deg, valid; unknown values are null. The last line is the line's
counters: good_sentences, bad_checksums, binary_bytes_skipped and the rest of the driver's statistics.
Progress and set-up messages go to stderr. Exit status: 0 with at least one valid fix, 2 when only
no-position fixes came, 1 when the port could not be read or nothing came for --timeout-s (or no port was given,
or the --config or --vessel file does not validate: the message says why).
"""
from __future__ import annotations

import json
import math
import sys
import time

from autopilot.bringup import add_vessel_arguments, bench_vessel, get_bench_subparsers

BAUD_CHOICES = ("auto", "4800", "9600", "19200", "38400", "57600", "115200")


def register(subparsers) -> None:
    p = get_bench_subparsers(subparsers).add_parser(
        "gps", help="read the L76K GNSS receiver and print fixes",
        description=__doc__.split("\n\n")[0])
    p.add_argument("--port", default=None, help="serial device, e.g. /dev/serial0 or /dev/ttyUSB0 (default: the "
                                                "vessel's sensors.gnss.port with --config or --vessel)")
    add_vessel_arguments(p, "the GNSS port (sensors.gnss.port)")
    p.add_argument("--emulated", action="store_true",
                   help="read an emulated L76K on a pseudo-terminal (the vessel's baud and rate, a still boat) "
                        "instead of a device: no hardware needed")
    p.add_argument("--baud", default="auto", choices=BAUD_CHOICES,
                   help="the module's current baud, or auto to search (default auto)")
    p.add_argument("--rate-hz", type=float, default=None, choices=(1.0, 2.0, 5.0), metavar="{1,2,5}",
                   help="fix rate to set with --configure (2 and 5 Hz switch to 115200 baud, GGA + RMC)")
    p.add_argument("--configure", action="store_true", help="send the PCAS commands for --rate-hz first")
    p.add_argument("--save", action="store_true", help="with --configure: keep the settings over power loss")
    p.add_argument("--count", type=int, default=0, help="stop after N fixes (default: run until Ctrl-C)")
    p.add_argument("--json", action="store_true", help="one JSON object a line")
    p.add_argument("--timeout-s", type=float, default=10.0, help="give up after this long without a fix")
    p.set_defaults(func=run)


def fix_record(fix) -> dict:
    """The JSON form of a GpsFix (degrees for humans, null for unknown)."""
    def num(x, nd=None):
        if x is None or (isinstance(x, float) and not math.isfinite(x)):
            return None
        return round(x, nd) if nd is not None else x
    return {
        "time": fix.utc,
        "lat": num(fix.lat_deg, 9),
        "lon": num(fix.lon_deg, 9),
        "alt_m": num(fix.alt_m, 3),
        "fix_quality": fix.fix_quality,
        "sats": fix.sats,
        "hdop": num(fix.hdop, 2),
        "sog_mps": num(fix.sog_mps, 3),
        "cog_deg": None if fix.cog_rad is None else round(math.degrees(fix.cog_rad) % 360.0, 2),
        "valid": fix.valid,
    }


def counts_record(stats: dict) -> dict:
    out = {"good_sentences": stats["sentences"], "bad_checksums": stats["bad_checksum"],
           "binary_bytes_skipped": stats["binary_bytes"]}
    out.update({k: v for k, v in stats.items() if k not in ("sentences", "bad_checksum", "binary_bytes")})
    return out


def _human(rec: dict) -> str:
    if rec["lat"] is None:
        return f"{rec['time'] or '(no time)'}  no position"
    txt = (f"{rec['time'] or '(no date yet)'}  {rec['lat']:.7f} {rec['lon']:.7f}"
           f"  alt {rec['alt_m'] if rec['alt_m'] is not None else '-'} m  q{rec['fix_quality']}"
           f" sats {rec['sats']} hdop {rec['hdop'] if rec['hdop'] is not None else '-'}")
    if rec["sog_mps"] is not None:
        txt += f"  sog {rec['sog_mps']:.2f} m/s"
    if rec["cog_deg"] is not None:
        txt += f" cog {rec['cog_deg']:.1f} deg"
    return txt + ("" if rec["valid"] else "  NO FIX")


def run(args) -> int:
    def say(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    emulated = None
    port = getattr(args, "port", None)
    if getattr(args, "config", None) or getattr(args, "vessel", None) or getattr(args, "emulated", False):
        from autopilot.vocab.schema import ConfigError
        try:
            _cfg, vessel = bench_vessel(args)
        except (ConfigError, ValueError) as e:
            say(f"bench gps: {e}")
            return 1
        if getattr(args, "emulated", False):
            if port is not None:
                say("bench gps: --emulated makes its own port: leave out --port")
                return 1
            from autopilot.bringup import stand_ins
            emulated = stand_ins.make("l76k", vessel.sensors.gnss, seed=1)
            port = emulated.path
            say(f"bench gps: emulated L76K on {port} ({vessel.sensors.gnss.baud} baud, "
                f"{vessel.sensors.gnss.rate_hz:g} Hz, a still boat)")
        elif port is None:
            port = vessel.sensors.gnss.port
    if port is None:
        say("bench gps: give the receiver's --port DEV, or --config BOAT.yaml (its vessel's sensors.gnss.port), "
            "or --emulated")
        return 1
    args.port = port
    try:
        return _run(args, say)
    finally:
        if emulated is not None:
            emulated.close()


def _run(args, say) -> int:
    from drivers.gnss import l76k_commands as cmd
    from drivers.gnss.l76k import L76K, GnssLinkError

    baud = "auto" if args.baud == "auto" else int(args.baud)
    try:
        gnss = L76K(args.port, baud=baud)
        found = gnss.open()
        say(f"{args.port}: NMEA at {found} baud")
        if args.configure:
            if args.rate_hz is None:
                say("--configure needs --rate-hz 1, 2 or 5")
                return 1
            for line in gnss.configure(args.rate_hz, save=args.save):
                say(line)
        elif args.rate_hz is not None:
            assert gnss.baud is not None        # open() found the baud
            cmd.check_link(args.rate_hz, gnss.baud)
    except (GnssLinkError, cmd.GnssSetupError) as exc:
        say(str(exc))
        return 1
    except OSError as exc:
        say(f"cannot open {args.port}: {exc} (check the device name and that you are in the dialout group)")
        return 1

    printed = valid = 0
    last_t = time.monotonic()
    gnss.start()
    code = 1
    try:
        while True:
            fixes = gnss.poll()
            now = time.monotonic()
            for fix in fixes:
                rec = fix_record(fix)
                print(json.dumps(rec) if args.json else _human(rec), flush=True)
                printed += 1
                valid += int(fix.valid)
                last_t = now
                if args.count and printed >= args.count:
                    break
            if args.count and printed >= args.count:
                code = 0 if valid else 2
                break
            if now - last_t > args.timeout_s:
                say(f"no fix for {args.timeout_s:g} s on {args.port}"
                    + (f" (last error: {gnss.last_error})" if gnss.last_error else ""))
                code = 1
                break
            time.sleep(0.05)
    except KeyboardInterrupt:
        code = 0 if valid else (2 if printed else 1)
    finally:
        gnss.close()
    counts = counts_record(gnss.stats())
    if args.json:
        print(json.dumps(counts), flush=True)
    else:
        print(f"good sentences {counts['good_sentences']}, bad checksums {counts['bad_checksums']}, "
              f"binary bytes skipped {counts['binary_bytes_skipped']}, garbage bytes {counts['garbage_bytes']}, "
              f"reconnects {counts['reconnects']}", flush=True)
    return code
