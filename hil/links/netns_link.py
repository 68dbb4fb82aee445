"""Two machines on one host: a PC and a Pi network namespace on two subnets joined by a router namespace, and
optionally an emulated Wi-Fi link (hil/links/tun_link.py) that everything the router forwards passes through.

    PC ns  <name>a0 10.251.7.1/24 ---- <name>r0 10.251.7.254  ROUTER ns  10.251.8.254 <name>r1 ---- 10.251.8.2/24
    <name>b0  Pi ns
                                                     |  policy routing: what arrives on r0/r1 -> table 100 -> tun
                                                     +- <name>t0 (TUN): tun_link holds/drops, writes back -> main table

Multicast does not cross the router (as many Wi-Fi access points drop it), so the sides must find each other by
unicast peers (`autopilot hil discovery`). Needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN for the mounts) and `ip`.
Used by tests/ros/test_ros_hil_netns.py and benchmarks/bench_hil_link.py --link tun.
"""
from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Optional

PC_IP, PI_IP = "10.251.7.1", "10.251.8.2"
PC_GW, PI_GW = "10.251.7.254", "10.251.8.254"
TUN_TABLE = 100
REPO = Path(__file__).resolve().parents[2]


class NamespacesUnavailable(RuntimeError):
    """The namespaces (or the TUN device) cannot be made here; the message says which command failed and why."""


def _sh(*cmd: str) -> None:
    subprocess.run(cmd, check=True, capture_output=True, text=True)


class RoutedNamespaces:
    """Context manager: makes <name>a (PC), <name>b (Pi), <name>r (router); removes them on exit. With
    `tun=True` the router forwards through TUN device <name>t0, which a tun_link process must serve (start_link);
    until one does, nothing crosses."""

    def __init__(self, name: str, tun: bool = False):
        self.name = name
        self.pc, self.pi, self.router = f"{name}a", f"{name}b", f"{name}r"
        self.tun_dev = f"{name}t0" if tun else None

    def __enter__(self) -> "RoutedNamespaces":
        if shutil.which("ip") is None or shutil.which("unshare") is None:
            raise NamespacesUnavailable("network namespaces cannot be made here: no `ip` or `unshare`")
        n, r = self.name, self.router
        try:
            for ns in (self.pc, self.pi, r):
                _sh("ip", "netns", "add", ns)
                _sh("ip", "-n", ns, "link", "set", "lo", "up")
            _sh("ip", "netns", "exec", r, "sysctl", "-qw", "net.ipv4.conf.all.rp_filter=0",
                "net.ipv4.conf.default.rp_filter=0", "net.ipv4.ip_forward=1")
            _sh("ip", "link", "add", f"{n}a0", "type", "veth", "peer", "name", f"{n}r0")
            _sh("ip", "link", "add", f"{n}b0", "type", "veth", "peer", "name", f"{n}r1")
            for dev, ns, addr in ((f"{n}a0", self.pc, f"{PC_IP}/24"), (f"{n}r0", r, f"{PC_GW}/24"),
                                  (f"{n}b0", self.pi, f"{PI_IP}/24"), (f"{n}r1", r, f"{PI_GW}/24")):
                _sh("ip", "link", "set", dev, "netns", ns)
                _sh("ip", "-n", ns, "addr", "add", addr, "dev", dev)
                _sh("ip", "-n", ns, "link", "set", dev, "up")
            _sh("ip", "-n", self.pc, "route", "add", "default", "via", PC_GW)
            _sh("ip", "-n", self.pi, "route", "add", "default", "via", PI_GW)
            if self.tun_dev:
                # forwarded traffic from either veth goes to the tun (table 100); what tun_link writes back
                # arrives on the tun and takes the main table to the other veth. rp_filter off: a packet from
                # 10.251.7.1 arriving on the tun is not on its reverse path. Local delivery (priority 0) is
                # untouched, so the router itself still answers on its veths.
                _sh("ip", "-n", r, "tuntap", "add", "dev", self.tun_dev, "mode", "tun")
                _sh("ip", "-n", r, "link", "set", self.tun_dev, "up")
                _sh("ip", "netns", "exec", r, "sysctl", "-qw", f"net.ipv4.conf.{self.tun_dev}.rp_filter=0")
                _sh("ip", "-n", r, "route", "add", "default", "dev", self.tun_dev, "table", str(TUN_TABLE))
                for veth in (f"{n}r0", f"{n}r1"):
                    _sh("ip", "-n", r, "rule", "add", "iif", veth, "lookup", str(TUN_TABLE), "pref", "100")
        except subprocess.CalledProcessError as e:
            self.__exit__(None, None, None)
            raise NamespacesUnavailable(f"network namespaces cannot be made here "
                                        f"({' '.join(e.cmd)}: {e.stderr.strip()})") from None
        return self

    def __exit__(self, *exc) -> None:
        for ns in (self.pc, self.pi, self.router):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)

    def start_link(self, delay_ms: float = 0.0, jitter_ms: float = 0.0, loss: float = 0.0, outages=(),
                   stats: Optional[str] = None, seed: Optional[int] = None,
                   rt_priority: Optional[int] = None) -> subprocess.Popen:
        """tun_link on the router's TUN device; returns once it is relaying. Stop it with SIGINT; it prints its
        counts as its last line. rt_priority: SCHED_FIFO priority for it (see hil/links/tun_link.py)."""
        assert self.tun_dev is not None                 # made with tun=True: there is a TUN device to relay
        args = [sys.executable, "-m", "hil.links.tun_link", "--dev", self.tun_dev, "--delay-ms", str(delay_ms),
                "--jitter-ms", str(jitter_ms), "--loss", str(loss)]
        for start_s, length_s in outages:
            args += ["--outage", f"{start_s}:{length_s}"]
        if stats:
            args += ["--stats", str(stats)]
        if seed is not None:
            args += ["--seed", str(seed)]
        if rt_priority is not None:
            args += ["--rt-priority", str(rt_priority)]
        proc = subprocess.Popen(["ip", "netns", "exec", self.router] + args, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, env=dict(os.environ, PYTHONPATH=str(REPO)))
        assert proc.stdout is not None                  # stdout=PIPE
        said = ""
        while not said.endswith("\n") or not said.splitlines()[-1].startswith("tun link up"):
            line = proc.stdout.readline()
            if not line:                # it exited: it says why
                proc.wait()
                raise NamespacesUnavailable(f"tun link did not start: {said}")
            said += line                # a warning (e.g. no real-time priority) may come first
        return proc

    def popen(self, ns: str, env_file, argv: list, **kw) -> subprocess.Popen:
        """`argv` inside namespace `ns` with its own /dev/shm (so Fast DDS takes no shared-memory shortcut
        between the sides) and the variables of `env_file` (ROS_* from the caller's environment are dropped)."""
        quoted = " ".join(shlex.quote(a) for a in argv)
        script = f"mount -t tmpfs none /dev/shm && set -a && . {shlex.quote(str(env_file))} && set +a && exec {quoted}"
        env = {k: v for k, v in os.environ.items() if not k.startswith("ROS_")}
        env["PYTHONPATH"] = str(REPO)
        return subprocess.Popen(["ip", "netns", "exec", ns, "unshare", "-m", "sh", "-c", script], env=env,
                                stdout=kw.pop("stdout", subprocess.PIPE), stderr=kw.pop("stderr", subprocess.STDOUT),
                                text=True, **kw)


def discovery_files(out_dir: Path, domain_id: int) -> tuple:
    """`autopilot hil discovery` for PC_IP and PI_IP into out_dir; returns the paths of (pc.env, pi.env).
    Raises RuntimeError with what it said when it fails."""
    r = subprocess.run([sys.executable, "-m", "autopilot.cli", "hil", "discovery", "--pc-ip", PC_IP, "--pi-ip", PI_IP,
                        "--domain-id", str(domain_id), "--out", str(out_dir)], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=str(REPO)))
    if r.returncode != 0:
        raise RuntimeError(f"autopilot hil discovery failed: {r.stderr.strip()}")
    return Path(out_dir) / "pc.env", Path(out_dir) / "pi.env"


def serve_to_pi(ns: RoutedNamespaces, pc_env, pi_env, boat_config, report_path, wait_s: float,
                serve_args=(), timeout_s: Optional[float] = None):
    """`autopilot run --config BOAT_CONFIG` in the Pi namespace, then `autopilot hil serve` in the PC namespace
    until it ends (killed after timeout_s); the Pi is stopped with SIGINT after. Returns (the PC's exit code,
    the tails of what the PC and the Pi printed, the serve report or None when the PC wrote none)."""
    cli = [sys.executable, "-m", "autopilot.cli"]
    pi = ns.popen(ns.pi, pi_env, cli + ["run", "--config", str(boat_config)])
    try:
        pc = ns.popen(ns.pc, pc_env, cli + ["hil", "serve", "--config", str(boat_config), "--wait", str(wait_s),
                                           "--report", str(report_path), *serve_args])
        try:
            out, _ = pc.communicate(timeout=timeout_s or 180 + 2 * wait_s)
        except subprocess.TimeoutExpired:
            pc.kill()
            out = pc.communicate()[0] + "\n(timed out: killed)"
    finally:
        pi.send_signal(2)
        try:
            pi_out, _ = pi.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            pi.kill()
            pi_out = pi.communicate()[0] + "\n(did not stop on SIGINT: killed)"
    report = json.loads(Path(report_path).read_text()) if Path(report_path).exists() else None
    return pc.returncode, out[-4000:] + "\n--- pi ---\n" + pi_out[-2000:], report

