"""sd_notify against a real Unix datagram socket standing in for systemd's notification socket."""
from __future__ import annotations

import os
import socket
import threading
import time

import pytest

from autopilot.runtime.sd_notify import Notifier, Watchdog, notify_socket_address, watchdog_interval_s


@pytest.fixture
def manager_socket(tmp_path):
    """A bound SOCK_DGRAM socket, as systemd creates; yields (socket, env for the service)."""
    path = tmp_path / "notify.sock"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(path))
    sock.settimeout(2.0)
    yield sock, {"NOTIFY_SOCKET": str(path)}
    sock.close()


def _drain(sock, seconds):
    """All datagrams that arrive within `seconds`, each as (arrival monotonic time, text)."""
    out = []
    end = time.monotonic() + seconds
    while True:
        left = end - time.monotonic()
        if left <= 0:
            return out
        sock.settimeout(left)
        try:
            data = sock.recv(4096)
        except socket.timeout:
            return out
        out.append((time.monotonic(), data.decode()))


def test_ready_status_stopping_arrive_as_datagrams(manager_socket):
    sock, env = manager_socket
    n = Notifier(env)
    assert n.enabled
    assert n.ready("sensors up, waiting for arming")
    assert sock.recv(4096) == b"READY=1\nSTATUS=sensors up, waiting for arming"
    assert n.status("two\nlines")
    assert sock.recv(4096) == b"STATUS=two lines"
    assert n.stopping()
    assert sock.recv(4096) == b"STOPPING=1"
    assert (n.sent, n.errors) == (3, 0)


def test_abstract_namespace_socket():
    name = f"autopilot-test-{os.getpid()}-{time.monotonic_ns()}"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind("\0" + name)
    sock.settimeout(2.0)
    try:
        env = {"NOTIFY_SOCKET": "@" + name}
        assert notify_socket_address(env) == "\0" + name
        assert Notifier(env).ready()
        assert sock.recv(4096) == b"READY=1"
    finally:
        sock.close()


def test_outside_systemd_everything_is_a_noop():
    n = Notifier({})
    assert not n.enabled
    assert n.ready() is False and n.watchdog() is False
    wd = Watchdog(n, watchdog_interval_s({}))
    assert not wd.active and wd.tick(0.0) is False and wd.tick(100.0) is False


def test_manager_gone_is_counted_not_raised(tmp_path):
    n = Notifier({"NOTIFY_SOCKET": str(tmp_path / "nobody-listens.sock")})
    assert n.ready() is False
    assert n.errors == 1 and "FileNotFoundError" in n.last_error


def test_bad_assignment_is_rejected(manager_socket):
    with pytest.raises(ValueError, match="KEY=VALUE"):
        Notifier(manager_socket[1]).send("READY")


def test_watchdog_interval_from_environment():
    assert watchdog_interval_s({"WATCHDOG_USEC": "2000000"}) == 2.0
    assert watchdog_interval_s({"WATCHDOG_USEC": "2000000", "WATCHDOG_PID": str(os.getpid())}) == 2.0
    assert watchdog_interval_s({"WATCHDOG_USEC": "2000000", "WATCHDOG_PID": "1"}, pid=4242) is None
    assert watchdog_interval_s({"WATCHDOG_USEC": "0"}) is None
    assert watchdog_interval_s({"WATCHDOG_USEC": "soon"}) is None
    assert watchdog_interval_s({}) is None


def test_watchdog_pings_at_half_the_interval_from_ticks_only(manager_socket):
    sock, env = manager_socket
    wd = Watchdog(Notifier(env), 1.0)
    sent = [t for t in (0.0, 0.1, 0.49, 0.5, 0.9, 1.0, 1.2) if wd.tick(t)]
    assert sent == [0.0, 0.5, 1.0]
    assert [m for _, m in _drain(sock, 0.2)] == ["WATCHDOG=1"] * 3
    # a clock stepping backwards does not silence the watchdog
    assert wd.tick(0.2)


@pytest.mark.slow
def test_watchdog_stops_when_the_loop_stalls_and_resumes_with_it(manager_socket):
    """A 50 Hz loop thread ticks the watchdog; while it is stalled, no WATCHDOG=1 arrives."""
    sock, env = manager_socket
    env = dict(env, WATCHDOG_USEC="200000")          # WatchdogSec=0.2s: pings every >= 0.1 s
    wd = Watchdog.from_env(env)
    assert wd.active and wd.interval_s == 0.2
    running = threading.Event()
    running.set()
    stop = threading.Event()

    def loop():
        while not stop.is_set():
            running.wait()                            # a "hung" loop blocks here, between ticks
            wd.tick(time.monotonic())
            time.sleep(0.02)

    th = threading.Thread(target=loop, daemon=True)
    th.start()
    try:
        alive = _drain(sock, 1.0)
        running.clear()                               # the loop hangs
        time.sleep(0.05)                              # let an in-flight tick finish
        _drain(sock, 0.0)
        stall_start = time.monotonic()
        stalled = _drain(sock, 0.8)
        running.set()                                 # the loop recovers
        resumed = _drain(sock, 0.6)
    finally:
        stop.set()
        running.set()
        th.join(2.0)

    assert all(m == "WATCHDOG=1" for _, m in alive + resumed)
    assert len(alive) >= 5                            # ~10 expected in 1 s; allow a loaded machine
    gaps = [b[0] - a[0] for a, b in zip(alive, alive[1:])]
    assert min(gaps) >= 0.06                          # rate-limited to ~0.1 s, not the 20 ms loop
    assert [t for t, _ in stalled if t > stall_start] == []
    assert len(resumed) >= 2
