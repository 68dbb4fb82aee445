"""The layers, checked from the source: every import (deferred ones too) runs down the stack, the core never
imports the simulator, and no modules import each other in a circle.

    vocab        autopilot/vocab: types, angles, geodesy, the config schema          imports nothing of ours
    drivers      drivers/: L76K, LSM9DS1, ESC backends, thrust maps                  vocab
    estimation   estimation/: the EKF, heading and magnetometer, identification fits  vocab, drivers
    core         the vehicle, guidance, control, modes, safety, commands, files, calibration
    rims         cli, ros, mavlink, web, runlog, runtime, bringup, replay, identification
    simulator    hil/: beside the rims; imports the core and the run log, and (hil/ros only) the ROS rim

Only the CLI, the composition root, may import the simulator (it picks a simulated backend); the other rims
are handed one through a registry they own.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.support.import_graph import Arrow, arrows, cycles
from tests.support.paths import REPO

LAYERS = (
    ("vocab", ("autopilot.vocab",)),
    ("drivers", ("drivers",)),
    ("estimation", ("estimation",)),
    ("core", ("autopilot.vehicle", "autopilot.interfaces", "autopilot.guidance", "autopilot.control",
              "autopilot.modes", "autopilot.safety", "autopilot.commands", "autopilot.files",
              "autopilot.calibration")),
    ("rims", ("autopilot.cli", "autopilot.ros", "autopilot.mavlink", "autopilot.runlog", "autopilot.runtime",
              "autopilot.bringup", "autopilot.replay", "autopilot.identification", "autopilot.web")),
)
SIMULATOR = "hil"
CORE_DEPTH = 3                         # vocab .. core: never the simulator, never a rim


def _within(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def place(module: str):
    """(depth, layer name) of a module; the simulator is ('sim', 'simulator'); the bare `autopilot` package
    (an empty __init__) is vocabulary."""
    if _within(module, SIMULATOR):
        return "sim", "simulator"
    if module == "autopilot":
        return 0, "vocab"
    for depth, (name, prefixes) in enumerate(LAYERS):
        if any(_within(module, p) for p in prefixes):
            return depth, name
    raise AssertionError(f"{module} belongs to no layer: add its package to LAYERS")


def broken(arrow: Arrow) -> str:
    """Why `arrow` breaks the layering ('' when it does not)."""
    (src_depth, src), (dst_depth, dst) = place(arrow.source), place(arrow.target)
    if src_depth == "sim":
        if dst_depth == "sim" or dst_depth <= CORE_DEPTH or _within(arrow.target, "autopilot.runlog"):
            return ""
        if _within(arrow.target, "autopilot.ros") and _within(arrow.source, "hil.ros"):
            return ""
        return f"{arrow}: the simulator uses the core and the run log, and only hil/ros the ROS rim"
    if dst_depth == "sim":
        if _within(arrow.source, "autopilot.cli"):
            return ""
        return f"{arrow}: only the CLI (the composition root) picks a simulated backend"
    if dst_depth > src_depth:
        return f"{arrow}: {src} imports {dst}, a layer above it"
    return ""


def problems(root: Path) -> list:
    found = arrows(root)
    out = [why for why in map(broken, found) if why]
    out += ["import cycle: " + " <-> ".join(c) for c in cycles(found)]
    return out


@pytest.mark.slow
def test_every_import_runs_down_the_layers_and_none_go_in_a_circle():
    assert problems(REPO) == []


def test_every_module_has_a_layer():
    from tests.support.import_graph import modules
    for name in modules(REPO):
        place(name)


def _copy(tmp_path: Path) -> Path:
    for pkg in ("autopilot", "drivers", "estimation", "hil"):
        shutil.copytree(REPO / pkg, tmp_path / pkg, ignore=shutil.ignore_patterns("__pycache__", "*.csv"))
    return tmp_path


@pytest.mark.slow
def test_a_deferred_simulator_import_in_the_core_is_caught(tmp_path):
    root = _copy(tmp_path)
    failsafe = root / "autopilot" / "safety" / "failsafe.py"
    failsafe.write_text(failsafe.read_text() + "\n\ndef _peek():\n    from hil.sim.runner import run_sim\n"
                        "    return run_sim\n")
    found = problems(root)
    assert any("autopilot.safety.failsafe" in p and "hil.sim.runner" in p for p in found), found


@pytest.mark.slow
def test_a_driver_importing_the_vehicle_is_caught(tmp_path):
    root = _copy(tmp_path)
    tm = root / "drivers" / "thrust_map.py"
    tm.write_text(tm.read_text() + "\nfrom autopilot.vehicle import Autopilot  # noqa\n")
    found = problems(root)
    assert any("drivers.thrust_map" in p and "autopilot.vehicle" in p and "layer above" in p for p in found), found


@pytest.mark.slow
def test_a_cycle_hidden_in_deferred_imports_is_caught(tmp_path):
    root = _copy(tmp_path)
    angles = root / "autopilot" / "vocab" / "angles.py"
    angles.write_text(
        angles.read_text() + "\n\ndef _late():\n    from autopilot.vocab import types\n    return types\n"
    )
    types = root / "autopilot" / "vocab" / "types.py"
    types.write_text(types.read_text() + "\n\ndef _later():\n    from autopilot.vocab import angles\n"
                     "    return angles\n")
    assert "import cycle: autopilot.vocab.angles <-> autopilot.vocab.types" in problems(root)
