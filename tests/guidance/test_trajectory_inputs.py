"""Hostile `trajectory:` sections and reference files (found by fuzzing the section, issue 11): each is refused
with the file, the key and the reason, never a traceback or a hang."""
from __future__ import annotations

import os

import numpy as np
import pytest

from autopilot.guidance.trajectory import MAX_PATH_M, PathReference, make_path, make_reference, read_csv_reference
from autopilot.vocab.config import CONFIG_DIR, ConfigError, load_mission

CIRCLE = (CONFIG_DIR / "missions" / "trajectory_circle.yaml").read_text()


def _mission(tmp_path, section: str):
    path = tmp_path / "m.yaml"
    path.write_text(CIRCLE.replace("  kind: circle\n", section))
    return path


def test_points_far_out_are_refused_by_the_loader_not_sampled(tmp_path):
    # a path 10 000 km long was sampled every 0.1 m (check hung); at 1e308 its length overflowed (a traceback)
    for section, key in (("  kind: path\n  path_points: [[0.0, 0.0], [10000000.0, 0.0]]\n", "path_points[1]"),
                         ("  kind: path\n  path_points: [[0.0, 0.0], [1.0e+308, 1.0e+308]]\n", "path_points[1]"),
                         ("  kind: points\n  points: [[0, 0, 0], [10, 1.0e+308, -1.0e+308]]\n", "points[1]")):
        path = _mission(tmp_path, section)
        with pytest.raises(ConfigError) as e:
            load_mission(path)
        assert e.value.file == str(path) and e.value.key == f"trajectory.{key}" and "20 km" in e.value.reason


def test_a_path_that_zigzags_for_hundreds_of_km_within_reach_is_refused(tmp_path):
    zigzag = ", ".join(f"[{(i % 2) * 19000.0}, {float(i)}]" for i in range(40))        # 741 km, all within 20 km
    m = load_mission(_mission(tmp_path, f"  kind: path\n  path_points: [{zigzag}]\n"))
    with pytest.raises(ValueError, match=f"741 km from point to point; a path is at most {MAX_PATH_M / 1000:g} km"):
        make_path(m.trajectory)


def test_reference_files_that_are_not_regular_utf8_files_are_refused_by_name(tmp_path):
    os.mkfifo(tmp_path / "fifo.csv")                        # opening it for reading blocked check for ever
    (tmp_path / "latin1.csv").write_bytes(b"t_s,north_m,east_m\n0,0,0\n5,\xe9,1\n")   # was named only by codec
    for name, reason in (("fifo.csv", "not a regular file"), ("/dev/zero", "not a regular file"),
                         ("latin1.csv", "not UTF-8"), (".", "not a regular file")):
        m = load_mission(_mission(tmp_path, f"  kind: csv\n  csv_file: {name}\n"))
        with pytest.raises(ValueError) as e:
            make_reference(m.trajectory, m.source_file)
        shown = str(tmp_path / name) if not name.startswith("/") else name
        assert str(e.value).startswith(f"{os.path.normpath(shown)}: cannot read") and reason in str(e.value)
    with pytest.raises(ConfigError, match=r"trajectory\.csv_file: contains a NUL"):      # was "embedded null byte"
        load_mission(_mission(tmp_path, '  kind: csv\n  csv_file: "a\\0b.csv"\n'))


def test_a_reference_file_point_far_out_names_the_file(tmp_path):
    ref = tmp_path / "far.csv"
    ref.write_text("t_s,north_m,east_m\n0,0,0\n10,30000,0\n")
    with pytest.raises(ValueError, match=r"far.csv: point 2 \(30000, 0\) m is more than 20 km"):
        read_csv_reference(ref)


def test_the_speed_profile_brakes_before_a_bend_as_the_stepwise_recursion_does():
    # the profile is computed in one pass now (a 38 km path took 7.6 s stepwise); it must still satisfy the
    # recursion it replaced, sample by sample
    path = PathReference([[0, 0], [3, 0], [3, 3]], 0.7, max_lateral_mps2=0.3, decel_mps2=0.2)
    v, s = path.profile_mps, path.s
    limit = np.minimum(0.7, np.sqrt(0.3 / np.maximum(np.abs(path.kappa), 1e-9)))
    expected = np.minimum(limit[:-1] ** 2, v[1:] ** 2 + 0.4 * np.diff(s))
    assert np.allclose(v[:-1] ** 2, expected, atol=1e-9) and v[-1] == pytest.approx(limit[-1])
    assert v.min() < 0.5 and v[0] == pytest.approx(0.7)              # it slows for the bend, cruises before
