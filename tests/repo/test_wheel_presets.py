"""An installed wheel (as install.sh and a Pi's pip install make it, not this checkout's editable install) carries
the vessel, mission and Gazebo presets: `vessel: foka` and `autopilot sim --vessel foka` resolve on a Pi."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile

import pytest

from tests.support.paths import REPO


def _source_copy(dest):
    """What a wheel is built from, copied (the presets link kept as a link), so the build leaves nothing in
    the checkout."""
    dest.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(REPO / name, dest / name)
    for name in ("autopilot", "drivers", "estimation", "hil", "config"):
        shutil.copytree(REPO / name, dest / name, symlinks=True,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return dest


@pytest.mark.slow
def test_a_built_wheel_installed_elsewhere_resolves_every_preset(tmp_path):
    wheels = tmp_path / "wheels"
    src = _source_copy(tmp_path / "src")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w",
                    str(wheels), str(src)], check=True, capture_output=True, timeout=300)
    wheel = next(wheels.glob("*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    for preset in sorted((REPO / "config").rglob("*.yaml")):
        assert f"autopilot/presets/{preset.relative_to(REPO / 'config')}" in names, preset
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target), str(wheel)],
                   check=True, capture_output=True, timeout=300)
    probe = ("import autopilot, autopilot.vocab.config as c; "
             "print(autopilot.__file__); print(c.load_vessel('foka').name); "
             "print(c.load_mission(c.CONFIG_DIR / 'missions' / 'demo.yaml').name)")
    r = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, PYTHONPATH=str(target)))
    assert r.returncode == 0, r.stderr
    where, vessel, mission = r.stdout.split()[:3]
    assert where.startswith(str(target))          # the installed copy, not this checkout
    assert vessel == "foka" and mission == "demo-lake-survey"
