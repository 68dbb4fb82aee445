"""`autopilot run` serves the web page from the boat runtime on a machine without ROS 2 (rclpy hidden), the sim
backend standing in for the hardware: the page logs in, reads the boat's status and changes its mode through
the operator desk (logged with its origin); without a password the boat runs and the log says how to set one."""
from __future__ import annotations

import io
import json
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from http.cookiejar import CookieJar

import pytest

from autopilot.cli.main import main
from tests.support.child_io import Lines
from tests.support.paths import DATA, REPO

NO_ROS = REPO / "tests" / "support" / "no_ros.py"
PASSWORD = "pond page password"


PNG = b"\x89PNG\r\n\x1a\n" + b"a lake tile"


def _config(tmp_path):
    tile = tmp_path / "tiles" / "17" / "71982" / "43447.png"
    tile.parent.mkdir(parents=True)
    tile.write_bytes(PNG)
    cfg = tmp_path / "boat.yaml"
    cfg.write_text(f"vessel: foka\nmission: {DATA / 'mavlink_pond.yaml'}\nbackend: sim\nros: auto\n"
                   f"logging: {{dir: {tmp_path / 'runs'}, rate_hz: 10}}\n"
                   f"web: {{listen: '127.0.0.1:0', tiles_dir: tiles}}\n")
    return cfg


def _start(cfg):
    proc = subprocess.Popen([sys.executable, str(NO_ROS), "run", "--config", str(cfg)], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return proc, Lines(proc)


def _wait(out: Lines, pattern: str, timeout_s: float = 60.0):
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        m = re.search(pattern, out.text())
        if m:
            return m
        time.sleep(0.2)
    raise AssertionError(f"no {pattern!r} in:\n{out.text()[-3000:]}")


def _stop(proc, out):
    proc.send_signal(signal.SIGTERM)
    code = proc.wait(timeout=30)
    out.join()
    return code


@pytest.mark.slow
def test_the_boat_runtime_serves_its_page_and_takes_commands_through_the_desk(tmp_path, monkeypatch):
    cfg = _config(tmp_path)
    monkeypatch.setattr("sys.stdin", io.StringIO(PASSWORD + "\n"))
    assert main(["keys", "web", "--config", str(cfg), "--password-stdin"]) == 0
    proc, out = _start(cfg)
    try:
        url = _wait(out, r"web page: (http://127\.0\.0\.1:\d+/)").group(1)
        opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(CookieJar()))

        def call(path, body=None, csrf=""):
            req = urllib.request.Request(url + path.lstrip("/"), method="POST" if body is not None else "GET",
                                         data=json.dumps(body).encode() if body is not None else None,
                                         headers={"Content-Type": "application/json", "X-CSRF-Token": csrf})
            with opener.open(req, timeout=10) as r:
                return json.loads(r.read())
        csrf = call("/api/login", {"password": PASSWORD})["csrf"]
        # the offline tile folder beside the boat config is the map's background
        assert call("/api/session")["tiles_url"] == "/tiles/{z}/{x}/{y}.png"
        with opener.open(url + "tiles/17/71982/43447.png", timeout=10) as r:
            assert r.read() == PNG
        status = call("/api/status")
        assert status["mode"] == "HOLD" and status["armed"] is False
        assert status["mission"]["name"] == "mavlink-pond"
        end = time.monotonic() + 30
        while not status["nav"]["valid"] and time.monotonic() < end:      # the first fixes come at 1 Hz
            time.sleep(0.3)
            status = call("/api/status")
        assert status["nav"]["valid"] and status["gnss"]["sats"] > 0, status
        answer = call("/api/command", {"verb": "mode", "mode": "LOITER"}, csrf)
        assert answer["ok"], answer
        time.sleep(0.5)
        assert call("/api/status")["mode"] == "LOITER"
    finally:
        code = _stop(proc, out)
    text = out.text()
    assert code == 0, text[-2000:]
    assert "ROS 2: off" in text and "no_ros: ROS modules imported: []" in text
    assert "web: 127.0.0.1 logged in" in text
    assert "mode LOITER requested (from web 127.0.0.1)" in text
    assert "Traceback" not in text


@pytest.mark.slow
def test_without_a_password_the_page_is_not_served_and_the_boat_still_runs(tmp_path):
    proc, out = _start(_config(tmp_path))
    try:
        _wait(out, r"autopilot up")
    finally:
        code = _stop(proc, out)
    text = out.text()
    assert code == 0, text[-2000:]
    assert "web page not served" in text and "autopilot keys web --config" in text
    assert "web page: http" not in text and "Traceback" not in text


@pytest.mark.slow
def test_public_status_shows_the_boat_without_a_login_and_takes_no_command(tmp_path):
    cfg = _config(tmp_path)
    cfg.write_text(cfg.read_text().replace("tiles_dir: tiles}", "tiles_dir: tiles, public_status: true}"))
    proc, out = _start(cfg)                      # no password set: only the read-only status is served
    try:
        url = _wait(out, r"web page: (http://127\.0\.0\.1:\d+/)").group(1)
        with urllib.request.urlopen(url + "api/status", timeout=10) as r:
            assert json.loads(r.read())["mode"] == "HOLD"
        req = urllib.request.Request(url + "api/command", data=json.dumps({"verb": "mode", "mode": "LOITER"}).encode(),
                                     method="POST", headers={"Content-Type": "application/json"})
        try:
            urllib.request.urlopen(req, timeout=10)
            raise AssertionError("a command was taken without a login")
        except urllib.error.HTTPError as e:
            assert e.code == 401
        login = urllib.request.Request(url + "api/login", data=b'{"password": "anything at all"}', method="POST",
                                       headers={"Content-Type": "application/json"})
        try:
            urllib.request.urlopen(login, timeout=10)
            raise AssertionError("a login was taken with no password set")
        except urllib.error.HTTPError as e:
            assert e.code == 403 and "no web password is set" in json.loads(e.read())["text"]
        with urllib.request.urlopen(url + "api/status", timeout=10) as r:
            assert json.loads(r.read())["mode"] == "HOLD"
    finally:
        code = _stop(proc, out)
    text = out.text()
    assert code == 0 and "read-only status only" in text and "Traceback" not in text
