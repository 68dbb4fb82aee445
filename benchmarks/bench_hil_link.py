"""HIL bench over an emulated Wi-Fi link: the autopilot process in a ROS domain of its own, the Gazebo stand-in in
another, joined only by hil/ros_link_relay.py (delay +- jitter, loss, outages), as two machines on poor Wi-Fi.

    python benchmarks/bench_hil_link.py [--lockstep-cap-s 30] [--only ROW]

Rows: clean (relay, no impairment); 5 +- 2 ms; 20 +- 10 ms with 1 % loss; 50 +- 20 ms with 5 % loss; a 3 s outage
(on a 5 +- 2 ms link, 15 s into the simulation; the stand-in pauses the plant: on_outage=pause). Each row in
real time (the whole mission) and in lockstep (capped at --lockstep-cap-s of simulated time: every lockstep
step costs a round trip, so a full lockstep mission over a 50 ms link takes most of an hour; the cap keeps the
lockstep rows to latency, loss and real-time factor). A lockstep row's `lockstep_ms` splits a step's wall time
into the stand-in's own step (plant, sensors, publishing: `step_*`) and the wait for the autopilot's answer
(`wait_*`: the link both ways, DDS, the autopilot's cycle; its cycle cost is in `autopilot`), and gives the
real-time factor they allow. Also one real-time outage row with on_outage=run.
Mission: a 50 m / 20 m / 50 m U near the demo's launch point at 1 m/s (FOKA, white GNSS, calm): the demo's
380 s in real time per row would make the table take half an hour.
Latency is sensor stamp -> first thrust computed from it (hil/link_figures.py); a lost message on a topic that is
reliable at both ends is modelled as arriving 100 ms late (an assumed DDS repair time, see hil/ros_link_relay.py).
ROS_DOMAIN_ID is taken from the environment (default: 40 + pid % 50); the autopilot gets that + 101 (mod 233).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

ROWS = {
    "clean": dict(),
    "5+-2ms": dict(delay_ms=5, jitter_ms=2),
    "20+-10ms,1%": dict(delay_ms=20, jitter_ms=10, loss=0.01),
    "50+-20ms,5%": dict(delay_ms=50, jitter_ms=20, loss=0.05),
    "outage3s": dict(delay_ms=5, jitter_ms=2, outages=((15.0, 3.0),)),
}


def u_mission(tmp: Path) -> Path:
    lat, lon = 51.1099101, 17.0598572
    dn = 50.0 / 111_320.0
    de = 20.0 / (111_320.0 * math.cos(math.radians(lat)))
    p = tmp / "u.yaml"
    p.write_text(f"""name: bench-u
start: {{point: {{lat_deg: {lat}, lon_deg: {lon}}}, heading_deg: 0}}
waypoints:
  - {{lat_deg: {lat + dn}, lon_deg: {lon}}}
  - {{lat_deg: {lat + dn}, lon_deg: {lon + de}}}
  - {{lat_deg: {lat}, lon_deg: {lon + de}}}
guidance: {{law: ilos, lookahead_m: 3.0, sigma: 0.3}}
cruise_speed_mps: 1.0
acceptance_radius_m: 2.0
on_complete: hold
""")
    return p


def row(name: str, mission_path: Path, realtime: bool, cap_s, on_outage: str = "pause") -> dict:
    from autopilot.config import load_mission, load_vessel
    from autopilot.ros.sim_transport import run_ros_sim
    from hil.environment import EnvironmentConfig
    from hil.ros_link_relay import LinkSpec

    args = SimpleNamespace(seed=1, gps_noise="white", duration=cap_s, realtime=realtime,
                           link=LinkSpec(**ROWS[name]), on_outage=on_outage)
    t0 = time.perf_counter()
    r = run_ros_sim(load_vessel("foka"), load_mission(mission_path), EnvironmentConfig(), args)
    return {"row": name, "mode": ("realtime" if realtime else "lockstep") + ("" if on_outage == "pause" else
                                                                            f" on_outage={on_outage}"),
            "complete": r["mission_complete"], "sim_s": r["sim_time_s"], "rtf": r["realtime_factor"],
            "xte_rms_m": round(r["xte_rms_m"], 3) if r["xte_rms_m"] == r["xte_rms_m"] else None,
            "lat_p50_ms": r["latency_p50_ms"], "lat_p99_ms": r["latency_p99_ms"], "lat_max_ms": r["latency_max_ms"],
            "loss": r["loss"], "failsafes": len(r["failsafes"]), "failsafe_msgs": r["failsafes"][:3],
            "outages": r["outages"], "steps_unanswered": r["steps_unanswered"],
            "commands_sent": {k: v["sent"] for k, v in r["commands"].items()},
            **({"clock_events": r["clock_events"]} if r.get("clock_events") else {}),
            **({"lockstep_ms": r["lockstep_ms"], "autopilot": r.get("autopilot_process_timing")}
               if "lockstep_ms" in r else {}),
            "bench_wall_s": round(time.perf_counter() - t0, 1)}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--lockstep-cap-s", type=float, default=30.0)
    p.add_argument("--only", choices=sorted(ROWS), action="append")
    p.add_argument("--skip-lockstep", action="store_true")
    p.add_argument("--skip-realtime", action="store_true")
    args = p.parse_args()
    os.environ.setdefault("ROS_DOMAIN_ID", str(40 + os.getpid() % 50))
    with open("/proc/loadavg") as f:
        print(f"machine: {os.cpu_count()} cores, load average {f.read().split()[0]} at start, "
              f"ROS_DOMAIN_ID={os.environ['ROS_DOMAIN_ID']}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        mission = u_mission(Path(tmp))
        for name in args.only or ROWS:
            if not args.skip_realtime:
                print(json.dumps(row(name, mission, True, None)), flush=True)
                if name == "outage3s":
                    print(json.dumps(row(name, mission, True, None, on_outage="run")), flush=True)
            if not args.skip_lockstep:
                print(json.dumps(row(name, mission, False, args.lockstep_cap_s)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
