"""The composition root's one wiring of the simulator into the rims: the built-in plant as the boat runner's
`backend: sim`, and the emulated LSM9DS1 the bring-up tools run against with `--emulated`. Nothing is imported
from hil/ until a stand-in is built."""
from __future__ import annotations


def _sim_backend(*args, **kwargs):
    from hil.sim.backend import SimBackend
    return SimBackend(*args, **kwargs)


def _lsm9ds1(*args, **kwargs):
    from hil.devices.lsm9ds1_emulator import Lsm9ds1Emulator
    return Lsm9ds1Emulator(*args, **kwargs)


def _truth(*args, **kwargs):
    from hil.sim.plant import Truth
    return Truth(*args, **kwargs)


def register_all() -> None:
    """Register every simulated stand-in with the rim that uses it (idempotent)."""
    from autopilot.bringup import stand_ins
    from autopilot.runtime.backends import register_simulated
    register_simulated("sim", _sim_backend)
    stand_ins.register("lsm9ds1", _lsm9ds1)
    stand_ins.register("truth", _truth)
