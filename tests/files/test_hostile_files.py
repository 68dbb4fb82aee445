"""Files a stranger (or a careless user) names: devices, FIFOs, huge files, duplicate keys, numbers Python will
not convert, other programs' secrets. Every one is a refusal naming the file and the reason: no traceback, no
hang, no dead process, and none of the file's content in the message (issue 11, items 4, 6, 7, 8)."""
from __future__ import annotations

import os
import threading

import pytest

from autopilot.files.mission_files import load_mission_file, read_mission_file
from autopilot.vocab.config import ConfigError, load_mission, load_vessel
from autopilot.vocab.safe_read import MAX_CONFIG_BYTES, read_user_text
from estimation.heading.mag_calibration import read_calibration
from tests.support.paths import REPO

LOADERS = [load_mission, load_vessel, load_mission_file, read_calibration]


def _refused(loader, path, reason):
    """Call loader(path) in a thread: it must raise ConfigError with `reason` within 5 s (never hang)."""
    out = {}

    def run():
        try:
            loader(str(path))
            out["result"] = "loaded"
        except ConfigError as e:
            out["error"] = str(e)
        except BaseException as e:            # anything else is the bug this test exists for
            out["crash"] = repr(e)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(5.0)
    assert not t.is_alive(), f"{loader.__name__}({path}) hangs"
    assert "error" in out, out
    assert reason in out["error"], out["error"]
    return out["error"]


@pytest.mark.parametrize("loader", LOADERS, ids=lambda f: f.__name__)
def test_a_device_is_refused_before_it_is_read(loader):
    _refused(loader, "/dev/zero", "not a regular file")


@pytest.mark.parametrize("loader", LOADERS, ids=lambda f: f.__name__)
def test_a_fifo_does_not_block(loader, tmp_path):
    fifo = tmp_path / "mission.yaml"
    os.mkfifo(fifo)
    _refused(loader, fifo, "not a regular file")


def test_a_symlink_to_a_device_is_refused(tmp_path):
    link = tmp_path / "innocent.yaml"
    link.symlink_to("/dev/zero")
    _refused(load_mission, link, "not a regular file")


def test_a_huge_file_is_refused_without_reading_it(tmp_path):
    big = tmp_path / "big.yaml"
    with big.open("wb") as f:
        f.truncate(MAX_CONFIG_BYTES + 1)
    _refused(load_mission, big, "larger than 1024 KiB")
    assert read_user_text(REPO / "config/missions/demo.yaml").startswith("#")


def test_a_duplicate_key_is_refused_with_both_lines(tmp_path):
    text = (REPO / "config/vessels/foka.yaml").read_text().replace("  mass_kg: 15.0\n",
                                                                  "  mass_kg: 15.0\n  mass_kg: 1500\n")
    p = tmp_path / "liar.yaml"
    p.write_text(text)
    err = _refused(load_vessel, p, "given twice")
    assert "mass_kg" in err and "lines" in err


def test_a_5000_digit_integer_and_deep_nesting_are_refusals(tmp_path):
    p = tmp_path / "digits.yaml"
    p.write_text((REPO / "config/vessels/foka.yaml").read_text().replace("mass_kg: 15.0", "mass_kg: " + "9" * 5000))
    _refused(load_vessel, p, "invalid YAML")
    deep = tmp_path / "deep.yaml"
    deep.write_text("name: x\nwaypoints: " + "[" * 20000 + "]" * 20000 + "\n")
    _refused(load_mission, deep, "invalid YAML")


@pytest.mark.parametrize("value", ["inf", "1e400", "-inf", "nan"])
def test_inf_in_a_qgc_integer_column_is_a_refusal(tmp_path, value):
    p = tmp_path / "m.waypoints"
    p.write_text("QGC WPL 110\n"
                 "0\t1\t0\t16\t0\t0\t0\t0\t51.11\t17.06\t0\t1\n"
                 f"1\t0\t3\t{value}\t0\t0\t0\t0\t51.111\t17.061\t0\t1\n")
    _refused(read_mission_file, p, "line 3")


def test_errors_never_quote_a_file_that_is_not_ours(tmp_path):
    shadow = tmp_path / "shadow"
    shadow.write_text("root:$6$saltsalt$hashhashhash:19000:0:99999:7:::\ndaemon:*:19000:0:99999:7:::\n")
    secrets = tmp_path / "secrets.yaml"
    secrets.write_text("aws_secret_access_key: AKIAEXAMPLESECRET\ndb_password: hunter2\n")
    for path in (shadow, secrets):
        for loader in LOADERS:
            try:
                loader(str(path))
            except ConfigError as e:
                msg = str(e)
            else:
                pytest.fail(f"{loader.__name__} loaded {path.name}")
            for secret in ("root", "$6$", "daemon", "aws_secret_access_key", "AKIA", "db_password", "hunter2"):
                assert secret not in msg.replace(str(tmp_path), ""), (loader.__name__, msg)


def _foka_with(tmp_path, old, new):
    text = (REPO / "config/vessels/foka.yaml").read_text()
    assert old in text
    p = tmp_path / "foka_variant.yaml"
    p.write_text(text.replace(old, new))
    return p


@pytest.mark.parametrize("old, new, reason", [
    ("gpio: 12,", "gpio: 13,", "both on gpio 13"),
    ("thrust_n: [-29.5, -26.0, -21.5, -17.0, -12.5, -8.3, -4.6, -1.2, 0.0, 0.0, 1.5, 5.8, 11.0, 16.5, 22.5, 28.5, "
     "34.0, 39.0]", "thrust_n: [" + ", ".join(["0.0"] * 18) + "]", "no positive thrust"),
    ("low_voltage_v: 17.5", "low_voltage_v: 25.0", "not below the pack's nominal 21 V"),
    ("low_voltage_v: 17.5", "chemistry: other", "required for chemistry 'other'"),
], ids=["two-escs-one-pin", "all-zero-table", "cutoff-above-nominal", "other-without-cutoff"])
def test_configs_that_lie_are_refused_by_check_and_sim_alike(tmp_path, old, new, reason, capsys):
    from autopilot.cli.main import main
    p = _foka_with(tmp_path, old, new)
    if "chemistry: other" in new:
        p.write_text(p.read_text().replace("  chemistry: li-ion\n", ""))
    assert main(["check", str(p)]) == 1
    assert reason in capsys.readouterr().out
    assert main(["sim", str(REPO / "config/missions/straight_line.yaml"), "--vessel", str(p), "--devices", "typed",
                 "--duration", "5"]) == 2
    assert reason in capsys.readouterr().err


def test_a_left_out_low_voltage_gets_a_default_from_the_pack_and_check_says_so(tmp_path, capsys):
    from autopilot.cli.main import main
    p = _foka_with(tmp_path, "  low_voltage_v: 17.5\n", "")
    v = load_vessel(str(p))
    assert v.battery.low_voltage_v is None and v.battery.low_voltage_threshold_v == pytest.approx(5 * 3.3)
    assert main(["check", str(p)]) == 0
    assert "acts below 16.5 V (5 cells x 3.3 V for li-ion)" in capsys.readouterr().out


def test_an_integer_beyond_any_float_is_a_refusal(tmp_path):
    """Found by bench_fuzz_inputs.py: int too large to convert to float (OverflowError) in a float field."""
    p = tmp_path / "m.yaml"
    p.write_text((REPO / "config/missions/straight_line.yaml").read_text().replace(
        "cruise_speed_mps: 1.5", "cruise_speed_mps: 1" + "0" * 400))
    assert "1" + "0" * 400 in p.read_text()
    _refused(load_mission, p, "far out of range")
