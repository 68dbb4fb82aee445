"""The running boat's status on a local unix socket, for `autopilot status` (with ROS 2 or without).

`autopilot command` needs ROS; a boat run with `ros: off` (autopilot/runtime/boat_process.py run_boat_plain)
has no other way to be asked how it is. The boat process serves a read-only endpoint:

- `status_socket_path(cfg)`: where it is. The boat config's `status_socket` (relative to the config file's
  folder), else $AUTOPILOT_STATUS_SOCKET, else /run/autopilot/status.sock when /run/autopilot exists (the
  systemd unit's RuntimeDirectory), else autopilot-<hash of the config file's path>.sock in the temporary
  folder, so `autopilot run --config F` and `autopilot status --config F` on one machine meet.
- `StatusEndpoint(path, snapshot).start()`: every client that connects gets one JSON object (what `snapshot()`
  returns) and a newline, then the connection is closed. Nothing a client sends is read: the endpoint cannot
  command the boat. The socket is made mode 0660 (the service's user and group).
- `boat_status(runtime, ...)`: the snapshot of a BoatRuntime: mode, armed, mission progress, each component's
  health, the pre-arm checks that would refuse arming now, the operator link and MAVLink links, the loop's
  recent cycle cost and timing (CycleStats.summary, ms; None before a cycle), the run log's directory.
- `read_status(path)`: the client side; StatusUnavailable (its message says why) when no boat answers.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import socket
import tempfile
import threading
from pathlib import Path
from typing import Callable, Optional

RUN_DIRECTORY = Path("/run/autopilot")
SOCKET_ENV = "AUTOPILOT_STATUS_SOCKET"


class StatusUnavailable(RuntimeError):
    """No running boat answers on the status socket (the message says what was tried)."""


def status_socket_path(cfg) -> Path:
    """Where the boat of boat config `cfg` serves its status; see the module docstring."""
    own = getattr(cfg, "status_socket", "")
    if own:
        p = Path(own)
        if not p.is_absolute() and cfg.source_file:
            p = Path(cfg.source_file).resolve().parent / p
        return p
    if os.environ.get(SOCKET_ENV):
        return Path(os.environ[SOCKET_ENV])
    if RUN_DIRECTORY.is_dir():
        return RUN_DIRECTORY / "status.sock"
    key = str(Path(cfg.source_file).resolve()) if cfg.source_file else "boat"
    digest = hashlib.sha256(key.encode()).hexdigest()[:12]
    return Path(tempfile.gettempdir()) / f"autopilot-{digest}.sock"


class StatusEndpoint:
    """Serves `snapshot()` as one JSON line to each client of the unix socket at `path` (see the module
    docstring). `start()` replaces a socket file left by a boat that died, refuses (OSError) one a running boat
    still answers on; `close()` removes the socket."""

    def __init__(self, path, snapshot: Callable[[], dict], on_error: Optional[Callable[[str], object]] = None):
        self.path = Path(path)
        self.snapshot = snapshot
        self.on_error = on_error
        self._server: Optional[socket.socket] = None
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None

    def start(self) -> "StatusEndpoint":
        if self.path.exists() or self.path.is_symlink():
            if _answers(self.path):
                raise OSError(f"{self.path}: another boat process already serves its status here")
            self.path.unlink()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            server.bind(str(self.path))
            os.chmod(self.path, 0o660)
            server.listen(8)
            server.settimeout(0.5)
        except OSError:
            server.close()
            raise
        self._server = server
        self._thread = threading.Thread(target=self._serve, name="status-endpoint", daemon=True)
        self._thread.start()
        return self

    def _serve(self) -> None:
        assert self._server is not None
        while not self._stop.is_set():
            try:
                conn, _ = self._server.accept()
            except socket.timeout:
                continue
            except OSError:
                return                        # closed
            with conn:
                try:
                    text = json.dumps(self.snapshot(), default=str)
                except Exception as e:        # noqa: BLE001 - a status that cannot be made is itself the answer
                    text = json.dumps({"error": f"status unavailable: {e!r}"})
                    if self.on_error is not None:
                        self.on_error(f"status endpoint: {e!r}")
                try:
                    conn.settimeout(2.0)
                    conn.sendall(text.encode() + b"\n")
                except OSError:
                    pass                      # the client went away

    def close(self) -> None:
        self._stop.set()
        if self._server is not None:
            self._server.close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=2.0)
        try:
            self.path.unlink()
        except OSError:
            pass


def _answers(path: Path) -> bool:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(1.0)
    try:
        s.connect(str(path))
        return True
    except OSError:
        return False
    finally:
        s.close()


def read_status(path, timeout_s: float = 3.0) -> dict:
    """The status a running boat serves at `path`; StatusUnavailable when none answers in time."""
    path = Path(path)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout_s)
    try:
        try:
            s.connect(str(path))
        except FileNotFoundError:
            raise StatusUnavailable(f"{path}: no status socket: is the boat running (`autopilot run --config "
                                    f"...`)?") from None
        except OSError as e:
            raise StatusUnavailable(f"{path}: no boat answers ({e.strerror or e})") from None
        chunks = []
        while True:
            try:
                chunk = s.recv(65536)
            except OSError as e:
                raise StatusUnavailable(f"{path}: the boat did not answer ({e})") from None
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        s.close()
    try:
        data = json.loads(b"".join(chunks).decode())
    except ValueError:
        raise StatusUnavailable(f"{path}: the answer is not a status (not JSON)") from None
    if not isinstance(data, dict):
        raise StatusUnavailable(f"{path}: the answer is not a status")
    return data


def boat_status(runtime, *, backend: str, ros: bool, log_dir: Optional[str], mavlink=None,
                sensor_timeout_s: float = 2.0) -> dict:
    """What `autopilot status` shows of a BoatRuntime (take its lock around the call)."""
    from autopilot.runtime.health import LEVEL_NAMES, component_statuses
    now = runtime.now_s()
    ap = runtime.autopilot
    out = dict(runtime.state_dict())
    out["vessel"] = runtime.vessel.name
    out["backend"] = backend
    out["ros"] = ros
    out["pid"] = os.getpid()
    out["core_time_s"] = round(now, 3)
    out["health"] = [{"component": name, "level": LEVEL_NAMES.get(level, str(level)), "message": message}
                     for name, level, message, _hw, _values in component_statuses(runtime, now, sensor_timeout_s)]
    try:
        out["prearm_failures"] = [str(r) for r in ap.prearm_failures(now)]
    except Exception as e:            # noqa: BLE001 - the check failing is itself worth showing
        out["prearm_failures"] = [f"pre-arm checks could not run: {e!r}"]
    failsafe = getattr(ap, "failsafe", None)
    last = getattr(failsafe, "last_heartbeat_s", None)
    active = getattr(failsafe, "active", {}) or {}
    out["link"] = {"operator_heartbeat_age_s": None if last is None else round(now - last, 1),
                   "link_loss_failsafe": "link-loss" in active,
                   "mavlink": list(getattr(mavlink, "link_names", []) or [])}
    out["failsafes_active"] = sorted(active)
    stats = runtime.stats.summary()             # the last cycles' cost and timing [ms], NaN before any
    out["loop"] = {k: (round(v, 3) if isinstance(v, float) and math.isfinite(v) else None if isinstance(v, float)
                       else v) for k, v in stats.items()}
    out["log_dir"] = log_dir
    return out
