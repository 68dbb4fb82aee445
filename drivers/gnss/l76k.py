"""Quectel / Waveshare L76K GNSS receiver on a serial port: fixes for the control loop, never blocking it.

    gnss = L76K.from_config(vessel.sensors.gnss)        # port, baud, stale timeout, CEP from config
    gnss.start()                                         # reader thread: opens, reads, reconnects
    ...
    fixes = gnss.poll()                                  # every GpsFix since the last call, never blocks
    if not gnss.position_ok(now_s): ...                  # no valid fix for stale_timeout_s
    gnss.close()

Bytes go through `NmeaFramer` (checksums, CASIC binary frames) and `EpochAssembler` (GGA + RMC per epoch,
see drivers/gnss/l76k_epoch.py for the fields, validity and the HDOP -> pos_std_m rule). A fix's `time_s` is the
driver's `clock()` when its epoch's first sentence was read (the fix is delivered once the epoch is
complete); pass the runner's clock so fixes share its time. Every valid fix then passes
`drivers/gnss_plausibility.FixPlausibility` (time going backwards, a frozen position, a jump no boat can
make, a date far from the system clock): a fix that cannot be true is delivered with `valid=False`.

Two ways to run:
- threaded (`start()`): a daemon thread blocks on the port (read timeout 50 ms), fills a bounded queue,
  and reopens the port with exponential back-off (0.2 s doubling to 5 s) when it disappears (USB unplug,
  UART error: any exception from pyserial). Hardware and pseudo-terminals.
- polled (no `start()`): each `poll()` reads what is waiting without blocking, and reopens a lost port
  (at the last baud, back-off on `clock()`). For in-memory ports in fast simulations, where a thread would
  tie fixes to wall time. Call `open()` first (it does the baud search in auto mode).

Set-up (blocking, before `start()`, used by `autopilot bench gps`): `open()`, `detect_baud()`,
`set_baud(115200)`, `configure(rate_hz)`; `baud="auto"` makes `open()` and every reconnection search the
bauds (the module forgets a baud change on power loss unless it was saved with `save_config()`).
"""
from __future__ import annotations

import logging
import threading
import time
from collections import deque
from dataclasses import dataclass, fields
from typing import Callable, List, Optional, Protocol, Sequence, Union

from autopilot.vocab.types import GpsFix
from drivers.gnss import l76k_commands as cmd
from drivers.gnss.l76k_commands import GnssSetupError
from drivers.gnss.l76k_epoch import EpochAssembler
from drivers.gnss.nmea_stream import NmeaFramer
from drivers.gnss.plausibility import DEFAULT_MAX_SPEED_MPS, MAX_TIME_SKEW_S, FixPlausibility

log = logging.getLogger(__name__)

KNOWN_TYPES = frozenset(("GGA", "RMC", "GLL", "VTG", "GSA", "GSV", "ZDA", "TXT"))


class SerialLike(Protocol):
    """The part of pyserial's `serial.Serial` the driver uses (hil.devices.serial_ports.InMemorySerial has it too)."""

    baudrate: int

    @property
    def in_waiting(self) -> int: ...

    def read(self, size: int = 1) -> bytes: ...

    def write(self, data: bytes) -> Optional[int]: ...

    def flush(self) -> None: ...

    def reset_input_buffer(self) -> None: ...

    def close(self) -> None: ...


Opener = Callable[[int], SerialLike]


class GnssLinkError(RuntimeError):
    """No usable NMEA stream on the port (wrong port, wiring, power, or baud)."""


def serial_opener(path: str, read_timeout_s: float = 0.05) -> Opener:
    """An opener that opens `path` with pyserial at a given baud, 8N1, no flow control."""

    def open_port(baud: int) -> SerialLike:
        import serial  # only the hardware path needs pyserial

        return serial.Serial(path, baud, timeout=read_timeout_s, write_timeout=1.0)

    return open_port


@dataclass
class LinkCounters:
    opens: int = 0              # successful port opens (the first one and every reconnection)
    reconnects: int = 0         # opens after the port had failed
    open_failures: int = 0
    read_errors: int = 0        # exceptions from the port (device gone, I/O error)
    baud_detections: int = 0
    dropped_fixes: int = 0      # fixes lost because nobody polled and the queue was full
    rx_bytes: int = 0           # bytes read from the port
    internal_errors: int = 0    # decoding bugs caught by the last guard (should stay 0)

    def as_dict(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}


class L76K:
    """The L76K driver. See the module docstring for the two ways to run it."""

    def __init__(self, port: Union[str, Opener], *, baud: Union[int, str] = cmd.DEFAULT_BAUD,
                 cep_m: float = 2.0, stale_timeout_s: float = 2.5,
                 clock: Callable[[], float] = time.monotonic,
                 wall: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep,
                 reopen_backoff_s: Sequence[float] = (0.2, 5.0), idle_flush_s: float = 0.25,
                 detect_window_s: float = 1.5, verify_window_s: float = 3.0, queue_len: int = 256,
                 max_speed_mps: float = DEFAULT_MAX_SPEED_MPS, calendar: Optional[Callable[[], float]] = None,
                 max_time_skew_s: Optional[float] = MAX_TIME_SKEW_S):
        """
        port: a device path (opened with pyserial) or an opener `f(baud) -> serial-like port`.
        baud: the module's baud, or "auto" to search `l76k_commands.BAUD_SEARCH_ORDER`.
        clock: time stamps of fixes and stale detection [s] (the runner's clock).
        wall, sleep: real time for I/O waits (detection windows, back-off), injectable for tests.
        idle_flush_s: an incomplete epoch is emitted once the line has been quiet this long [s].
        detect_window_s: how long to listen at each baud while searching [s] (> one fix interval).
        max_speed_mps, calendar, max_time_skew_s: the plausibility checks' fastest boat [m/s], system clock [s since
        the Unix epoch] (None: no date check) and UTC-ahead-of-clock limit [s] (None for a recording replayed
        faster than real time); see drivers/gnss/plausibility.py. `from_config` passes time.time.
        """
        if baud != "auto" and baud not in cmd.BAUD_CODES:
            raise GnssSetupError(f"baud {baud!r}: use 'auto' or one of {sorted(cmd.BAUD_CODES)}")
        self.port_name = port if isinstance(port, str) else getattr(port, "__name__", "custom opener")
        self._opener: Opener = serial_opener(port) if isinstance(port, str) else port
        self.auto_baud = baud == "auto"
        self.baud: Optional[int] = None if self.auto_baud else int(baud)
        self.cep_m = cep_m
        self.stale_timeout_s = stale_timeout_s
        self.clock, self.wall, self.sleep = clock, wall, sleep
        self.backoff_min_s, self.backoff_max_s = float(reopen_backoff_s[0]), float(reopen_backoff_s[1])
        self.idle_flush_s = idle_flush_s
        self.detect_window_s = detect_window_s
        self.verify_window_s = verify_window_s

        self.framer = NmeaFramer()
        self.assembler = EpochAssembler(cep_m=cep_m)
        self.link = LinkCounters()
        self.plausibility = FixPlausibility(max_speed_mps=max_speed_mps, calendar=calendar,
                                            max_time_skew_s=max_time_skew_s)
        self.last_error: Optional[str] = None
        self._port: Optional[SerialLike] = None
        self._fixes: deque = deque()
        self._queue_len = queue_len
        self._last_fix: Optional[GpsFix] = None
        self._last_valid_fix: Optional[GpsFix] = None
        self._last_rx_s: Optional[float] = None
        self._failed = False                   # the port failed and has not been reopened yet
        self._redetect = False                 # auto mode: search the baud at the next open
        self._next_open_s = -float("inf")      # polled mode: earliest clock() for the next reopen attempt
        self._backoff_s = self.backoff_min_s
        self._last_sentence_wall = 0.0
        self._closed = False
        self._thread: Optional[threading.Thread] = None
        self._stop = threading.Event()
        self._lock = threading.Lock()          # port ownership between set-up calls and the reader

    @classmethod
    def from_config(cls, cfg, **kwargs) -> "L76K":
        """Driver for a `GnssConfig` (port, baud, cep_m, stale_timeout_s). Refuses a rate the baud cannot carry."""
        cmd.check_link(cfg.rate_hz, cfg.baud)
        kwargs.setdefault("baud", cfg.baud)
        kwargs.setdefault("calendar", time.time)
        return cls(kwargs.pop("port", cfg.port), cep_m=cfg.cep_m, stale_timeout_s=cfg.stale_timeout_s, **kwargs)

    # -- lifecycle -------------------------------------------------------------------------------------
    @property
    def connected(self) -> bool:
        return self._port is not None

    def open(self) -> int:
        """Open the port (searching the baud in auto mode); returns the baud. Raises GnssLinkError/OSError."""
        with self._lock:
            self._closed = False
            if self._port is None:
                self._open_link()
            assert self.baud is not None            # an open port has a baud (the search sets it)
            return self.baud

    def start(self) -> None:
        """Start the reader thread (it opens the port itself if `open()` was not called)."""
        if self._thread is not None:
            return
        self._closed = False
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name=f"l76k-{self.port_name}", daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Stop the reader, close the port and queue the epoch in progress (`poll()` still returns it)."""
        self._closed = True
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2.0)
            self._thread = None
        with self._lock:
            self._close_port()
            self._queue(self.assembler.flush())

    def __enter__(self) -> "L76K":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- data for the loop -----------------------------------------------------------------------------
    def poll(self) -> List[GpsFix]:
        """Every fix completed since the previous call, oldest first. Never blocks."""
        if self._thread is None and not self._closed:
            self._pump()
        out = []
        while True:
            try:
                out.append(self._fixes.popleft())
            except IndexError:
                return out

    @property
    def last_fix(self) -> Optional[GpsFix]:
        return self._last_fix

    def fix_age_s(self, now_s: Optional[float] = None) -> float:
        """Seconds since the last valid fix was received (inf if none yet)."""
        f = self._last_valid_fix
        if f is None:
            return float("inf")
        return (self.clock() if now_s is None else now_s) - f.time_s

    def position_ok(self, now_s: Optional[float] = None) -> bool:
        """True while the last valid fix is younger than `stale_timeout_s`."""
        return self.fix_age_s(now_s) <= self.stale_timeout_s

    def stats(self) -> dict:
        """Counters of the framer, the epoch assembler and the link, plus the current state."""
        d = {}
        d.update(self.framer.counters.as_dict())
        d.update(self.assembler.counters.__dict__)
        d.update(self.link.as_dict())
        d.update(self.plausibility.counters.as_dict())
        d.update(baud=self.baud, connected=self.connected, last_error=self.last_error)
        return d

    # -- set-up commands (blocking; not while the reader thread runs) ----------------------------------
    def send(self, command: bytes) -> None:
        """Write a command (e.g. from l76k_commands) and wait until it has left the port."""
        self._require_setup()
        with self._lock:
            if self._port is None:
                self._open_link()
            assert self._port is not None and self.baud is not None     # _open_link opened it or raised
            self._port.write(command)
            self._port.flush()
            self.sleep(len(command) * 10.0 / self.baud + 0.02)   # time on the wire, then the module's parse

    def detect_baud(self) -> int:
        """Search the bauds for checksummed NMEA; leaves the port open at the one found and returns it."""
        self._require_setup()
        with self._lock:
            self._close_port()
            self._detect()
            assert self.baud is not None            # _detect found it or raised
            return self.baud

    def set_baud(self, baud: int) -> List[str]:
        """PCAS01 to the module, reopen at `baud`, and check sentences arrive. Returns what was done."""
        command = cmd.pcas01_baud(baud)
        if self._port is None:
            self.open()
        old = self.baud
        if baud == old:
            return [f"module already at {baud} baud"]
        self.send(command)
        with self._lock:
            self._close_port()
            self.baud = baud
            self._open_port(baud)
            assert self._port is not None           # _open_port set it
            if not self._listen(self._port, self.verify_window_s):
                self._close_port()
                raise GnssLinkError(
                    f"{self.port_name}: sent {command.strip().decode()} at {old} baud but no NMEA arrives at "
                    f"{baud}: the module did not switch (is its RX wired?); retry with --baud auto")
        log.info("L76K on %s switched from %d to %d baud", self.port_name, old, baud)
        return [f"switched {old} -> {baud} baud ({command.strip().decode()})"]

    def configure(self, rate_hz: float, save: bool = False) -> List[str]:
        """Set the fix rate, switching to 115200 baud and to GGA + RMC output first when the rate needs it."""
        cmd.fix_interval_ms(rate_hz)
        if self._port is None:
            self.open()
        assert self.baud is not None                # the port is open
        done: List[str] = []
        if rate_hz > 1.0 and self.baud < cmd.FAST_BAUD:
            done.append(f"rate {rate_hz:g} Hz needs {cmd.FAST_BAUD} baud:")
            done += self.set_baud(cmd.FAST_BAUD)
        sel, commands = cmd.configuration_plan(rate_hz, self.baud)
        for c in commands:
            self.send(c)
            done.append(f"sent {c.strip().decode()}")
        if sel is cmd.FAST_SELECTION:
            done.append(f"output reduced to GGA + RMC for {rate_hz:g} Hz")
        if save:
            self.send(cmd.pcas00_save())
            done.append("configuration saved to the module's flash (PCAS00)")
        return done

    def set_constellations(self, mask: int) -> None:
        self.send(cmd.pcas04_constellations(mask))

    def restart(self, kind: str = "hot") -> None:
        self.send(cmd.pcas10_restart(kind))

    def save_config(self) -> None:
        self.send(cmd.pcas00_save())

    # -- internals ---------------------------------------------------------------------------------------
    def _require_setup(self) -> None:
        if self._thread is not None:
            raise RuntimeError("L76K set-up commands must run before start() (the reader thread owns the port)")

    def _open_port(self, baud: int) -> SerialLike:
        port = self._opener(baud)
        try:
            port.reset_input_buffer()
        except Exception:           # noqa: BLE001 - a port that cannot flush still reads
            pass
        self._port = port
        self.framer.reset()
        self._last_sentence_wall = self.wall()
        return port

    def _open_link(self) -> None:
        if self.baud is None or self._redetect:
            self._detect()
            self._redetect = False
        else:
            self._open_port(self.baud)
        self.link.opens += 1
        if self._failed:
            self.link.reconnects += 1
            log.info("L76K on %s reopened at %d baud", self.port_name, self.baud)
        self._failed = False
        self._backoff_s = self.backoff_min_s

    def _detect(self) -> None:
        order = list(cmd.BAUD_SEARCH_ORDER)
        if self.baud in order:                 # try the last known baud first
            order.remove(self.baud)
            order.insert(0, self.baud)
        self.link.baud_detections += 1
        for baud in order:
            if self._stop.is_set():
                break
            port = self._open_port(baud)
            if self._listen(port, self.detect_window_s):
                self.baud = baud
                log.info("L76K on %s found at %d baud", self.port_name, baud)
                return
            self._close_port()
        raise GnssLinkError(f"{self.port_name}: no checksummed NMEA at any of {order} baud: check the port "
                            f"name, power, and that the module's TX goes to the Pi's RX")

    def _listen(self, port: SerialLike, window_s: float) -> bool:
        """Read for up to window_s (wall time); True once two known checksummed sentences arrived.

        The bytes read go through the driver's own framer and assembler, so fixes are not lost."""
        deadline = self.wall() + window_s
        good = 0
        while self.wall() < deadline and not self._stop.is_set():
            data = port.read(max(1, port.in_waiting))
            if not data:
                self.sleep(0.005)            # pyserial already waited its read timeout; other ports may not
                continue
            for s in self._ingest(data, self.clock()):
                if s[3:6] in KNOWN_TYPES or s.startswith("$P"):
                    good += 1
            if good >= 2:
                return True
        return False

    def _close_port(self) -> None:
        port, self._port = self._port, None
        if port is not None:
            try:
                port.close()
            except Exception:       # noqa: BLE001 - closing a vanished device may fail; it is gone anyway
                pass

    def _fail(self, exc: BaseException) -> None:
        self.link.read_errors += 1
        self.last_error = f"{type(exc).__name__}: {exc}"
        if not self._failed:
            log.warning("L76K on %s failed (%s); reopening with back-off", self.port_name, self.last_error)
        self._failed = True
        self._close_port()
        self._queue(self.assembler.flush())

    def _ingest(self, data: bytes, now_s: float) -> List[str]:
        self._last_rx_s = now_s
        self.link.rx_bytes += len(data)
        sentences = self.framer.feed(data)
        if sentences:
            self._last_sentence_wall = self.wall()
        for s, gap in zip(sentences, self.framer.gaps):
            self._queue(self.assembler.feed(s, now_s, gap))
        return sentences

    def _maybe_flush(self, now_s: float) -> None:
        if self.assembler.pending_since_s is not None and self._last_rx_s is not None \
                and now_s - self._last_rx_s > self.idle_flush_s:
            self._queue(self.assembler.flush())

    def _queue(self, fixes: List[GpsFix]) -> None:
        for f in fixes:
            f = self.plausibility.check(f)
            if len(self._fixes) >= self._queue_len:
                self._fixes.popleft()
                self.link.dropped_fixes += 1
            self._fixes.append(f)
            self._last_fix = f
            if f.valid:
                self._last_valid_fix = f

    def _needs_relock(self) -> bool:
        """Auto mode: bytes keep arriving but no good sentence for longer than a search window."""
        return self.auto_baud and self.wall() - self._last_sentence_wall > self.detect_window_s

    def _pump(self) -> None:
        """Polled mode: reopen when due, read what is waiting, flush an idle epoch."""
        now = self.clock()
        if self._port is None:
            if now < self._next_open_s or self.baud is None:   # a baud search would block: open() does it
                return
            try:
                with self._lock:
                    self._open_link()
            except Exception as exc:     # noqa: BLE001 - a missing device is retried, never raised into the loop
                self.link.open_failures += 1
                self.last_error = f"{type(exc).__name__}: {exc}"
                self._failed = True
                self._next_open_s = now + self._backoff_s
                self._backoff_s = min(self._backoff_s * 2.0, self.backoff_max_s)
                return
        assert self._port is not None               # open, or _open_link just opened it
        try:
            n = self._port.in_waiting
            data = self._port.read(n) if n else b""
        except Exception as exc:         # noqa: BLE001
            self._fail(exc)
            self._next_open_s = now + self._backoff_s
            return
        self._digest(data, now)

    def _digest(self, data: bytes, now: float) -> None:
        """Feed what was read; an unexpected decoding error is logged and counted, never raised into the loop."""
        try:
            if data:
                self._ingest(data, now)
            else:
                self._maybe_flush(now)
        except Exception as exc:         # noqa: BLE001 - the framer and assembler are fuzzed; this is a last guard
            self.link.internal_errors += 1
            self.last_error = f"{type(exc).__name__}: {exc}"
            log.exception("L76K on %s: decoding failed; bytes dropped", self.port_name)
            self.framer.reset()

    def _run(self) -> None:
        while not self._stop.is_set():
            if self._port is None:
                try:
                    with self._lock:
                        self._open_link()
                except Exception as exc:   # noqa: BLE001
                    self.link.open_failures += 1
                    self.last_error = f"{type(exc).__name__}: {exc}"
                    self._failed = True
                    self._stop.wait(self._backoff_s)
                    self._backoff_s = min(self._backoff_s * 2.0, self.backoff_max_s)
                    continue
            try:
                port = self._port
                assert port is not None             # open, or _open_link just opened it
                data = port.read(max(1, port.in_waiting))
            except Exception as exc:       # noqa: BLE001 - pyserial raises SerialException, termios.error, ...
                self._fail(exc)
                self._stop.wait(self._backoff_s)
                continue
            now = self.clock()
            self._digest(data, now)
            if data and self._needs_relock():
                log.warning("L76K on %s: only garbage at %s baud; searching again", self.port_name, self.baud)
                with self._lock:
                    self._close_port()
                    self._failed = True
                    self._redetect = True
