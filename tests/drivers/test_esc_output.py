"""ESC output driven through the real pigpio client against the fake pigpiod (socket protocol)."""
import signal
import socket
import subprocess
import sys
import textwrap
import time

import pigpio
import pytest

from autopilot.runtime.esc_neutral import main as esc_neutral_main
from autopilot.vocab.config import load_vessel
from autopilot.vocab.types import PulseCommand
from drivers.esc.contract import EscBackend, EscError
from drivers.esc.output import EscChannel, EscOutput
from drivers.esc.pi_board import is_raspberry_pi_5, raspberry_pi_model
from drivers.esc.pigpio_port import connect_pigpio
from hil.devices.fake_pigpiod import FakePi, FakePigpiod, GpioState
from tests.support.guarded_child import start_backend_child
from tests.support.paths import REPO


@pytest.fixture
def daemon():
    d = FakePigpiod().start()
    yield d
    d.stop()


@pytest.fixture
def client(daemon):
    pi = pigpio.pi("127.0.0.1", daemon.port)
    assert pi.connected
    yield pi
    pi.stop()


def two_channels(**kw):
    base = dict(arming_time_s=0.0, slew_us_per_s=1e5)
    base.update(kw)
    return [EscChannel("left", 13, **base), EscChannel("right", 12, **base)]


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test_arming_sends_only_neutral_for_the_arming_time(daemon, client):
    esc = EscOutput(two_channels(arming_time_s=0.5, slew_us_per_s=4000), client, watchdog=False)
    t0 = time.monotonic()
    while time.monotonic() - t0 < 0.9:
        esc.write(time.monotonic() - t0, PulseCommand((1900, 1900)))
        time.sleep(0.01)
    esc.close()
    for gpio in (13, 12):
        log = daemon.state.log(gpio)
        during = [p for t, p in log if t < t0 + 0.5]
        after = [p for t, p in log if t >= t0 + 0.5]
        assert during and set(during) == {1500}
        assert max(after) >= 1500 + 400                     # then thrust ramps up (slew 4000 us/s)
        assert log[-1][1] == 1500                           # and close() leaves neutral


def test_the_pulses_sent_read_back_as_the_commands_they_came_from(daemon, client):
    """What the run log turns into applied thrust: trim and reversal undone, the slew kept."""
    chans = [EscChannel("left", 13, arming_time_s=0.0, slew_us_per_s=1000.0, trim_us=20),
             EscChannel("right", 12, arming_time_s=0.0, slew_us_per_s=1e6, reverse=True, trim_us=-10)]
    esc = EscOutput(chans, client, watchdog=False)
    esc.arm(0.0)
    esc.write(0.0, PulseCommand((1500, 1500)))
    esc.write(0.1, PulseCommand((1800, 1700)))
    left, right = esc.sent_pulses_us()
    assert right == 1700                                     # 2 x 1500 - (1290 + 10): the command itself
    assert left == pytest.approx(1500 + 100, abs=1)          # slewed 1000 us/s for 0.1 s, trim undone
    esc.neutral()
    esc.close()


def test_clamp_reverse_and_trim(daemon, client):
    chans = [EscChannel("left", 13, arming_time_s=0.0, slew_us_per_s=1e6, trim_us=20),
             EscChannel("right", 12, arming_time_s=0.0, slew_us_per_s=1e6, reverse=True, trim_us=-10)]
    esc = EscOutput(chans, client, watchdog=False)
    esc.arm(0.0)
    t = 0.0
    for cmd, want in (((2500, 1700), (1900, 1290)),         # over range clamps; reversed 1700 -> 1300 - 10
                      ((600, 1000), (1100, 1900)),          # under range clamps; reversed 1000 -> 2000 -> max
                      ((1500, 1500), (1520, 1490))):        # neutral carries the trim
        t += 0.1
        esc.write(t, PulseCommand(cmd))
        assert (client.get_servo_pulsewidth(13), client.get_servo_pulsewidth(12)) == want
    esc.neutral()
    assert (client.get_servo_pulsewidth(13), client.get_servo_pulsewidth(12)) == (1520, 1490)
    esc.close()


def test_slew_rate_limit(daemon, client):
    esc = EscOutput(two_channels(slew_us_per_s=500.0), client, watchdog=False, command_timeout_s=1.0)
    t = 0.0
    for _ in range(60):                                      # 1.2 s at 50 Hz, step 10 us per write
        t += 0.02
        esc.write(t, PulseCommand((1900, 1100)))
    for gpio, sign in ((13, 1), (12, -1)):
        pulses = [p for _, p in daemon.state.log(gpio)]
        steps = [b - a for a, b in zip(pulses, pulses[1:])]
        assert max(abs(s) for s in steps) <= 10
        assert all(sign * s >= 0 for s in steps)
        assert pulses[-1] == 1500 + sign * 400                # reached after 0.8 s
        reach = next(i for i, p in enumerate(pulses) if p == 1500 + sign * 400)
        assert reach == pytest.approx(40, abs=1)              # 400 us at 10 us per 20 ms write
    esc.close()


def test_neutral_when_commands_stop_then_restart_from_neutral(daemon, client):
    esc = EscOutput(two_channels(), client, command_timeout_s=0.2)
    t0 = time.monotonic()
    for _ in range(10):
        time.sleep(0.01)
        esc.write(time.monotonic() - t0, PulseCommand((1800, 1200)))
    last_write = time.monotonic()
    assert client.get_servo_pulsewidth(13) == 1800
    time.sleep(0.5)                                          # the loop "hangs": no writes
    assert (client.get_servo_pulsewidth(13), client.get_servo_pulsewidth(12)) == (1500, 1500)
    t_neutral = [t for t, p in daemon.state.log(13) if p == 1500 and t > last_write][0]
    assert 0.2 <= t_neutral - last_write < 0.3               # timeout 0.2 s, checked every 0.05 s
    assert esc.stats.timeouts == 1
    slow = EscChannel("left", 13, arming_time_s=0.0, slew_us_per_s=1000.0)
    esc.channels[0] = slow                                   # resume with a visible slew
    esc.write(time.monotonic() - t0, PulseCommand((1800, 1200)))
    assert client.get_servo_pulsewidth(13) == 1500           # restarts from neutral, not from 1800
    esc.close()


def test_neutral_on_sigterm_of_the_process_that_owns_the_outputs(daemon):
    child, _ = start_backend_child(EscBackend(kind="pigpio", host="127.0.0.1", port=daemon.port), [13, 12], "",
                                   "plain")     # at full thrust once it returns
    try:
        assert daemon.state.pulse_us(13) == 1900
        t_kill = time.monotonic()
        child.send_signal(signal.SIGTERM)
        assert child.wait(timeout=10) == -signal.SIGTERM      # neutral first, then the default action
    finally:
        if child.poll() is None:
            child.kill()
    for gpio in (13, 12):
        log = daemon.state.log(gpio)
        assert log[-1][1] == 1500
        t_neutral = next(t for t, p in log if t >= t_kill and p == 1500)
        assert t_neutral - t_kill < 0.5
        assert all(p == 1500 for t, p in log if t >= t_neutral)


def test_pigpiod_not_running_gives_the_clear_message():
    port = free_port()
    with pytest.raises(EscError) as err:
        connect_pigpio("127.0.0.1", port, model="")
    msg = str(err.value)
    assert "pigpiod is not running" in msg and "sudo systemctl start pigpiod" in msg
    with pytest.raises(EscError, match="pigpiod is not running"):
        EscOutput.from_vessel(load_vessel("foka"), host="127.0.0.1", port=port)


def test_raspberry_pi_5_is_refused_with_an_alternative(tmp_path):
    model = tmp_path / "model"
    model.write_bytes(b"Raspberry Pi 5 Model B Rev 1.0\x00")
    name = raspberry_pi_model(paths=[str(model)])
    assert name == "Raspberry Pi 5 Model B Rev 1.0" and is_raspberry_pi_5(name)
    with pytest.raises(EscError) as err:
        connect_pigpio("127.0.0.1", free_port(), model=name)
    assert "Raspberry Pi 5" in str(err.value) and "pwm-2chan" in str(err.value)
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nModel\t\t: Raspberry Pi 4 Model B Rev 1.4\n")
    name = raspberry_pi_model(paths=[str(tmp_path / "absent")], cpuinfo=str(cpuinfo))
    assert name == "Raspberry Pi 4 Model B Rev 1.4" and not is_raspberry_pi_5(name)


def test_pigpiod_loss_is_reported_not_raised_and_outputs_rearm_after_reconnect():
    state = GpioState()
    d = FakePigpiod(state).start()
    port = d.port
    esc = EscOutput(two_channels(arming_time_s=0.3), connect_pigpio("127.0.0.1", port, model=""),
                    watchdog=False, pi_factory=lambda: connect_pigpio("127.0.0.1", port, model=""),
                    reconnect_interval_s=0.05)
    t = 0.0
    for _ in range(30):
        t += 0.02
        esc.write(t, PulseCommand((1800, 1800)))
    assert esc.connected and state.pulse_us(13) == 1800
    d.stop()                                                 # pigpiod dies
    for _ in range(3):
        t += 0.02
        esc.write(t, PulseCommand((1800, 1700)))             # never raises
    assert not esc.connected and esc.stats.errors >= 1
    d2 = FakePigpiod(state, port=port).start()               # back on the same port
    log_start = len(state.log(13))
    try:
        deadline = time.monotonic() + 3.0
        while not esc.connected and time.monotonic() < deadline:
            t += 0.02
            esc.write(t, PulseCommand((1800, 1800)))
            time.sleep(0.02)
        assert esc.connected and esc.stats.reconnects == 1
        t_reconnect = t
        while t < t_reconnect + 0.5:
            t += 0.02
            esc.write(t, PulseCommand((1800, 1800)))
        fresh = state.log(13)[log_start:]
        assert fresh[0][1] == 1500 and state.pulse_us(13) == 1800   # armed again before thrust returns
    finally:
        esc.close()
        d2.stop()


def test_fake_pi_in_process_matches_the_socket_daemon(daemon, client):
    fake = FakePi()
    for pi in (client, fake):
        pi.set_servo_pulsewidth(13, 1600)
        assert pi.get_servo_pulsewidth(13) == 1600 and pi.get_mode(13) == 1
        pi.write(13, 1)                                      # a plain write stops the pulses
        assert pi.read(13) == 1
        with pytest.raises(Exception):
            pi.get_servo_pulsewidth(13)
        with pytest.raises(Exception):
            pi.set_servo_pulsewidth(40, 1500)
        pi.set_PWM_frequency(18, 50)
        assert pi.get_PWM_frequency(18) == 50 and pi.get_PWM_real_range(18) == 4000
        pi.set_PWM_dutycycle(18, 128)
        assert pi.get_PWM_dutycycle(18) == 128
        assert pi.get_hardware_revision() == 0xC03111
    assert fake.state.log(13) and [p for _, p in fake.state.log(13)] == [p for _, p in daemon.state.log(13)]


def test_esc_neutral_entry_point_for_exec_stop_post(daemon, client, capsys):
    client.set_servo_pulsewidth(13, 1900)
    client.set_servo_pulsewidth(12, 1100)
    assert esc_neutral_main(["--vessel", "foka", "--host", "127.0.0.1", "--port", str(daemon.port)]) == 0
    assert (client.get_servo_pulsewidth(13), client.get_servo_pulsewidth(12)) == (1500, 1500)
    assert "GPIO13=1500us" in capsys.readouterr().out
    assert esc_neutral_main(["--vessel", "foka", "--host", "127.0.0.1", "--port", str(free_port())]) == 1
    assert "sudo systemctl start pigpiod" in capsys.readouterr().err


def test_esc_neutral_reads_a_boat_config_whose_vessel_file_has_no_yaml_suffix(daemon, client, tmp_path, capsys):
    (tmp_path / "hull").mkdir()
    (tmp_path / "hull" / "catamaran").write_text((REPO / "config" / "vessels" / "foka.yaml").read_text())
    boat = tmp_path / "boat.yaml"
    boat.write_text(f"vessel: hull/catamaran\nbackend: hw\n"
                    f"esc: {{backend: pigpio, pigpio_host: 127.0.0.1, pigpio_port: {daemon.port}}}\n")
    client.set_servo_pulsewidth(13, 1900)
    assert esc_neutral_main(["--config", str(boat)]) == 0, capsys.readouterr().err
    assert client.get_servo_pulsewidth(13) == 1500


def test_sim_fast_path_from_vessel_with_fake_pi():
    state = GpioState(clock=lambda: 0.0)
    esc = EscOutput.from_vessel(load_vessel("foka"), FakePi(state), watchdog=False)
    t = 0.0
    while t < 3.5:
        t += 0.02
        esc.write(t, PulseCommand((1700, 1300)))
    assert (state.pulse_us(13), state.pulse_us(12)) == (1700, 1300)    # armed after 3 s, slewed in
    esc.close()
    assert (state.pulse_us(13), state.pulse_us(12)) == (1500, 1500)


def test_bad_channels_are_rejected():
    with pytest.raises(EscError, match="gpio must be a user GPIO"):
        EscChannel("x", 40)
    with pytest.raises(EscError, match="pulse_neutral_us"):
        EscChannel("x", 13, pulse_min_us=1500, pulse_neutral_us=1500)
    with pytest.raises(EscError, match="share a GPIO"):
        EscOutput([EscChannel("a", 13), EscChannel("b", 13)], FakePi(), watchdog=False)
    with pytest.raises(ValueError, match="2 channels"):
        esc = EscOutput(two_channels(), FakePi(), watchdog=False)
        esc.write(0.0, PulseCommand((1500,)))


def test_neutral_when_the_owner_raises_inside_a_with_block(daemon, client):
    with pytest.raises(RuntimeError):
        with EscOutput(two_channels(), client, watchdog=False) as esc:
            esc.arm(0.0)
            esc.write(0.1, PulseCommand((1900, 1100)))
            assert client.get_servo_pulsewidth(13) == 1900
            raise RuntimeError("control loop bug")
    assert (client.get_servo_pulsewidth(13), client.get_servo_pulsewidth(12)) == (1500, 1500)
    assert client.connected                                  # a connection passed in is left to its owner


CRASH_CHILD = textwrap.dedent("""
    import sys
    import pigpio
    from autopilot.vocab.types import PulseCommand
    from drivers.esc.output import EscChannel, EscOutput
    pi = pigpio.pi("127.0.0.1", int(sys.argv[1]))
    esc = EscOutput([EscChannel("left", 13, arming_time_s=0.0, slew_us_per_s=1e5)], pi)
    esc.arm(0.0)
    esc.write(0.1, PulseCommand((1900,)))
    print("full", flush=True)
    raise RuntimeError("unhandled: the interpreter exits, atexit sets neutral")
""")


def test_neutral_when_the_owner_dies_of_an_unhandled_exception(daemon):
    out = subprocess.run([sys.executable, "-c", CRASH_CHILD, str(daemon.port)], cwd=REPO, capture_output=True,
                         text=True, timeout=30)
    assert out.returncode == 1 and out.stdout.strip() == "full" and "RuntimeError" in out.stderr
    pulses = [p for _, p in daemon.state.log(13)]
    assert 1900 in pulses and pulses[-1] == 1500
