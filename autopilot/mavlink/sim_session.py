"""MAVLink for a run of the built-in simulator: `autopilot sim MISSION --mavlink udpout:127.0.0.1:14550
--realtime` lets a ground station on the laptop watch and command the simulated boat.

Pass `on_cycle` as hil.sim.runner.SimOptions.on_cycle (with auto_arm and the simulated operator heartbeat
off: the ground station arms, picks modes and sends the heartbeat). At the first cycle it builds the
OperatorDesk and starts the MavlinkServer for the run's autopilot; every cycle it runs the calls the server
handed over. `close()` stops the server.
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Optional

from autopilot.mavlink.server import LoopCalls, MavlinkServer

if TYPE_CHECKING:
    from autopilot.commands.desk import OperatorDesk


class SimMavlink:
    def __init__(self, cfg, vessel, *, signing_key: Optional[bytes] = None, upload_dir: Optional[Path] = None,
                 params=None, on_event=None, on_start=None):
        """cfg: boat_config.MavlinkConfig, or None for no MAVLink server (the desk and the loop's calls are still
        made, for `on_start`). params: an autopilot.files.tunables.ParamStore or None. on_event(text, is_error):
        where the desk's answers are printed. on_start(desk, calls): called once, at the first cycle, in the
        loop's thread (the web page starts there)."""
        self.cfg = cfg
        self.vessel = vessel
        self.signing_key = signing_key
        self.upload_dir = upload_dir
        self.params = params
        self.on_event = on_event
        self.on_start = on_start
        self.calls = LoopCalls()
        self.server: Optional[MavlinkServer] = None
        self.desk: Optional[OperatorDesk] = None
        self.t_s = 0.0

    def on_cycle(self, t_s: float, autopilot, truth) -> None:
        self.t_s = t_s
        if self.desk is None:
            self._start(autopilot)
        self.calls.run_pending()

    def _start(self, autopilot) -> None:
        from autopilot.commands.desk import OperatorDesk
        self.desk = OperatorDesk(autopilot, self.vessel, lambda: self.t_s, on_event=self.on_event,
                                 params=self.params)
        if self.cfg is not None:
            self.server = MavlinkServer(self.cfg, self.desk, self.calls, signing_key=self.signing_key,
                                        upload_dir=self.upload_dir).start()
        if self.on_start is not None:
            self.on_start(self.desk, self.calls)

    def close(self) -> None:
        if self.server is not None:
            self.server.stop()
        self.calls.cancel_all()
