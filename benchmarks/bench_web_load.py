"""Does the web page disturb the control loop? The boat runtime (`autopilot run`'s loop, backend sim, FOKA at
50 Hz) with its web server in one process, as on the boat; the clients in another process, as on a phone.

Phases of one run, each `--phase-s` long: (1) no client; (2) `--sessions` logged-in page sessions (each a
WebSocket taking the 10 Hz status and sending the 1 s operator heartbeat, plus a status and geometry read each
second); (3) the same sessions plus one hostile client hammering the server without pause: wrong passwords,
WebSocket handshakes with no session and from a foreign origin, 1,000 reconnects with a valid session,
malformed JSON, and 100 MB uploads. For each phase it prints the loop's cycle cost (the work of a cycle,
including the page's reads run between cycles) and its start-to-start interval (how late the timer woke
it), p50 / p99 / max in ms, and the missed deadlines.

    python benchmarks/bench_web_load.py [--phase-s 20] [--sessions 20]
"""
from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from loop_timing import CycleRecorder, pct_ms  # noqa: E402  (benchmarks/ is this script's folder)

REPO = Path(__file__).resolve().parents[1]


# ---------------------------------------------------------------------------------------------- the clients
async def _session(url: str, password: str, stop_at: float, counts: dict) -> None:
    import aiohttp
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as s:
        async with s.post(url + "api/login", json={"password": password}) as r:
            csrf = (await r.json())["csrf"]
        async with s.ws_connect(url + "ws") as ws:
            next_beat = 0.0
            while time.monotonic() < stop_at:
                try:
                    msg = await ws.receive(timeout=0.5)
                    if msg.type == aiohttp.WSMsgType.TEXT:
                        counts["status"] += 1
                except asyncio.TimeoutError:
                    pass
                if time.monotonic() >= next_beat:
                    await ws.send_str(json.dumps({"type": "heartbeat"}))
                    async with s.get(url + "api/status") as r:
                        await r.read()
                    async with s.get(url + "api/geometry", headers={"X-CSRF-Token": csrf}) as r:
                        await r.read()
                    next_beat = time.monotonic() + 1.0


async def _hostile(url: str, password: str, stop_at: float, counts: dict) -> None:
    import aiohttp
    big = b"x" * (100 * 1024 * 1024)
    host = url.split("//", 1)[1].rstrip("/")
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as good:
        async with good.post(url + "api/login", json={"password": password}) as r:
            await r.read()
        async with aiohttp.ClientSession() as bad:
            k = 0
            while time.monotonic() < stop_at:
                k += 1
                try:
                    async with bad.post(url + "api/login", json={"password": f"guess{k}"}) as r:
                        await r.read()
                    for origin in ("", "http://evil.example"):
                        try:
                            async with bad.ws_connect(url + "ws", headers={"Origin": origin} if origin else {}):
                                pass
                        except aiohttp.WSServerHandshakeError:
                            pass
                    async with bad.post(url + "api/command", data=b"{nope", headers={
                            "Content-Type": "application/json", "Origin": f"http://{host}"}) as r:
                        await r.read()
                    if counts["reconnects"] < 1000:
                        for _ in range(20):
                            async with good.ws_connect(url + "ws") as ws:
                                await ws.receive(timeout=2.0)
                            counts["reconnects"] += 1
                    if k % 10 == 1:
                        try:
                            async with good.post(url + "api/mission", data=big,
                                                 headers={"Content-Type": "application/octet-stream"}) as r:
                                await r.read()
                        except aiohttp.ClientError:
                            pass
                        counts["uploads"] += 1
                except (aiohttp.ClientError, asyncio.TimeoutError):
                    counts["errors"] += 1
                counts["hostile_rounds"] += 1


def clients_main(url: str, password: str, sessions: int, hostile_after_s: float, total_s: float) -> None:
    """The client process: `sessions` page sessions for total_s, the hostile client for the last part."""
    counts = {"status": 0, "reconnects": 0, "uploads": 0, "errors": 0, "hostile_rounds": 0}
    t0 = time.monotonic()

    async def go():
        tasks = [asyncio.create_task(_session(url, password, t0 + total_s, counts)) for _ in range(sessions)]
        await asyncio.sleep(hostile_after_s)
        tasks.append(asyncio.create_task(_hostile(url, password, t0 + total_s, counts)))
        await asyncio.gather(*tasks, return_exceptions=True)
    asyncio.run(go())
    print(json.dumps(counts), flush=True)


# ---------------------------------------------------------------------------------------------- the boat
def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--phase-s", type=float, default=20.0)
    ap.add_argument("--sessions", type=int, default=20)
    ap.add_argument("--clients", nargs=3, metavar=("URL", "PASSWORD", "N"), help=argparse.SUPPRESS)
    ap.add_argument("--hostile-after-s", type=float, default=0.0, help=argparse.SUPPRESS)
    ap.add_argument("--total-s", type=float, default=0.0, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.clients:
        url, pw, n = args.clients
        clients_main(url, pw, int(n), args.hostile_after_s, args.total_s)
        return

    from autopilot.cli.stand_ins import register_all
    from autopilot.files.boat import BoatConfig, WebConfig
    from autopilot.mavlink.server import LoopCalls
    from autopilot.runtime.boat_runtime import BoatRuntime
    from autopilot.vocab.config import load_mission, load_vessel
    from autopilot.vocab.schema import build
    from autopilot.web.passwords import hash_password
    from autopilot.web.server import BoatLink, WebServer

    register_all()
    vessel = load_vessel("foka")
    mission = load_mission(REPO / "tests" / "data" / "mavlink_pond.yaml")
    cfg = build(BoatConfig, {"vessel": "foka", "backend": "sim"}, "bench")
    runtime = BoatRuntime(cfg, vessel, mission, now_ns=time.monotonic_ns)
    rec = CycleRecorder(runtime)
    runtime.observers.append(rec)
    runtime.loop_calls = LoopCalls()
    password = "bench-password-1"
    web_cfg = build(WebConfig, {"listen": "127.0.0.1:0"}, "bench")
    server = WebServer(web_cfg, BoatLink(runtime.desk, runtime.loop_calls, upload_dir=Path(tempfile.mkdtemp())),
                       hash_password(password), on_log=lambda text: None)
    runtime.start_loop()
    server.start()
    clients = None
    try:
        time.sleep(3.0)                                 # the estimate converges; not measured
        rec.phase = "no client"
        time.sleep(args.phase_s)
        clients = subprocess.Popen([sys.executable, __file__, "--clients", server.url, password, str(args.sessions),
                                    "--hostile-after-s", str(args.phase_s + 2.0),
                                    "--total-s", str(2 * args.phase_s + 3.0)],
                                   stdout=subprocess.PIPE, text=True, cwd=REPO)
        rec.phase = "(logging in)"
        time.sleep(2.0)
        rec.phase = f"{args.sessions} sessions"
        time.sleep(args.phase_s)
        rec.phase = "(hostile starts)"
        time.sleep(1.0)
        rec.phase = f"{args.sessions} sessions + hostile"
        time.sleep(args.phase_s)
        rec.phase = "(end)"
        out, _ = clients.communicate(timeout=120)
    finally:
        if clients is not None and clients.poll() is None:
            clients.kill()
        server.stop()
        runtime.stop("benchmark over")
        runtime.close()
    print(f"loop {vessel.control.loop_rate_hz:g} Hz (period {1e3 / vessel.control.loop_rate_hz:.0f} ms), "
          f"phases of {args.phase_s:g} s; web refusals {server.stats['refused']}, status pushes "
          f"{server.stats['status_pushes']}")
    print(f"clients: {out.strip()}")
    print(f"{'phase':28s} {'cycles':>6s} {'cost p50':>9s} {'p99':>7s} {'max':>7s} {'interval p50':>13s} {'p99':>7s} "
          f"{'max':>7s} {'late':>5s}")
    period = 1.0 / vessel.control.loop_rate_hz
    for phase in ("no client", f"{args.sessions} sessions", f"{args.sessions} sessions + hostile"):
        rows = [r for r in rec.rows if r[0] == phase]
        cost = [r[1] for r in rows]
        iv = [r[2] for r in rows if r[2] is not None]
        late = sum(1 for c, i in zip(cost, iv) if max(c, i) > 1.5 * period)
        print(f"{phase:28s} {len(rows):6d} {pct_ms(cost, 50):8.2f}ms {pct_ms(cost, 99):6.2f} {1e3 * max(cost):7.2f} "
              f"{pct_ms(iv, 50):12.2f}ms {pct_ms(iv, 99):6.2f} {1e3 * max(iv):7.2f} {late:5d}")


if __name__ == "__main__":
    main()
