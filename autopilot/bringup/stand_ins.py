"""What `autopilot bench ... --emulated` runs against instead of hardware: an emulated LSM9DS1 and the still or
moving board it sits on (bench imu), an emulated L76K on a pseudo-terminal (bench gps), a pigpiod stand-in (bench
esc). The CLI (the composition root) registers the simulator's; the bring-up tools never import the simulator
themselves."""
from __future__ import annotations

from typing import Callable, Dict

_FACTORIES: Dict[str, Callable] = {}


def register(name: str, factory: Callable) -> None:
    """Make `make(name, ...)` call `factory(...)`: "lsm9ds1" (imu_cfg, mag_cfg, seed) -> an emulated chip with
    smbus(), update(t_s, truth), advance(dt_s) and t_s; "truth" (the fields of a plant's true state) -> what
    `update` takes; "l76k" (gnss_cfg, seed) -> a running emulated receiver with `path` (the serial device to
    open), `baud` and close(); "pigpiod" () -> a running pigpiod stand-in with `host`, `port`, `state` (the
    GPIO state it keeps) and close()."""
    _FACTORIES[name] = factory


def make(name: str, *args, **kwargs):
    """The registered stand-in `name` built from the arguments; RuntimeError when none is registered (the
    tool was started some other way than through `autopilot bench`)."""
    factory = _FACTORIES.get(name)
    if factory is None:
        raise RuntimeError(f"no emulated {name} is registered: run this through `autopilot bench ... --emulated`")
    return factory(*args, **kwargs)
