"""The two pictures of a run, `autopilot plot` and `autopilot sim --plot`: thrusters named as in the vessel
file, one heading convention (compass degrees in [0, 360), wrapped the same way), and a legend for the shading."""
from __future__ import annotations

import math

import numpy as np
import pytest
import yaml
from matplotlib.figure import Figure

from autopilot.cli.main import main
from tests.support.paths import REPO

FOKA = REPO / "config" / "vessels" / "foka.yaml"

# launched heading west, toward a waypoint 40 m west: compass 270 deg, which a -180..180 plot drew as -90
WEST = """name: west
anchor: {lat_deg: 51.11, lon_deg: 17.06}
start: {point: {north_m: 0, east_m: 0}, heading_deg: 270}
waypoints: [{north_m: 0, east_m: -5}, {north_m: 0, east_m: -60}]
cruise_speed_mps: 0.8
acceptance_radius_m: 2.0
on_complete: hold
"""


@pytest.fixture
def figures(monkeypatch):
    """Every matplotlib figure saved while the test runs."""
    saved = []
    real = Figure.savefig

    def spy(self, *args, **kwargs):
        saved.append(self)
        return real(self, *args, **kwargs)
    monkeypatch.setattr(Figure, "savefig", spy)
    return saved


@pytest.fixture(scope="module")
def west_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("west")
    data = yaml.safe_load(FOKA.read_text())
    data["thrusters"][0]["name"], data["thrusters"][1]["name"] = "port_u5", "starboard_u5"
    vessel = tmp / "named.yaml"
    vessel.write_text(yaml.safe_dump(data, sort_keys=False))
    mission = tmp / "west.yaml"
    mission.write_text(WEST)
    return tmp, vessel, mission


def _axis(fig, ylabel_start):
    (ax,) = [a for a in fig.axes if a.get_ylabel().startswith(ylabel_start)]
    return ax


def _legend_labels(ax):
    legend = ax.get_legend()
    return [t.get_text() for t in legend.get_texts()] if legend is not None else []


def _heading_values(ax):
    ys = np.concatenate([np.asarray(line.get_ydata(), dtype=float) for line in ax.get_lines()
                         if line.get_label().startswith("heading")])
    return ys[np.isfinite(ys)]


@pytest.mark.slow
def test_sim_plot_and_autopilot_plot_name_thrusters_and_draw_headings_alike(west_run, figures, tmp_path):
    tmp, vessel, mission = west_run
    log = tmp_path / "log"
    assert main(["sim", str(mission), "--vessel", str(vessel), "--devices", "typed", "--duration", "25",
                 "--plot", str(tmp_path / "sim.png"), "--log", str(log)]) == 0
    (run,) = list(log.iterdir())
    assert main(["plot", str(run), "-o", str(tmp_path / "plot.png")]) == 0
    sim_fig, plot_fig = figures

    for fig, thrust_label, heading_label in ((sim_fig, "thrust command", "heading"), (plot_fig, "thrust", "heading")):
        labels = _legend_labels(_axis(fig, thrust_label))
        assert labels == ["port_u5", "starboard_u5"], labels
        heading = _axis(fig, heading_label)
        assert heading.get_ylim() == (0.0, 360.0)
        assert list(heading.get_yticks()) == [0, 90, 180, 270, 360]
        values = _heading_values(heading)
        assert len(values) and values.min() >= 0.0 and values.max() < 360.0
        assert abs(np.median(values) - 270.0) < 30.0          # westward: 270, not -90

    key = _legend_labels(_axis(plot_fig, "cross-track"))
    assert "HOLD" in key or "AUTO" in key, key             # the shading is explained


def test_a_run_without_a_readable_vessel_file_falls_back_to_thruster_numbers(west_run, figures, tmp_path):
    tmp, vessel, mission = west_run
    log = tmp_path / "log"
    assert main(["sim", str(mission), "--vessel", str(vessel), "--devices", "typed", "--duration", "5",
                 "--log", str(log)]) == 0
    (run,) = list(log.iterdir())
    (run / "named.yaml").write_text("not: a vessel\n")
    assert main(["plot", str(run), "-o", str(tmp_path / "plot.png")]) == 0
    assert _legend_labels(_axis(figures[-1], "thrust")) == ["thruster 0", "thruster 1"]


def test_compass_wrapping_puts_a_gap_where_the_heading_crosses_north():
    from autopilot.vocab.angles import compass_deg_for_plot
    out = compass_deg_for_plot(np.array([350.0, 359.0, 361.0, 5.0, -90.0]))
    assert out[0] == 350.0 and out[1] == 359.0 and math.isnan(out[2]) and out[3] == 5.0
    assert math.isnan(out[4])                              # 5 -> 270 jumps more than 180: a gap as well
    assert compass_deg_for_plot(np.array([-90.0]))[0] == 270.0
