"""install.sh on each OS and board, without either: the device tree model and /etc/os-release of real systems are
written under a fixture root (`--root`), and the --dry-run plan is what a user would read and what would run."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.test_systemd import written_file

REPO = Path(__file__).resolve().parents[1]
INSTALL = REPO / "systemd" / "install.sh"
PWM_LINE = "dtoverlay=pwm-2chan,pin=12,func=4,pin2=13,func2=4"

MODELS = {"pi4": "Raspberry Pi 4 Model B Rev 1.5", "pi5": "Raspberry Pi 5 Model B Rev 1.0"}
OS_RELEASE = {
    "raspios-bookworm": ('PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nNAME="Debian GNU/Linux"\nVERSION_ID="12"\n'
                         'VERSION="12 (bookworm)"\nVERSION_CODENAME=bookworm\nID=debian\n'),
    "raspios-trixie": ('PRETTY_NAME="Debian GNU/Linux 13 (trixie)"\nNAME="Debian GNU/Linux"\nVERSION_ID="13"\n'
                       'VERSION="13 (trixie)"\nVERSION_CODENAME=trixie\nID=debian\n'),
    "ubuntu-22.04": ('PRETTY_NAME="Ubuntu 22.04.5 LTS"\nNAME="Ubuntu"\nVERSION_ID="22.04"\n'
                     'VERSION="22.04.5 LTS (Jammy Jellyfish)"\nVERSION_CODENAME=jammy\nID=ubuntu\nID_LIKE=debian\n'),
    "ubuntu-24.04": ('PRETTY_NAME="Ubuntu 24.04.1 LTS"\nNAME="Ubuntu"\nVERSION_ID="24.04"\n'
                     'VERSION="24.04.1 LTS (Noble Numbat)"\nVERSION_CODENAME=noble\nID=ubuntu\nID_LIKE=debian\n'),
}


def machine(tmp_path, board, os_name, config_txt="[all]\ndtparam=i2c_arm=on\n"):
    root = tmp_path / f"{board}-{os_name}"
    (root / "etc").mkdir(parents=True)
    (root / "etc" / "os-release").write_text(OS_RELEASE[os_name])
    if os_name.startswith("raspios"):
        (root / "etc" / "rpi-issue").write_text("Raspberry Pi reference 2024-11-19\n")
    if board in MODELS:
        (root / "proc" / "device-tree").mkdir(parents=True)
        (root / "proc" / "device-tree" / "model").write_bytes(MODELS[board].encode() + b"\0")
        (root / "boot" / "firmware").mkdir(parents=True)
        (root / "boot" / "firmware" / "config.txt").write_text(config_txt)
    return root


def plan(root, *args, apt=False):
    cmd = ["bash", str(INSTALL), "--dry-run", "--root", str(root), "--src", str(REPO)] + ([] if apt else ["--no-apt"])
    return subprocess.run(cmd + list(args), capture_output=True, text=True, timeout=60)


def esc_backend_in(out: str) -> str:
    boat = written_file(out, "/etc/autopilot/boat.yaml")
    lines = boat.splitlines()
    i = next(k for k, ln in enumerate(lines) if ln.startswith("esc:"))
    return lines[i + 1].split(":", 1)[1].split("#")[0].strip()


def test_pi4_on_raspberry_pi_os_bookworm_keeps_pigpio(tmp_path):
    r = plan(machine(tmp_path, "pi4", "raspios-bookworm"), apt=True)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "board: Raspberry Pi 4 Model B Rev 1.5; OS: Debian GNU/Linux 12 (bookworm)" in out
    assert "ESC backend: pigpio (Raspberry Pi OS bookworm packages pigpiod)" in out
    assert "+ apt-get install -y pigpio" in out and "+ systemctl enable pigpiod.service" in out
    assert "After=pigpiod.service" in written_file(out, "/etc/systemd/system/autopilot.service.d/esc.conf")
    assert esc_backend_in(out) == "pigpio" and PWM_LINE not in out


@pytest.mark.parametrize("board, os_name, why", [
    ("pi5", "raspios-bookworm", "a Raspberry Pi 5: pigpio cannot reach its GPIO"),
    ("pi4", "ubuntu-22.04", "Ubuntu 22.04.5 LTS has no pigpiod package"),
    ("pi5", "ubuntu-24.04", "a Raspberry Pi 5"),
    ("pi4", "raspios-trixie", "Debian GNU/Linux 13 (trixie) has no pigpiod package"),
])
def test_where_pigpiod_cannot_run_kernel_pwm_is_set_up(tmp_path, board, os_name, why):
    r = plan(machine(tmp_path, board, os_name), apt=True)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert f"ESC backend: kernel_pwm ({why}" in out
    assert f"ACTION: add this line to /boot/firmware/config.txt (hardware PWM for the ESCs on GPIO12 and 13), " \
           f"then reboot: {PWM_LINE}" in out
    assert "/boot/firmware/config.txt has dtparam=i2c_arm=on" in out
    assert "pigpio" not in "".join(ln for ln in out.splitlines() if ln.startswith(("+ apt", "+ systemctl")))
    assert "ReadWritePaths=-/sys/devices/platform" in written_file(
        out, "/etc/systemd/system/autopilot.service.d/esc.conf")
    rule = written_file(out, "/etc/udev/rules.d/60-autopilot.rules")
    assert 'SUBSYSTEM=="pwm"' in rule and "chgrp -R gpio /sys%p" in rule
    assert esc_backend_in(out) == "kernel_pwm"


def test_an_overlay_already_there_is_not_asked_for_and_edit_appends_only_what_is_missing(tmp_path):
    root = machine(tmp_path, "pi5", "ubuntu-24.04", config_txt=f"[all]\n{PWM_LINE}\n")
    r = plan(root, "--edit-config-txt")
    assert r.returncode == 0, r.stderr
    assert f"/boot/firmware/config.txt has {PWM_LINE}" in r.stdout
    assert "+ append to /boot/firmware/config.txt: dtparam=i2c_arm=on" in r.stdout
    assert (root / "boot" / "firmware" / "config.txt").read_text() == f"[all]\n{PWM_LINE}\n"     # dry run


def test_pigpio_where_it_is_not_packaged_needs_build_pigpio(tmp_path):
    root = machine(tmp_path, "pi4", "raspios-trixie")
    r = plan(root, "--esc-backend", "pigpio")
    assert r.returncode == 1
    assert "pigpio is not packaged on Debian GNU/Linux 13 (trixie)" in r.stderr and "--build-pigpio" in r.stderr
    r = plan(root, "--esc-backend", "pigpio", "--build-pigpio", apt=True)
    assert r.returncode == 0, r.stderr
    assert "+ wget -q -O /tmp/pigpio.zip https://github.com/joan2937/pigpio/archive/master.zip" in r.stdout
    assert "+ make -C /tmp/pigpio-master install" in r.stdout
    assert "ExecStart=/usr/local/bin/pigpiod -l" in written_file(r.stdout, "/etc/systemd/system/pigpiod.service")


def test_pigpio_on_a_pi_5_is_refused_with_the_alternatives(tmp_path):
    r = plan(machine(tmp_path, "pi5", "raspios-bookworm"), "--esc-backend", "pigpio")
    assert r.returncode == 1 and "does not run on a Raspberry Pi 5" in r.stderr and "kernel_pwm" in r.stderr


def test_a_pca9685_board_needs_i2c_and_its_channels(tmp_path):
    root = machine(tmp_path, "pi5", "ubuntu-24.04", config_txt="")
    r = plan(root, "--esc-backend", "pca9685")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "ESC backend: pca9685 (chosen with --esc-backend)" in out
    assert "then reboot: dtparam=i2c_arm=on" in out and PWM_LINE not in out
    boat = written_file(out, "/etc/autopilot/boat.yaml")
    assert esc_backend_in(out) == "pca9685" and "pca9685_channels: [0, 1]" in boat
    import yaml
    esc = yaml.safe_load(boat)["esc"]                       # still YAML, with the channels inside esc:
    assert esc["backend"] == "pca9685" and esc["pca9685_channels"] == [0, 1]
    assert "+ rm -f /etc/systemd/system/autopilot.service.d/esc.conf" in out


def test_not_a_raspberry_pi_keeps_the_boat_configs_backend(tmp_path):
    root = machine(tmp_path, "laptop", "ubuntu-24.04")
    boat = tmp_path / "boat.yaml"
    boat.write_text("vessel: foka\nbackend: hw\nesc:\n  backend: kernel_pwm\n")
    r = plan(root, "--config", str(boat))
    assert r.returncode == 0, r.stderr
    assert "board: not a Raspberry Pi (no device tree model)" in r.stdout
    assert "ESC backend: kernel_pwm (not a Raspberry Pi, so the boat config's)" in r.stdout
    assert "not a Raspberry Pi: no boot config line set" in r.stdout


def test_a_bad_backend_name_is_refused():
    r = subprocess.run(["bash", str(INSTALL), "--dry-run", "--esc-backend", "pwm"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 1 and "choose pigpio, kernel_pwm or pca9685" in r.stderr


def test_uninstall_removes_the_drop_ins():
    r = subprocess.run(["bash", str(REPO / "systemd" / "uninstall.sh"), "--dry-run"], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0 and "+ rm -rf -- /etc/systemd/system/autopilot.service.d" in r.stdout
