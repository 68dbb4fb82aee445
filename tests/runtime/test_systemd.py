"""The systemd unit, its environment file, and the installer / uninstaller (always --dry-run here).

The unit's keys are parsed and asserted on every machine; where systemd-analyze exists the installed form of
the unit (as install.sh renders it, pointed at this venv so its commands exist) must also pass
`systemd-analyze verify` without a word about it.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import REPO
from tests.support.unit_files import parse_unit, written_file

UNIT = REPO / "systemd" / "autopilot.service"
ENV = REPO / "systemd" / "autopilot.env"
INSTALL = REPO / "systemd" / "install.sh"
UNINSTALL = REPO / "systemd" / "uninstall.sh"
VENV = Path(sys.executable).parent.parent


def one(section: dict, key: str) -> str:
    values = section.get(key, [])
    assert len(values) == 1, f"{key}: expected exactly one value, got {values}"
    return values[0]


def seconds(value: str) -> float:
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*(ms|s|min)?", value)
    assert m, value
    return float(m.group(1)) * {"ms": 1e-3, "s": 1.0, "min": 60.0, None: 1.0}[m.group(2)]


def dry_run(script: Path, *args: str) -> subprocess.CompletedProcess:
    """`script --dry-run ARGS`, with this venv's python3 first on PATH (install.sh checks the configuration it
    plans with it)."""
    env = {**os.environ, "PATH": f"{VENV / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"}
    return subprocess.run(["bash", str(script), "--dry-run", *args], capture_output=True, text=True, timeout=120,
                          env=env)


def test_unit_has_the_keys_the_boat_depends_on():
    u = parse_unit(UNIT.read_text())
    unit, svc, inst = u["Unit"], u["Service"], u["Install"]
    for key in ("After", "Wants"):                  # pigpiod only through install.sh's drop-in, for pigpio
        assert set(one(unit, key).split()) == {"network-online.target"}
    assert one(svc, "Type") == "notify" and one(svc, "NotifyAccess") == "main"
    assert 0.5 <= seconds(one(svc, "WatchdogSec")) <= 10
    assert one(svc, "Restart") == "on-failure" and seconds(one(svc, "RestartSec")) > 0
    assert one(svc, "User") == "autopilot"
    assert set(one(svc, "SupplementaryGroups").split()) == {"dialout", "i2c", "gpio"}
    assert svc["EnvironmentFile"][0] == "/etc/autopilot/autopilot.env"
    assert one(svc, "ExecStart") == "/opt/autopilot/venv/bin/autopilot run --config ${AUTOPILOT_CONFIG}"
    assert one(svc, "ExecStopPost") == ("/opt/autopilot/venv/bin/python -m autopilot.runtime.esc_neutral "
                                        "--config ${AUTOPILOT_CONFIG}")
    assert one(inst, "WantedBy") == "multi-user.target"
    # hardening, but never at the cost of /dev/serial0, /dev/i2c-*, /dev/gpiomem
    assert one(svc, "NoNewPrivileges") == "yes" and one(svc, "ProtectSystem") == "strict"
    for key in ("PrivateDevices", "DevicePolicy", "DeviceAllow", "ProtectClock", "DynamicUser"):
        assert key not in svc, f"{key} would cut the autopilot off its devices"
    assert "AF_UNIX" in one(svc, "RestrictAddressFamilies") and "AF_INET" in one(svc, "RestrictAddressFamilies")
    # run logs go where the service may write
    assert one(svc, "StateDirectory") == "autopilot" and one(svc, "WorkingDirectory") == "/var/lib/autopilot"


def test_environment_file_defines_what_the_unit_uses_in_systemd_syntax():
    env = {}
    for line in ENV.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        assert not line.startswith("export "), line
        key, sep, value = line.partition("=")
        assert sep and re.fullmatch(r"[A-Z_][A-Z0-9_]*", key), line
        assert "#" not in value, f"systemd keeps a trailing comment as part of the value: {line}"
        env[key] = value
    used = set(re.findall(r"\$\{(\w+)\}", UNIT.read_text()))
    assert used == {"AUTOPILOT_CONFIG"} and used <= set(env)
    assert env["ROS_DOMAIN_ID"].isdigit() and env["RMW_IMPLEMENTATION"].startswith("rmw_")
    assert env["AUTOPILOT_LOG_DIR"].startswith("/var/lib/autopilot/")


def test_the_commands_in_the_unit_exist_and_take_those_arguments():
    r = subprocess.run([str(VENV / "bin" / "autopilot"), "run", "--help"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0 and "--config" in r.stdout
    r = subprocess.run(
        [sys.executable, "-m", "autopilot.runtime.esc_neutral", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
    )
    assert r.returncode == 0 and "--config" in r.stdout


@pytest.mark.slow
def test_systemd_analyze_verify_passes_on_the_installed_unit(tmp_path):
    out = dry_run(INSTALL, "--prefix", str(VENV.parent), "--no-apt")
    assert out.returncode == 0, out.stderr
    rendered = written_file(out.stdout, "/etc/systemd/system/autopilot.service")
    # the installer points both commands at the venv under --prefix
    assert f"ExecStart={VENV.parent}/venv/bin/autopilot run" in rendered
    unit = tmp_path / "autopilot.service"
    unit.write_text(rendered.replace(f"{VENV.parent}/venv", str(VENV)))
    assert parse_unit(unit.read_text())["Service"]["Type"] == ["notify"]
    exe = shutil.which("systemd-analyze")
    if exe is None:
        return                 # the parsed keys above are the whole check on a machine without systemd
    r = subprocess.run([exe, "verify", "--man=no", str(unit)], capture_output=True, text=True, timeout=60)
    complaints = [ln for ln in (r.stdout + r.stderr).splitlines() if "autopilot.service" in ln]
    assert r.returncode == 0 and complaints == [], r.stdout + r.stderr
    # and verify does catch a broken unit, so the pass above means something
    bad = tmp_path / "broken.service"
    bad.write_text(unit.read_text().replace("Type=notify", "Type=notfy"))
    r = subprocess.run([exe, "verify", "--man=no", str(bad)], capture_output=True, text=True, timeout=60)
    assert "Failed to parse service type" in r.stdout + r.stderr


@pytest.mark.slow
def test_install_dry_run_plans_every_step_and_changes_nothing(tmp_path):
    boat = tmp_path / "myboat.yaml"
    boat.write_text("vessel: iacquabot   # preset\nmission: missions/demo.yaml\nbackend: hw\n")
    r = dry_run(INSTALL, "--config", str(boat), "--no-apt")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert re.search(r"^\+ useradd --system .*--home-dir /var/lib/autopilot .*--shell /usr/sbin/nologin autopilot$",
                     out, re.M)
    assert "+ usermod --append --groups dialout\\,i2c\\,gpio autopilot" in out
    assert "+ python3 -m venv --system-site-packages /opt/autopilot/venv" in out
    assert f"+ /opt/autopilot/venv/bin/pip install --upgrade --no-input {REPO}" in out
    assert "+ systemctl enable autopilot.service" in out and "+ systemctl enable pigpiod.service" in out
    commands = [ln for ln in out.splitlines() if ln.startswith("+ systemctl")]
    assert not any(" start" in c or "--now" in c for c in commands)      # never starts the thrusters by itself
    # the boat config is copied with its preset turned into the installed vessel file
    assert written_file(out, "/etc/autopilot/boat.yaml").splitlines()[0] == \
        "vessel: vessels/iacquabot.yaml   # preset"
    env = written_file(out, "/etc/autopilot/autopilot.env")
    assert "AUTOPILOT_CONFIG=/etc/autopilot/boat.yaml" in env.splitlines()
    assert "+ install -m 0644 " + str(REPO / "config/vessels/foka.yaml") + " /etc/autopilot/vessels/foka.yaml" in out
    assert "SUBSYSTEM==\"i2c-dev\", GROUP=\"i2c\"" in written_file(out, "/etc/udev/rules.d/60-autopilot.rules")
    # `autopilot check` ran on the files as they would be installed, and passed, before the unit is enabled
    check = out.index("==> 6/8 autopilot check on /etc/autopilot as it will be")
    assert out.index("    check: OK: vessel iacquabot", check) < out.index("+ systemctl enable autopilot.service")
    assert not Path("/etc/autopilot").exists() and not Path("/opt/autopilot").exists()


def test_install_rejects_bad_options():
    r = dry_run(INSTALL, "--bogus")
    assert r.returncode == 2 and "unknown option --bogus" in r.stderr
    r = dry_run(INSTALL, "--config", "/nonexistent/boat.yaml")
    assert r.returncode == 1 and "no such file" in r.stderr
    r = dry_run(INSTALL, "--ros-distro", "nosuchdistro", "--no-apt")
    assert r.returncode == 1 and "/opt/ros/nosuchdistro/setup.bash not found" in r.stderr


def test_uninstall_keeps_logs_unless_purge():
    r = dry_run(UNINSTALL)
    assert r.returncode == 0, r.stderr
    assert "+ systemctl disable --now autopilot.service" in r.stdout
    assert "+ rm -rf -- /etc/systemd/system/autopilot.service" in r.stdout
    assert "+ rm -rf -- /opt/autopilot" in r.stdout
    assert "/var/lib/autopilot" not in [ln.split()[-1] for ln in r.stdout.splitlines() if ln.startswith("+ rm")]
    assert "userdel" not in r.stdout
    r = dry_run(UNINSTALL, "--purge")
    assert r.returncode == 0
    for line in ("+ rm -rf -- /var/lib/autopilot", "+ rm -rf -- /etc/autopilot", "+ userdel autopilot"):
        assert line in r.stdout
    r = dry_run(UNINSTALL, "--prefix", "/usr")
    assert r.returncode == 2 and "refusing" in r.stderr


@pytest.mark.parametrize("script", [INSTALL, UNINSTALL], ids=["install", "uninstall"])
def test_scripts_are_strict_and_lint_clean(script):
    text = script.read_text()
    assert text.startswith("#!/usr/bin/env bash\n") and "\nset -euo pipefail\n" in text
    assert subprocess.run(["bash", "-n", str(script)]).returncode == 0
    if shutil.which("shellcheck"):
        r = subprocess.run(["shellcheck", str(script)], capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stdout


SECURITY_LIMIT = 2.5       # systemd-analyze security's exposure level for the unit; 4.0 before hardening


def test_the_unit_stays_hardened(tmp_path):
    """`systemd-analyze security` scores the unit (lower is safer): it must not get worse than SECURITY_LIMIT,
    and it must keep /dev open (the serial port, I2C and GPIO devices) and the syscall filter non-fatal."""
    exe = shutil.which("systemd-analyze")
    if exe is None:
        pytest.skip("systemd-analyze is not installed (Debian/Ubuntu: the systemd package)")
    unit = tmp_path / "autopilot.service"
    unit.write_text((REPO / "systemd" / "autopilot.service").read_text())
    r = subprocess.run([exe, "security", "--offline=true", "--no-pager", str(unit)], capture_output=True,
                       text=True, timeout=60)
    m = re.search(r"Overall exposure level for autopilot.service: ([0-9.]+)", r.stdout + r.stderr)
    assert m, r.stdout + r.stderr
    assert float(m.group(1)) <= SECURITY_LIMIT, r.stdout
    keys = parse_unit(unit.read_text())["Service"]
    for closes_dev in ("PrivateDevices", "DevicePolicy", "DeviceAllow", "ProtectClock"):
        assert closes_dev not in keys
    assert keys["SystemCallErrorNumber"] == ["EPERM"] and "127.0.0.0/8" not in keys["IPAddressAllow"][0]
    assert "localhost" in keys["IPAddressAllow"][0] and "multicast" in keys["IPAddressAllow"][0]
