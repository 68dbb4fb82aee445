"""The MAVLink server: one thread serving every configured link, so ground stations see and command the boat.

It never touches the autopilot from its own thread. Everything that reads or changes it (a telemetry snapshot,
an operator command) is handed to the thread that steps the autopilot through `LoopCalls`, which that thread
drains between cycles (`run_pending`, a bounded number per cycle): a flood of messages costs the control loop
at most that many short calls a cycle, and a stalled link never holds a lock the loop needs. The one piece of
work done here rather than in the loop is an upload's check (OperatorDesk.prepare_mission, safe from any
thread): a large fence takes a while, and only the swap that follows runs in the loop.

Commands go to the OperatorDesk (autopilot/commands/desk.py), the same one the ROS node uses:
- COMMAND_LONG / COMMAND_INT: COMPONENT_ARM_DISARM (the pre-arm checks decide; refusals come back as
  COMMAND_ACK DENIED and each reason as a STATUSTEXT), DO_SET_MODE and SET_MODE (Rover numbers, modes.py),
  NAV_RETURN_TO_LAUNCH, MISSION_START (AUTO; a first or last item other than 0 is DENIED, as Rover does),
  DO_SET_HOME, DO_SET_MISSION_CURRENT, SET_MESSAGE_INTERVAL, REQUEST_MESSAGE, REQUEST_AUTOPILOT_CAPABILITIES,
  DO_REPOSITION (lat/lon, param1 speed [m/s] when > 0: a GUIDED position target; outside GUIDED only with
  param2's MAV_DO_REPOSITION_FLAGS_CHANGE_MODE, which switches to GUIDED first, as Rover does),
  DO_CHANGE_SPEED (param2 [m/s]: the cruise speed flown from now on, not kept across a restart),
  DO_MOTOR_TEST (ArduPilot's params: motor instance from 1, throttle type percent, throttle value, timeout
  [s]; the bench ESC test: disarmed, at most 20 %, then neutral); anything else is answered UNSUPPORTED;
- MISSION_SET_CURRENT; MANUAL_CONTROL (x: throttle, r (else y): steering, each -1000..1000) and
  RC_CHANNELS_OVERRIDE (channel 1 steering, channel 3 throttle, 1100..1900 us about 1500) drive MANUAL (in
  VELOCITY, Rover's ACRO, the same sticks ask for a speed and a turn rate), whose 1 s timeout returns the
  thrusters to neutral when they stop; SET_POSITION_TARGET_LOCAL_NED in a body frame (vx, yaw_rate) drives
  VELOCITY; in GUIDED (Rover's 15) SET_POSITION_TARGET_LOCAL_NED and SET_POSITION_TARGET_GLOBAL_INT are its
  position and velocity targets, read as Rover reads them (targets.py); outside those two modes they are refused,
  said once per sender and reason; a ground station's HEARTBEAT feeds the operator-link failsafe;
- the mission protocol (missions.py; MISSION_CLEAR_ALL leaves nothing to fly: AUTO refused, HOLD if in AUTO)
  and PARAM_REQUEST_LIST / PARAM_REQUEST_READ / PARAM_SET (the desk's parameter store,
  autopilot/files/tunables.py; a refused value re-sent within a second is answered without another text).

REQUEST_MESSAGE sends a streamed message once (ACCEPTED), or AUTOPILOT_VERSION (the package version packed as
ArduPilot packs it, CAPABILITIES); any other id is UNSUPPORTED. MISSION_ITEM_REACHED goes out for each waypoint
reached, numbered as MISSION_CURRENT numbers them (the ground station's item seq).

With a signing key, the links sign what they send and every command that arrives unsigned (or with a bad
signature) is refused with the reason, except disarm and HOLD: stopping the boat never waits for a key. A signed
frame is checked against one replay table for all links (guard_signatures), so a recording replayed on another
link is refused. Reads (downloads, parameter reads, REQUEST_MESSAGE) stay open, as telemetry is not secret, but
what would let a stranger change what the owner gets needs the key too: REQUEST_DATA_STREAM and
SET_MESSAGE_INTERVAL. (ArduPilot with signing on drops everything unsigned; we keep reads open so a second screen
without the key can watch.) The reads that make the boat send a lot, a parameter list and a mission download's
count, are rate-limited per sender and, for unsigned senders, per link (HEAVY_READS): a flood of them cannot
starve the telemetry. Without a key, anyone who reaches a link commands the boat, and the server says so at start.

Each link's input passes a budget of bytes and frames a second before it is parsed (budget.py): a flood on one
port is left unread beyond it and said once per 10 s, and costs the control loop nothing more.

Telemetry streams at the boat config's rates (telemetry.py), per link: a rate change asked for on one link
(REQUEST_DATA_STREAM, SET_MESSAGE_INTERVAL) changes that link's rates only, and REQUEST_MESSAGE answers on the
link it came from. HOME_POSITION and GPS_GLOBAL_ORIGIN also go out
as soon as they change. Every event of the autopilot (mode changes, failsafes, warnings) and every answer of the
desk goes out as a STATUSTEXT, local file paths cut to their base names. Malformed input (garbage, bad CRC,
truncated frames) is counted and dropped; no input stops the thread, and a failing link is reopened by mavutil.
"""
from __future__ import annotations

import hashlib
import logging
import math
import os
import queue
import re
import select
import stat
import threading
import time
from collections import deque
from concurrent.futures import Future
from pathlib import Path
from typing import Callable, Dict, List, Optional

from autopilot.commands.limits import clip
from autopilot.files import mission_files as mission_io
from autopilot.files.link_specs import parse_link
from autopilot.mavlink import missions as M
from autopilot.mavlink import targets as TG
from autopilot.mavlink import telemetry as T
from autopilot.mavlink.budget import LinkBudget, SenderLimits, budget_input
from autopilot.mavlink.links import open_link
from autopilot.mavlink.modes import describe, mode_name
from autopilot.mavlink.pymav import mavlink as S
from autopilot.mavlink.snapshot import SnapshotTaker

log = logging.getLogger(__name__)

MAV_COMP_ID_ALL = 0
MAX_UPLOADS = 8                 # uploads in progress at once (from different ground stations)
LINK_RETRY_S = 5.0              # a link that did not open is tried again this often
UNSIGNED_TEXTS_PER_S = 5        # unsigned refusals said per link and second, whatever their kinds
REFUSAL_TEXT_EVERY_S = 1.0      # repeated refusals of one kind are reported once a second, not per message
MAX_MESSAGES_PER_PASS = 200     # per link, so one flooding link cannot starve the others
# heavy reads, per sender: (requests a second, burst). A parameter list is every parameter sent back; a mission
# download's MISSION_COUNT is cheap, but a ground station asks for three (mission, fence, rally) at once
HEAVY_READS = {"params": (0.5, 3.0), "mission": (2.0, 6.0)}
UNSIGNED_HEAVY_PER_LINK = (1.0, 6.0)      # all unsigned senders on one link together, per kind
PARAMS_FRESH_S = 0.5            # parameter reads answer from values at most this old
FORCE_ARM_MAGIC = 21196         # COMPONENT_ARM_DISARM param2: "force"; never skips our pre-arm checks
PREARM_EVERY_S = 1.0            # the pre-arm checks are evaluated for SYS_STATUS this often
# AUTOPILOT_VERSION's capabilities: only what this server handles. Missions as MISSION_ITEM_INT and
# MISSION_ITEM, fences and rally points (kept and downloaded, not flown: RTL goes home), COMMAND_INT,
# PARAM_SET as floats, MAVLink 2, SET_POSITION_TARGET_LOCAL_NED and _GLOBAL_INT (GUIDED's positions and
# velocities, as Rover takes them); no FTP, no terrain.
CAPABILITIES = (S.MAV_PROTOCOL_CAPABILITY_MISSION_FLOAT | S.MAV_PROTOCOL_CAPABILITY_MISSION_INT
                | S.MAV_PROTOCOL_CAPABILITY_COMMAND_INT | S.MAV_PROTOCOL_CAPABILITY_PARAM_FLOAT
                | S.MAV_PROTOCOL_CAPABILITY_SET_POSITION_TARGET_LOCAL_NED
                | S.MAV_PROTOCOL_CAPABILITY_SET_POSITION_TARGET_GLOBAL_INT
                | S.MAV_PROTOCOL_CAPABILITY_MAVLINK2 | S.MAV_PROTOCOL_CAPABILITY_MISSION_FENCE
                | S.MAV_PROTOCOL_CAPABILITY_MISSION_RALLY)
_RELEASE = re.compile(r"^(\d+)(?:\.(\d+))?(?:\.(\d+))?(.*)$")
_LOCAL_PATH = re.compile(r"(?<![\w:/.~-])~?/(?!dev/)(?:[^\s/'\"(),;:]+/)+([^\s/'\"(),;:]+)")


def flight_sw_version(version: Optional[str] = None) -> int:
    """AUTOPILOT_VERSION.flight_sw_version as ArduPilot packs it: major << 24 | minor << 16 | patch << 8 | type
    (FIRMWARE_VERSION_TYPE: DEV for .devN, ALPHA, BETA, RC for aN, bN, rcN, else OFFICIAL), from the installed
    package's version (`version`: for a test)."""
    if version is None:
        try:
            from importlib.metadata import PackageNotFoundError
            from importlib.metadata import version as package_version
            version = package_version("boat-autopilot")
        except PackageNotFoundError:
            return 0
    m = _RELEASE.match(version.strip())
    if m is None:
        return 0
    major, minor, patch = (min(255, int(x or 0)) for x in m.group(1, 2, 3))
    rest = m.group(4).lower()
    kind = (S.FIRMWARE_VERSION_TYPE_DEV if "dev" in rest or "+" in rest else
            S.FIRMWARE_VERSION_TYPE_RC if "rc" in rest else
            S.FIRMWARE_VERSION_TYPE_BETA if "b" in rest else
            S.FIRMWARE_VERSION_TYPE_ALPHA if "a" in rest else S.FIRMWARE_VERSION_TYPE_OFFICIAL)
    return major << 24 | minor << 16 | patch << 8 | kind


def without_local_paths(text: str) -> str:
    """`text` with each absolute or home-relative file path (/home/x/boat/foka.yaml) cut to its base name
    (foka.yaml); device paths (/dev/ttyAMA0: a link's name) and one-part paths stay."""
    return _LOCAL_PATH.sub(lambda m: m.group(1), text)


class MavlinkError(RuntimeError):
    """The server cannot start: no link opened, or the signing key is unusable."""


class LoopCalls:
    """Work for the thread that steps the autopilot, run by it between cycles (`run_pending`).

    `submit(fn, key)` queues fn and returns a Future; a call with a `key` replaces a still-pending call with the
    same key (a stream of MANUAL_CONTROL keeps only its newest). `call(fn)` waits for the result."""

    def __init__(self, max_per_cycle: int = 32):
        self.max_per_cycle = max_per_cycle
        self._lock = threading.Lock()
        self._queue: deque = deque()
        self._keyed: Dict[str, list] = {}

    def submit(self, fn: Callable, key: Optional[str] = None) -> Future:
        fut: Future = Future()
        entry = [fn, fut]
        with self._lock:
            if key is not None:
                old = self._keyed.get(key)
                if old is not None and not old[1].done():
                    old[0] = None                        # superseded: skipped when its turn comes
                    old[1].cancel()
                self._keyed[key] = entry
            self._queue.append(entry)
        return fut

    def call(self, fn: Callable, timeout_s: float = 2.0):
        """fn's result, run by the loop; TimeoutError when the loop does not run it in time (stopped, stalled)."""
        return self.submit(fn).result(timeout=timeout_s)

    def run_pending(self) -> int:
        """Run up to max_per_cycle queued calls in the calling (loop) thread; returns how many ran."""
        done = 0
        while done < self.max_per_cycle:
            with self._lock:
                if not self._queue:
                    break
                fn, fut = self._queue.popleft()
            if fn is None or not fut.set_running_or_notify_cancel():
                continue
            try:
                fut.set_result(fn())
            except BaseException as e:          # handed back to the caller, never into the loop
                fut.set_exception(e)
            done += 1
        return done

    def cancel_all(self) -> None:
        with self._lock:
            while self._queue:
                _, fut = self._queue.popleft()
                fut.cancel()


def signing_key_from_text(text: str) -> bytes:
    """The 32-byte MAVLink 2 key of a key file's text: 64 hex digits are the key itself; anything else is a
    passphrase, hashed with SHA-256 as MAVProxy's `signing key` and QGC's signing settings do."""
    text = text.strip()
    if len(text) == 64:
        try:
            return bytes.fromhex(text)
        except ValueError:
            pass
    if len(text) < 8 or not text.isprintable() or not text.isascii():
        raise ValueError("a signing passphrase is at least 8 printable ASCII characters on one line")
    return hashlib.sha256(text.encode("ascii")).digest()


def guard_signatures(mav, streams: Dict[tuple, int]) -> None:
    """Make `mav` (a pymavlink MAVLink parser with signing set up, one per link) check signed frames against
    `streams`, the replay state every link of the server shares, and advance it only on frames that verify.

    The rule (the MAVLink 2 signing spec's, applied across links): a stream is (link id, system, component), the
    link id being the byte inside the signed frame, not the boat's port it came in on; a signed frame is taken
    only if its timestamp is newer than the newest verified one of its stream, whichever of the boat's links
    that came through. pymavlink keeps one table per connection, so a frame recorded on the radio and replayed
    on the Wi-Fi link looked like a new stream there and was obeyed; with one table it is as old on every link.
    A replay cannot move to another stream: the link id, system, component and timestamp are all under the
    signature. An exact copy of a frame already seen has a timestamp equal to its stream's newest, so no set
    of seen signatures is needed. Keying by (system, component) alone would refuse a station that signs two
    links with their own clocks (the spec gives each link its own id for that). What this cannot refuse is a
    frame the boat never received being relayed later, as long as nothing newer from its stream arrived first:
    that is the genuine frame, late. A stream never seen is taken within a minute of the link's clock
    (pymavlink's rule), so an old recording of a new stream is refused too.

    pymavlink also stores the frame's timestamp before it checks the signature, so one forged frame dated ahead
    would make the real sender's frames look old (and so unsigned) until its clock caught up; here a frame
    that does not verify leaves the table as it was, as the spec says."""
    mav.signing.stream_timestamps = streams
    check = mav.check_signature
    missing = object()

    def verified_only(msgbuf, src_system: int, src_component: int) -> bool:
        stream = (msgbuf[-13], src_system, src_component)
        before = streams.get(stream, missing)
        if check(msgbuf, src_system, src_component):
            return True
        if before is missing:
            streams.pop(stream, None)
        else:
            streams[stream] = before        # type: ignore[assignment]
        return False

    mav.check_signature = verified_only


def read_signing_key(path) -> bytes:
    """The MAVLink 2 signing key in `path` (a passphrase, or 64 hex digits). MavlinkError if missing,
    malformed or readable by other users."""
    p = Path(path)
    try:
        st = os.stat(p)
    except OSError as e:
        raise MavlinkError(f"{p}: no MAVLink signing key ({e.strerror}); create one with "
                           f"`autopilot keys mavlink --config FILE`") from None
    if not stat.S_ISREG(st.st_mode) or st.st_size > 4096:
        raise MavlinkError(f"{p}: not a signing key file")
    if st.st_mode & 0o077:
        raise MavlinkError(f"{p}: permissions {stat.S_IMODE(st.st_mode):04o} let other users read the signing "
                           f"key: chmod 600 {p}")
    try:
        text = p.read_bytes().decode("ascii")
    except (OSError, UnicodeDecodeError):
        raise MavlinkError(f"{p}: not a readable ASCII key file") from None
    try:
        return signing_key_from_text(text)
    except ValueError as e:
        raise MavlinkError(f"{p}: {e}") from None


class MavlinkServer:
    """Serves `cfg.links` (boat config `mavlink:`) for the autopilot behind `desk`; see the module docstring.

    `calls`: the LoopCalls the autopilot's loop drains. `signing_key`: 32 bytes, or None (unsigned).
    `upload_dir`: where accepted uploads are written (the run log directory), or None."""

    def __init__(self, cfg, desk, calls: LoopCalls, *, signing_key: Optional[bytes] = None,
                 upload_dir: Optional[Path] = None, wall: Callable[[], float] = time.monotonic):
        if S.WIRE_PROTOCOL_VERSION != "2.0":
            raise MavlinkError("pymavlink was imported for MAVLink 1 before the server: import "
                               "autopilot.mavlink.pymav first, or set MAVLINK20=1")
        self.cfg = cfg
        self.desk = desk
        self.calls = calls
        self.key = signing_key
        self.wall = wall
        self.store = M.MissionStore(upload_dir)
        self.taker = SnapshotTaker(desk.autopilot)
        self.links: List = []
        self.link_names: List[str] = []
        self.budgets: List[LinkBudget] = []      # per link: bytes and frames it may cost a second (budget.py)
        self.stats = {"received": 0, "bad_data": 0, "handled_errors": 0, "unsigned_refused": 0, "sent": 0,
                      "commands": 0, "reads_limited": 0}
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._texts: "queue.Queue[tuple[int, str]]" = queue.Queue(maxsize=200)
        self._text_id = 0
        self._uploads: Dict[tuple, M.Upload] = {}
        self._items_cache: Dict[int, tuple] = {}     # mission type -> (mission, store version, items)
        # per link: each stream's rate [Hz], when it is next due, and the messages asked for once (REQUEST_MESSAGE)
        self._rates: List[Dict[str, float]] = []
        self._next_due: List[Dict[str, float]] = []
        self._once: List[set] = []
        # heavy reads (a parameter list, a mission download's count): per sender, and per link for the unsigned
        self._heavy_limits = {kind: SenderLimits(rate, burst) for kind, (rate, burst) in HEAVY_READS.items()}
        self._unsigned_heavy = SenderLimits(UNSIGNED_HEAVY_PER_LINK[0], UNSIGNED_HEAVY_PER_LINK[1])
        self._params_cache: tuple = (-math.inf, [])   # (wall time taken, [(name, value)])
        self._target_refused: set = set()        # (partner, reason) of SET_POSITION_TARGET refusals already said
        self._last_refusal: Dict[str, float] = {}       # kind of unsigned message -> wall time last said
        self._link_refusals: Dict[int, tuple] = {}      # link -> (second's start, said in it, left out since)
        self._param_refused: Dict[tuple, float] = {}   # (name, value) -> wall time it was last refused
        self._prearm_ok: Optional[bool] = None
        self._next_prearm = 0.0
        self._closed_links: List = []             # (LinkSpec, wall time of the next try): reopened when they can be
        self._mission_seqs: tuple = (None, ([], 0))   # (key, (waypoint item seqs, items without home))
        self._told: Dict[str, object] = {"home_position": None, "gps_global_origin": None}   # as last sent
        self._sign_streams: Dict[tuple, int] = {}   # (link id, system, component) -> newest verified timestamp
        desk.add_listener(self._on_desk_event)

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> "MavlinkServer":
        """Open every link (one that fails is reported and skipped) and start serving. MavlinkError if none
        opens."""
        problems = []
        for spec_text in self.cfg.links:
            spec = parse_link(spec_text)
            problem = self._open(spec)
            if problem:
                problems.append(problem)
                self._closed_links.append((spec, self.wall() + LINK_RETRY_S))
        for p in problems:
            self.desk.log(f"MAVLink link not opened: {p} (tried again every {LINK_RETRY_S:g} s)", True)
        if not self.links:
            raise MavlinkError("no MAVLink link could be opened: " + "; ".join(problems))
        if self.key is None:
            self.desk.log("MAVLink without signing: anyone who reaches " + ", ".join(self.link_names)
                          + " can command the boat (set mavlink.signing_key_file)", True)
        self._thread = threading.Thread(target=self._run, name="mavlink", daemon=True)
        self._thread.start()
        return self

    def _open(self, spec) -> str:
        """Open one link and serve it; '' on success, else what went wrong."""
        try:
            conn = open_link(spec, self.cfg.system_id, self.cfg.component_id)
        except Exception as e:                 # mavutil raises bare Exceptions for ports and devices
            return f"{spec}: {e}"
        if self.key is not None:
            conn.setup_signing(self.key, sign_outgoing=True, allow_unsigned_callback=lambda mav, msg_id: True)
            guard_signatures(conn.mav, self._sign_streams)
        budget = LinkBudget(str(spec), self.wall)
        budget_input(conn, budget)
        self.links.append(conn)
        self.link_names.append(str(spec))
        self.budgets.append(budget)
        self._rates.append({name: float(getattr(self.cfg.streams, name)) for name in T.MESSAGE_IDS})
        self._next_due.append({name: 0.0 for name in T.MESSAGE_IDS})
        self._once.append(set())
        return ""

    def _retry_links(self, now: float) -> None:
        """A radio plugged in after start (or a port freed) is served from then on."""
        for item in list(self._closed_links):
            spec, when = item
            if now < when:
                continue
            self._closed_links.remove(item)
            if self._open(spec):
                self._closed_links.append((spec, now + LINK_RETRY_S))
            else:
                self.calls.submit(lambda: self.desk.log(f"MAVLink link {spec} opened"))

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=3.0)
        for conn in self.links:
            try:
                conn.close()
            except Exception:
                pass

    def _on_desk_event(self, text: str, error: bool) -> None:
        self.statustext(text, S.MAV_SEVERITY_WARNING if error else S.MAV_SEVERITY_INFO)

    def statustext(self, text: str, severity: int = S.MAV_SEVERITY_INFO) -> None:
        """Queue a STATUSTEXT for every link (dropped when 200 are already waiting), local file paths shortened to
        their base names: the console keeps the full text, a ground station has no use for this machine's
        directory layout."""
        try:
            self._texts.put_nowait((severity, without_local_paths(text)))
        except queue.Full:
            pass

    # ------------------------------------------------------------------ the thread
    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self._wait_for_input(self._time_to_next_telemetry())
                for i, conn in enumerate(self.links):
                    if self.budgets[i].open():
                        self._read_link(i, conn)
                for budget in self.budgets:
                    report = budget.flood_report()
                    if report is not None:
                        self.desk.log(report, True)
                now = self.wall()
                self._telemetry(now)
                self._upload_timeouts(now)
                self._send_texts()
                if self._closed_links:
                    self._retry_links(now)
            except Exception as e:             # a bug in one message's handling must not end the server
                self.stats["handled_errors"] += 1
                log.exception("MAVLink server: %r", e)
                time.sleep(0.05)

    def _time_to_next_telemetry(self) -> float:
        now = self.wall()
        due = min((t for rates, dues in zip(self._rates, self._next_due) for name, t in dues.items()
                   if rates[name] > 0), default=now + 0.1)
        return max(0.0, min(0.05, due - now))

    def _wait_for_input(self, timeout_s: float) -> None:
        """Wait for input on a link that may be read (one whose budget is spent is left out until it refills,
        so a flood neither wakes the thread nor is read), at most timeout_s."""
        fds = []
        pollable = True
        for conn, budget in zip(self.links, self.budgets):
            if not budget.open():
                timeout_s = min(timeout_s, budget.wait_s())
                continue
            fd = getattr(conn, "fd", None)
            if isinstance(fd, int) and fd >= 0:
                fds.append(fd)
            else:
                pollable = False
        if not fds or not pollable:
            time.sleep(min(timeout_s, 0.01))
            return
        try:
            select.select(fds, [], [], timeout_s)
        except (OSError, ValueError):
            time.sleep(min(timeout_s, 0.01))

    def _read_link(self, index: int, conn) -> None:
        budget = self.budgets[index]
        for _ in range(MAX_MESSAGES_PER_PASS):
            try:
                msg = conn.recv_msg()
            except Exception:                  # a truncated or hostile frame pymavlink could not take
                self.stats["bad_data"] += 1
                continue
            if msg is None:
                return
            self.stats["received"] += 1
            spent = not budget.frame()
            kind = msg.get_type()
            if kind in ("BAD_DATA", "UNKNOWN") or kind.startswith("UNKNOWN"):
                self.stats["bad_data"] += 1
            elif msg.get_srcSystem() != self.cfg.system_id or msg.get_srcComponent() != self.cfg.component_id:
                try:                           # (else our own messages echoed back)
                    self._handle(index, conn, msg)
                except Exception as e:
                    self.stats["handled_errors"] += 1
                    log.warning("MAVLink %s from %d/%d: %r", kind, msg.get_srcSystem(), msg.get_srcComponent(), e)
            if spent:
                return

    # ------------------------------------------------------------------ dispatch
    def _for_us(self, msg) -> bool:
        ts = getattr(msg, "target_system", 0)
        tc = getattr(msg, "target_component", MAV_COMP_ID_ALL)
        return ts in (0, self.cfg.system_id) and tc in (MAV_COMP_ID_ALL, self.cfg.component_id)

    def _signed(self, msg) -> bool:
        return self.key is None or bool(getattr(msg, "_signed", False))

    def _origin(self, index: int, msg) -> str:
        tag = "" if self.key is None else (" signed" if self._signed(msg) else " unsigned")
        return f"GCS {msg.get_srcSystem()}/{msg.get_srcComponent()} on {self.link_names[index]}{tag}"

    def _handle(self, index: int, conn, msg) -> None:
        kind = msg.get_type()
        partner = (index, msg.get_srcSystem(), msg.get_srcComponent())
        if kind == "HEARTBEAT":
            if msg.type == S.MAV_TYPE_GCS:
                if self._signed(msg):
                    self.calls.submit(lambda: self.desk.heartbeat(self._origin(index, msg)), key=f"hb{partner}")
            return
        if not self._for_us(msg):
            return
        handler = getattr(self, f"_on_{kind.lower()}", None)
        if handler is not None:
            handler(index, conn, msg, partner)

    def _refuse_unsigned(self, conn, what: str) -> None:
        """Counted always; said once a second per kind, and at most UNSIGNED_TEXTS_PER_S a second per link
        however the refused messages differ, the next one said with how many were left out: a flood of unsigned
        traffic is a few lines a second."""
        self.stats["unsigned_refused"] += 1
        now = self.wall()
        start, said, left_out = self._link_refusals.get(id(conn), (-math.inf, 0, 0))
        if now - start >= 1.0:
            start, said = now, 0
        if now - self._last_refusal.get(what, -math.inf) < REFUSAL_TEXT_EVERY_S or said >= UNSIGNED_TEXTS_PER_S:
            self._link_refusals[id(conn)] = (start, said, left_out + 1)
            return
        if len(self._last_refusal) > 256:
            self._last_refusal.clear()
        self._last_refusal[what] = now
        self._link_refusals[id(conn)] = (start, said + 1, 0)
        more = f" ({left_out} more unsigned refused before it, not said)" if left_out else ""
        self.desk.log(f"refused: unsigned {clip(what, 80)}: this boat requires MAVLink 2 signing{more}", True)

    def _run_desk(self, fn, timeout_s: float = 3.0):
        """Run a desk call in the loop and return its Answer (a refusal when the loop does not take it)."""
        from autopilot.commands.desk import Answer
        try:
            return self.calls.call(fn, timeout_s)
        except Exception as e:               # TimeoutError (loop stopped or stalled), or the call's own error
            return Answer(False, f"refused: the autopilot did not take the command ({type(e).__name__})")

    # ------------------------------------------------------------------ commands
    def _ack(self, conn, msg, command: int, result: int) -> None:
        self._send(conn, conn.mav.command_ack_encode(command, result, 0, 0, msg.get_srcSystem(),
                                                     msg.get_srcComponent()))

    def _on_command_long(self, index, conn, msg, partner) -> None:
        self._command(index, conn, msg, msg.command, [msg.param1, msg.param2, msg.param3, msg.param4,
                                                      msg.param5, msg.param6, msg.param7], False)

    def _on_command_int(self, index, conn, msg, partner) -> None:
        self._command(index, conn, msg, msg.command, [msg.param1, msg.param2, msg.param3, msg.param4,
                                                      msg.x / 1e7, msg.y / 1e7, msg.z], True)

    def _command(self, index, conn, msg, command: int, p: list, is_int: bool) -> None:
        self.stats["commands"] += 1
        origin = self._origin(index, msg)
        desk = self.desk
        stopping = ((command == S.MAV_CMD_COMPONENT_ARM_DISARM and p[0] == 0.0)
                    or (command == S.MAV_CMD_DO_SET_MODE and int(p[1]) == 4))
        # one-shot reads stay open; SET_MESSAGE_INTERVAL changes what the boat streams, so it needs the key
        reads = command in (S.MAV_CMD_REQUEST_MESSAGE, S.MAV_CMD_REQUEST_AUTOPILOT_CAPABILITIES,
                            S.MAV_CMD_REQUEST_PROTOCOL_VERSION, S.MAV_CMD_GET_HOME_POSITION)
        if not self._signed(msg) and not stopping and not reads:
            self._refuse_unsigned(conn, f"command {command}")
            self._ack(conn, msg, command, S.MAV_RESULT_DENIED)
            return
        result = S.MAV_RESULT_ACCEPTED
        if command == S.MAV_CMD_COMPONENT_ARM_DISARM:
            if p[0] == 1.0:
                answer = self._run_desk(lambda: desk.arm(origin))
                if not answer.ok:
                    self._prearm_texts(answer)
                result = S.MAV_RESULT_ACCEPTED if answer.ok else S.MAV_RESULT_DENIED
            elif p[0] == 0.0:
                self._run_desk(lambda: desk.disarm("disarm from the ground station", origin))
            else:
                result = S.MAV_RESULT_DENIED
        elif command == S.MAV_CMD_DO_SET_MODE:
            result = self._set_mode(int(p[1]) if int(p[0]) & S.MAV_MODE_FLAG_CUSTOM_MODE_ENABLED else -1, origin)
        elif command == S.MAV_CMD_NAV_RETURN_TO_LAUNCH:
            result = self._set_mode(11, origin)
        elif command == S.MAV_CMD_MISSION_START:
            if p[0] != 0.0 or p[1] != 0.0:            # first and last item: a part of the mission, as Rover refuses
                desk.log(f"refused: MISSION_START of items {p[0]!r} to {p[1]!r}: only the whole mission (0, 0) "
                         f"(from {origin})", True)
                result = S.MAV_RESULT_DENIED
            else:
                result = self._set_mode(10, origin)
        elif command == S.MAV_CMD_DO_SET_HOME:
            result = self._set_home(p, origin)
        elif command == S.MAV_CMD_DO_SET_MISSION_CURRENT:
            result = self._set_current(int(p[0]), origin)
        elif command == S.MAV_CMD_SET_MESSAGE_INTERVAL:
            result = self._set_interval(index, int(p[0]), p[1]) if math.isfinite(p[0]) else S.MAV_RESULT_DENIED
        elif command in (S.MAV_CMD_REQUEST_MESSAGE, S.MAV_CMD_GET_HOME_POSITION):
            msg_id = (S.MAVLINK_MSG_ID_HOME_POSITION if command == S.MAV_CMD_GET_HOME_POSITION
                      else int(p[0]) if math.isfinite(p[0]) else -1)
            result = self._request_message(index, conn, msg_id)
        elif command == S.MAV_CMD_REQUEST_AUTOPILOT_CAPABILITIES:
            result = self._request_message(index, conn, S.MAVLINK_MSG_ID_AUTOPILOT_VERSION)
        elif command == S.MAV_CMD_DO_REPOSITION:
            result = self._reposition(p, msg.frame if is_int else None, origin)
        elif command == S.MAV_CMD_DO_CHANGE_SPEED:
            result = self._change_speed(p, origin)
        elif command == S.MAV_CMD_DO_MOTOR_TEST:
            result = self._motor_test(p, origin)
        else:
            result = S.MAV_RESULT_UNSUPPORTED
        self._ack(conn, msg, command, result)

    def _reposition(self, p: list, frame: Optional[int], origin: str) -> int:
        """MAV_CMD_DO_REPOSITION: go to lat p[4], lon p[5] [deg] in GUIDED, at p[0] [m/s] when it is > 0 (else
        the cruise speed). Outside GUIDED it needs MAV_DO_REPOSITION_FLAGS_CHANGE_MODE in p[1] and then switches
        to GUIDED first (Rover's rule); `frame` (COMMAND_INT's) must be a global one. DENIED, with the reason as
        a STATUSTEXT, otherwise or when the desk refuses the target (outside the fence, not a position)."""
        desk = self.desk
        if frame is not None and frame not in TG.GLOBAL_FRAMES:
            desk.log(f"refused: DO_REPOSITION in frame {frame}: only global frames (GLOBAL_INT, "
                     f"GLOBAL_RELATIVE_ALT_INT, ...) (from {origin})", True)
            return S.MAV_RESULT_DENIED
        speed = p[0] if math.isfinite(p[0]) and p[0] > 0 else None
        change = math.isfinite(p[1]) and bool(int(p[1]) & S.MAV_DO_REPOSITION_FLAGS_CHANGE_MODE)
        lat, lon = p[4], p[5]

        def go():
            mode = desk.autopilot.mode.name
            if mode != "GUIDED" and not change:
                return desk.refuse(f"DO_REPOSITION refused: the mode is {mode}, not GUIDED, and param2 does not "
                                   f"set MAV_DO_REPOSITION_FLAGS_CHANGE_MODE (1)", origin)
            return desk.goto_global(lat, lon, origin, speed, switch_mode=change)
        answer = self._run_desk(go)
        return S.MAV_RESULT_ACCEPTED if answer.ok else S.MAV_RESULT_DENIED

    def _change_speed(self, p: list, origin: str) -> int:
        """MAV_CMD_DO_CHANGE_SPEED: p[1] [m/s] the cruise speed from now on (OperatorDesk.change_speed); p[0],
        the speed type, airspeed (0) or ground speed (1), both taken as speed through the water, as in a mission;
        p[1] -1 is "no change" (ACCEPTED, nothing done). DENIED with the reason for a climb or descent speed
        (2, 3), -2 ("back to the default", which this boat does not keep) or a speed the desk refuses."""
        kind, speed = p[0], p[1]
        if not (math.isfinite(kind) and kind in (0.0, 1.0)):
            self.desk.log(f"refused: DO_CHANGE_SPEED of speed type {kind!r}: only air (0) or ground (1) speed, "
                          f"both taken as speed through the water (from {origin})", True)
            return S.MAV_RESULT_DENIED
        if speed == -1.0:
            return S.MAV_RESULT_ACCEPTED
        answer = self._run_desk(lambda: self.desk.change_speed(speed, origin))
        return S.MAV_RESULT_ACCEPTED if answer.ok else S.MAV_RESULT_DENIED

    def _motor_test(self, p: list, origin: str) -> int:
        """MAV_CMD_DO_MOTOR_TEST, as ArduPilot numbers its params, on the bench ESC test (OperatorDesk.esc_test:
        disarmed only, at most 20 % of the range, back to neutral when its time is up): p[0] the motor instance
        (1 = the vessel file's first thruster), p[1] the throttle type, MOTOR_TEST_THROTTLE_PERCENT (0) only,
        p[2] the throttle [%, + forward, - astern], p[3] the timeout [s]; p[4] (motor count) and p[5] (order)
        are not used. DENIED with the reason otherwise."""
        instance, kind, percent, timeout_s = p[0], p[1], p[2], p[3]
        problem = ""
        if not (math.isfinite(instance) and instance == int(instance) and instance >= 1):
            problem = f"motor instance {instance!r} is not a thruster number (1 is the first)"
        elif kind != S.MOTOR_TEST_THROTTLE_PERCENT:
            problem = f"throttle type {kind!r}: only percent (MOTOR_TEST_THROTTLE_PERCENT, 0)"
        if problem:
            self.desk.log(f"refused: motor test: {problem} (from {origin})", True)
            return S.MAV_RESULT_DENIED
        answer = self._run_desk(lambda: self.desk.esc_test(int(instance) - 1, percent / 100.0, origin, timeout_s))
        return S.MAV_RESULT_ACCEPTED if answer.ok else S.MAV_RESULT_DENIED

    def _prearm_texts(self, answer) -> None:
        """One STATUSTEXT per failed pre-arm check, as ground stations show them ("PreArm: ...")."""
        for reason in (answer.reasons or (answer.text,))[:8]:
            self.statustext(f"PreArm: {reason}", S.MAV_SEVERITY_CRITICAL)

    def _set_mode(self, number: int, origin: str) -> int:
        name = mode_name(number)
        if name is None:
            self.desk.log(f"refused: mode {describe(number)}: this boat flies MANUAL, ACRO, HOLD, LOITER, AUTO, "
                          f"RTL and GUIDED (from {origin})", True)
            return S.MAV_RESULT_DENIED
        answer = self._run_desk(lambda: self.desk.set_mode(name, origin))
        return S.MAV_RESULT_ACCEPTED if answer.ok else S.MAV_RESULT_DENIED

    def _on_set_mode(self, index, conn, msg, partner) -> None:
        if msg.target_system not in (0, self.cfg.system_id):
            return
        number = msg.custom_mode if msg.base_mode & S.MAV_MODE_FLAG_CUSTOM_MODE_ENABLED else -1
        if not self._signed(msg) and number != 4:
            self._refuse_unsigned(conn, "SET_MODE")
            return
        self._set_mode(number, self._origin(index, msg))

    def _set_home(self, p: list, origin: str) -> int:
        desk = self.desk

        def set_home():
            ap = desk.autopilot
            if p[0] == 1.0:
                nav = ap.nav
                if nav is None or not nav.valid:
                    return desk.refuse("home not set: no position yet", origin)
                return desk.set_home(nav.north_m, nav.east_m, origin)
            lat, lon = p[4], p[5]
            if not (math.isfinite(lat) and math.isfinite(lon) and -90 <= lat <= 90 and -180 <= lon <= 180) \
                    or (lat == 0.0 and lon == 0.0):
                return desk.refuse(f"home not set: latitude {lat!r}, longitude {lon!r} is not a position", origin)
            return desk.set_home(*ap.frame.to_ned(lat, lon), origin)
        answer = self._run_desk(set_home)
        return S.MAV_RESULT_ACCEPTED if answer.ok else S.MAV_RESULT_DENIED

    def _set_current(self, seq: int, origin: str) -> int:
        def jump():
            ap = self.desk.autopilot
            seqs = self.store.waypoint_item_seqs(ap.mission, bool(getattr(ap, "mission_cleared", False)))
            index = next((k for k, s in enumerate(seqs) if s >= seq), None)
            if index is None:
                return self.desk.refuse(f"item {seq} is not a waypoint of the mission", origin)
            return self.desk.set_current_waypoint(index, origin)
        answer = self._run_desk(jump)
        return S.MAV_RESULT_ACCEPTED if answer.ok else S.MAV_RESULT_DENIED

    def _on_mission_set_current(self, index, conn, msg, partner) -> None:
        if not self._signed(msg):
            self._refuse_unsigned(conn, "MISSION_SET_CURRENT")
            return
        self._set_current(int(msg.seq), self._origin(index, msg))

    def _set_interval(self, index: int, msg_id: int, interval_us: float) -> int:
        """SET_MESSAGE_INTERVAL for link `index` only: each link keeps its own rates, as ArduPilot's do (a
        ground station on the radio slowing a stream does not slow it for the one on Wi-Fi)."""
        name = next((n for n, i in T.MESSAGE_IDS.items() if i == msg_id), None)
        if name is None:
            return S.MAV_RESULT_UNSUPPORTED
        rates = self._rates[index]
        if interval_us == -1:
            rates[name] = 0.0
        elif interval_us == 0:
            rates[name] = float(getattr(self.cfg.streams, name))
        elif interval_us > 0 and math.isfinite(interval_us):
            rates[name] = min(50.0, 1e6 / interval_us)
        else:
            return S.MAV_RESULT_DENIED
        self._next_due[index][name] = self.wall()
        return S.MAV_RESULT_ACCEPTED

    def _on_request_data_stream(self, index, conn, msg, partner) -> None:
        """REQUEST_DATA_STREAM sets the rates of link `index` only (see _set_interval). On a signed boat it
        needs the key: a stranger could otherwise stop ATTITUDE for the owner, or have the boat stream at 50 Hz
        to fill the radio (ArduPilot with signing on takes nothing unsigned at all; reads stay open here)."""
        if not self._signed(msg):
            self._refuse_unsigned(conn, "REQUEST_DATA_STREAM")
            return
        groups = T.DATA_STREAMS.keys() if msg.req_stream_id == S.MAV_DATA_STREAM_ALL else [msg.req_stream_id]
        rate = 0.0 if not msg.start_stop else min(50.0, float(msg.req_message_rate))
        for g in groups:
            for name in T.DATA_STREAMS.get(g, ()):
                self._rates[index][name] = rate
                self._next_due[index][name] = self.wall()

    def _heavy_read_ok(self, index: int, msg, partner, kind: str) -> bool:
        """Whether to answer a read that makes the boat send a lot (HEAVY_READS: a parameter list, a mission
        download's count): at most a few per second from one sender, and from unsigned senders on one link
        together (they are free to invent system ids). A ground station asks once on connecting and again
        after its own timeout, far below both; a request beyond them is dropped (counted), as a lost frame
        would be, and the station's retry is answered."""
        now = self.wall()
        if not self._heavy_limits[kind].allow((partner, kind), now):
            self.stats["reads_limited"] += 1
            return False
        if not self._signed(msg) and not self._unsigned_heavy.allow((index, kind), now):
            self.stats["reads_limited"] += 1
            return False
        return True

    def _request_message(self, index: int, conn, msg_id: int) -> int:
        if msg_id == S.MAVLINK_MSG_ID_AUTOPILOT_VERSION:
            self._send(conn, conn.mav.autopilot_version_encode(CAPABILITIES, flight_sw_version(), 0, 0, 0,
                                                               [0] * 8, [0] * 8, [0] * 8, 0, 0, 0))
            return S.MAV_RESULT_ACCEPTED
        name = next((n for n, i in T.MESSAGE_IDS.items() if i == msg_id), None)
        if name is None:
            return S.MAV_RESULT_UNSUPPORTED
        self._once[index].add(name)
        return S.MAV_RESULT_ACCEPTED

    # ------------------------------------------------------------------ manual driving
    def _on_manual_control(self, index, conn, msg, partner) -> None:
        if not self._signed(msg):
            self._refuse_unsigned(conn, "MANUAL_CONTROL")
            return
        steer = msg.r if msg.r not in (0, 0x7FFF) else msg.y
        throttle, steering = msg.x / 1000.0, steer / 1000.0
        origin = self._origin(index, msg)
        self.calls.submit(lambda: self.desk.manual(throttle, steering, origin), key=f"manual{partner}")

    def _on_set_position_target_local_ned(self, index, conn, msg, partner) -> None:
        self._position_target(index, conn, msg, partner, is_global=False)

    def _on_set_position_target_global_int(self, index, conn, msg, partner) -> None:
        self._position_target(index, conn, msg, partner, is_global=True)

    def _position_target(self, index, conn, msg, partner, is_global: bool) -> None:
        """In GUIDED: the position or velocity target the message asks for (targets.py, Rover's reading of the
        type_mask and frames), resolved against the boat's position and heading when the loop takes it. In
        VELOCITY: a LOCAL_NED message in a body frame with vx and yaw_rate is its surge speed [m/s] and yaw rate
        [rad/s, + clockwise seen from above = to starboard]. Anything else is refused with the reason, said once
        per sender and reason (these come as streams)."""
        what = "SET_POSITION_TARGET_GLOBAL_INT" if is_global else "SET_POSITION_TARGET_LOCAL_NED"
        if not self._signed(msg):
            self._refuse_unsigned(conn, what)
            return
        origin = self._origin(index, msg)
        parsed = TG.parse(msg, is_global)
        velocity_why = ""
        if is_global:
            velocity_why = "VELOCITY takes SET_POSITION_TARGET_LOCAL_NED in a body frame, not global targets"
        elif msg.coordinate_frame not in (S.MAV_FRAME_BODY_NED, S.MAV_FRAME_BODY_OFFSET_NED, S.MAV_FRAME_BODY_FRD):
            velocity_why = f"frame {msg.coordinate_frame} is not a body frame (BODY_NED, BODY_OFFSET_NED, BODY_FRD)"
        elif msg.type_mask & (S.POSITION_TARGET_TYPEMASK_VX_IGNORE | S.POSITION_TARGET_TYPEMASK_YAW_RATE_IGNORE):
            velocity_why = "it must set vx and yaw_rate (type_mask)"
        surge, rate = float(msg.vx), float(msg.yaw_rate)
        self.calls.submit(lambda: self._apply_target(what, parsed, velocity_why, surge, rate, origin, partner),
                          key=f"target{partner}")

    def _say_target_refused(self, partner, what: str, why: str, origin: str) -> None:
        """A refused target, said once per sender and reason until one of its targets is taken (in the loop)."""
        if (partner, why) in self._target_refused:
            return
        if len(self._target_refused) > 256:          # reasons carry values: a hostile stream must not grow it
            self._target_refused.clear()
        self._target_refused.add((partner, why))
        text = why if why.startswith(what) else (f"{what}: {why}" if "refused" in why else f"{what} refused: {why}")
        self.desk.refuse(text, origin)

    def _apply_target(self, what, parsed, velocity_why: str, surge: float, rate: float, origin: str, partner):
        """In the loop: carry a parsed target out on the desk for the mode the boat is in now."""
        desk = self.desk
        ap = desk.autopilot
        mode = ap.mode.name
        if mode == "VELOCITY":
            if velocity_why:
                return self._say_target_refused(partner, what, velocity_why, origin)
            answer = desk.velocity(surge, rate, origin)
        elif mode != "GUIDED":
            return self._say_target_refused(partner, what, f"the mode is {mode}, not GUIDED (or VELOCITY for a "
                                                           f"body-frame vx and yaw_rate)", origin)
        elif isinstance(parsed, str):
            return self._say_target_refused(partner, what, parsed, origin)
        else:
            nav = ap.nav
            needs_nav = parsed.frame in ("offset", "body")
            if needs_nav and (nav is None or not nav.valid):
                return self._say_target_refused(partner, what, "no position estimate yet to take a relative target "
                                                               "from", origin)
            n, e, psi = (nav.north_m, nav.east_m, nav.heading_rad) if nav is not None else (0.0, 0.0, 0.0)
            t = TG.resolve(parsed, n, e, psi)
            if t.kind == "position":
                local = desk.local_of(t.a, t.b) if t.frame == "global" else (t.a, t.b)
                problem = local if isinstance(local, str) else ap.guided_target_problem(*local)
                if problem is not None:                       # a setpoint stream: said once, not per message
                    return self._say_target_refused(partner, what, f"GUIDED target refused: {problem}", origin)
                assert not isinstance(local, str)
                answer = desk.goto(*local, origin)
            else:
                answer = desk.guided_velocity(t.kind, t.a, t.b, origin)
        if answer.ok:
            self._target_refused = {k for k in self._target_refused if k[0] != partner}
        return answer

    def _on_rc_channels_override(self, index, conn, msg, partner) -> None:
        if not self._signed(msg):
            self._refuse_unsigned(conn, "RC_CHANNELS_OVERRIDE")
            return

        def axis(us: int) -> Optional[float]:
            if us in (0, 0xFFFF) or not 800 <= us <= 2200:
                return None                  # 0 / UINT16_MAX: released or not overridden
            return max(-1.0, min(1.0, (us - 1500) / 400.0))
        steering, throttle = axis(msg.chan1_raw), axis(msg.chan3_raw)
        if steering is None or throttle is None:
            return
        origin = self._origin(index, msg)
        self.calls.submit(lambda: self.desk.manual(throttle, steering, origin), key=f"manual{partner}")

    # ------------------------------------------------------------------ parameters
    def _param_value(self, conn, name: str, value: float, index: int, count: int):
        return conn.mav.param_value_encode(name.encode("ascii")[:16], float(value), S.MAV_PARAM_TYPE_REAL32,
                                           count, index)

    def _params_snapshot(self):
        """[(name, value)] of the desk's parameters, read in the loop at most every PARAMS_FRESH_S (a flood of
        PARAM_REQUEST_READ must not make the thread wait on the loop for each); a PARAM_SET reads them anew."""
        params = self.desk.params
        if params is None:
            return []
        now = self.wall()
        taken, values = self._params_cache
        if now - taken < PARAMS_FRESH_S:
            return values
        values = self._run_desk_value(lambda: [(n, float(params.value(n))) for n in params.names()])
        self._params_cache = (now, values)
        return values

    def _run_desk_value(self, fn):
        try:
            return self.calls.call(fn, 3.0)
        except Exception:
            return []

    def _on_param_request_list(self, index, conn, msg, partner) -> None:
        if not self._heavy_read_ok(index, msg, partner, "params"):
            return
        values = self._params_snapshot()
        for i, (name, value) in enumerate(values):
            self._send(conn, self._param_value(conn, name, value, i, len(values)))

    def _on_param_request_read(self, index, conn, msg, partner) -> None:
        values = self._params_snapshot()
        wanted = _param_id(msg.param_id)
        for i, (name, value) in enumerate(values):
            if (msg.param_index >= 0 and i == msg.param_index) or (msg.param_index < 0 and name == wanted):
                self._send(conn, self._param_value(conn, name, value, i, len(values)))
                return

    def _on_param_set(self, index, conn, msg, partner) -> None:
        name = _param_id(msg.param_id)
        if not self._signed(msg):
            self._refuse_unsigned(conn, f"PARAM_SET {name}")
        else:
            value = float(msg.param_value)
            now = self.wall()
            key = (name, value)
            # a ground station re-sends a PARAM_SET whose echo does not match: the same refused value within a
            # second is answered with the current value again, without another refusal text
            if now - self._param_refused.get(key, -math.inf) >= REFUSAL_TEXT_EVERY_S:
                answer = self._run_desk(lambda: self.desk.set_param(name, value, self._origin(index, msg)))
                if answer.ok:
                    self._param_refused.pop(key, None)
                else:
                    if len(self._param_refused) > 256:
                        self._param_refused.clear()
                    self._param_refused[key] = now
        # the answer to a PARAM_SET is the parameter's value now: the new one, or the old when refused
        self._params_cache = (-math.inf, [])
        values = self._params_snapshot()
        for i, (n, v) in enumerate(values):
            if n == name:
                self._send(conn, self._param_value(conn, n, v, i, len(values)))

    # ------------------------------------------------------------------ missions
    def _mission_type(self, msg) -> int:
        return int(getattr(msg, "mission_type", 0) or 0)

    def _on_mission_request_list(self, index, conn, msg, partner) -> None:
        mtype = self._mission_type(msg)
        if mtype not in M.TYPE_NAMES:
            self._send(conn, conn.mav.mission_ack_encode(msg.get_srcSystem(), msg.get_srcComponent(),
                                                         M.UNSUPPORTED, mtype))
            return
        if not self._heavy_read_ok(index, msg, partner, "mission"):
            return
        items = self._items(mtype)
        self._send(conn, conn.mav.mission_count_encode(msg.get_srcSystem(), msg.get_srcComponent(), len(items),
                                                       mtype))

    def _items(self, mtype: int) -> list:
        """The items of `mtype` a download serves, built in the loop once per mission and upload."""
        ap = self.desk.autopilot
        mission, version = ap.mission, self.store.version
        cached = self._items_cache.get(mtype)
        if cached is not None and cached[0] is mission and cached[1] == version:
            return cached[2]
        try:
            items = self.calls.call(lambda: self.store.items_for(mtype, ap.mission, ap.frame,
                                                                 bool(getattr(ap, "mission_cleared", False))), 3.0)
        except Exception:
            return []
        self._items_cache[mtype] = (mission, version, items)
        return items

    def _on_mission_request_int(self, index, conn, msg, partner) -> None:
        self._send_item(conn, msg, as_int=True)

    def _on_mission_request(self, index, conn, msg, partner) -> None:
        self._send_item(conn, msg, as_int=False)

    def _send_item(self, conn, msg, as_int: bool) -> None:
        mtype = self._mission_type(msg)
        items = self._items(mtype) if mtype in M.TYPE_NAMES else []
        if not 0 <= msg.seq < len(items):
            self._send(conn, conn.mav.mission_ack_encode(msg.get_srcSystem(), msg.get_srcComponent(),
                                                         M.INVALID_SEQUENCE, mtype))
            return
        it = items[msg.seq]
        p1, p2, p3, p4 = it.params
        if as_int:
            out = conn.mav.mission_item_int_encode(msg.get_srcSystem(), msg.get_srcComponent(), it.seq, it.frame,
                                                   it.command, it.current, it.autocontinue, p1, p2, p3, p4,
                                                   int(round(it.lat_deg * 1e7)), int(round(it.lon_deg * 1e7)),
                                                   it.alt_m, mtype)
        else:
            out = conn.mav.mission_item_encode(msg.get_srcSystem(), msg.get_srcComponent(), it.seq, it.frame,
                                               it.command, it.current, it.autocontinue, p1, p2, p3, p4,
                                               it.lat_deg, it.lon_deg, it.alt_m, mtype)
        self._send(conn, out)

    def _mission_ack(self, conn, partner, result: int, mtype: int) -> None:
        self._send(conn, conn.mav.mission_ack_encode(partner[1], partner[2], result, mtype))

    def _on_mission_count(self, index, conn, msg, partner) -> None:
        mtype = self._mission_type(msg)
        if mtype not in M.TYPE_NAMES:
            self._mission_ack(conn, partner, M.UNSUPPORTED, mtype)
            return
        if not self._signed(msg):
            self._refuse_unsigned(conn, f"{M.TYPE_NAMES[mtype]} upload")
            self._mission_ack(conn, partner, M.DENIED, mtype)
            return
        if msg.count == 0:
            self._clear(conn, partner, mtype, self._origin(index, msg))
            return
        too_many = M.count_problem(mtype, int(msg.count))
        if too_many is not None:             # refused before a single item is asked for
            self.desk.log(too_many, True)
            self._mission_ack(conn, partner, M.NO_SPACE, mtype)
            return
        if partner not in self._uploads and len(self._uploads) >= MAX_UPLOADS:
            self._mission_ack(conn, partner, M.NO_SPACE, mtype)
            return
        up = M.Upload(partner, mtype, int(msg.count))
        self._uploads[partner] = up
        self._ask(conn, up)

    def _on_mission_clear_all(self, index, conn, msg, partner) -> None:
        mtype = self._mission_type(msg)
        if not self._signed(msg):
            self._refuse_unsigned(conn, "MISSION_CLEAR_ALL")
            self._mission_ack(conn, partner, M.DENIED, mtype)
            return
        self._clear(conn, partner, mtype, self._origin(index, msg))

    def _clear(self, conn, partner, mtype: int, origin: str, home=None) -> None:
        if mtype == M.MISSION:
            answer = self._run_desk(lambda: self._clear_mission(origin, home))
            self._mission_ack(conn, partner, M.ACCEPTED if answer.ok else M.ERROR, mtype)
            return
        if mtype == M.RALLY:
            self.store.keep(M.RALLY, None, [])
            self._mission_ack(conn, partner, M.ACCEPTED, mtype)
            return
        desk = self.desk

        def clear_fence():
            import dataclasses
            ap = desk.autopilot
            new = dataclasses.replace(ap.mission, geofence=())
            cleared = ap.mission_cleared
            answer = desk.load_mission(new, origin, source="a fence clear")
            if answer.ok:
                self.store.keep(M.FENCE, new, [])
                if cleared:
                    ap.clear_mission("mission cleared")     # a new fence is not a mission to fly
            return answer
        answer = self._run_desk(clear_fence)
        self._mission_ack(conn, partner, M.ACCEPTED if answer.ok else M.DENIED, mtype)

    def _clear_mission(self, origin: str, home=None):
        """In the loop: nothing to fly from now on (Autopilot.clear_mission); downloads are home alone."""
        from autopilot.commands.desk import Answer
        ap = self.desk.autopilot
        self.store.clear(ap.mission, ap.frame, home)
        in_auto = ap.mode.name == "AUTO"
        ap.clear_mission(f"mission cleared ({origin})")
        text = "mission cleared: nothing to fly, AUTO refused until a mission is uploaded"
        if in_auto:
            text += "; HOLD"
        self.desk.log(f"{text} (from {origin})")
        return Answer(True, text)

    def _ask(self, conn, up: M.Upload) -> None:
        up.asked_wall_s = self.wall()
        self._send(conn, conn.mav.mission_request_int_encode(up.partner[1], up.partner[2], up.next_seq,
                                                             up.mission_type))

    def _on_mission_item_int(self, index, conn, msg, partner) -> None:
        self._take_item(conn, partner, msg, msg.x / 1e7, msg.y / 1e7)

    def _on_mission_item(self, index, conn, msg, partner) -> None:
        self._take_item(conn, partner, msg, float(msg.x), float(msg.y))

    def _take_item(self, conn, partner, msg, lat: float, lon: float) -> None:
        up = self._uploads.get(partner)
        if up is None or self._mission_type(msg) != up.mission_type:
            return
        if not self._signed(msg):
            # a signed count opens the transfer, but every item must carry the key too: one that does not
            # ends the transfer, and the mission flown stays
            del self._uploads[partner]
            self._refuse_unsigned(conn, f"{M.TYPE_NAMES[up.mission_type]} item")
            self._mission_ack(conn, partner, M.DENIED, up.mission_type)
            return
        if msg.seq != up.next_seq:
            return                             # a repeat, or out of order: the next request asks again
        up.items.append(mission_io.MissionItem(int(msg.seq), int(msg.frame), int(msg.command),
                                    (float(msg.param1), float(msg.param2), float(msg.param3), float(msg.param4)),
                                    lat, lon, float(msg.z), int(msg.current), int(msg.autocontinue)))
        up.retries = 0
        if up.next_seq < up.count:
            self._ask(conn, up)
            return
        del self._uploads[partner]
        origin = f"GCS {partner[1]}/{partner[2]} on {self.link_names[partner[0]]}"
        if up.mission_type == M.MISSION and up.count == 1:
            self._clear(conn, partner, M.MISSION, origin, home=up.items[0])     # home alone: a clear, as QGC
            return                                                               # sends it
        self._finish(conn, up, origin)

    def _finish(self, conn, up: M.Upload, origin: str) -> None:
        """An upload's last item came: its mission built and checked here, on the server's thread, against the
        mission flown when it ended (read by the loop), and only the swap run by the loop, so a large fence never
        stalls it. Should the mission have changed in between, the loop builds and checks it again."""
        desk, store = self.desk, self.store
        what = M.TYPE_NAMES[up.mission_type]
        source = f"MAVLink {what} upload from {origin}"
        try:
            current = self.calls.call(lambda: desk.autopilot.mission, 5.0)
        except Exception as e:
            self.desk.log(f"refused: {what} upload: the autopilot did not take it ({type(e).__name__})", True)
            self._mission_ack(conn, up.partner, M.ERROR, up.mission_type)
            return
        built = store.build(up, current, source)
        load = None
        if not isinstance(built, M.UploadResult) and up.mission_type != M.RALLY:
            load = desk.prepare_mission(built[0], built[1], source=f"a MAVLink {what} upload")

        def swap():
            b, ld = built, load
            if desk.autopilot.mission is not current:         # replaced while it was checked: again, on the new one
                b, ld = store.build(up, desk.autopilot.mission, source), None
            if isinstance(b, M.UploadResult):
                desk.refuse(b.text, origin)
                return b
            mission, labels = b
            if up.mission_type == M.RALLY:
                store.keep(M.RALLY, None, up.items)
                desk.log(f"{len(up.items)} rally points kept (not flown: RTL goes home) (from {origin})")
                return M.UploadResult(M.ACCEPTED, "")
            if ld is None:
                ld = desk.prepare_mission(mission, labels, source=f"a MAVLink {what} upload")
            if ld.problems:
                desk.refuse(f"{what} refused: " + "; ".join(ld.problems), origin)
                return M.UploadResult(M.INVALID, ld.problems[0])
            cleared = desk.autopilot.mission_cleared
            answer = desk.swap_mission(ld, origin)
            if not answer.ok:
                return M.UploadResult(M.INVALID, answer.text)
            store.keep(up.mission_type, mission, up.items)
            if cleared and up.mission_type == M.FENCE:
                desk.autopilot.clear_mission("mission cleared")     # a new fence is not a mission to fly
            return M.UploadResult(M.ACCEPTED, "")
        try:
            result = self.calls.call(swap, 5.0)
        except Exception as e:
            self.desk.log(f"refused: {what} upload: the autopilot did not take it ({type(e).__name__})", True)
            result = M.UploadResult(M.ERROR, "")
        self._mission_ack(conn, up.partner, result.result, up.mission_type)

    def _upload_timeouts(self, now: float) -> None:
        for partner, up in list(self._uploads.items()):
            if now - up.asked_wall_s < M.REQUEST_TIMEOUT_S:
                continue
            conn = self.links[partner[0]]
            if up.retries >= M.REQUEST_RETRIES:
                del self._uploads[partner]
                self.desk.log(f"{M.TYPE_NAMES[up.mission_type]} upload from GCS {partner[1]} given up: no item "
                              f"{up.next_seq} after {up.retries + 1} requests", True)
                self._mission_ack(conn, partner, M.CANCELLED, up.mission_type)
                continue
            up.retries += 1
            self._ask(conn, up)

    # ------------------------------------------------------------------ telemetry
    def _telemetry(self, now: float) -> None:
        """Send what is due on each link at that link's rates (one snapshot of the autopilot for all)."""
        due_by_link = []
        for rates, dues, once in zip(self._rates, self._next_due, self._once):
            due_by_link.append([n for n, rate in rates.items() if rate > 0 and now >= dues[n]]
                               + [n for n in once if not (rates[n] > 0 and now >= dues[n])])
            once.clear()
        if not any(due_by_link):
            return
        with_prearm = now >= self._next_prearm
        try:
            snap = self.calls.call(lambda: self.taker.take(self.desk.now_s(), with_prearm), 1.0)
        except Exception:
            return                             # the loop did not answer (stopped, stalled): nothing true to say
        if with_prearm:
            self._next_prearm = now + PREARM_EVERY_S
            self._prearm_ok = not snap.prearm_failures
        for ev in snap.new_events:
            sev = {"failsafe": S.MAV_SEVERITY_CRITICAL, "warning": S.MAV_SEVERITY_WARNING}.get(
                ev.kind, S.MAV_SEVERITY_INFO)
            self.statustext(ev.message, sev)
        self._reached(snap)
        # a new home or origin goes out at once, as ArduPilot sends them when they are set (ground stations draw
        # home from HOME_POSITION; waiting for its slow stream would show none, or the old one, for seconds)
        changed = [n for n, v in (("home_position", (snap.home, snap.home_ned)), ("gps_global_origin", snap.origin))
                   if v != self._told[n]]
        self._told.update(home_position=(snap.home, snap.home_ned), gps_global_origin=snap.origin)
        for conn, due, rates, dues in zip(self.links, due_by_link, self._rates, self._next_due):
            for name in due + [n for n in changed if n not in due]:
                rate = rates.get(name, 0.0)
                if rate > 0 and name in due:
                    dues[name] = max(dues[name] + 1.0 / rate, now)
                out = self._encode(name, conn, snap)
                if out is not None:
                    self._send(conn, out)

    def _encode(self, name: str, conn, snap):
        if name == "sys_status":
            return T.encode_sys_status(conn.mav, snap, self._prearm_ok)
        if name == "mission_current":
            seqs, total = self._numbering(snap.mission_cleared)
            seq = seqs[min(snap.waypoint_index, len(seqs) - 1)] if seqs else 0
            return T.encode_mission_current(conn.mav, snap, seq, total)
        return T.ENCODERS[name](conn.mav, snap)

    def _numbering(self, cleared: bool) -> tuple:
        """(item seq of each waypoint as the ground station numbers them, the item count without home) of the
        mission flown now, built in the loop once per mission, upload and clear."""
        ap = self.desk.autopilot
        mission = ap.mission
        key = (mission, self.store.version, cleared)
        cached = self._mission_seqs
        if cached[0] is None or cached[0][0] is not mission or cached[0][1:] != key[1:]:
            def numbering():
                items = self.store.items_for(M.MISSION, mission, ap.frame, cleared)
                return self.store.waypoint_item_seqs(mission, cleared), max(0, len(items) - 1)
            self._mission_seqs = (key, self._run_desk_value(numbering) or ([], 0))
        return self._mission_seqs[1]

    def _reached(self, snap) -> None:
        """MISSION_ITEM_REACHED for each waypoint the snapshot says was reached, numbered as MISSION_CURRENT."""
        if not snap.reached:
            return
        seqs, _ = self._numbering(snap.mission_cleared)
        for index in snap.reached:
            if 0 <= index < len(seqs):
                for conn in self.links:
                    self._send(conn, conn.mav.mission_item_reached_encode(seqs[index]))

    def _send_texts(self) -> None:
        while True:
            try:
                severity, text = self._texts.get_nowait()
            except queue.Empty:
                return
            self._text_id = (self._text_id % 0xFFFF) + 1
            for conn in self.links:
                for out in T.statustext_chunks(conn.mav, severity, text, self._text_id):
                    self._send(conn, out)

    def _send(self, conn, out) -> None:
        try:
            conn.mav.send(out)
            self.stats["sent"] += 1
        except Exception:                      # a link that went away (a TCP client left, a radio unplugged)
            pass


def _param_id(raw) -> str:
    if isinstance(raw, bytes):
        raw = raw.decode("ascii", "replace")
    return str(raw).split("\x00", 1)[0].strip()
