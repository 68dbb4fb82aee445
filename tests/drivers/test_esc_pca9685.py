"""ESC output on a PCA9685 board through the real Adafruit library, on a register-level emulated chip: the
chip's registers by hand-worked numbers, pulses as a scope reads them (with an oscillator off 25 MHz and the
pulse_scale that corrects it), the driver's contract, the field's mistakes, and a mission flown through it."""
import os
import signal
import time

import pytest

from autopilot.vocab.types import PulseCommand
from drivers.esc.contract import EscBackend, EscError
from drivers.esc.output import EscChannel, EscOutput
from drivers.esc.ports import open_port
from hil.devices.i2c_socket import I2cSocketServer
from hil.devices.pca9685_emulator import Pca9685Emulator
from tests.support.guarded_child import TICK_25MHZ_US, stop_all
from tests.support.guarded_child import pca9685_neutral as neutral_on_the_board
from tests.support.guarded_child import start_pca9685_child as start_child


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


def test_hand_worked_pulses_for_the_usual_esc_values():
    # 50 Hz at 25 MHz: PRE_SCALE = round(25e6 / (4096 x 50)) - 1 = round(122.07) - 1 = 121, a tick 122 / 25 MHz
    # = 4.88 us. 1100 us = 225.4 ticks -> 225 = 1098.0 us; 1500 us = 307.4 -> 307 = 1498.2 us;
    # 1900 us = 389.3 -> 389 = 1898.3 us. ON need not be 0: ON 4000, OFF 211 is (211 - 4000) mod 4096 = 307.
    chip = Pca9685Emulator()
    bus = chip.smbus()
    bus.write_byte_data(0x40, 0xFE, 121)
    bus.write_byte_data(0x40, 0x00, 0x20)                 # awake, AI
    for ch, (on, off), want_us in ((0, (0, 225), 1098.0), (1, (0, 307), 1498.16), (2, (0, 389), 1898.32),
                                   (3, (4000, 211), 1498.16)):
        bus.write_i2c_block_data(0x40, 0x06 + 4 * ch, [on & 0xFF, on >> 8, off & 0xFF, off >> 8])
        assert chip.pulse_us(ch) == pytest.approx(want_us, abs=0.01)
    bus.write_i2c_block_data(0x40, 0x06 + 4 * 4, [0, 0x10, 0, 0])            # full on: the whole period
    assert chip.pulse_us(4) == pytest.approx(4096 * 4.88)                     # 19988.5 us
    bus.write_i2c_block_data(0x40, 0x06 + 4 * 4, [0, 0x10, 0, 0x10])         # full on AND full off: off wins
    assert chip.pulse_us(4) == 0.0
    # 26 MHz, same registers: a tick is 122 / 26 MHz = 4.692 us, 307 ticks = 1440.5 us (3.8 % short), 52.03 Hz
    fast = Pca9685Emulator(osc_hz=26e6)
    fast.smbus().write_byte_data(0x40, 0xFE, 121)
    fast.smbus().write_byte_data(0x40, 0x00, 0x20)
    fast.smbus().write_i2c_block_data(0x40, 0x06, [0, 0, 307 & 0xFF, 307 >> 8])
    assert fast.pulse_us(0) == pytest.approx(1440.54, abs=0.01)
    assert fast.frequency_hz() == pytest.approx(52.03, abs=0.01)


def test_registers_auto_increment_roll_over_and_all_led():
    chip = Pca9685Emulator()
    bus = chip.smbus()
    bus.write_byte_data(0x40, 0xFE, 1)                    # below 3: the chip takes 3
    assert bus.read_byte_data(0x40, 0xFE) == 3
    bus.write_byte_data(0x40, 0x00, 0x30)                 # AI on, still asleep
    assert bus.read_i2c_block_data(0x40, 0x02, 4) == [0xE2, 0xE4, 0xE8, 0xE0]   # SUBADR1-3, ALLCALLADR
    assert bus.read_i2c_block_data(0x40, 0xFE, 2) == [3, 0x30]      # PRE_SCALE rolls over to MODE1
    assert bus.read_i2c_block_data(0x40, 0x45, 2) == [0x10, 0x30]   # LED15_OFF_H rolls over to MODE1
    bus.write_i2c_block_data(0x40, 0xFA, [0, 0, 100, 0])  # ALL_LED: every channel ON 0, OFF 100
    assert bus.read_i2c_block_data(0x40, 0x06 + 4 * 9, 4) == [0, 0, 100, 0]
    assert bus.read_i2c_block_data(0x40, 0xFA, 4) == [0, 0, 0, 0]   # ALL_LED reads back zero
    bus.write_byte_data(0x40, 0x00, 0x20)                 # wake: 100 ticks of (3 + 1) / 25 MHz = 16 us each
    assert all(chip.pulse_us(ch) == pytest.approx(16.0) for ch in range(16))


def test_the_first_read_without_auto_increment_repeats_one_register():
    chip = Pca9685Emulator()
    # reset: AI clear, so a 4-byte read at SUBADR1 (0xE2) returns that register four times
    assert chip.smbus().read_i2c_block_data(0x40, 0x02, 4) == [0xE2] * 4


def test_sleep_with_outputs_running_sets_restart_and_only_restart_brings_them_back():
    chip = Pca9685Emulator()
    bus = chip.smbus()
    bus.write_byte_data(0x40, 0xFE, 121)
    bus.write_byte_data(0x40, 0x00, 0x20)
    bus.write_i2c_block_data(0x40, 0x06, [0, 0, 307 & 0xFF, 307 >> 8])
    bus.write_byte_data(0x40, 0x00, 0x30)                 # sleep while channel 0 runs
    assert bus.read_byte_data(0x40, 0x00) == 0xB0 and chip.pulse_us(0) == 0.0     # RESTART set
    bus.write_byte_data(0x40, 0x00, 0x20)                 # awake, RESTART written 0: no effect, still held
    assert bus.read_byte_data(0x40, 0x00) == 0xA0 and chip.pulse_us(0) == 0.0
    bus.write_byte_data(0x40, 0x00, 0xA0)                 # write 1 to RESTART: the outputs run, RESTART clears
    assert bus.read_byte_data(0x40, 0x00) == 0x20
    assert chip.pulse_us(0) == pytest.approx(307 * TICK_25MHZ_US)
    quiet = Pca9685Emulator()                             # nothing running: sleeping does not set RESTART
    quiet.smbus().write_byte_data(0x40, 0x00, 0x00)
    quiet.smbus().write_byte_data(0x40, 0x00, 0x10)
    assert quiet.smbus().read_byte_data(0x40, 0x00) == 0x10


def test_software_reset_all_call_address_and_scan():
    from drivers.i2c_adapter import SMBusI2C
    chip = Pca9685Emulator()
    i2c = SMBusI2C(1, bus=chip.smbus())
    assert i2c.scan() == [0x40, 0x70]                    # its address and the LED All Call, as i2cdetect shows
    i2c.writeto(0x40, bytes([0xFE, 121]))
    i2c.writeto(0x70, bytes([0x00, 0x20]))                # All Call reaches the chip: awake, ALLCALL now off
    assert i2c.scan() == [0x40]
    i2c.writeto(0x00, bytes([0x06]))                      # general call + SWRST: every register to reset
    assert chip.resets == 1 and chip.regs[0x00] == 0x11 and chip.regs[0xFE] == 0x1E
    with pytest.raises(OSError) as e:
        i2c.writeto(0x00, bytes([0x07]))                  # any other byte after 0x00 is not acknowledged
    assert e.value.errno == 121


def test_a_chip_not_there_or_glitching_answers_remote_io_error_on_every_transfer():
    chip = Pca9685Emulator(present=False)
    bus = chip.smbus()
    for call in (lambda: bus.read_byte(0x40), lambda: bus.write_byte_data(0x40, 0, 0),
                 lambda: bus.read_i2c_block_data(0x40, 0, 2)):
        with pytest.raises(OSError) as e:
            call()
        assert e.value.errno == 121
    chip.present = True
    chip.inject_errors(1)
    with pytest.raises(OSError):
        bus.read_byte_data(0x40, 0)
    assert bus.read_byte_data(0x40, 0) == 0x11


def test_the_chip_is_safe_to_share_between_threads():
    import threading
    chip = Pca9685Emulator()
    bus = chip.smbus()
    bus.write_byte_data(0x40, 0xFE, 121)
    bus.write_byte_data(0x40, 0x00, 0x20)
    a, b = [0, 0, 225, 0], [0x0F, 0x0F, 0x0F, 0x0F]      # 225 ticks; ON 3855, OFF 3855: 0 ticks
    stop, seen = threading.Event(), set()

    def writer(regs):
        while not stop.is_set():
            bus.write_i2c_block_data(0x40, 0x06, regs)

    threads = [threading.Thread(target=writer, args=(v,)) for v in (a, b)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 0.3
    while time.monotonic() < deadline:
        seen.add(round(chip.pulse_us(0) / TICK_25MHZ_US))
    stop.set()
    for t in threads:
        t.join()
    assert seen <= {0, 225}                               # never half of one write and half of the other


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


@pytest.mark.parametrize("osc_mhz", [26.0, 24.0])
def test_an_oscillator_off_by_4_percent_either_way_and_the_measured_pulse_scale(osc_mhz):
    # uncorrected, PRE_SCALE is 121 and a tick 122 / f_osc: 26 MHz makes every pulse 25/26 = 0.962 of the intent
    # (3.8 % short), 24 MHz 25/24 = 1.042 (4.2 % long). pulse_scale = true / intended = 25 MHz / f_osc.
    chip, backend = board(osc_hz=osc_mhz * 1e6)
    port = open_port(backend, [0, 1])
    tick_true = 122 / osc_mhz
    for us in (1100, 1500, 1900):
        port.set_servo_pulsewidth(0, us)
        assert chip.pulse_us(0) == pytest.approx(us * 25 / osc_mhz, abs=tick_true)
    port.set_servo_pulsewidth(0, 1500)
    scale = chip.pulse_us(0) / 1500                       # what a scope shows over what was asked for
    assert scale == pytest.approx(25 / osc_mhz, abs=0.004)
    chip2, backend2 = board(osc_hz=osc_mhz * 1e6, pulse_scale=scale)
    port2 = open_port(backend2, [0, 1])
    tick = (chip2.regs[0xFE] + 1) / osc_mhz             # 26 MHz: PRE_SCALE 126, 4.88 us; 24 MHz: 116, 4.88 us
    for us in (1100, 1500, 1900):
        port2.set_servo_pulsewidth(1, us)
        assert abs(chip2.pulse_us(1) - us) <= tick    # within one count of the intent
        assert port2.get_servo_pulsewidth(1) == us
    assert chip2.frequency_hz() == pytest.approx(50.0, rel=0.005)


def test_no_permission_on_the_bus_says_which_group(monkeypatch):
    import smbus2

    def refuse(bus):
        raise PermissionError(13, "Permission denied")
    monkeypatch.setattr(smbus2, "SMBus", refuse)
    with pytest.raises(EscError) as e:
        open_port(EscBackend(kind="pca9685", i2c_bus=1, pca9685_channels=(0, 1)), [0, 1])
    assert "i2c" in str(e.value) and "usermod" in str(e.value)


def test_a_board_without_power_at_the_right_address_says_what_to_check():
    chip, backend = board()
    chip.present = False
    with pytest.raises(EscError) as e:
        open_port(backend, [0, 1])
    assert "no PCA9685 answering at 0x40 on I2C bus 1" in str(e.value) and "i2cdetect -y 1" in str(e.value)


def test_a_board_that_reset_is_a_fault_not_a_silent_success():
    chip, backend = board()
    port = open_port(backend, [0, 1])
    port.set_servo_pulsewidth(0, 1500)
    chip.reset()                                          # its VCC dipped: asleep, every output off
    assert port.get_servo_pulsewidth(0) == 0              # the read-back does not claim a pulse
    with pytest.raises(OSError):
        port.set_servo_pulsewidth(0, 1500)
    assert not port.connected
    again = open_port(backend, [0, 1])                    # re-opening wakes and configures it
    again.set_servo_pulsewidth(0, 1500)
    assert chip.pulse_us(0) == pytest.approx(1500, abs=TICK_25MHZ_US)


def test_a_stopped_port_refuses_and_a_bad_pulse_or_output_is_refused():
    chip, backend = board()
    port = open_port(backend, [0, 1])
    with pytest.raises(ValueError):
        port.set_servo_pulsewidth(0, 2600)
    with pytest.raises(ValueError):
        port.set_servo_pulsewidth(5, 1500)                # not one of this port's outputs
    assert port.connected                                 # refusals are not bus faults
    port.stop()
    with pytest.raises(OSError):
        port.set_servo_pulsewidth(0, 1500)
    assert not port.connected


def test_two_ports_in_two_threads_do_not_send_each_others_bytes():
    # adafruit_register packs every transfer in one buffer shared by the whole process, before it takes the
    # bus lock. Port A is held just there (its bus busy) while port B, in another thread, writes: without the
    # port's process-wide lock, A would then send B's register and ticks to board A.
    import threading
    chip_a, backend_a = board()
    chip_b, backend_b = board()
    port_a, port_b = open_port(backend_a, [0, 1]), open_port(backend_b, [0, 1])
    gate, calls = threading.Event(), []
    real = port_a.bus.try_lock

    def busy_once():
        calls.append(1)
        if len(calls) == 2:                              # set_servo_pulsewidth: MODE1 read, then the LED write
            gate.wait(5.0)
        return real()
    port_a.bus.try_lock = busy_once
    ta = threading.Thread(target=port_a.set_servo_pulsewidth, args=(0, 1900))
    tb = threading.Thread(target=port_b.set_servo_pulsewidth, args=(1, 1100))
    ta.start()
    deadline = time.monotonic() + 5.0
    while len(calls) < 2 and time.monotonic() < deadline:
        time.sleep(0.001)
    tb.start()
    tb.join(0.2)
    gate.set()
    ta.join(5.0)
    tb.join(5.0)
    assert chip_a.pulse_us(0) == pytest.approx(1900, abs=TICK_25MHZ_US) and chip_a.pulse_us(1) == 0.0
    assert chip_b.pulse_us(1) == pytest.approx(1100, abs=TICK_25MHZ_US) and chip_b.pulse_us(0) == 0.0


# ------------------------------------------------------------------------------------------- the ESC contract
def test_the_esc_driver_contract_on_the_board_with_its_own_clock():
    chip, backend = board()
    port = open_port(backend, [3, 7])
    now = [100.0]
    chans = [EscChannel("left", 3, arming_time_s=1.0, slew_us_per_s=500.0),
             EscChannel("right", 7, arming_time_s=1.0, slew_us_per_s=500.0, pulse_max_us=1800)]
    esc = EscOutput(chans, port, watchdog=False, clock=lambda: now[0], command_timeout_s=5.0)

    def scope():
        return [chip.pulse_us(3), chip.pulse_us(7)]

    def step(t, cmd):
        now[0] = 100.0 + t
        esc.write(t, PulseCommand(cmd))
    step(0.0, (1900, 1900))
    step(0.9, (1900, 1900))
    assert scope() == pytest.approx([1500, 1500], abs=TICK_25MHZ_US)      # arming: neutral only
    step(1.0, (1900, 1900))                                                 # armed: 0.1 s x 500 us/s = 50 us
    assert scope() == pytest.approx([1550, 1550], abs=TICK_25MHZ_US)
    step(1.2, (1900, 1900))                                                 # 0.2 s x 500 us/s = 100 us more
    assert scope() == pytest.approx([1650, 1650], abs=TICK_25MHZ_US)
    for i in range(2, 12):
        step(1.0 + 0.2 * i, (2400, 2400))
    assert scope() == pytest.approx([1900, 1800], abs=TICK_25MHZ_US)      # clamped at each channel's max
    assert [port.get_servo_pulsewidth(o) for o in (3, 7)] == [1900, 1800]
    esc.close()
    assert scope() == pytest.approx([1500, 1500], abs=TICK_25MHZ_US)      # neutral on close()


def test_a_process_that_dies_leaves_the_board_at_full_thrust_hence_the_guardian():
    chip, backend = board()
    port = open_port(backend, [0, 1])
    esc = EscOutput([EscChannel("left", 0, arming_time_s=0.0, slew_us_per_s=1e6),
                     EscChannel("right", 1, arming_time_s=0.0, slew_us_per_s=1e6)], port, watchdog=False,
                    clock=lambda: 0.0)
    esc.write(0.0, PulseCommand((1900, 1100)))             # the first write arms (and starts the slew)
    esc.write(0.02, PulseCommand((1900, 1100)))
    port.stop()                                           # the process "dies": no neutral, the bus let go
    assert chip.pulse_us(0) == pytest.approx(1900, abs=TICK_25MHZ_US)
    assert chip.pulse_us(1) == pytest.approx(1100, abs=TICK_25MHZ_US)
    import atexit
    atexit.unregister(esc._atexit)


def test_a_board_that_reset_is_reopened_and_its_escs_armed_again():
    chip, backend = board()
    now = [0.0]
    esc = EscOutput([EscChannel("left", 0, arming_time_s=0.5, slew_us_per_s=1e6),
                     EscChannel("right", 1, arming_time_s=0.5, slew_us_per_s=1e6)],
                    open_port(backend, [0, 1]), watchdog=False, clock=lambda: now[0],
                    pi_factory=lambda: open_port(backend, [0, 1]), reconnect_interval_s=0.0,
                    command_timeout_s=5.0)
    for t in (0.0, 0.6):
        now[0] = t
        esc.write(t, PulseCommand((1700, 1700)))
    assert chip.pulse_us(0) == pytest.approx(1700, abs=TICK_25MHZ_US)
    chip.reset()                                          # power glitch on the board
    # an unchanged pulse is re-sent every refresh_interval_s (0.5 s): that write finds the chip asleep
    for t in (0.7, 1.0, 1.2, 1.3):
        now[0] = t
        esc.write(t, PulseCommand((1700, 1700)))
    assert esc.stats.errors >= 1 and esc.stats.reconnects == 1 and esc.connected
    assert "asleep" in esc.stats.last_error
    assert chip.pulse_us(0) == pytest.approx(1500, abs=TICK_25MHZ_US)     # arming again: neutral
    now[0] = 1.9
    esc.write(1.9, PulseCommand((1700, 1700)))
    assert chip.pulse_us(0) == pytest.approx(1700, abs=TICK_25MHZ_US)
    esc.close()


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
@pytest.mark.slow
def test_a_mission_flies_through_the_pca9685_driver():
    from autopilot.vocab.config import CONFIG_DIR, load_mission, load_vessel
    from hil.sim.runner import SimOptions, run_sim
    res = run_sim(load_vessel("iacquabot"), load_mission(CONFIG_DIR / "missions" / "straight_line.yaml"),
                  SimOptions(seed=2, devices="bytes", esc_backend="pca9685"))
    r = res.report
    assert r["mission_complete"] and r["xte_rms_m"] < 2.0
    assert res.pulses_us.shape[1] == 4 and res.pulses_us.max() > 1550    # four thrusters on one board


# ------------------------------------------------------------------------------------------- other processes
@pytest.fixture
def served(tmp_path):
    chip = Pca9685Emulator()
    server = I2cSocketServer(chip, tmp_path / "i2c-1.sock").start()
    yield chip, server.path
    server.stop()


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
    from drivers.esc.pca9685 import pulse_scale_from_frequency, pulse_scale_from_width
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

    from autopilot.bringup import esc as bench_esc
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
