"""The web page is a way to drive the boat, so every way in is tried as an attacker on the boat's Wi-Fi would:
real HTTP and WebSocket clients on 127.0.0.1 against `autopilot sim --realtime --web`. Each attempt must be
refused, the process stay alive and the boat's state (mode, armed) stay as it was."""
from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.request
from http.cookiejar import CookieJar

import aiohttp
import pytest

from tests.support.web_boat import WebSimBoat

WALL_TIME_S = 40.0


class Client:
    """One browser's worth of state: its cookie jar and the CSRF token its login gave."""

    def __init__(self, url: str):
        self.url = url.rstrip("/")
        self.jar = CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar))
        self.csrf = None

    def call(self, method: str, path: str, body=None, headers=None, raw: bytes = None):
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        h = {"Content-Type": "application/json"} if body is not None else {}
        h.update(headers or {})
        req = urllib.request.Request(self.url + path, data=data, method=method, headers=h)
        try:
            with self.opener.open(req, timeout=15) as r:
                return r.status, json.loads(r.read() or b"{}")
        except urllib.error.HTTPError as e:
            payload = e.read()
            try:
                return e.code, json.loads(payload or b"{}")
            except ValueError:
                return e.code, {"text": payload[:200].decode(errors="replace")}

    def login(self, password: str):
        status, body = self.call("POST", "/api/login", {"password": password})
        if status == 200:
            self.csrf = body["csrf"]
        return status, body

    def command(self, body, csrf="own", headers=None):
        h = dict(headers or {})
        if csrf == "own":
            h["X-CSRF-Token"] = self.csrf or ""
        elif csrf is not None:
            h["X-CSRF-Token"] = csrf
        return self.call("POST", "/api/command", body, headers=h)

    def cookie(self) -> str:
        return "; ".join(f"{c.name}={c.value}" for c in self.jar)


@pytest.fixture(scope="module")
def boat(tmp_path_factory):
    b = WebSimBoat(tmp_path_factory.mktemp("websec"), duration_s=600)
    yield b
    b.stop()


def _state(boat) -> tuple:
    c = Client(boat.url)
    assert c.login(boat.password)[0] == 200
    status, s = c.call("GET", "/api/status")
    assert status == 200
    return s["mode"], s["armed"]


def _ws_status(url: str, cookie: str = "", origin: str = "") -> int:
    """The HTTP status of a WebSocket handshake to /ws (101 when it upgraded)."""
    async def go():
        headers = {}
        if cookie:
            headers["Cookie"] = cookie
        if origin:
            headers["Origin"] = origin
        async with aiohttp.ClientSession() as s:
            try:
                async with s.ws_connect(url.rstrip("/") + "/ws", headers=headers,
                                        timeout=aiohttp.ClientWSTimeout(ws_close=10)) as ws:
                    msg = await ws.receive(timeout=10)
                    assert msg.type == aiohttp.WSMsgType.TEXT and json.loads(msg.data)["type"] == "geometry"
                    return 101
            except aiohttp.WSServerHandshakeError as e:
                return e.status
    return asyncio.run(go())


@pytest.mark.slow
def test_no_command_without_a_session(boat):
    before = _state(boat)
    c = Client(boat.url)
    assert c.command({"verb": "mode", "mode": "AUTO"}, csrf=None)[0] == 401
    assert c.command({"verb": "arm"}, csrf="anything")[0] == 401
    assert c.call("GET", "/api/status")[0] == 401          # status is private unless web.public_status
    assert c.call("GET", "/api/params")[0] == 401
    assert _state(boat) == before and boat.alive()


def test_a_forged_or_missing_csrf_token_is_refused(boat):
    c = Client(boat.url)
    assert c.login(boat.password)[0] == 200
    before = _state(boat)
    assert c.command({"verb": "mode", "mode": "AUTO"}, csrf=None)[0] == 403
    status, body = c.command({"verb": "mode", "mode": "AUTO"}, csrf="forged-" + "x" * 40)
    assert status == 403 and "CSRF" in body["text"]
    other = Client(boat.url)                                # another session's token is no good either
    assert other.login(boat.password)[0] == 200
    assert c.command({"verb": "mode", "mode": "AUTO"}, csrf=other.csrf)[0] == 403
    assert _state(boat) == before
    # the real token works, so the refusals above were the token's doing
    status, body = c.command({"verb": "mode", "mode": "LOITER"})
    assert status == 200 and body["ok"], body
    assert c.command({"verb": "hold"})[0] == 200


def test_a_cross_site_request_is_refused_even_with_the_cookie_and_token(boat):
    c = Client(boat.url)
    assert c.login(boat.password)[0] == 200
    before = _state(boat)
    status, body = c.command({"verb": "mode", "mode": "AUTO"}, headers={"Origin": "http://evil.example"})
    assert status == 403 and "another site" in body["text"]
    assert _state(boat) == before


def test_the_websocket_refuses_a_foreign_origin_and_a_missing_session(boat):
    c = Client(boat.url)
    assert c.login(boat.password)[0] == 200
    host = boat.url.split("//", 1)[1].rstrip("/")
    assert _ws_status(boat.url, c.cookie(), origin=f"http://{host}") == 101
    assert _ws_status(boat.url, c.cookie(), origin="http://evil.example") == 403
    assert _ws_status(boat.url, c.cookie(), origin=f"http://{host}.evil.example") == 403
    assert _ws_status(boat.url, "", origin=f"http://{host}") == 401
    assert boat.alive()


def test_a_cookie_replayed_after_logout_is_refused(boat):
    c = Client(boat.url)
    assert c.login(boat.password)[0] == 200
    cookie, csrf = c.cookie(), c.csrf
    assert c.call("POST", "/api/logout", {}, headers={"X-CSRF-Token": csrf})[0] == 200
    before = _state(boat)
    replay = Client(boat.url)
    headers = {"Cookie": cookie, "X-CSRF-Token": csrf}
    assert replay.call("POST", "/api/command", {"verb": "mode", "mode": "AUTO"}, headers=headers)[0] == 401
    assert replay.call("GET", "/api/status", headers={"Cookie": cookie})[0] == 401
    assert _ws_status(boat.url, cookie, origin="") == 401
    assert _state(boat) == before


def test_bad_bodies_and_a_huge_upload_are_refused_without_harm(boat):
    c = Client(boat.url)
    assert c.login(boat.password)[0] == 200
    before = _state(boat)
    bad = [c.call("POST", "/api/command", raw=b"{not json", headers={"Content-Type": "application/json",
                                                                     "X-CSRF-Token": c.csrf})[0],
           c.command([1, 2, 3])[0], c.command({"verb": "mode", "mode": "X" * 10_000})[0],
           c.command({"verb": "launch-the-missiles"})[0],
           c.call("POST", "/api/params", {"name": "WP_RADIUS", "value": "NaN"}, {"X-CSRF-Token": c.csrf})[0]]
    assert all(code in (400, 409, 413) for code in bad), bad
    big = b"x" * (100 * 1024 * 1024)
    try:
        status, _ = c.call("POST", "/api/mission", raw=big, headers={"Content-Type": "application/octet-stream",
                                                                     "X-CSRF-Token": c.csrf})
    except (ConnectionError, urllib.error.URLError):
        status = 413                                       # the server may close the socket mid-upload
    assert status in (400, 413)
    assert _state(boat) == before
    assert boat.alive() and "Traceback" not in boat.output()


@pytest.mark.slow
def test_fifty_wrong_passwords_in_a_row_are_refused_and_braked(boat):
    """Last in this file: it leaves the login braked."""
    watcher = Client(boat.url)
    assert watcher.login(boat.password)[0] == 200
    before = watcher.call("GET", "/api/status")[1]
    c = Client(boat.url)
    codes = [c.login(f"guess-{i:03d}")[0] for i in range(50)]
    assert set(codes) <= {401, 429} and 429 in codes, codes
    assert codes[:5] == [401] * 5                          # the first tries are looked at, then braked
    status, body = c.login(boat.password)                  # even the right one waits out the brake
    assert status == 429 and "try again in" in body["text"]
    assert boat.alive() and "Traceback" not in boat.output()
    after = watcher.call("GET", "/api/status")[1]          # a session made before the guessing still works
    assert (after["mode"], after["armed"]) == (before["mode"], before["armed"])
