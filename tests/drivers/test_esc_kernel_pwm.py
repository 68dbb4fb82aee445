"""ESC output through the kernel's PWM (`/sys/class/pwm`), on a fake sysfs tree with the kernel's rules: the
driver's contract (arming, clamps, slew, timeout, neutral on exit and SIGTERM), the deadman guardian with a port
of its own, the field's usual mistakes, and a closed-loop mission flown through it."""
import errno
import os
import signal
import time

import pytest

from autopilot.vocab.types import PulseCommand
from drivers.esc.contract import EscBackend, EscError
from drivers.esc.kernel_pwm import PERIOD_NS, SysfsFiles
from drivers.esc.output import EscChannel, EscOutput
from drivers.esc.ports import open_port
from hil.devices.fake_sysfs_pwm import FakePwmSysfs
from tests.support.guarded_child import kernel_pwm_line as line
from tests.support.guarded_child import start_kernel_pwm_child as start_child
from tests.support.guarded_child import stop_all

PI4 = "Raspberry Pi 4 Model B Rev 1.5"
PI5 = "Raspberry Pi 5 Model B Rev 1.0"


@pytest.fixture
def sysfs(tmp_path):
    return FakePwmSysfs(tmp_path / "pwm", chips={0: 2})


def backend_on(fake, **kw):
    kw.setdefault("boot_config", "none")
    return EscBackend(kind="kernel_pwm", sysfs_root=str(fake.root), sysfs_files=fake.files, **kw)


def two_channels(**kw):
    base = dict(arming_time_s=0.0, slew_us_per_s=1e5)
    base.update(kw)
    return [EscChannel("left", 13, **base), EscChannel("right", 12, **base)]


# ------------------------------------------------------------------------------------------- the fake kernel
def test_the_fake_tree_refuses_what_the_kernel_refuses(sysfs):
    f = sysfs.files
    f.write("pwmchip0/export", "1")
    assert (sysfs.root / "pwmchip0/pwm1/period").read_text().strip() == "0"
    for rel, value, code in (("pwmchip0/export", "1", errno.EBUSY),            # exported twice
                             ("pwmchip0/export", "2", errno.ENODEV),           # beyond npwm
                             ("pwmchip0/unexport", "0", errno.ENODEV),         # never exported
                             ("pwmchip0/pwm1/enable", "1", errno.EINVAL),      # no period yet
                             ("pwmchip0/pwm1/duty_cycle", "1000", errno.EINVAL)):   # longer than the period 0
        with pytest.raises(OSError) as e:
            f.write(rel, value)
        assert e.value.errno == code, rel
    f.write("pwmchip0/pwm1/period", "20000000")
    f.write("pwmchip0/pwm1/duty_cycle", "1500000")
    with pytest.raises(OSError) as e:
        f.write("pwmchip0/pwm1/period", "1000000")                             # shorter than the duty
    assert e.value.errno == errno.EINVAL
    f.write("pwmchip0/pwm1/enable", "1")
    assert sysfs.pulse_us(0, 1) == 1500.0


# ------------------------------------------------------------------------------------------- the port
def test_the_port_exports_sets_50_hz_and_puts_microseconds_on_the_line(sysfs):
    port = open_port(backend_on(sysfs), [13, 12], model=PI4)
    assert sysfs.period_ns(0, 0) == sysfs.period_ns(0, 1) == PERIOD_NS
    assert line(sysfs, 13) == 0.0                          # exported, but no signal until a pulse is set
    port.set_servo_pulsewidth(13, 1500)
    port.set_servo_pulsewidth(12, 1875)
    assert (line(sysfs, 13), line(sysfs, 12)) == (1500.0, 1875.0)
    assert port.get_servo_pulsewidth(12) == 1875
    port.set_servo_pulsewidth(12, 0)                        # 0 = signal off, as pigpio
    assert line(sysfs, 12) == 0.0 and port.get_servo_pulsewidth(12) == 0
    port.stop()
    assert line(sysfs, 13) == 1500.0                        # the PWM keeps its pulse when we let go


def test_a_second_port_reuses_exported_channels_as_the_guardian_does(sysfs):
    first = open_port(backend_on(sysfs), [13, 12], model=PI4)
    first.set_servo_pulsewidth(13, 1700)
    plain = EscBackend(kind="kernel_pwm", sysfs_root=str(sysfs.root), boot_config="none")   # plain file writes
    second = open_port(plain, [13, 12], model=PI4)
    assert second.get_servo_pulsewidth(13) == 1700
    second.set_servo_pulsewidth(13, 1500)
    assert line(sysfs, 13) == 1500.0


def test_the_port_waits_for_udev_to_hand_over_the_channel_files(tmp_path):
    fake = FakePwmSysfs(tmp_path / "pwm", chips={0: 2}, udev_delay_s=0.2)
    port = open_port(backend_on(fake), [12], model=PI4)
    port.set_servo_pulsewidth(12, 1500)
    assert line(fake, 12) == 1500.0


def test_a_pi_5_maps_four_pins_to_the_rp1_channels(tmp_path):
    fake = FakePwmSysfs(tmp_path / "pwm", chips={0: 4}, device="pi5")
    port = open_port(backend_on(fake), [18, 19], model=PI5)
    port.set_servo_pulsewidth(18, 1400)
    assert fake.pulse_us(0, 2) == 1400.0 and port.channel_of == {18: 2, 19: 3}


def test_the_chip_is_found_among_several_by_its_pwm_block(tmp_path):
    root = tmp_path / "pwm"
    FakePwmSysfs(root, chips={0: 1}, device="fan-controller")                 # some other PWM first
    fake = FakePwmSysfs(root, chips={2: 4}, device="pi5")
    port = open_port(backend_on(fake), [12, 13], model=PI5)
    assert port.chip == 2


@pytest.mark.parametrize("setup, outputs, model, words", [
    (dict(chips={}), [12, 13], PI4, ["no PWM controller", "dtoverlay=pwm-2chan", "reboot"]),
    (dict(chips={0: 2}), [17, 12], PI4, ["GPIO 17 has no hardware PWM", "GPIO12 and 13"]),
    (dict(chips={0: 2}), [12, 18], PI4, ["share a PWM channel", "GPIO12 and 18"]),
    (dict(chips={0: 1}), [12, 13], PI4, ["has 1 channels", "overlay"]),
    (dict(chips={0: 2}, busy=[(0, 1)]), [12, 13], PI4, ["in use by a kernel driver"]),
    (dict(chips={0: 2}), [17, 18, 13, 12], PI4, ["4 ESCs", "2 channels", "PCA9685"]),
])
def test_the_fields_usual_mistakes_say_what_to_do(tmp_path, setup, outputs, model, words):
    fake = FakePwmSysfs(tmp_path / "pwm", **setup)
    with pytest.raises(EscError) as e:
        open_port(backend_on(fake), outputs, model=model)
    for w in words:
        assert w in str(e.value)


@pytest.mark.parametrize("line, ok", [
    ("dtoverlay=pwm-2chan", False),                                        # defaults: GPIO18 and 19
    ("dtoverlay=pwm-2chan,pin=12,func=4,pin2=13,func2=4", True),
    ("dtoverlay=pwm,pin=12,func=4", False),                                # one channel: 13 has no PWM
    ("# dtoverlay=pwm-2chan\ndtoverlay=pwm-2chan,pin=12,func=4,pin2=13,func2=4", True),
])
def test_the_overlays_pins_must_be_the_escs(sysfs, tmp_path, line, ok):
    config = tmp_path / "config.txt"
    config.write_text(f"[all]\ndtparam=i2c_arm=on\n{line}\n")
    backend = backend_on(sysfs, boot_config=str(config))
    if ok:
        open_port(backend, [13, 12], model=PI4)
        return
    with pytest.raises(EscError) as e:
        open_port(backend, [13, 12], model=PI4)
    assert "the pulses would go to the wrong pins" in str(e.value) and "pin=12" in str(e.value)


def test_no_permission_names_the_group_and_the_installer(sysfs, monkeypatch):
    def refuse(self, rel, text):
        raise PermissionError(errno.EACCES, "Permission denied", str(self.root / rel))
    monkeypatch.setattr(SysfsFiles, "write", refuse)
    monkeypatch.setattr("drivers.esc.kernel_pwm.EXPORT_WAIT_S", 0.05)
    with pytest.raises(EscError) as e:
        open_port(EscBackend(kind="kernel_pwm", sysfs_root=str(sysfs.root), boot_config="none"), [12], model=PI4)
    assert "gpio" in str(e.value) and "install.sh" in str(e.value)


# ------------------------------------------------------------------------------------------- the ESC contract
def test_arming_clamps_reverse_trim_and_slew_through_the_kernel_pwm(sysfs):
    port = open_port(backend_on(sysfs), [13, 12], model=PI4)
    chans = [EscChannel("left", 13, arming_time_s=0.5, slew_us_per_s=1000.0, trim_us=20),
             EscChannel("right", 12, arming_time_s=0.5, slew_us_per_s=1e6, reverse=True, trim_us=-10)]
    esc = EscOutput(chans, port, watchdog=False)
    esc.write(0.0, PulseCommand((1900, 1900)))
    esc.write(0.4, PulseCommand((1900, 1900)))
    assert (line(sysfs, 13), line(sysfs, 12)) == (1520.0, 1490.0)          # arming: neutral (with trim) only
    esc.write(0.5, PulseCommand((2500, 1000)))                              # armed: slew 1000 us/s from 0.4 s
    assert line(sysfs, 13) == 1620.0                                         # 1520 + 100
    assert line(sysfs, 12) == 1900.0                                         # reversed 1000 -> 2000 -> clamp
    for k in range(1, 40):
        esc.write(0.5 + 0.02 * k, PulseCommand((2500, 1000)))
    assert line(sysfs, 13) == 1900.0                                         # clamped at pulse_max_us
    esc.close()
    assert (line(sysfs, 13), line(sysfs, 12)) == (1520.0, 1490.0)          # close: neutral


def test_neutral_when_commands_stop(sysfs):
    port = open_port(backend_on(sysfs), [13, 12], model=PI4)
    esc = EscOutput(two_channels(), port, command_timeout_s=0.2)
    t0 = time.monotonic()
    for _ in range(5):
        esc.write(time.monotonic() - t0, PulseCommand((1800, 1200)))
        time.sleep(0.01)
    assert line(sysfs, 13) == 1800.0
    deadline = time.monotonic() + 3.0
    while line(sysfs, 13) != 1500.0 and time.monotonic() < deadline:       # the loop "hangs"
        time.sleep(0.02)
    assert (line(sysfs, 13), line(sysfs, 12)) == (1500.0, 1500.0) and esc.stats.timeouts == 1
    esc.close()


def test_neutral_when_the_owner_raises_inside_a_with_block(sysfs):
    port = open_port(backend_on(sysfs), [13, 12], model=PI4)
    with pytest.raises(RuntimeError):
        with EscOutput(two_channels(), port, watchdog=False) as esc:
            esc.write(0.0, PulseCommand((1900, 1100)))
            esc.write(0.02, PulseCommand((1900, 1100)))
            assert line(sysfs, 13) == 1900.0
            raise RuntimeError("the control loop crashed")
    assert (line(sysfs, 13), line(sysfs, 12)) == (1500.0, 1500.0)


def test_a_sysfs_fault_is_counted_not_raised_and_the_outputs_come_back(sysfs):
    backend = backend_on(sysfs)
    esc = EscOutput(two_channels(arming_time_s=0.5), open_port(backend, [13, 12], model=PI4), watchdog=False,
                    pi_factory=lambda: open_port(backend, [13, 12], model=PI4), reconnect_interval_s=0.0)
    for k in range(30):                                                        # through arming, 0.6 s
        esc.write(-0.6 + 0.02 * k, PulseCommand((1700, 1700)))
    esc.write(0.0, PulseCommand((1700, 1700)))
    assert line(sysfs, 13) == 1700.0
    sysfs.failing = True
    esc.write(0.02, PulseCommand((1750, 1750)))                               # no exception
    assert not esc.connected and esc.stats.errors >= 1
    sysfs.failing = False
    esc.write(0.04, PulseCommand((1750, 1750)))
    assert esc.connected and esc.stats.reconnects == 1
    assert line(sysfs, 13) == 1500.0                                          # re-arming: neutral first
    for k in range(1, 30):                                                     # armed again after 0.5 s
        esc.write(0.04 + 0.02 * k, PulseCommand((1750, 1750)))
    assert line(sysfs, 13) == 1750.0
    esc.close()


def wait_neutral(fake, wait_s=3.0):
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        if line(fake, 13) == line(fake, 12) == 1500.0:
            return True
        time.sleep(0.01)
    return False


def test_neutral_on_sigterm_of_the_process_that_owns_the_outputs(sysfs):
    child, _ = start_child(sysfs, "plain")
    try:
        assert line(sysfs, 13) == 1900.0
        child.send_signal(signal.SIGTERM)
        assert child.wait(timeout=10) == -signal.SIGTERM
        assert (line(sysfs, 13), line(sysfs, 12)) == (1500.0, 1500.0)
    finally:
        stop_all(child, 0)


def test_sigkill_at_full_thrust_the_guardian_sets_neutral(sysfs):
    child, guardian = start_child(sysfs, "deadman")
    try:
        assert line(sysfs, 13) == line(sysfs, 12) == 1900.0
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=5)
        assert wait_neutral(sysfs), "the PWM kept the full-thrust pulse after SIGKILL"
    finally:
        stop_all(child, guardian)


def test_a_hung_process_gets_neutral_from_the_guardian(sysfs):
    child, guardian = start_child(sysfs, "deadman")
    try:
        os.kill(child.pid, signal.SIGSTOP)              # alive but frozen: no writes, no in-process watchdog
        assert wait_neutral(sysfs), "the PWM kept the full-thrust pulse while the process hung"
        os.kill(child.pid, signal.SIGCONT)
    finally:
        stop_all(child, guardian)


# ------------------------------------------------------------------------------------------- closed loop
@pytest.mark.slow
def test_a_mission_flies_through_the_kernel_pwm_driver():
    from autopilot.vocab.config import CONFIG_DIR, load_mission, load_vessel
    from hil.sim.runner import SimOptions, run_sim
    res = run_sim(load_vessel("wamv"), load_mission(CONFIG_DIR / "missions" / "straight_line.yaml"),
                  SimOptions(seed=2, devices="bytes", esc_backend="kernel_pwm"))
    r = res.report
    assert r["mission_complete"] and r["xte_rms_m"] < 2.0
    assert res.pulses_us.max() > 1600                  # the plant was driven by what reached the PWM lines


# ------------------------------------------------------------------------------------------- configuration
def _boat(tmp_path, esc_block):
    path = tmp_path / "boat.yaml"
    path.write_text(f"vessel: foka\nbackend: hw\n{esc_block}")
    return path


@pytest.mark.parametrize("block, key", [
    ("esc: {backend: pwm}\n", "esc.backend"),
    ("esc: {backend: pca9685}\n", "pca9685_channels"),
    ("esc: {backend: pca9685, pca9685_channels: [0, 1, 2]}\n", "esc.pca9685_channels"),
    ("esc: {backend: kernel_pwm, pwm_channels: [0, 0]}\n", "esc.pwm_channels"),
])
def test_a_bad_esc_section_names_the_file_and_key(tmp_path, block, key):
    from autopilot.files.boat import load_boat_config
    from autopilot.vocab.config import ConfigError
    with pytest.raises(ConfigError) as e:
        load_boat_config(_boat(tmp_path, block))
    assert key in str(e.value) and "boat.yaml" in str(e.value)


def test_exec_stop_post_sets_neutral_through_the_boats_kernel_pwm(tmp_path, capsys, monkeypatch):
    from autopilot.files.boat import load_boat_config
    from autopilot.runtime.esc_neutral import main as esc_neutral_main
    fake = FakePwmSysfs(tmp_path / "pwm", chips={0: 2})
    port = open_port(backend_on(fake), [13, 12], model=PI4)
    port.set_servo_pulsewidth(13, 1900)                     # the autopilot died at full thrust
    port.set_servo_pulsewidth(12, 1900)
    path = _boat(tmp_path, f"esc: {{backend: kernel_pwm, pwm_sysfs_root: {fake.root}}}\n")
    assert load_boat_config(path).esc.backend_spec().kind == "kernel_pwm"
    monkeypatch.setattr("drivers.esc.kernel_pwm.raspberry_pi_model", lambda: PI4)
    assert esc_neutral_main(["--config", str(path)]) == 0
    assert (line(fake, 13), line(fake, 12)) == (1500.0, 1500.0)
    assert "GPIO13=1500us" in capsys.readouterr().out


@pytest.mark.slow
def test_bench_esc_runs_its_motor_test_on_the_boats_kernel_pwm(tmp_path, capsys, monkeypatch):
    import argparse

    from autopilot.bringup import esc as bench_esc
    fake = FakePwmSysfs(tmp_path / "pwm", chips={0: 2})
    open_port(backend_on(fake), [13, 12], model=PI4).stop()         # the kernel created the channels
    monkeypatch.setattr("drivers.esc.kernel_pwm.raspberry_pi_model", lambda: PI4)
    seen = []
    real_write = SysfsFiles.write

    def watching(self, rel, text):                                  # a scope on the lines
        real_write(self, rel, text)
        if rel.endswith("duty_cycle"):
            seen.append(int(text) // 1000)
    monkeypatch.setattr(SysfsFiles, "write", watching)
    path = _boat(tmp_path, f"esc: {{backend: kernel_pwm, pwm_sysfs_root: {fake.root}}}\n")
    parser = argparse.ArgumentParser(prog="autopilot")
    bench_esc.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["bench", "esc", "--config", str(path), "--gpio", "13,12", "--test",
                              "--propellers-removed", "--offset-us", "100", "--ramp-s", "0.2", "--hold-s", "0.1",
                              "--arming-s", "0.1"])
    assert args.func(args) == 0
    out = capsys.readouterr().out
    assert "kernel PWM" in out and "GPIO -> channel {13: 1, 12: 0}" in out
    assert max(seen) == 1600 and min(seen) == 1400                   # +-100 us about neutral, both ways
    assert (line(fake, 13), line(fake, 12)) == (1500.0, 1500.0)     # and neutral at the end
