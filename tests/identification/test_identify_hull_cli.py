"""`autopilot identify hull`: simulated identification runs (FOKA in MANUAL through the real drivers, logged at
50 Hz) in, a report, a vessel file that loads and says it was identified, and refusals out."""
from __future__ import annotations

import json

import numpy as np
import pytest

from autopilot.cli.main import main
from autopilot.files.check import check_config
from autopilot.vocab.config import CONFIG_DIR, load_vessel
from estimation.identification.hull_least_squares import zeta_of_hull
from hil.sim.identification_flight import fly_identification

pytestmark = pytest.mark.slow   # the quick tier leaves this file out (scripts/test.sh --quick)

FOKA_FILE = CONFIG_DIR / "vessels" / "foka.yaml"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    base = tmp_path_factory.mktemp("ident")
    vessel = load_vessel(str(FOKA_FILE))
    return vessel, [fly_identification(vessel, base, seed=s) for s in (1, 2)]


def test_identify_writes_a_report_and_a_vessel_file_that_loads_as_identified(runs, tmp_path, capsys):
    vessel, (fit_run, val_run) = runs
    out, rep, png = tmp_path / "foka_identified.yaml", tmp_path / "r.json", tmp_path / "v.png"
    rc = main(["identify", "hull", str(fit_run), str(val_run), "--vessel", str(FOKA_FILE), "--velocities", "truth",
               "--out", str(out), "--report", str(rep), "--plot", str(png)])
    text = capsys.readouterr().out
    assert rc == 0, text
    assert "validation, model run free" in text and "derived gains" in text
    report = json.loads(rep.read_text())
    truth = zeta_of_hull(vessel.hull)
    fitted = np.array([report["parameters"][f"z{i}"]["value"] for i in range(1, 10)])
    err = np.abs(fitted - truth) / truth
    assert np.all(err[:3] < 0.03) and np.all(err < 0.10), np.round(100 * err, 1)
    assert report["runs_validate"] == [val_run.name] and not report["validated_on_fit_data"]
    for k in ("u", "r", "x", "y", "psi"):
        assert report["validation"][val_run.name][k]["r2"] >= 0.99, k
    assert png.stat().st_size > 10_000
    new = load_vessel(str(out))
    for key, value in report["vessel_keys"].items():
        assert getattr(new.hull, key) == pytest.approx(value, rel=1e-5), key
    assert new.hull.mass_kg == vessel.hull.mass_kg and "autopilot identify" in new.validated_against
    assert new.control.heading.omega_n_rps == report["gains"]["heading_omega_n_rps"]
    checked = check_config(out)
    assert checked.ok, checked.problems
    assert "never validated" not in "\n".join(checked.notes)
    assert "never validated" in "\n".join(check_config(FOKA_FILE).notes)


def test_without_the_gain_check_the_file_gets_the_derived_gains_unflown_and_says_so(runs, tmp_path, capsys):
    """--no-gain-check: nothing is flown, the report has no gain check, the file carries the derived gains and
    its header says they were not flown on the identified model."""
    vessel, (fit_run, val_run) = runs
    out, rep = tmp_path / "foka_identified.yaml", tmp_path / "r.json"
    rc = main(["identify", "hull", str(fit_run), str(val_run), "--vessel", str(FOKA_FILE), "--velocities", "truth",
               "--out", str(out), "--report", str(rep), "--no-gain-check"])
    text = capsys.readouterr().out
    assert rc == 0, text
    report = json.loads(rep.read_text())
    assert report["gain_check"] is None, report["gain_check"]
    assert "not flown on it (no gain check: --no-gain-check)" in out.read_text()
    new = load_vessel(str(out))
    assert new.control.heading.omega_n_rps == report["gains"]["heading_omega_n_rps"]
    assert check_config(out).ok


def test_from_the_boats_own_sensors_the_model_still_explains_the_held_back_run(runs, tmp_path, capsys):
    """The default velocities (GNSS + accelerometer smoother) and output error (forced: by default the method
    that validates better is kept, least squares on these runs): the yaw terms come out
    close to the boat's and the model reproduces the validation run's yaw rate and heading over 10 s horizons.
    Not over the whole run flown open loop: FOKA is directionally unstable, and on these runs even the true
    parameters score heading R^2 -0.40 that way (least squares' scored 0.9999 with z4 +24 %, z7 -65 %)."""
    vessel, (fit_run, val_run) = runs
    rep = tmp_path / "r.json"
    assert main(["identify", "hull", str(fit_run), str(val_run), "--vessel", str(FOKA_FILE), "--method", "oe",
                 "--report", str(rep)]) == 0
    text = capsys.readouterr().out
    report = json.loads(rep.read_text())
    assert report["velocities"] == "smoother" and report["method"] == "oe"
    # the user is told which parameter the run pins least well, and how well
    half = {n: (p["ci95"][1] - p["ci95"][0]) / 2 / abs(p["value"]) * 100 for n, p in report["parameters"].items()
            if not p["fixed"]}
    worst = max(half, key=half.get)
    assert f"least well pinned: {worst}, known to +/-{half[worst]:.0f} %" in text, text
    truth = zeta_of_hull(vessel.hull)
    fitted = np.array([report["parameters"][f"z{i}"]["value"] for i in range(1, 10)])
    err = np.abs(fitted - truth) / truth
    assert np.all(err[[0, 2, 7, 8]] < 0.05), np.round(100 * err, 1)     # surge mass, yaw inertia, yaw damping
    quality = report["validation_10s"][val_run.name]
    assert quality["r"]["r2"] >= 0.98 and quality["psi"]["r2"] >= 0.99 and quality["u"]["r2"] >= 0.95, quality


def test_a_run_that_never_turns_is_refused_with_the_yaw_terms_named(runs, tmp_path, capsys):
    vessel, _ = runs
    straight = fly_identification(vessel, tmp_path, seed=3, yaw_scale=0.0)
    for method in ("ls", "oe"):
        rc = main(["identify", "hull", str(straight), "--vessel", str(FOKA_FILE), "--velocities", "truth",
                   "--method", method])
        err = capsys.readouterr().err
        assert rc == 1, method
        assert "refused" in err and "does not excite" in err and "z3" in err and "z8" in err, method
        assert "Traceback" not in err


def test_bad_input_is_a_clear_error(runs, tmp_path, capsys):
    vessel, (fit_run, _) = runs
    assert main(["identify", "hull", str(tmp_path / "nope"), "--vessel", str(FOKA_FILE)]) == 2
    assert "no such run directory" in capsys.readouterr().err
    assert main(["identify", "hull", str(fit_run), "--vessel", str(FOKA_FILE), "--out", str(FOKA_FILE)]) == 2
    assert "the vessel file itself" in capsys.readouterr().err
    assert main(["identify", "hull", str(fit_run), "--vessel", str(tmp_path / "missing.yaml")]) == 2
    assert "missing.yaml" in capsys.readouterr().err
    assert main(["identify", "hull", str(tmp_path), "--vessel", str(FOKA_FILE)]) == 1
    assert "not a run directory" in capsys.readouterr().err


def test_the_identification_missions_vessel_file_always_passes_check(tmp_path, capsys):
    """FOKA's own plant on the identification mission, seed 1, logged at the default 10 Hz: the output-error
    fit used to give z1 = 14.88 under the 15 kg hull, and the file said x_udot 0.12, which `autopilot check`
    refuses. Bounded inside the fit, the file loads whatever the run gave."""
    mission = CONFIG_DIR / "missions" / "identify.yaml"
    assert main(["sim", str(mission), "--vessel", "foka", "--seed", "1", "--log", str(tmp_path / "runs")]) == 0
    run_dir = next((tmp_path / "runs").iterdir())
    out = tmp_path / "foka_identified.yaml"
    capsys.readouterr()
    rc = main(["identify", "hull", str(run_dir), "--vessel", str(FOKA_FILE), "--method", "oe", "--out", str(out)])
    text = capsys.readouterr().out
    assert rc == 0, text
    checked = check_config(out)
    assert checked.ok, checked.problems
    new = load_vessel(str(out))
    for key in ("x_udot", "y_vdot", "n_rdot", "x_u", "x_uu", "y_v", "y_vv", "n_r", "n_rr"):
        assert getattr(new.hull, key) <= 0.0, key
