"""The boat's web page: status, map, commands, compass calibration, parameters and logs, served with aiohttp.

`WebServer(cfg, link, password)` serves `cfg` (autopilot.files.boat.WebConfig: listen address, public status,
tiles) in a thread of its own with its own asyncio loop, so nothing the page or a client does runs on the
control thread: every read and command is handed to the control loop through `link` (BoatLink: the
OperatorDesk and the loop's LoopCalls, the calls run between two cycles) and awaited here. `start()` raises
WebError when the address cannot be bound; `stop()` closes every connection.

Security: every state change needs a session (cookie `ap_session`: HttpOnly, SameSite=Strict, made by a login
with the boat's password, autopilot/web/passwords.py) and its CSRF token in the `X-CSRF-Token` header; a
request whose Origin is not this server is refused; the WebSocket is refused without a session (unless
`public_status`, then it is read-only) and from a foreign Origin. Logins are braked after repeated failures
(autopilot/web/sessions.py). Every command goes through the OperatorDesk with the origin `web <address>`.
Bodies are capped (MAX_UPLOAD_BYTES); a client that sends more is refused, the loop never sees it.

HTTP API (JSON unless said): GET /api/session; POST /api/login {password}; POST /api/logout; GET /api/status;
GET /api/geometry; GET /api/compass; GET /api/sensors; POST /api/command {verb: arm|disarm|mode|hold|goto,
mode?, north_m?, east_m?, thruster?, fraction?} (goto: GUIDED's target [m, local NED], switching to GUIDED;
esc_test: the bench ESC test while disarmed, Autopilot.esc_test); POST /api/mission
(multipart field `file`: YAML, QGC WPL or .plan); GET /api/params; POST /api/params {name, value};
GET /api/logs; GET /api/logs/{run}.zip; GET /api/logs/{run}/plot.png; WS /ws (status pushed at STATUS_HZ;
the page sends {"type": "heartbeat"} each second, the operator heartbeat the link failsafe watches).
"""
from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from concurrent.futures import Future
from pathlib import Path
from typing import Any, Callable, Dict, Optional, Set

from aiohttp import WSMsgType, web

from autopilot.web.errors import WebError
from autopilot.web.sessions import LoginBrake, Session, Sessions

LOG = logging.getLogger("autopilot")
STATIC = Path(__file__).parent / "static"
STATUS_HZ = 10.0
MAX_UPLOAD_BYTES = 1 << 20          # a mission file is a few kB; anything above 1 MiB is refused unread
LOOP_TIMEOUT_S = 3.0                # a read or command the loop did not run by then is answered "timed out"
COOKIE = "ap_session"
RUN_NAME = re.compile(r"^[0-9]{8}T[0-9]{6}Z_[A-Za-z0-9_.-]{1,80}$")


class BoatLink:
    """The page's way to one boat: `desk` (OperatorDesk) and `calls` (the control loop's LoopCalls). `reader`
    (StatusReader) is made at construction; call it from the loop thread or under its lock. `params`: the
    ParamStore or None; `log_root`: the folder of run directories or None; `upload_dir`: where uploaded
    mission files are kept (None: a temporary folder)."""

    def __init__(self, desk, calls, *, log_root: Optional[Path] = None, upload_dir: Optional[Path] = None):
        from autopilot.web.status import StatusReader
        self.desk = desk
        self.calls = calls
        self.reader = StatusReader(desk.autopilot)
        self.log_root = Path(log_root) if log_root else None
        self.upload_dir = Path(upload_dir) if upload_dir else Path(tempfile.mkdtemp(prefix="autopilot-web-"))

    def submit(self, fn: Callable, key: Optional[str] = None) -> Future:
        return self.calls.submit(fn, key)


def _json(data: Any, status: int = 200) -> web.Response:
    return web.Response(text=json.dumps(data, allow_nan=False), status=status, content_type="application/json")


def _answer(ans) -> Dict[str, Any]:
    return {"ok": bool(ans.ok), "text": ans.text, "reasons": list(ans.reasons)}


class WebServer:
    def __init__(self, cfg, link: BoatLink, password, *, on_log: Optional[Callable[[str], None]] = None,
                 tiles_dir: Optional[Path] = None):
        """`cfg`: WebConfig; `password`: a PasswordHash (autopilot/web/passwords.py) or None (then only public
        status is served, if configured, and every login is refused). `tiles_dir`: a folder of map tiles
        (Z/X/Y.png) served at /tiles/, or None."""
        self.cfg = cfg
        self.tiles_dir = Path(tiles_dir) if tiles_dir else None
        self.tiles_url = cfg.tiles_url or ("/tiles/{z}/{x}/{y}.png" if self.tiles_dir else "")
        self.link = link
        self.password = password
        self.sessions = Sessions(idle_timeout_s=cfg.session_idle_timeout_s)
        self.brake = LoginBrake()
        self._say = on_log or LOG.info
        self._thread: Optional[threading.Thread] = None
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._runner: Optional[web.AppRunner] = None
        self._sockets: Set[web.WebSocketResponse] = set()
        self._ws_session: Dict[web.WebSocketResponse, Optional[Session]] = {}
        self._stop: Optional[asyncio.Event] = None
        self.port: Optional[int] = None
        self.host, self._port_cfg = cfg.host_port()
        self.stats = {"status_pushes": 0, "refused": 0}

    # ------------------------------------------------------------------ lifecycle
    @property
    def url(self) -> str:
        host = self.host if self.host not in ("0.0.0.0", "::", "") else "127.0.0.1"
        return f"http://{host}:{self.port}/"

    def start(self) -> "WebServer":
        ready: Future = Future()
        self._thread = threading.Thread(target=self._serve, args=(ready,), name="autopilot-web", daemon=True)
        self._thread.start()
        err = ready.result(timeout=30.0)
        if err is not None:
            self._thread.join(timeout=5.0)
            raise WebError(err)
        return self

    def stop(self) -> None:
        loop, stop = self._loop, self._stop
        if loop is not None and stop is not None and not loop.is_closed():
            try:
                loop.call_soon_threadsafe(stop.set)
            except RuntimeError:
                pass
        if self._thread is not None:
            self._thread.join(timeout=10.0)

    def _serve(self, ready: Future) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            loop.run_until_complete(self._main(ready))
        except BaseException as e:            # never into the process: the boat goes on without its page
            if not ready.done():
                ready.set_result(f"web: {e}")
            else:
                LOG.error(f"web server stopped: {e}")
        finally:
            loop.close()

    async def _main(self, ready: Future) -> None:
        self._stop = asyncio.Event()
        app = self._app()
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self._port_cfg, backlog=128)
        try:
            await site.start()
        except OSError as e:
            await self._runner.cleanup()
            ready.set_result(f"web.listen {self.host}:{self._port_cfg}: cannot listen: {e.strerror or e}")
            return
        server = getattr(site, "_server", None)
        socks = getattr(server, "sockets", None) or []
        self.port = socks[0].getsockname()[1] if socks else self._port_cfg
        ready.set_result(None)
        pusher = asyncio.create_task(self._push_status())
        try:
            await self._stop.wait()
        finally:
            pusher.cancel()
            for ws in list(self._sockets):
                await ws.close()
            await self._runner.cleanup()

    # ------------------------------------------------------------------ the app
    def _app(self) -> web.Application:
        app = web.Application(client_max_size=MAX_UPLOAD_BYTES, middlewares=[self._guard])
        r = app.router
        r.add_get("/", self._index)
        r.add_static("/static/", STATIC, show_index=False, follow_symlinks=False)
        if self.tiles_dir is not None and self.tiles_dir.is_dir():
            r.add_static("/tiles/", self.tiles_dir, show_index=False, follow_symlinks=False)
        r.add_get("/api/session", self._session_info)
        r.add_post("/api/login", self._login)
        r.add_post("/api/logout", self._logout)
        r.add_get("/api/status", self._status)
        r.add_get("/api/geometry", self._geometry)
        r.add_get("/api/compass", self._compass)
        r.add_get("/api/sensors", self._sensors)
        r.add_post("/api/command", self._command)
        r.add_post("/api/mission", self._mission)
        r.add_get("/api/params", self._params)
        r.add_post("/api/params", self._set_param)
        r.add_get("/api/logs", self._logs)
        r.add_get("/api/logs/{run}.zip", self._log_zip)
        r.add_get("/api/logs/{run}/plot.png", self._log_plot)
        r.add_get("/ws", self._ws)
        return app

    def _same_origin(self, request: web.Request) -> bool:
        """No Origin header (a same-origin GET, curl), or one naming this very server."""
        origin = request.headers.get("Origin")
        if origin is None:
            return True
        return origin in (f"http://{request.host}", f"https://{request.host}")

    @web.middleware
    async def _guard(self, request: web.Request, handler):
        """Origin check on every state change, security headers on every answer, and no traceback ever: an
        unexpected error is logged and answered 500 with one line."""
        if request.method not in ("GET", "HEAD") and not self._same_origin(request):
            self.stats["refused"] += 1
            return _json({"ok": False, "text": "refused: the request comes from another site"}, 403)
        try:
            resp = await handler(request)
        except web.HTTPException as e:
            if e.status >= 400:
                self.stats["refused"] += 1
                return _json({"ok": False, "text": f"refused: {e.reason}"}, e.status)
            raise
        except asyncio.CancelledError:
            raise
        except Exception as e:                  # a bug here must not cost the page (or the boat) anything
            LOG.error(f"web: {request.method} {request.path}: {type(e).__name__}: {e}")
            return _json({"ok": False, "text": "error: the request failed on the boat (see its log)"}, 500)
        if isinstance(resp, web.StreamResponse) and not isinstance(resp, web.WebSocketResponse):
            h = resp.headers
            h.setdefault("X-Content-Type-Options", "nosniff")
            h.setdefault("Referrer-Policy", "no-referrer")
            h.setdefault("X-Frame-Options", "DENY")
            h.setdefault("Cache-Control", "no-store")
            img = "'self' data:" + (f" {self.cfg.tiles_origin()}" if self.cfg.tiles_origin() else "")
            h.setdefault("Content-Security-Policy", f"default-src 'self'; img-src {img}; connect-src 'self'; "
                                                    f"frame-ancestors 'none'; base-uri 'none'; form-action 'self'")
        return resp

    def _session(self, request: web.Request) -> Optional[Session]:
        return self.sessions.find(request.cookies.get(COOKIE))

    def _need_session(self, request: web.Request, change: bool) -> Session:
        s = self._session(request)
        if s is None:
            raise web.HTTPUnauthorized(reason="log in first")
        if change and not s.csrf_ok(request.headers.get("X-CSRF-Token")):
            raise web.HTTPForbidden(reason="the page's CSRF token is missing or wrong (reload the page)")
        return s

    def _may_read(self, request: web.Request) -> None:
        if not self.cfg.public_status:
            self._need_session(request, change=False)

    async def _on_loop(self, fn: Callable, key: Optional[str] = None):
        """fn() run by the control loop between cycles; HTTP 503 when the loop does not run it in time."""
        try:
            return await asyncio.wait_for(asyncio.wrap_future(self.link.submit(fn, key)), LOOP_TIMEOUT_S)
        except (asyncio.TimeoutError, asyncio.CancelledError):
            raise web.HTTPServiceUnavailable(reason="the control loop did not answer in time") from None

    async def _body(self, request: web.Request) -> dict:
        try:
            data = await request.json()
        except (ValueError, UnicodeDecodeError):
            raise web.HTTPBadRequest(reason="the body is not JSON") from None
        if not isinstance(data, dict):
            raise web.HTTPBadRequest(reason="the body must be a JSON object")
        return data

    # ------------------------------------------------------------------ pages and session
    async def _index(self, request: web.Request) -> web.StreamResponse:
        return web.FileResponse(STATIC / "index.html")

    async def _session_info(self, request: web.Request) -> web.Response:
        s = self._session(request)
        return _json({"logged_in": s is not None, "csrf": s.csrf if s is not None else None,
                      "public_status": bool(self.cfg.public_status), "password_set": self.password is not None,
                      "tiles_url": self.tiles_url or None})

    async def _login(self, request: web.Request) -> web.Response:
        addr = request.remote or "?"
        wait = self.brake.wait_s(addr)
        if wait > 0:
            return _json({"ok": False, "text": f"refused: too many wrong passwords; try again in {wait:.0f} s"},
                         429)
        data = await self._body(request)
        pw = data.get("password")
        if self.password is None:
            return _json({"ok": False, "text": "refused: no web password is set on the boat "
                                               "(autopilot keys web --config BOAT.yaml)"}, 403)
        ok = await asyncio.get_running_loop().run_in_executor(None, self.password.verify, pw)
        if not ok:
            self.brake.failed(addr)
            self._say(f"web: wrong password from {addr}")
            return _json({"ok": False, "text": "refused: wrong password"}, 401)
        self.brake.succeeded(addr)
        s = self.sessions.open(addr)
        self._say(f"web: {addr} logged in")
        resp = _json({"ok": True, "text": "logged in", "csrf": s.csrf})
        resp.set_cookie(COOKIE, s.session_id, httponly=True, samesite="Strict", path="/",
                        max_age=int(self.cfg.session_idle_timeout_s))
        return resp

    async def _logout(self, request: web.Request) -> web.Response:
        s = self._need_session(request, change=True)
        self.sessions.close(s.session_id)
        for ws, ws_s in list(self._ws_session.items()):
            if ws_s is not None and ws_s.session_id == s.session_id:
                await ws.close()
        resp = _json({"ok": True, "text": "logged out"})
        resp.del_cookie(COOKIE, path="/")
        return resp

    # ------------------------------------------------------------------ reads
    async def _status(self, request: web.Request) -> web.Response:
        self._may_read(request)
        return _json(await self._read_status())

    async def _read_status(self) -> dict:
        link = self.link
        return await self._on_loop(lambda: link.reader.status(link.desk.now_s()), key="web-status")

    async def _geometry(self, request: web.Request) -> web.Response:
        self._may_read(request)
        return _json(await self._on_loop(self.link.reader.geometry, key="web-geometry"))

    async def _compass(self, request: web.Request) -> web.Response:
        self._may_read(request)
        return _json(await self._on_loop(self.link.reader.compass, key="web-compass"))

    async def _sensors(self, request: web.Request) -> web.Response:
        self._may_read(request)
        link = self.link
        return _json(await self._on_loop(lambda: link.reader.sensors(link.desk.now_s()), key="web-sensors"))

    # ------------------------------------------------------------------ commands
    async def _command(self, request: web.Request) -> web.Response:
        s = self._need_session(request, change=True)
        data = await self._body(request)
        verb = str(data.get("verb", "")).lower()
        desk, origin = self.link.desk, f"web {s.who}"
        if verb == "arm":
            ans = await self._on_loop(lambda: desk.arm(origin))
        elif verb == "disarm":
            ans = await self._on_loop(lambda: desk.disarm("disarm from the web page", origin))
        elif verb == "hold":
            ans = await self._on_loop(lambda: desk.set_mode("HOLD", origin))
        elif verb == "mode":
            name = data.get("mode")
            if not isinstance(name, str) or not name or len(name) > 40:
                return _json({"ok": False, "text": "refused: mode needs a mode name"}, 400)
            ans = await self._on_loop(lambda: desk.set_mode(name, origin))
        elif verb == "esc_test":      # the hold-to-run button: renewed every 0.2 s while held
            k, f = data.get("thruster"), data.get("fraction")
            if not isinstance(k, int) or isinstance(k, bool) or not isinstance(f, (int, float)) or isinstance(f, bool):
                return _json({"ok": False, "text": "refused: esc_test needs thruster (a number) and fraction"}, 400)
            fraction = float(f)
            ans = await self._on_loop(lambda: desk.esc_test(k, fraction, origin), key=f"web-esc {origin}")
        elif verb == "goto":          # a tap on the map: GUIDED's position target, switching to GUIDED
            n, e = data.get("north_m"), data.get("east_m")
            if not (isinstance(n, (int, float)) and isinstance(e, (int, float))) or isinstance(n, bool) \
                    or isinstance(e, bool):
                return _json({"ok": False, "text": "refused: goto needs north_m and east_m in metres"}, 400)
            north, east = float(n), float(e)
            ans = await self._on_loop(lambda: desk.goto(north, east, origin, switch_mode=True))
        else:
            return _json({"ok": False, "text": f"refused: unknown command {str(verb)[:40]!r} "
                                               f"(arm, disarm, hold, mode, goto, esc_test)"}, 400)
        return _json(_answer(ans), 200 if ans.ok else 409)

    async def _mission(self, request: web.Request) -> web.Response:
        s = self._need_session(request, change=True)
        try:
            form = await request.post()
        except ValueError:
            raise web.HTTPBadRequest(reason="expected a file upload") from None
        field = form.get("file")
        if field is None or not hasattr(field, "file"):
            return _json({"ok": False, "text": "refused: no file in the upload (field 'file')"}, 400)
        raw_name = Path(str(getattr(field, "filename", "") or "mission")).name
        name = re.sub(r"[^A-Za-z0-9_.-]+", "-", raw_name)[:80] or "mission"
        data = field.file.read(MAX_UPLOAD_BYTES + 1)
        path = await asyncio.get_running_loop().run_in_executor(None, self._keep_upload, name, data)
        return await self._load_mission(path, raw_name, f"web {s.who}")

    def _keep_upload(self, name: str, data: bytes) -> Path:
        """Kept as uploads/web-<time>/<name>, so the mission keeps the name its file gives it."""
        stamp = time.strftime("%Y%m%dT%H%M%S")
        base = self.link.upload_dir / "uploads"
        for k in range(1, 100):
            d = base / (f"web-{stamp}" if k == 1 else f"web-{stamp}-{k}")
            try:
                d.mkdir(parents=True)
                break
            except FileExistsError:
                continue
        path = d / name
        path.write_bytes(data)
        return path

    async def _load_mission(self, path: Path, shown: str, origin: str) -> web.Response:
        from autopilot.files.mission_files import read_mission_file
        from autopilot.vocab.schema import ConfigError
        try:
            loaded = await asyncio.get_running_loop().run_in_executor(None, read_mission_file, path)
        except ConfigError as e:
            text = f"refused: mission not loaded: {shown}: {e.key}: {e.reason}".replace(str(path), shown)
            desk = self.link.desk
            await self._on_loop(lambda: desk.refuse(text, origin))
            return _json({"ok": False, "text": text, "reasons": []}, 409)
        desk = self.link.desk
        for note in loaded.notes:        # said with the name the user gave, not where the boat keeps it
            note = note.replace(f"{path}: ", "").replace(str(path), shown)
            await self._on_loop(lambda note=note: desk.log(f"{shown}: {note}"))
        # checked (a large fence takes a while) in a worker thread; the loop only swaps it in
        load = await asyncio.get_running_loop().run_in_executor(
            None, lambda: desk.prepare_mission(loaded.mission, source=shown))
        ans = await self._on_loop(lambda: desk.swap_mission(load, origin))
        return _json(_answer(ans), 200 if ans.ok else 409)

    async def _params(self, request: web.Request) -> web.Response:
        self._need_session(request, change=False)
        from autopilot.files.tunables import BY_NAME
        params = self.link.desk.params
        if params is None:
            return _json({"params": []})

        def read():
            return [{"name": n, "value": params.value(n), "unit": BY_NAME[n].unit, "doc": BY_NAME[n].doc,
                     "live": BY_NAME[n].live, "choices": list(BY_NAME[n].choices)} for n in params.names()]
        return _json({"params": await self._on_loop(read)})

    async def _set_param(self, request: web.Request) -> web.Response:
        s = self._need_session(request, change=True)
        data = await self._body(request)
        name, value = data.get("name"), data.get("value")
        if not isinstance(name, str) or not isinstance(value, (int, float)) or isinstance(value, bool):
            return _json({"ok": False, "text": "refused: expected {name: TEXT, value: NUMBER}"}, 400)
        desk = self.link.desk
        ans = await self._on_loop(lambda: desk.set_param(name[:40], float(value), f"web {s.who}"))
        return _json(_answer(ans), 200 if ans.ok else 409)

    # ------------------------------------------------------------------ logs
    def _run_dir(self, name: str) -> Path:
        root = self.link.log_root
        if root is None or not RUN_NAME.match(name):
            raise web.HTTPNotFound(reason="no such run")
        path = root / name
        if not path.is_dir():
            raise web.HTTPNotFound(reason="no such run")
        return path

    async def _logs(self, request: web.Request) -> web.Response:
        self._need_session(request, change=False)
        return _json({"runs": await asyncio.get_running_loop().run_in_executor(None, self._list_runs)})

    def _list_runs(self) -> list:
        root = self.link.log_root
        if root is None or not root.is_dir():
            return []
        runs = []
        for d in sorted((p for p in root.iterdir() if p.is_dir() and RUN_NAME.match(p.name)), reverse=True)[:200]:
            size = sum(f.stat().st_size for f in d.rglob("*") if f.is_file())
            summary = None
            for name in ("summary.json", "run.json"):
                f = d / name
                if f.is_file() and f.stat().st_size < 256_000:
                    try:
                        summary = json.loads(f.read_text())
                    except (ValueError, OSError):
                        summary = None
                    break
            runs.append({"name": d.name, "size_bytes": size, "summary": _short_summary(summary)})
        return runs

    async def _log_zip(self, request: web.Request) -> web.StreamResponse:
        self._need_session(request, change=False)
        d = self._run_dir(request.match_info["run"])
        path = await asyncio.get_running_loop().run_in_executor(None, _zip_run, d)
        resp = web.FileResponse(path, headers={"Content-Disposition": f'attachment; filename="{d.name}.zip"'})
        asyncio.get_running_loop().call_later(300.0, _unlink, path)
        return resp

    async def _log_plot(self, request: web.Request) -> web.StreamResponse:
        self._need_session(request, change=False)
        d = self._run_dir(request.match_info["run"])
        png = d / "web-plot.png"
        if not png.is_file():
            # a process of its own, at low priority: matplotlib never holds the control loop's interpreter
            proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "autopilot.cli.main", "plot", str(d), "-o", str(png),
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, preexec_fn=lambda: os.nice(10))
            try:
                _, err = await asyncio.wait_for(proc.communicate(), 120.0)
            except asyncio.TimeoutError:
                proc.kill()
                raise web.HTTPServiceUnavailable(reason="the plot took too long") from None
            if proc.returncode != 0 or not png.is_file():
                text = (err or b"").decode(errors="replace").strip().splitlines()
                return _json({"ok": False, "text": "refused: " + (text[-1] if text else "no plot")}, 409)
        return web.FileResponse(png)

    # ------------------------------------------------------------------ the live socket
    async def _ws(self, request: web.Request) -> web.StreamResponse:
        if not self._same_origin(request):
            self.stats["refused"] += 1
            return _json({"ok": False, "text": "refused: the WebSocket comes from another site"}, 403)
        s = self._session(request)
        if s is None and not self.cfg.public_status:
            self.stats["refused"] += 1
            return _json({"ok": False, "text": "refused: log in first"}, 401)
        ws = web.WebSocketResponse(heartbeat=20.0, max_msg_size=4096)
        await ws.prepare(request)
        self._sockets.add(ws)
        self._ws_session[ws] = s
        desk, origin = self.link.desk, f"web {s.who if s else request.remote}"
        try:
            geometry = await self._on_loop(self.link.reader.geometry, key="web-geometry")
            await ws.send_str(json.dumps({"type": "geometry", "data": geometry}, allow_nan=False))
            async for msg in ws:
                if msg.type != WSMsgType.TEXT:
                    continue
                if s is None or self.sessions.find(s.session_id) is None:
                    break                               # read-only, or logged out meanwhile
                try:
                    kind = json.loads(msg.data).get("type")
                except (ValueError, AttributeError):
                    continue
                if kind == "heartbeat":
                    self.link.submit(lambda: desk.heartbeat(origin), key=f"web-heartbeat {origin}")
        except web.HTTPException:
            pass
        finally:
            self._sockets.discard(ws)
            self._ws_session.pop(ws, None)
        return ws

    async def _push_status(self) -> None:
        """One status read per tick for every open socket (nothing is read while nobody watches)."""
        period = 1.0 / STATUS_HZ
        geometry_rev = None
        while True:
            t0 = time.monotonic()
            if self._sockets:
                try:
                    status = await self._read_status()
                    msgs = [json.dumps({"type": "status", "data": status}, allow_nan=False)]
                    if status.get("geometry_rev") != geometry_rev:
                        geometry_rev = status.get("geometry_rev")
                        geo = await self._on_loop(self.link.reader.geometry, key="web-geometry")
                        msgs.insert(0, json.dumps({"type": "geometry", "data": geo}, allow_nan=False))
                    if status.get("mode") == "CALIBRATE_ON_WATER" or status.get("events"):
                        comp = await self._on_loop(self.link.reader.compass, key="web-compass")
                        msgs.append(json.dumps({"type": "compass", "data": comp}, allow_nan=False))
                    for ws in list(self._sockets):
                        s = self._ws_session.get(ws)
                        if s is not None and self.sessions.find(s.session_id) is None:
                            await ws.close()
                            continue
                        if ws.closed:
                            continue
                        for m in msgs:
                            try:
                                await asyncio.wait_for(ws.send_str(m), 1.0)
                            except (ConnectionError, asyncio.TimeoutError, RuntimeError):
                                await ws.close()
                                break
                    self.stats["status_pushes"] += 1
                except web.HTTPException:
                    pass                      # the loop did not answer this tick: try the next
            await asyncio.sleep(max(0.0, period - (time.monotonic() - t0)))


def _short_summary(summary) -> Optional[dict]:
    if not isinstance(summary, dict):
        return None
    keep = ("mission", "vessel", "duration_s", "distance_m", "mission_complete", "xte_rms_m", "ended", "backend")
    return {k: summary[k] for k in keep if k in summary and isinstance(summary[k], (str, int, float, bool))}


def _zip_run(d: Path) -> Path:
    fd, name = tempfile.mkstemp(prefix="autopilot-run-", suffix=".zip")
    os.close(fd)
    with zipfile.ZipFile(name, "w", zipfile.ZIP_DEFLATED) as z:
        for f in sorted(d.rglob("*")):
            if f.is_file() and not f.is_symlink():
                z.write(f, f"{d.name}/{f.relative_to(d)}")
    return Path(name)


def _unlink(path: Path) -> None:
    try:
        path.unlink()
    except OSError:
        pass


def start_web(cfg, desk, calls, *, log_root=None, upload_dir=None, on_log=None) -> Optional[WebServer]:
    """The boat config's web page (`cfg`: BoatConfig) for `desk` and the loop's `calls`; None when `web:` is
    absent. Without a password file the page is not served (the log says how to set one) unless only the public
    status is asked for. WebError when it cannot listen."""
    web_cfg = cfg.web
    if web_cfg is None:
        return None
    from autopilot.web.passwords import PasswordFileError, read_password_file
    say = on_log or LOG.warning
    try:
        password = read_password_file(cfg.web_password_path())
    except PasswordFileError as e:
        if not web_cfg.public_status:
            say(f"web page not served: {e}")
            return None
        say(f"web page: read-only status only: {e}")
        password = None
    link = BoatLink(desk, calls, log_root=log_root, upload_dir=upload_dir)
    tiles = cfg.web_tiles_dir()
    if tiles is not None and not tiles.is_dir():
        say(f"web page: web.tiles_dir {tiles} is not a folder: the map draws without tiles")
    return WebServer(web_cfg, link, password, on_log=on_log, tiles_dir=tiles).start()
