"""`autopilot bench imu --orientation-check` (issue 17) against the emulated LSM9DS1 read through the real driver.

Every one of the 48 signed axis permutations C (measured = C @ true body FRD) is put between the boat and the
autopilot, and the check must find exactly C:
- the 24 rotations (det +1) as a mis-mounted board: the emulated board is really mounted at C^T (times the
  vessel file's mounting), the vessel file says otherwise; the printed mount_rpy_deg, put back in, must PASS;
- the 24 mirrors (det -1) as a wrong axis sign convention after the chip: the emulated chip's output axes are
  permuted by C, which no mounting can fix; the check must say so and name the wrong axes.
The permutations, the emulated board's mounting and the expected answers are worked out here, with the
emulator's own rotation matrix, not with the code under test. The emulator has noise (seeded) and, where
stated, hard iron.
"""
import argparse
import itertools
import math
import re

import numpy as np
import pytest
import yaml

from autopilot.bringup import imu as bench_imu
from autopilot.bringup import imu_session
from autopilot.bringup.imu_orientation import Recording, analyse, run_orientation_check
from autopilot.bringup.signed_axes import corrected_mount_rpy_deg, rpy_deg_from_rotation
from autopilot.vocab.config import CONFIG_DIR
from hil.devices import lsm9ds1_emulator
from hil.devices.lsm9ds1_emulator import rotation_rpy as emulator_rotation

D_XG = np.diag([1.0, 1.0, -1.0])         # sensor frame S -> accel/gyro chip axes (the datasheet, not the driver)
D_MAG = np.diag([-1.0, 1.0, -1.0])       # S -> magnetometer chip axes


def _all_signed_permutations():
    out = []
    for perm in itertools.permutations(range(3)):
        for signs in itertools.product((1, -1), repeat=3):
            m = np.zeros((3, 3), dtype=int)
            for col in range(3):
                m[perm[col], col] = signs[col]
            out.append(m)
    return out


PERMS = _all_signed_permutations()
PROPER = [c for c in PERMS if round(np.linalg.det(c)) == 1]
IMPROPER = [c for c in PERMS if round(np.linalg.det(c)) == -1]
IDENTITY = np.eye(3, dtype=int)


def _name(c) -> str:
    return "".join(("+" if c[:, j].sum() > 0 else "-") + "xyz"[int(np.argmax(np.abs(c[:, j])))] for j in range(3))


def _rot(rpy_deg):
    return emulator_rotation(*(math.radians(a) for a in rpy_deg))


def _rpy_of_quarter_turns(r):
    """(roll, pitch, yaw) in multiples of 90 deg whose emulator rotation is r (searched, not solved)."""
    for rpy in itertools.product((0.0, 90.0, 180.0, -90.0), repeat=3):
        if np.allclose(_rot(rpy), r, atol=1e-9):
            return rpy
    raise AssertionError(f"no quarter-turn mounting for {r}")


def _rpy_of(r):
    """(roll, pitch, yaw) [deg] of a rotation matrix away from gimbal lock (the textbook ZYX formulas)."""
    return (math.degrees(math.atan2(r[2, 1], r[2, 2])), math.degrees(math.asin(-r[2, 0])),
            math.degrees(math.atan2(r[1, 0], r[0, 0])))


def run_cli(argv, capsys):
    parser = argparse.ArgumentParser(prog="autopilot")
    bench_imu.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["bench", "imu", "--emulated", "--orientation-check"] + argv)
    rc = args.func(args)
    return rc, capsys.readouterr().out


def _rpy_arg(rpy) -> str:
    return ",".join(repr(float(a)) for a in rpy)


def _printed_mount(out: str):
    found = re.findall(r"^  mount_rpy_deg: \[([-\d.e]+), ([-\d.e]+), ([-\d.e]+)\]$", out, re.M)
    return tuple(float(v) for v in found[0]) if len(found) == 1 else None


def _found_permutations(out: str):
    """{sensor: C} as the report states it: identity for a PASS, from its 'reads as' lines for a FAIL."""
    found = {}
    for block in re.split(r"^(?=(?:PASS|FAIL)  )", out, flags=re.M)[1:]:
        head = block.splitlines()[0]
        verdict, sensor = head.split()[0], head.split()[1]
        c = np.zeros((3, 3), dtype=int)
        if verdict == "PASS":
            c = IDENTITY.copy()
        for axis, sign, where in re.findall(r"^\s+([xyz]) \(\w+\)\s+reads as ([+-])([xyz])", block, re.M):
            c["xyz".index(where), "xyz".index(axis)] = 1 if sign == "+" else -1
        found[sensor] = c
    return found


@pytest.fixture
def vessel_file(tmp_path):
    """Write a copy of the foka vessel file with sensors.imu.mount_rpy_deg and sensors.mag.hard_iron_t set."""
    def write(mount_rpy_deg=(0.0, 0.0, 0.0), hard_iron_t=(0.0, 0.0, 0.0), name="boat.yaml"):
        data = yaml.safe_load((CONFIG_DIR / "vessels" / "foka.yaml").read_text())
        data["sensors"]["imu"]["mount_rpy_deg"] = [float(a) for a in mount_rpy_deg]
        data["sensors"]["mag"]["hard_iron_t"] = [float(h) for h in hard_iron_t]
        path = tmp_path / name
        path.write_text(yaml.safe_dump(data))
        return str(path)
    return write


@pytest.fixture(autouse=True)
def load_each_vessel_file_once(monkeypatch):
    """Parsing a vessel YAML takes longer than an emulated check; a file read once is reused (same path and
    contents) so the 48-way sweeps stay quick."""
    import autopilot.vocab.config as config
    real, cache = config.load_vessel, {}

    def load(name_or_file):
        path = config.resolve_vessel_path(name_or_file)
        key = (str(path), path.read_bytes())
        if key not in cache:
            cache[key] = real(name_or_file)
        return cache[key]
    monkeypatch.setattr(config, "load_vessel", load)


HARD_IRON_T = (12e-6, -8e-6, 9e-6)      # a boat's iron: as large as half the horizontal field


def test_the_48_signed_permutations_are_48_distinct_ones():
    assert len({_name(c) for c in PERMS}) == 48 and len(PROPER) == 24 and len(IMPROPER) == 24


def test_a_board_mounted_as_the_vessel_file_says_passes_with_noise_and_hard_iron(capsys, vessel_file):
    rc, out = run_cli(["--vessel", vessel_file(hard_iron_t=HARD_IRON_T)], capsys)
    assert rc == 0, out
    assert out.count("PASS  ") == 3 and "orientation check: PASS" in out and "FAIL" not in out
    assert _printed_mount(out) is None


@pytest.mark.parametrize("c", PROPER, ids=_name)
def test_a_mis_mounted_board_fails_and_the_printed_mount_makes_it_pass(c, capsys, vessel_file):
    """measured = C true  <=>  the board is really mounted at R = C^T (the vessel file says 0, 0, 0)."""
    real_mount = _rpy_of_quarter_turns(c.T)
    vessel = vessel_file(hard_iron_t=HARD_IRON_T)
    rc, out = run_cli(["--vessel", vessel, "--emulated-mount=" + _rpy_arg(real_mount)], capsys)
    if np.array_equal(c, IDENTITY):
        assert rc == 0 and "orientation check: PASS" in out, out
        return
    assert rc == 1, out
    found = _found_permutations(out)
    for sensor in ("accelerometer", "gyro", "magnetometer"):
        assert np.array_equal(found[sensor], c), f"{sensor}: found\n{found[sensor]}\nexpected\n{c}\n{out}"
    printed = _printed_mount(out)
    assert printed is not None, out
    assert np.allclose(_rot(printed), c.T, atol=1e-6), (printed, real_mount)
    rc, out = run_cli(["--vessel", vessel, "--emulated-mount=" + _rpy_arg(real_mount),
                       "--mount=" + _rpy_arg(printed)], capsys)
    assert rc == 0 and "orientation check: PASS" in out, out


@pytest.mark.parametrize("c", IMPROPER, ids=_name)
def test_a_wrong_axis_sign_convention_is_a_mirror_that_no_mounting_fixes(c, capsys, monkeypatch):
    """The chip's outputs permuted by C before the driver (all three sensors): the driver's convention is wrong."""
    monkeypatch.setattr(lsm9ds1_emulator, "S_TO_XG_AXES", D_XG @ c)
    monkeypatch.setattr(lsm9ds1_emulator, "S_TO_MAG_AXES", D_MAG @ c)
    rc, out = run_cli([], capsys)
    assert rc == 1, out
    found = _found_permutations(out)
    for sensor in ("accelerometer", "gyro", "magnetometer"):
        assert np.array_equal(found[sensor], c), f"{sensor}: found\n{found[sensor]}\nexpected\n{c}\n{out}"
    wrong = ", ".join(a for j, a in enumerate("xyz") if c[j, j] != 1)
    assert f"a mirror (axes {wrong} of body FRD read wrong" in out and "no mounting rotation fixes it" in out
    assert _printed_mount(out) is None


@pytest.mark.parametrize("vessel_mount, c", [
    ((10.0, -20.0, 135.0), PROPER[5]),
    ((180.0, 0.0, 90.0), PROPER[13]),
    ((0.0, 0.0, -90.0), PROPER[22]),
], ids=["odd_mount", "upside_down_mount", "yawed_mount"])
def test_the_printed_mount_is_composed_with_the_vessel_files_and_works_when_written_back(
        vessel_mount, c, capsys, vessel_file):
    """The vessel file says R0; the board is really at C^T R0. The printed value, written into the vessel file
    (not given on the command line), must make the check PASS."""
    real = c.T @ _rot(vessel_mount)
    real_mount = _rpy_of(real)
    rc, out = run_cli(["--vessel", vessel_file(vessel_mount), "--emulated-mount=" + _rpy_arg(real_mount)], capsys)
    assert rc == 1, out
    printed = _printed_mount(out)
    assert printed is not None and np.allclose(_rot(printed), real, atol=1e-3), (printed, real_mount, out)
    fixed = vessel_file(printed, name="fixed.yaml")
    rc, out = run_cli(["--vessel", fixed, "--emulated-mount=" + _rpy_arg(real_mount)], capsys)
    assert rc == 0 and "orientation check: PASS" in out, out


# ----------------------------------------------------------------------------------- moves not done as asked
def _tilt_script(roll_deg=0.0, pitch_deg=0.0, start_s=1.0, end_s=3.0, then_rate_dps=0.0):
    def script(t):
        roll, roll_rate = imu_session.ramp(t, start_s, end_s, roll_deg)
        pitch, pitch_rate = imu_session.ramp(t, start_s, end_s, pitch_deg)
        if t > end_s and then_rate_dps:                      # not held: keeps moving after the tilt
            pitch += then_rate_dps * (t - end_s)
            pitch_rate = then_rate_dps
        return imu_session.truth_at(t, 30.0, roll, pitch, roll_rate_dps=roll_rate, pitch_rate_dps=pitch_rate)
    return script


def _rocking(t):
    """Rolling +-4 deg at 0.5 Hz: a boat someone is climbing into."""
    w = 2 * math.pi * 0.5
    return imu_session.truth_at(t, 30.0, roll_deg=4.0 * math.sin(w * t), roll_rate_dps=4.0 * w * math.cos(w * t))


@pytest.mark.parametrize("move, script, reason", [
    ("flat", _rocking, "flat: the boat was moving"),
    ("bow_up", _tilt_script(pitch_deg=5.0), "bow_up: tilted only 5 deg"),
    ("starboard_down", _tilt_script(roll_deg=30.0, end_s=6.5), "starboard_down: the boat was moving at the end"),
    ("bow_up", _tilt_script(pitch_deg=30.0, start_s=-3.0, end_s=-1.0), "bow_up: the boat was not level before"),
    ("bow_up", _tilt_script(pitch_deg=20.0, roll_deg=20.0), "bow_up: the accelerometer's change of tilt"),
    ("starboard_down", _tilt_script(pitch_deg=25.0), "accelerometer: two moves gave the same axis"),
    ("turn", lambda t: imu_session.truth_at(t, 30.0), "turn: turned only 0 deg"),
    ("turn", lambda t: imu_session.truth_at(t, 30.0 - 36.0 * t, yaw_rate_dps=-36.0),
     "turn: the field turned the same way as the boat, against what the tilts show: was the turn clockwise"),
], ids=["moving_during_flat", "not_tilted_enough", "tilt_not_held", "tilted_before_go", "tilt_about_two_axes",
        "bow_raised_twice", "not_turned", "turned_counter_clockwise"])
def test_a_move_not_done_as_asked_is_refused_with_what_to_redo(move, script, reason, capsys, monkeypatch):
    monkeypatch.setitem(imu_session.EMULATED_MOVES, move, script)
    rc, out = run_cli([], capsys)
    assert rc == 2, out
    assert "orientation check: REFUSED: " + reason.split(": ", 1)[0] in out and reason in out, out
    assert "orientation check: PASS" not in out and "orientation check: FAIL" not in out


def test_starboard_lifted_instead_of_lowered_is_refused_not_taken_for_a_mirrored_axis(capsys, monkeypatch):
    """One move done the wrong way would look like a mirrored axis to the accelerometer and gyro, but the field's
    turn then disagrees with its tilts, which no axis error can do: the check asks for the moves again."""
    monkeypatch.setitem(imu_session.EMULATED_MOVES, "starboard_down", _tilt_script(roll_deg=-25.0))
    rc, out = run_cli([], capsys)
    assert rc == 2, out
    assert "REFUSED: turn: the field turned the same way as the boat" in out and "mirror" not in out


def _ccw_turn(t):
    return imu_session.truth_at(t, 30.0 - 36.0 * max(0.0, t - 0.3), yaw_rate_dps=-36.0 if t > 0.3 else 0.0)


WRONG_WAY = {"bow_up": _tilt_script(pitch_deg=-30.0), "starboard_down": _tilt_script(roll_deg=-25.0),
             "turn": _ccw_turn}


@pytest.mark.parametrize("wrong, outcome", [
    (("bow_up",), "refused"), (("starboard_down",), "refused"), (("turn",), "refused"),
    (("bow_up", "starboard_down", "turn"), "refused"),
    (("bow_up", "starboard_down"), "yaw 180"),
    (("bow_up", "turn"), "gyro disagrees"), (("starboard_down", "turn"), "gyro disagrees"),
], ids=lambda v: "+".join(v) if isinstance(v, tuple) else v)
def test_moves_done_the_wrong_way_never_read_as_a_mirror(wrong, outcome, capsys, monkeypatch):
    """A correct board, moves done the wrong way: refused, or a FAIL that says what else it could be; never
    taken for a mirrored axis (which would send someone to change the driver)."""
    for move in wrong:
        monkeypatch.setitem(imu_session.EMULATED_MOVES, move, WRONG_WAY[move])
    rc, out = run_cli([], capsys)
    assert "a mirror" not in out
    if outcome == "refused":
        assert rc == 2 and "REFUSED: turn: the field turned the same way as the boat" in out, out
    elif outcome == "yaw 180":
        assert rc == 1 and _printed_mount(out) == (0.0, 0.0, 180.0) and "redo the moves first" in out, out
    else:
        assert rc == 1 and "the gyro disagrees with the accelerometer" in out and _printed_mount(out) is None


def test_a_mount_given_to_try_that_passes_is_named_for_the_vessel_file(capsys):
    rc, out = run_cli(["--emulated-mount=0,0,90", "--mount=0,0,90"], capsys)
    assert rc == 0 and "now put mount_rpy_deg: [0.0, 0.0, 90.0] in the vessel file" in out, out


def test_a_missing_or_bad_mount_argument_is_a_message_not_a_traceback(capsys):
    parser = argparse.ArgumentParser(prog="autopilot")
    bench_imu.register(parser.add_subparsers(dest="command"))
    with pytest.raises(SystemExit) as exc:
        parser.parse_args(["bench", "imu", "--orientation-check", "--mount", "0,0"])
    assert exc.value.code == 2 and "roll,pitch,yaw" in capsys.readouterr().err
    args = parser.parse_args(["bench", "imu", "--orientation-check", "--emulated-mount", "0,0,90"])
    assert args.func(args) == 1 and "--emulated-mount needs --emulated" in capsys.readouterr().err


# ------------------------------------------------------------------- one sensor wrong: the gyro or the magnetometer
@pytest.fixture(scope="module")
def emulated_recordings():
    """The four moves recorded once from the emulated chip (noise, hard iron) through the real driver, as the CLI
    records them. A sensor's axis error alone is then its body-frame samples passed through C: exactly what a
    permutation of that sensor's chip axes after the chip gives (the driver's frame change is linear)."""
    from autopilot.vocab.config import MagConfig, load_vessel
    from drivers.i2c_adapter import SMBusI2C
    from drivers.lsm9ds1 import Lsm9ds1Driver
    from hil.devices.lsm9ds1_emulator import Lsm9ds1Emulator
    vessel = load_vessel("foka")
    mag_cfg = MagConfig(**{**vessel.sensors.mag.__dict__, "hard_iron_t": HARD_IRON_T})
    emu = Lsm9ds1Emulator(vessel.sensors.imu, mag_cfg, seed=7)
    emu.update(0.0, imu_session.truth_at(0.0, 30.0))
    driver = Lsm9ds1Driver(vessel.sensors.imu, mag_cfg, i2c=SMBusI2C(1, bus=emu.smbus()),
                           clock=lambda: emu.t_s, sleep=emu.advance)
    driver.start()
    sampler = imu_session.Sampler(driver, emu, lambda: emu.t_s)
    recordings = {}

    def ask(move, text):
        sampler.move_along(imu_session.EMULATED_MOVES[move])
        recordings[move] = []

    def record(seconds):
        rec = Recording.of([(t, imu.accel_mps2, imu.gyro_rps, [v * 1e6 for v in f])
                            for t, imu, f in sampler.samples(seconds)])
        recordings[list(recordings)[-1]].append(rec)
        return rec

    verdict = run_orientation_check(record, ask, lambda line: None, inclination_deg=mag_cfg.inclination_deg,
                                    field_ut=mag_cfg.field_t * 1e6)
    assert verdict.passed, verdict.lines
    return {move: Recording.concat(*parts) for move, parts in recordings.items()}, mag_cfg


def _with(recordings, gyro=None, mag=None):
    def one(r):
        return Recording(r.t_s, r.accel_mps2, r.gyro_rps if gyro is None else r.gyro_rps @ gyro.T,
                         r.field_ut if mag is None else r.field_ut @ mag.T)
    return {move: one(r) for move, r in recordings.items()}


@pytest.mark.parametrize("c", PERMS[1:], ids=_name)
def test_a_gyro_axis_error_alone_is_found_and_not_blamed_on_the_mounting(c, emulated_recordings):
    recordings, mag_cfg = emulated_recordings
    verdict = analyse(_with(recordings, gyro=c), inclination_deg=mag_cfg.inclination_deg,
                      field_ut=mag_cfg.field_t * 1e6)
    by = {f.sensor: f.c for f in verdict.findings}
    assert verdict.exit_status == 1, verdict.lines
    assert np.array_equal(by["gyro"], c) and np.array_equal(by["accelerometer"], IDENTITY)
    assert np.array_equal(by["magnetometer"], IDENTITY)
    assert any("the gyro disagrees with the accelerometer" in line for line in verdict.lines)
    assert verdict.mount_rpy_deg is None


@pytest.mark.parametrize("c", PERMS[1:], ids=_name)
def test_a_magnetometer_axis_error_alone_is_found_and_not_blamed_on_the_mounting(c, emulated_recordings):
    recordings, mag_cfg = emulated_recordings
    verdict = analyse(_with(recordings, mag=c), inclination_deg=mag_cfg.inclination_deg,
                      field_ut=mag_cfg.field_t * 1e6)
    by = {f.sensor: f.c for f in verdict.findings}
    assert verdict.exit_status == 1, verdict.lines
    assert np.array_equal(by["magnetometer"], c) and np.array_equal(by["accelerometer"], IDENTITY)
    assert np.array_equal(by["gyro"], IDENTITY)
    assert any("the magnetometer disagrees with the accelerometer" in line for line in verdict.lines)
    assert verdict.mount_rpy_deg is None


def test_the_recorded_moves_pass_unchanged_and_the_southern_hemisphere_reads_them_as_a_mirror(emulated_recordings):
    """The magnetometer's down sign comes from the hemisphere: the same (northern) data judged with a southern
    inclination must not pass."""
    recordings, mag_cfg = emulated_recordings
    assert analyse(recordings, inclination_deg=mag_cfg.inclination_deg, field_ut=50.0).passed
    south = analyse(recordings, inclination_deg=-mag_cfg.inclination_deg, field_ut=50.0)
    assert not south.passed


def test_where_the_magnetometer_cannot_be_judged_the_check_says_so(emulated_recordings):
    recordings, mag_cfg = emulated_recordings
    equator = analyse(recordings, inclination_deg=10.0, field_ut=50.0)
    assert equator.exit_status == 2 and "near the magnetic equator" in equator.refused
    # a hard iron (a constant body-frame offset) that cancels most of the vertical field: its sign is unreliable
    iron = {m: Recording(r.t_s, r.accel_mps2, r.gyro_rps, r.field_ut + [0.0, 0.0, -48.0])
            for m, r in recordings.items()}
    hidden = analyse(iron, inclination_deg=mag_cfg.inclination_deg, field_ut=mag_cfg.field_t * 1e6)
    assert hidden.exit_status == 2 and "a hard iron near the sensor hides it" in hidden.refused
    # a hard iron in the horizontal plane, however large, changes nothing: only changes of the field are used
    big = {m: Recording(r.t_s, r.accel_mps2, r.gyro_rps, r.field_ut + [80.0, -60.0, 0.0])
           for m, r in recordings.items()}
    assert analyse(big, inclination_deg=mag_cfg.inclination_deg, field_ut=mag_cfg.field_t * 1e6).passed


def test_analyse_refuses_missing_samples_instead_of_raising():
    empty = Recording.of([])
    verdict = analyse({"flat": empty, "bow_up": empty, "starboard_down": empty, "turn": empty})
    assert verdict.exit_status == 2 and "too few samples" in verdict.refused


# ----------------------------------------------------------------------------------- mounting arithmetic
@pytest.mark.parametrize("c", PROPER, ids=_name)
def test_euler_angles_of_every_quarter_turn_mounting_reproduce_it_including_gimbal_lock(c):
    rpy = rpy_deg_from_rotation(c)
    assert all(-180.0 <= a <= 180.0 for a in rpy)
    assert np.allclose(_rot(rpy), c, atol=1e-9)


def test_no_mounting_is_offered_for_a_mirror_and_a_rotation_is_composed_with_the_present_mount():
    assert all(corrected_mount_rpy_deg(c, (0.0, 0.0, 0.0)) is None for c in IMPROPER)
    r0 = (10.0, -20.0, 135.0)
    for c in PROPER:
        new = corrected_mount_rpy_deg(c, r0)
        # re-applied: the new mounting turns what the old one measured (c @ true) back into true
        assert np.allclose(_rot(new) @ _rot(r0).T @ c, np.eye(3), atol=1e-3)
