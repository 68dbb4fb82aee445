"""Named simulated boats of another structure than the built-in Fossen plant (`autopilot sim --plant-model NAME`).

  mmg-catamaran   a 2.0 m, 55 kg twin-hull USV with two fixed propellers, MMG-type hull forces and a propeller law
                  on shaft speed (hil/sim/mmg_plant.py, parameters in hil/sim/plants/mmg_catamaran.yaml)

The autopilot keeps its own vessel file (its model, thrust maps and sensors); the plant only needs the vessel
file's thrusters to match its propellers (two fixed thrusters, port then starboard).
"""
from __future__ import annotations

from pathlib import Path
from typing import Tuple

from autopilot.vocab.config import VesselConfig
from hil.sim.environment import EnvironmentConfig
from hil.sim.mmg_params import load_mmg_params, plant_file
from hil.sim.mmg_plant import MmgCatamaranPlant

PLANT_MODELS = ("mmg-catamaran",)


def check_plant_model(name: str, vessel: VesselConfig) -> None:
    """ValueError naming the problem when `name` is not a known plant model or the vessel file's thrusters
    cannot drive it (another count than its propellers, or azimuth pods)."""
    if name not in PLANT_MODELS:
        raise ValueError(f"plant model {name!r}: use one of {', '.join(PLANT_MODELS)}")
    params = load_mmg_params(plant_file(name))
    n = len(params.propellers.y_m)
    if len(vessel.thrusters) != n or any(t.azimuth is not None for t in vessel.thrusters):
        raise ValueError(f"plant model {name}: has {n} fixed propellers (port, starboard); vessel "
                         f"{vessel.name!r} has {len(vessel.thrusters)} thrusters"
                         + (" with azimuth pods" if any(t.azimuth is not None for t in vessel.thrusters) else ""))


def build_plant_model(name: str, vessel: VesselConfig, env: EnvironmentConfig, seed: int, north_m: float,
                      east_m: float, heading_rad: float, force: Tuple[float, float] = (0.0, 0.0)
                      ) -> MmgCatamaranPlant:
    """The named plant at the launch pose [m, m, rad], driven through `vessel`'s thrust maps, with a constant
    external force (newtons >= 0, toward deg clockwise from north). ValueError as check_plant_model;
    autopilot.vocab.schema.ConfigError when its parameter file is wrong."""
    from drivers.thrust_map import make_thrust_maps
    check_plant_model(name, vessel)
    params = load_mmg_params(plant_file(name))
    return MmgCatamaranPlant(params, make_thrust_maps(vessel), env, seed, north_m, east_m, heading_rad,
                             force_n=force[0], force_toward_deg=force[1])


def describe_plant_model(name: str) -> dict:
    """For the run report: which boat the simulator flew."""
    path = plant_file(name)
    root = Path(__file__).resolve().parents[2]
    return {"model": name, "source": str(path.relative_to(root)) if path.is_relative_to(root) else str(path)}
