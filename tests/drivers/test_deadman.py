"""The actuator deadman: a guardian process sets neutral when the process driving the ESCs dies or hangs.

The autopilot stand-in is a subprocess driving full thrust through EscOutput with the deadman enabled (real
pigpio client, fake pigpiod in this test process). Latencies are measured from the kill to the neutral pulse in
the fake daemon's time-stamped record (both on CLOCK_MONOTONIC).
"""
import os
import signal
import time

import pigpio
import pytest

from autopilot.vocab.types import PulseCommand
from drivers.esc.deadman import DeadmanError, DeadmanLink
from drivers.esc.output import EscChannel, EscOutput
from hil.devices.fake_pigpiod import FakePigpiod
from tests.support.guarded_child import neutral_after, start_child


@pytest.fixture
def daemon():
    d = FakePigpiod().start()
    yield d
    d.stop()


def gone(pid, wait_s=3.0):
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.02)
    return False


@pytest.mark.slow
def test_sigkill_of_the_driving_process_gives_neutral_within_half_a_second(daemon):
    child, guardian_pid = start_child(daemon.port)
    try:
        assert daemon.state.pulse_us(13) == daemon.state.pulse_us(12) == 1900
        t_kill = time.monotonic()
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=5)
        times = neutral_after(daemon, t_kill)
        assert all(times), "no neutral pulse after SIGKILL"
        latency = max(times) - t_kill
        print(f"deadman latency after SIGKILL: {latency * 1e3:.1f} ms")
        assert latency < 0.5
        assert daemon.state.pulse_us(13) == daemon.state.pulse_us(12) == 1500
        assert gone(guardian_pid)                         # the guardian exits once the outputs are safe
    finally:
        if child.poll() is None:
            child.kill()
        try:
            os.kill(guardian_pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


@pytest.mark.slow
def test_hung_process_gives_neutral_within_half_a_second_and_resumes_after(daemon):
    child, guardian_pid = start_child(daemon.port)
    try:
        t_stop = time.monotonic()
        os.kill(child.pid, signal.SIGSTOP)                # alive but frozen: no writes, no in-process watchdog
        times = neutral_after(daemon, t_stop)
        assert all(times)
        latency = max(times) - t_stop
        print(f"deadman latency after a hang: {latency * 1e3:.1f} ms")
        assert 0.15 < latency < 0.5                       # heartbeat timeout 0.3 s after the last write
        time.sleep(0.3)
        assert daemon.state.pulse_us(13) == 1500          # held while the process stays frozen
        os.kill(child.pid, signal.SIGCONT)
        deadline = time.monotonic() + 3.0
        while daemon.state.pulse_us(13) != 1900 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert daemon.state.pulse_us(13) == 1900          # the loop is back: thrust resumes (slewed)
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=5)
    assert gone(guardian_pid)


def test_guardian_death_is_seen_by_the_esc_output_which_holds_neutral(daemon):
    chans = [EscChannel("left", 13, arming_time_s=0.0), EscChannel("right", 12, arming_time_s=0.0)]
    link = DeadmanLink.spawn(chans, host="127.0.0.1", port=daemon.port, timeout_s=0.3)
    pi = pigpio.pi("127.0.0.1", daemon.port)
    esc = EscOutput(chans, pi, deadman=link, watchdog=False)
    try:
        t = 0.0
        for _ in range(20):
            t += 0.02
            esc.write(t, PulseCommand((1700, 1700)))
        assert esc.connected and daemon.state.pulse_us(13) == 1700
        link.process.kill()
        link.process.wait(timeout=5)
        for _ in range(3):
            t += 0.02
            esc.write(t, PulseCommand((1700, 1700)))
        assert not esc.connected
        assert daemon.state.pulse_us(13) == daemon.state.pulse_us(12) == 1500
    finally:
        esc.close()
        pi.stop()


def test_orderly_close_stops_the_guardian(daemon):
    chans = [EscChannel("left", 13, arming_time_s=0.0)]
    link = DeadmanLink.spawn(chans, host="127.0.0.1", port=daemon.port, timeout_s=0.3)
    pi = pigpio.pi("127.0.0.1", daemon.port)
    esc = EscOutput(chans, pi, deadman=link)
    esc.write(0.0, PulseCommand((1600,)))
    esc.close()
    assert link.process.wait(timeout=5) == 0
    assert daemon.state.pulse_us(13) == 1500
    pi.stop()


def test_guardian_without_pigpiod_fails_to_start_with_the_reason():
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    with pytest.raises(DeadmanError, match="pigpiod is not running"):
        DeadmanLink.spawn([EscChannel("left", 13)], host="127.0.0.1", port=port)


def _restart(daemon):
    """pigpiod restarted: the old daemon's connections die, a new one (fresh state) listens on the same port."""
    port = daemon.port
    daemon.stop()
    return FakePigpiod(port=port).start()


@pytest.mark.slow
def test_after_a_pigpiod_restart_the_guardian_reconnects_and_still_brings_the_thrusters_to_neutral(daemon):
    """It used to keep its dead connection: "Broken pipe", yet "outputs set to neutral", thrusters at 1900."""
    child, guardian_pid = start_child(daemon.port)
    new = None
    try:
        new = _restart(daemon)
        deadline = time.monotonic() + 5.0           # the autopilot side reconnects and drives full thrust again
        while not (new.state.pulse_us(13) == new.state.pulse_us(12) == 1900) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert new.state.pulse_us(13) == new.state.pulse_us(12) == 1900
        time.sleep(0.6)                             # a couple of the guardian's connection checks
        assert new.connections >= 2                 # the guardian holds a connection to the new daemon too
        t_kill = time.monotonic()
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=5)
        times = neutral_after(new, t_kill)
        assert all(times), "the guardian did not reach the restarted pigpiod"
        assert max(times) - t_kill < 0.5
        assert new.state.pulse_us(13) == new.state.pulse_us(12) == 1500
        assert gone(guardian_pid)
    finally:
        if child.poll() is None:
            child.kill()
        if new is not None:
            new.stop()


def test_the_esc_output_is_not_connected_while_the_guardian_cannot_reach_pigpiod(daemon):
    chans = [EscChannel("left", 13, arming_time_s=0.0), EscChannel("right", 12, arming_time_s=0.0)]
    link = DeadmanLink.spawn(chans, host="127.0.0.1", port=daemon.port, timeout_s=0.5)
    from drivers.esc.pigpio_port import connect_pigpio
    port = daemon.port
    esc = EscOutput(chans, pigpio.pi("127.0.0.1", port), deadman=link,
                    pi_factory=lambda: connect_pigpio("127.0.0.1", port))
    clock = {"t": 0.0}

    def drive_until(done, wait_s=3.0):
        """Full-ish thrust at 50 Hz until done() or wait_s; returns done()."""
        deadline = time.monotonic() + wait_s
        while not done() and time.monotonic() < deadline:
            clock["t"] += 0.02
            esc.write(clock["t"], PulseCommand((1700, 1700)))
            time.sleep(0.02)
        return done()

    try:
        drive_until(lambda: False, wait_s=0.2)
        assert esc.connected and link.vouching
        daemon.stop()                               # pigpiod gone: nobody can stop the thrusters now
        assert drive_until(lambda: not link.vouching) and not esc.connected
        back = FakePigpiod(port=port).start()       # pigpiod is back: the guardian vouches again
        try:
            assert drive_until(lambda: link.vouching)
        finally:
            esc.close()
            back.stop()
    finally:
        if link.process.poll() is None:
            link.process.kill()
