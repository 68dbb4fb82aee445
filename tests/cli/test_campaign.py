"""Campaigns: the same table from one worker, all cores and a local Ray instance; no finished run lost to a dead
worker or a Ctrl-C; a resume does only the rest."""
from __future__ import annotations

import json

import pytest

from autopilot.vocab.config import ConfigError
from hil.sim.campaign import RESULTS, expand, load_campaign, read_rows, run_campaign, run_one
from hil.sim.campaign_report import compare, format_report
from tests.support.campaign_helpers import KILLED, dies_once
from tests.support.paths import REPO

pytestmark = pytest.mark.slow   # the quick tier leaves this file out (scripts/test.sh --quick)

TINY = """name: tiny
missions: [straight_line]
vessels: [wamv]
mismatch: ["", "x_u=2,iz=0.5"]
seeds: 1-2
duration_s: 25
"""
VOLATILE = ("wall_s",)


def _spec(tmp_path, text=TINY):
    path = tmp_path / "tiny.yaml"
    path.write_text(text)
    return load_campaign(path)


def _table(rows):
    return sorted((json.dumps({k: v for k, v in r.items() if k not in VOLATILE}, sort_keys=True) for r in rows))


def test_one_worker_two_workers_and_ray_give_the_same_table(tmp_path):
    spec, base = _spec(tmp_path)
    runs = expand(spec, base)
    assert len(runs) == 4 and len({r["id"] for r in runs}) == 4
    one = run_campaign(runs, tmp_path / "one", workers=1)
    two = run_campaign(runs, tmp_path / "two", workers=2)
    ray = run_campaign(runs, tmp_path / "ray", ray_address="auto")
    assert all("error" not in r and r["pos_err_rms_m"] < r["gps_err_rms_m"] for r in one), \
        [r.get("error") for r in one]
    assert _table(one) == _table(two) == _table(ray)
    assert _table(read_rows(tmp_path / "ray")) == _table(one)        # what is on disk is what came back
    text = format_report(one)
    assert "mismatch" in text and "x_u=2,iz=0.5" in text


@pytest.mark.parametrize("engine", ["pool", "ray"])
def test_a_worker_killed_mid_campaign_loses_no_run(tmp_path, monkeypatch, engine):
    monkeypatch.setenv("CAMPAIGN_TEST_DIR", str(tmp_path))        # inherited by the pool's and Ray's workers
    spec, base = _spec(tmp_path, TINY.replace("seeds: 1-2", "seeds: 1-4"))
    runs = expand(spec, base)
    kw = dict(workers=2) if engine == "pool" else dict(ray_address="auto")
    rows = run_campaign(runs, tmp_path / "out", fn=dies_once, **kw)
    assert (tmp_path / KILLED).exists()
    assert sorted(r["id"] for r in rows) == sorted(r["id"] for r in runs)
    assert len(read_rows(tmp_path / "out")) == len(runs)


def _counting(run):
    return dict(run, complete=True, xte_rms_m=1.0)


def test_a_resume_after_ctrl_c_does_only_the_rest(tmp_path):
    spec, base = _spec(tmp_path, TINY.replace("seeds: 1-2", "seeds: 1-5"))
    runs = expand(spec, base)

    def interrupt(row, done, total):
        if done == 3:
            raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        run_campaign(runs, tmp_path / "out", workers=1, fn=_counting, on_row=interrupt)
    kept = read_rows(tmp_path / "out")
    assert len(kept) == 3
    seen = []
    rows = run_campaign(runs, tmp_path / "out", workers=1, fn=_counting,
                        on_row=lambda row, done, total: seen.append(row["id"]))
    assert len(seen) == len(runs) - 3 and not set(seen) & {r["id"] for r in kept}
    assert len(rows) == len(runs) == len(read_rows(tmp_path / "out"))


def test_a_line_cut_by_a_crash_is_skipped_and_done_again(tmp_path):
    spec, base = _spec(tmp_path)
    runs = expand(spec, base)
    out = tmp_path / "out"
    out.mkdir()
    (out / RESULTS).write_text(json.dumps(_counting(runs[0])) + "\n" + '{"id": "' + runs[1]["id"][:5])
    assert len(read_rows(out)) == 1
    assert len(run_campaign(runs, out, workers=1, fn=_counting)) == len(runs)


@pytest.mark.parametrize("edit, key", [
    (("mismatch: [\"\", \"x_u=2,iz=0.5\"]", "mismatch: [\"x_q=2\"]"), "mismatch[0]"),
    (("missions: [straight_line]", "missions: [nowhere.yaml]"), "missions[0]"),
    (("seeds: 1-2", "seeds: one-two"), "seeds"),
    (("duration_s: 25", "duration_s: 25\nfaults: [\"gps-loss@10\"]"), "devices"),
    (("duration_s: 25", "duration_s: 25\nwind: [[3]]"), "wind[0]"),
    (("duration_s: 25", "duration_s: 25\nparams: [\"\", \"HDG_OMGEA=2\"]"), "params[1]"),
    (("duration_s: 25", "duration_s: 25\nparams: [\"HDG_OMEGA=fast\"]"), "params[0]"),
    (("duration_s: 25", "duration_s: 25\ngps_rate_hz: [50]"), "gps_rate_hz"),
])
def test_a_bad_campaign_file_names_the_key(tmp_path, edit, key):
    with pytest.raises(ConfigError) as e:
        _spec(tmp_path, TINY.replace(*edit))
    assert key in str(e.value)


def test_station_keeping_is_reported_for_loiter_and_two_campaigns_compare(tmp_path):
    spec, base = _spec(tmp_path, TINY.replace("missions: [straight_line]", "missions: [loiter]")
                       .replace("duration_s: 25", "loiter_s: 40"))
    row = run_one(expand(spec, base)[0])
    assert "error" not in row and row["complete"]
    assert 0.0 <= row["within_2m_frac"] <= 1.0 and row["p95_m"] < 5.0 and row["vrx_score"] > 0.0
    a = [dict(_counting(r), xte_rms_m=1.0 + 0.01 * r["seed"]) for r in expand(*_spec(tmp_path, TINY.replace(
        "seeds: 1-2", "seeds: 1-8")))]
    b = [dict(r, xte_rms_m=r["xte_rms_m"] + 1.0) for r in a]
    text = compare(a, b)
    assert "worse" in text and "better" not in text


def test_the_report_plots_boxes_per_group_and_a_heat_map_of_two_swept_factors(tmp_path):
    from hil.sim.campaign_report import plot
    spec, base = _spec(tmp_path, TINY.replace("missions: [straight_line]", "missions: [straight_line, demo]"))
    rows = [dict(_counting(r), xte_rms_m=0.1 * r["seed"]) for r in expand(spec, base)]
    plot(rows, tmp_path / "box.png")
    assert (tmp_path / "box.png").stat().st_size > 1000 and (tmp_path / "box-heatmap.png").stat().st_size > 1000


def test_the_benchmark_campaign_files_load_and_expand():
    from hil.sim.campaign import load_campaign as load
    files = sorted((REPO / "benchmarks" / "campaigns").glob("*.yaml"))
    assert len(files) >= 4
    sizes = {f.stem: len(expand(*load(f))) for f in files}
    assert sizes["demo_1000"] == 1000 and all(n > 0 for n in sizes.values()), sizes


def test_gains_and_the_gnss_rate_are_factors_of_the_matrix(tmp_path):
    plain = expand(*_spec(tmp_path))
    swept = expand(*_spec(tmp_path, TINY.replace("seeds: 1-2", "seeds: [1]\ngps_rate_hz: [0, 10]\n"
                                                 "params: [\"\", \"nav_ilos_sigma=0\"]")))
    assert len(swept) == 2 * 2 * 2
    # a run that sweeps neither keeps the id it had before the factors existed (old tables still resume)
    assert {r["id"] for r in plain} >= {r["id"] for r in swept if "params" not in r and "gps_rate_hz" not in r}
    los = next(r for r in swept if r.get("params") == {"NAV_ILOS_SIGMA": 0.0} and r.get("gps_rate_hz") == 10.0
               and r["mismatch"] == "")
    ilos = next(r for r in swept if "params" not in r and r.get("gps_rate_hz") == 10.0 and r["mismatch"] == "")
    a, b = run_one(los), run_one(ilos)
    assert "error" not in a and "error" not in b and a["xte_rms_m"] != b["xte_rms_m"]
    text = format_report([dict(_counting(r), xte_rms_m=1.0) for r in swept])
    assert "NAV_ILOS_SIGMA=0" in text and "gps_rate_hz" in text
    bad = run_one(dict(los, params={"HDG_OMEGA": -1.0}))      # out of range: refused like a ground station's
    assert "HDG_OMEGA" in bad["error"]
