"""HIL bench over an emulated Wi-Fi link: the autopilot process in a ROS domain of its own, the Gazebo stand-in in
another, joined only by hil/ros/link_relay.py (delay +- jitter, loss, outages), as two machines on poor Wi-Fi.

    python benchmarks/bench_hil_link.py [--lockstep-window auto|K] [--lockstep-cap-s S] [--only ROW]
    python benchmarks/bench_hil_link.py --link tun [--only ROW] [--mission FILE]     (root: network namespaces)

--link tun: the two machines for real, at the IP level. `autopilot hil serve --realtime` in a PC network
namespace and `autopilot run` in a Pi namespace, one ROS domain found by unicast peers (`autopilot hil
discovery`), joined by a router namespace whose forwarded packets all (discovery too) pass hil/links/tun_link.py
(delay +- jitter, packet loss, outages; hil/links/netns_link.py). Real time only, the whole demo
(config/missions/demo.yaml, ~6.5 min a row) unless --mission; the 3 s outage starts 60 s after the link
(the autopilot is flying by then: discovery and arming take 10-20 s), once with on_outage=pause and once =run.
A lost packet here is lost (DDS repairs reliable topics by resending), not modelled as the relay's 100 ms. The
link process runs under SCHED_FIFO (--rt-priority): without it, on a loaded machine its own wake-ups add up to
~100 ms to a packet's hold (measured on the clean row at load 5.5: held max 106 ms, latency p99 187 ms).

--link relay (default):
Rows: clean (relay, no impairment); 5 +- 2 ms; 20 +- 10 ms with 1 % loss; 50 +- 20 ms with 5 % loss; a 3 s outage
(on a 5 +- 2 ms link, 15 s into the simulation; the stand-in pauses the plant: on_outage=pause). Each row in
real time (the whole mission) and in lockstep, the whole mission too, with a window of steps in flight
(--lockstep-window; auto: 1 + the steps a round trip of delay + 2 x jitter each way spans). Strict lockstep
(--lockstep-window 1) costs a link round trip every step, so a whole mission over a 50 ms link takes most of an
hour: cap it with --lockstep-cap-s (simulated seconds) to keep such rows to latency, loss and real-time
factor. A lockstep row's `lockstep_ms` splits a step's wall time
into the stand-in's own step (plant, sensors, publishing: `step_*`) and the wait for the autopilot's answer
(`wait_*`: the link both ways, DDS, the autopilot's cycle; its cycle cost is in `autopilot`), and gives the
real-time factor they allow. Also one real-time outage row with on_outage=run.
Mission: a 50 m / 20 m / 50 m U near the demo's launch point at 1 m/s (FOKA, white GNSS, calm): the demo's
380 s in real time per row would make the table take half an hour.
Latency is sensor stamp -> first thrust computed from it (autopilot/ros/link_figures.py); a lost message on a topic
that is
reliable at both ends is modelled as arriving 100 ms late (an assumed DDS repair time, see hil/ros/link_relay.py).
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


def auto_window(link: dict, step_ms: float = 20.0) -> int:
    """Steps in flight that cover a round trip of delay + 2 x jitter each way, plus the step being answered."""
    return 1 + math.ceil(2.0 * (link.get("delay_ms", 0.0) + 2.0 * link.get("jitter_ms", 0.0)) / step_ms)


def row(name: str, mission_path: Path, realtime: bool, cap_s, on_outage: str = "pause", window: int = 1) -> dict:
    from autopilot.vocab.config import load_mission, load_vessel
    from hil.ros.link_relay import LinkSpec
    from hil.ros.sim_transport import run_ros_sim
    from hil.sim.environment import EnvironmentConfig

    args = SimpleNamespace(seed=1, gps_noise="white", duration=cap_s, realtime=realtime,
                           link=LinkSpec(**ROWS[name]), on_outage=on_outage, lockstep_window=window)
    t0 = time.perf_counter()
    r = run_ros_sim(load_vessel("foka"), load_mission(mission_path), EnvironmentConfig(), args)
    mode = ("realtime" if realtime else f"lockstep K={window}") + ("" if on_outage == "pause" else
                                                                   f" on_outage={on_outage}")
    return {**figures(name, mode, r), "steps_unanswered": r["steps_unanswered"],
            **({"lockstep_ms": r["lockstep_ms"], "autopilot": r.get("autopilot_process_timing")}
               if "lockstep_ms" in r else {}),
            "bench_wall_s": round(time.perf_counter() - t0, 1)}


def figures(name: str, mode: str, r: dict) -> dict:
    """A row's figures from a bench report (`autopilot sim --transport ros` or `hil serve`)."""
    return {"row": name, "mode": mode, "complete": r["mission_complete"],
            "waypoints": f"{r['waypoints_reached']}/{r['waypoints_total']}",
            "sim_s": r["sim_time_s"], "rtf": r["realtime_factor"],
            "xte_rms_m": round(r["xte_rms_m"], 3) if r["xte_rms_m"] == r["xte_rms_m"] else None,
            "lat_p50_ms": r["latency_p50_ms"], "lat_p99_ms": r["latency_p99_ms"], "lat_max_ms": r["latency_max_ms"],
            "loss": r["loss"], "failsafes": len(r["failsafes"]), "failsafe_msgs": r["failsafes"][:3],
            "clock_events": r.get("clock_events", [])[:4], "outages": r["outages"],
            "commands_sent": {k: v["sent"] for k, v in r["commands"].items()}}


TUN_OUTAGE_START_S = 60.0
LINK_RT_PRIORITY = 10       # the emulated radio under SCHED_FIFO: the machine's load does not add to the link's delay


def tun_row(name: str, mission_path: Path, tmp: Path, on_outage: str = "pause") -> dict:
    """One real-time row across namespaces over the TUN link; the link's own counts beside the report's."""
    from autopilot.vocab.config import load_vessel
    from hil.links.netns_link import RoutedNamespaces, discovery_files, serve_to_pi
    from hil.ros.sim_transport import boat_config_for

    spec = dict(ROWS[name])
    if "outages" in spec:
        spec["outages"] = ((TUN_OUTAGE_START_S, spec["outages"][0][1]),)
    d = tmp / f"{name}-{on_outage}"
    d.mkdir()
    pc_env, pi_env = discovery_files(d / "disc", 7)
    cfg = boat_config_for(load_vessel("foka"), str(mission_path), d)
    t0 = time.perf_counter()
    with RoutedNamespaces(f"bh{os.getpid() % 10000}", tun=True) as ns:
        link = ns.start_link(seed=1, rt_priority=LINK_RT_PRIORITY, **spec)
        try:
            rc, out, r = serve_to_pi(ns, pc_env, pi_env, cfg, d / "report.json", 60.0,
                                     ["--realtime", "--gps-noise", "white", "--on-outage", on_outage],
                                     timeout_s=1500)
        finally:
            link.send_signal(2)
            link_out, _ = link.communicate(timeout=20)
    counts = json.loads(link_out.strip().splitlines()[-1])
    if r is None:
        return {"row": name, "mode": "realtime tun", "error": f"no report (serve exit {rc})", "out": out[-1500:]}
    mode = "realtime tun" + ("" if on_outage == "pause" else f" on_outage={on_outage}")
    return {**figures(name, mode, r), "link": counts, "bench_wall_s": round(time.perf_counter() - t0, 1)}


def main() -> int:
    from autopilot.cli.sim import lockstep_steps

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--lockstep-cap-s", type=float, default=None, metavar="S",
                   help="lockstep rows stop at S simulated seconds (default: the whole mission)")
    p.add_argument("--lockstep-window", default="auto", metavar="auto|K",
                   type=lambda text: text if text == "auto" else lockstep_steps(text),
                   help="lockstep steps in flight (auto: from each row's link; 1: strict lockstep)")
    p.add_argument("--only", choices=sorted(ROWS), action="append")
    p.add_argument("--skip-lockstep", action="store_true")
    p.add_argument("--skip-realtime", action="store_true")
    p.add_argument("--link", choices=("relay", "tun"), default="relay",
                   help="relay: ROS-level relay between two domains on loopback; tun: IP-level link between "
                        "network namespaces (root)")
    p.add_argument("--mission", type=Path, help="--link tun: the mission (default: config/missions/demo.yaml)")
    args = p.parse_args()
    os.environ.setdefault("ROS_DOMAIN_ID", str(40 + os.getpid() % 50))
    with open("/proc/loadavg") as f:
        print(f"machine: {os.cpu_count()} cores, load average {f.read().split()[0]} at start, "
              f"ROS_DOMAIN_ID={os.environ['ROS_DOMAIN_ID']}", flush=True)
    if args.link == "tun":
        mission = args.mission or REPO / "config/missions/demo.yaml"
        print(f"link: TUN at the IP level between network namespaces; mission {mission}", flush=True)
        with tempfile.TemporaryDirectory() as tmp:
            for name in args.only or ROWS:
                print(json.dumps(tun_row(name, mission, Path(tmp))), flush=True)
                if name == "outage3s":
                    print(json.dumps(tun_row(name, mission, Path(tmp), on_outage="run")), flush=True)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        mission = u_mission(Path(tmp))
        for name in args.only or ROWS:
            if not args.skip_realtime:
                print(json.dumps(row(name, mission, True, None)), flush=True)
                if name == "outage3s":
                    print(json.dumps(row(name, mission, True, None, on_outage="run")), flush=True)
            if not args.skip_lockstep:
                k = auto_window(ROWS[name]) if args.lockstep_window == "auto" else args.lockstep_window
                print(json.dumps(row(name, mission, False, args.lockstep_cap_s, window=k)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
