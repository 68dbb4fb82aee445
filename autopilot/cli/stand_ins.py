"""The composition root's one wiring of the simulator into the rims: the built-in plant as the boat runner's
`backend: sim`, and the emulated devices the bring-up tools run against with `--emulated` (an LSM9DS1, an L76K
on a pseudo-terminal, a pigpiod). Nothing is imported from hil/ until a stand-in is built."""
from __future__ import annotations

# where the emulated L76K says the boat is: still, on the demo mission's lake (config/missions/demo.yaml)
EMULATED_GNSS_POSITION = (51.1101, 17.0605)


def _sim_backend(*args, **kwargs):
    from hil.sim.backend import SimBackend
    return SimBackend(*args, **kwargs)


def _lsm9ds1(*args, **kwargs):
    from hil.devices.lsm9ds1_emulator import Lsm9ds1Emulator
    return Lsm9ds1Emulator(*args, **kwargs)


def _truth(*args, **kwargs):
    from hil.sim.plant import Truth
    return Truth(*args, **kwargs)


class _EmulatedL76K:
    """An emulated L76K (hil/devices/gnss_device.py) on a pseudo-terminal, run on wall time in a thread: `path`
    is the serial device to open; `close()` stops the module and removes the terminal."""

    def __init__(self, gnss_cfg, seed: int = 1):
        import datetime

        from hil.devices.gnss_device import DeviceThread, EmulatedL76K
        from hil.devices.gnss_emitter import GnssTruth, L76KEmitter
        from hil.devices.serial_ports import PtyPair
        self._pty = PtyPair()
        self.path = self._pty.path
        self.baud = gnss_cfg.baud
        emitter = L76KEmitter(gnss_cfg, seed=seed, utc_start=datetime.datetime.now(datetime.timezone.utc))
        lat, lon = EMULATED_GNSS_POSITION
        device = EmulatedL76K(self._pty, emitter, baud=gnss_cfg.baud, rate_hz=gnss_cfg.rate_hz)
        self._thread = DeviceThread(device, lambda t: GnssTruth(lat_deg=lat, lon_deg=lon)).start()

    def close(self) -> None:
        self._thread.stop()
        self._pty.unplug()


class _EmulatedPigpiod:
    """A pigpiod stand-in (hil/devices/fake_pigpiod.py) serving pigpio's socket protocol on 127.0.0.1: `host`
    and `port` to connect to; `close()` stops it."""

    def __init__(self):
        from hil.devices.fake_pigpiod import FakePigpiod
        self._daemon = FakePigpiod().start()
        self.host, self.port = self._daemon.host, self._daemon.port
        self.state = self._daemon.state

    def close(self) -> None:
        self._daemon.stop()


def register_all() -> None:
    """Register every simulated stand-in with the rim that uses it (idempotent)."""
    from autopilot.bringup import stand_ins
    from autopilot.runtime.backends import register_simulated
    register_simulated("sim", _sim_backend)
    stand_ins.register("lsm9ds1", _lsm9ds1)
    stand_ins.register("truth", _truth)
    stand_ins.register("l76k", _EmulatedL76K)
    stand_ins.register("pigpiod", _EmulatedPigpiod)
