"""ESC output on a PCA9685 board through the real Adafruit library, on a register-level emulated chip: the
chip's registers by hand-worked numbers, pulses as a scope reads them (with an oscillator off 25 MHz and the
pulse_scale that corrects it), the driver's contract, the field's mistakes, and a mission flown through it."""
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from autopilot.types import PulseCommand
from drivers.esc import EscChannel, EscError, EscOutput
from drivers.esc_backends import EscBackend, open_port
from hil.i2c_socket import I2cSocketServer
from hil.pca9685_emulator import Pca9685Emulator

REPO = Path(__file__).resolve().parents[1]

TICK_25MHZ_US = 122 / 25.0          # (PRE_SCALE 121 + 1) / 25 MHz = 4.88 us per tick at 50 Hz


def board(osc_hz=25e6, **kw):
    chip = Pca9685Emulator(osc_hz=osc_hz)
    backend = EscBackend(kind="pca9685", pca9685_channels=(0, 1), smbus=chip.smbus(), **kw)
    return chip, backend


# ------------------------------------------------------------------------------------------- the chip
def test_the_emulated_chip_follows_the_datasheet():
    chip = Pca9685Emulator()
    bus = chip.smbus()
    assert bus.read_byte_data(0x40, 0x00) == 0x11 and bus.read_byte_data(0x40, 0xFE) == 0x1E   # reset values
    bus.write_byte_data(0x40, 0xFE, 121)                  # MODE1 resets with SLEEP set
    assert bus.read_byte_data(0x40, 0xFE) == 121          # written while asleep: taken
    bus.write_byte_data(0x40, 0x00, 0x20)                 # wake, auto-increment
    bus.write_byte_data(0x40, 0xFE, 30)                   # awake: PRE_SCALE ignored, as the chip does
    assert bus.read_byte_data(0x40, 0xFE) == 121
    # 25 MHz / (4096 x 122) = 50.03 Hz; channel 3 ON 0, OFF 307 -> 307 x 4.88 us = 1498.2 us
    bus.write_i2c_block_data(0x40, 0x06 + 4 * 3, [0, 0, 307 & 0xFF, 307 >> 8])
    assert chip.frequency_hz() == pytest.approx(50.0288, abs=1e-3)
    assert chip.pulse_us(3) == pytest.approx(307 * TICK_25MHZ_US)
    bus.write_byte_data(0x40, 0x00, 0x00)                 # auto-increment off: a 4-byte write lands in ONE register
    bus.write_i2c_block_data(0x40, 0x06 + 4 * 4, [0, 0, 100, 0])
    assert chip.pulse_us(4) == 0.0                        # OFF_H still 0x10 (full off): only LED4_ON_L was written
    bus.write_byte_data(0x40, 0x00, 0x10)                 # asleep: oscillator off, no pulses
    assert chip.pulse_us(3) == 0.0


def test_an_absent_chip_answers_remote_io_error():
    chip = Pca9685Emulator(address=0x41)
    with pytest.raises(OSError) as e:
        chip.smbus().read_byte_data(0x40, 0x00)
    assert e.value.errno == 121


# ------------------------------------------------------------------------------------------- the port
def test_pulses_come_out_within_one_tick_of_the_intent():
    chip, backend = board()
    port = open_port(backend, [0, 1])
    assert chip.regs[0xFE] == 121                         # round(25e6 / 4096 / 50) - 1
    for us in (1100, 1500, 1900):
        port.set_servo_pulsewidth(1, us)
        assert abs(chip.pulse_us(1) - us) <= TICK_25MHZ_US / 2 + 1e-9
        assert port.get_servo_pulsewidth(1) == us         # the exact pulse last set, while the registers hold it
    port.set_servo_pulsewidth(1, 0)
    assert chip.pulse_us(1) == 0.0 and port.get_servo_pulsewidth(1) == 0


def test_an_oscillator_4_percent_fast_is_corrected_by_pulse_scale():
    chip, backend = board(osc_hz=26e6)
    port = open_port(backend, [0, 1])
    port.set_servo_pulsewidth(0, 1500)
    measured = chip.pulse_us(0)
    assert measured == pytest.approx(1500 * 25 / 26, rel=0.004)         # 4 % short, as a scope would show
    scale = measured / 1500                                                  # what a user measures
    chip2, backend2 = board(osc_hz=26e6, pulse_scale=scale)
    port2 = open_port(backend2, [0, 1])
    for us in (1100, 1500, 1900):
        port2.set_servo_pulsewidth(0, us)
        assert abs(chip2.pulse_us(0) - us) <= (122 / 26.0) / 2 + 1e-9      # within half a tick
    assert chip2.frequency_hz() == pytest.approx(50.0, rel=0.003)


def test_letting_go_leaves_the_pulses_running_and_a_second_port_does_not_interrupt_them():
    chip, backend = board()
    port = open_port(backend, [0, 1])
    port.set_servo_pulsewidth(0, 1900)
    port.stop()
    assert chip.pulse_us(0) == pytest.approx(1900, abs=TICK_25MHZ_US)     # a guardian is needed
    asleep = []
    real_write = chip._write_one

    def watch(reg, value):
        if reg == 0x00 and value & 0x10:
            asleep.append(value)
        real_write(reg, value)
    chip._write_one = watch
    guardian = open_port(backend, [0, 1])
    assert asleep == []                                   # the prescaler was already right: no sleep, no gap
    guardian.set_servo_pulsewidth(0, 1500)
    assert guardian.get_servo_pulsewidth(0) == 1500


@pytest.mark.parametrize("kw, outputs, words", [
    (dict(pca9685_address=0x41), [0, 1], ["no PCA9685 answering at 0x41", "i2cdetect -y 1"]),
    (dict(), [0, 16], ["0-15"]),
    (dict(), [3, 3], ["its own output"]),
    (dict(pulse_scale=1.5), [0, 1], ["pulse_scale", "calibrate"]),
])
def test_the_fields_usual_mistakes_say_what_to_do(kw, outputs, words):
    chip, backend = board(**kw)
    with pytest.raises(EscError) as e:
        open_port(backend, outputs)
    for w in words:
        assert w in str(e.value)


def test_no_i2c_bus_says_how_to_enable_it():
    with pytest.raises(EscError) as e:
        open_port(EscBackend(kind="pca9685", i2c_bus=19, pca9685_channels=(0, 1)), [0, 1])
    assert "i2c_arm=on" in str(e.value) and "esc.i2c_bus" in str(e.value)


# ------------------------------------------------------------------------------------------- the ESC contract
def test_arming_clamps_reverse_trim_slew_and_neutral_on_close_through_the_board():
    chip, backend = board()
    port = open_port(backend, [0, 1])
    chans = [EscChannel("left", 0, arming_time_s=0.5, slew_us_per_s=1000.0, trim_us=20),
             EscChannel("right", 1, arming_time_s=0.5, slew_us_per_s=1e6, reverse=True, trim_us=-10)]
    esc = EscOutput(chans, port, watchdog=False)

    def scope():
        return tuple(round(chip.pulse_us(ch) / TICK_25MHZ_US) for ch in (0, 1))

    def ticks(*us):
        return tuple(round(u / TICK_25MHZ_US) for u in us)
    esc.write(0.0, PulseCommand((1900, 1900)))
    esc.write(0.4, PulseCommand((1900, 1900)))
    assert scope() == ticks(1520, 1490)                    # arming: neutral (with trim) only
    esc.write(0.5, PulseCommand((2500, 1000)))
    assert scope() == ticks(1620, 1900)                    # slewed 100 us; reversed 1000 -> 2000 -> clamped
    with pytest.raises(RuntimeError):
        with esc:
            esc.write(0.52, PulseCommand((2500, 1000)))
            raise RuntimeError("the control loop crashed")
    assert scope() == ticks(1520, 1490)                    # neutral on the way out


def test_a_board_that_stops_answering_is_counted_not_raised_and_comes_back():
    chip, backend = board()
    esc = EscOutput([EscChannel("left", 0, arming_time_s=0.0), EscChannel("right", 1, arming_time_s=0.0)],
                    open_port(backend, [0, 1]), watchdog=False, pi_factory=lambda: open_port(backend, [0, 1]),
                    reconnect_interval_s=0.0)
    esc.write(0.0, PulseCommand((1600, 1600)))
    chip.present = False
    esc.write(0.02, PulseCommand((1600, 1600)))           # no exception
    assert not esc.connected and esc.stats.errors >= 1
    chip.present = True
    esc.write(0.04, PulseCommand((1600, 1600)))
    assert esc.connected and esc.stats.reconnects == 1
    esc.close()


# ------------------------------------------------------------------------------------------- closed loop
def test_a_mission_flies_through_the_pca9685_driver():
    from autopilot.config import CONFIG_DIR, load_mission, load_vessel
    from hil.sim_runner import SimOptions, run_sim
    res = run_sim(load_vessel("iacquabot"), load_mission(CONFIG_DIR / "missions" / "straight_line.yaml"),
                  SimOptions(seed=2, devices="bytes", esc_backend="pca9685"))
    r = res.report
    assert r["mission_complete"] and r["xte_rms_m"] < 2.0
    assert res.pulses_us.shape[1] == 4 and res.pulses_us.max() > 1550    # four thrusters on one board


# ------------------------------------------------------------------------------------------- other processes
CHILD = textwrap.dedent("""
    import sys, time
    from autopilot.types import PulseCommand
    from drivers.esc import EscChannel, EscOutput
    from drivers.esc_backends import EscBackend, open_port
    from drivers.esc_deadman import DeadmanLink
    backend = EscBackend(kind="pca9685", pca9685_channels=(0, 1), i2c_socket=sys.argv[1])
    chans = [EscChannel("left", 0, arming_time_s=0.2), EscChannel("right", 1, arming_time_s=0.2)]
    port = open_port(backend, [0, 1])
    link = DeadmanLink.spawn(chans, backend=backend, timeout_s=0.3) if sys.argv[2] == "deadman" else None
    esc = EscOutput(chans, port, deadman=link, emergency_pi_factory=lambda: open_port(backend, [0, 1]))
    esc.install_signal_handlers()
    print("guardian", link.process.pid if link else 0, flush=True)
    t0 = time.monotonic()
    said = False
    while True:
        esc.write(time.monotonic() - t0, PulseCommand((1900, 1900)))
        if not said and esc.output_us() == [1900, 1900]:
            print("full", flush=True)
            said = True
        time.sleep(0.02)
""")


@pytest.fixture
def served(tmp_path):
    chip = Pca9685Emulator()
    server = I2cSocketServer(chip, tmp_path / "i2c-1.sock").start()
    yield chip, server.path
    server.stop()


def start_child(path, mode):
    child = subprocess.Popen([sys.executable, "-c", CHILD, path, mode], cwd=REPO, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    first = child.stdout.readline().split()
    assert first and first[0] == "guardian", child.stderr.read() if child.poll() is not None else first
    assert child.stdout.readline().strip() == "full"
    return child, int(first[1])


def neutral_on_the_board(chip, wait_s=3.0):
    deadline = time.monotonic() + wait_s
    while True:
        if all(abs(chip.pulse_us(ch) - 1500) <= TICK_25MHZ_US for ch in (0, 1)):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.01)


def stop_all(child, guardian):
    if child.poll() is None:
        child.kill()
    child.wait(timeout=5)
    if guardian:
        try:
            os.kill(guardian, signal.SIGKILL)
        except ProcessLookupError:
            pass


def test_neutral_on_sigterm_of_the_process_driving_the_board(served):
    chip, path = served
    child, _ = start_child(path, "plain")
    try:
        assert chip.pulse_us(0) > 1890
        child.send_signal(signal.SIGTERM)
        assert child.wait(timeout=10) == -signal.SIGTERM
        assert neutral_on_the_board(chip, wait_s=0.0)
    finally:
        stop_all(child, 0)


def test_sigkill_at_full_thrust_the_guardian_sets_the_board_to_neutral(served):
    chip, path = served
    child, guardian = start_child(path, "deadman")
    try:
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=5)
        assert neutral_on_the_board(chip), "the board kept the full-thrust pulse after SIGKILL"
    finally:
        stop_all(child, guardian)


def test_a_hung_process_gets_neutral_on_the_board_from_the_guardian(served):
    chip, path = served
    child, guardian = start_child(path, "deadman")
    try:
        os.kill(child.pid, signal.SIGSTOP)
        assert neutral_on_the_board(chip), "the board kept the full-thrust pulse while the process hung"
        os.kill(child.pid, signal.SIGCONT)
    finally:
        stop_all(child, guardian)


# ------------------------------------------------------------------------------------------- calibration
@pytest.mark.parametrize("how", ["frequency", "width"])
def test_a_measured_frame_rate_or_pulse_width_gives_the_pulse_scale_that_corrects_the_board(how):
    from drivers.esc_pca9685 import pulse_scale_from_frequency, pulse_scale_from_width
    chip, backend = board(osc_hz=25.9e6)                        # 3.6 % fast, unknown to the user
    port = open_port(backend, [0, 1])
    port.set_servo_pulsewidth(0, 1500)
    if how == "frequency":                                      # what a multimeter's Hz range shows
        scale = pulse_scale_from_frequency(chip.frequency_hz(), port)
    else:                                                       # what a scope shows
        scale = pulse_scale_from_width(chip.pulse_us(0), port, 0, backend.pulse_scale)
    assert scale == pytest.approx(25 / 25.9, rel=1e-3)
    chip2, backend2 = board(osc_hz=25.9e6, pulse_scale=scale)
    port2 = open_port(backend2, [0, 1])
    for us in (1100, 1500, 1900):
        port2.set_servo_pulsewidth(1, us)
        assert abs(chip2.pulse_us(1) - us) <= (122 / 25.9) / 2 + 0.5
    # calibrating an already calibrated board keeps it (the current scale is taken into account)
    port2.set_servo_pulsewidth(0, 1500)
    again = pulse_scale_from_width(chip2.pulse_us(0), port2, 0, scale)
    assert again == pytest.approx(scale, rel=2e-3)


def test_bench_calibrate_is_for_a_pca9685_only(capsys):
    import argparse
    from autopilot.bench import esc as bench_esc
    parser = argparse.ArgumentParser(prog="autopilot")
    bench_esc.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["bench", "esc", "--gpio", "13", "--calibrate", "--backend", "kernel_pwm"])
    assert args.func(args) == 2 and "PCA9685" in capsys.readouterr().err


def test_neutral_on_the_board_when_commands_stop():
    chip, backend = board()
    fast = dict(arming_time_s=0.0, slew_us_per_s=1e5)
    esc = EscOutput([EscChannel("left", 0, **fast), EscChannel("right", 1, **fast)],
                    open_port(backend, [0, 1]), command_timeout_s=0.2)
    t0 = time.monotonic()
    for _ in range(5):
        esc.write(time.monotonic() - t0, PulseCommand((1800, 1200)))
        time.sleep(0.01)
    assert chip.pulse_us(0) > 1790
    assert neutral_on_the_board(chip), "the board kept 1800 us after the commands stopped"    # the loop "hangs"
    assert esc.stats.timeouts == 1
    esc.close()
