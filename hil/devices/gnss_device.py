"""An emulated L76K on a serial line, and the GNSS sensor source the simulator builds from it.

`EmulatedL76K(link, emitter)` is the device: it owns the module's state (baud, fix interval, saved
configuration), formats an epoch every fix interval from the truth it is given, and puts the bytes on
the line at the line's pace - each sentence becomes readable when its last byte would have left a UART
at the configured baud (10 bits a byte), so at 9600 baud with the factory output a GGA arrives ~80 ms and
the RMC ~850 ms after the epoch, as on the real module. An epoch that would start while the previous one is still being
sent
is skipped (counted in `overruns`), which is what happens when the rate is too high for the baud.
It reads what the host writes and obeys PCAS01 (baud), PCAS02 (interval), PCAS03, PCAS04, PCAS10
(restart; 3 = factory: 9600 baud, 1 Hz) and PCAS00 (save: `power_cycle()` returns to the saved settings,
initially the ones the device was created with).

Wrong baud = garbage. On a pty pyserial's baud has no physical effect, so the device compares its own
baud with the speed the host programmed on the line (`link.line_baud()`: tcgetattr on the pty master, or
the in-memory port's baudrate). When they differ, every byte it sends arrives as random bytes (length
scaled by host/device baud, as a UART sampling at the wrong rate sees about that many characters) and
every byte the host sends is discarded unread, as the module's UART would see only framing errors.

`GnssSimSource(cfg, truth_fn)` wires plant truth -> emulator -> serial line -> the real L76K driver, in
polled mode with the simulation's clock, and is a SensorSource: `poll(t_s)` returns a SensorBatch with the
fixes that reached the driver by t_s. transport="memory" is the fast path; transport="pty" goes through
the kernel pseudo-terminal and the real pyserial.
"""
from __future__ import annotations

import random
import threading
import time
from collections import deque
from typing import TYPE_CHECKING, Callable, Optional, Union

from autopilot.vocab.config import GnssConfig
from autopilot.vocab.types import SensorBatch
from drivers.gnss import l76k_commands as cmd
from drivers.gnss.nmea_stream import NmeaFramer
from hil.devices.gnss_emitter import GnssTruth, L76KEmitter
from hil.devices.serial_ports import InMemorySerial, PtyPair

if TYPE_CHECKING:
    from drivers.gnss.l76k import Opener


class EmulatedL76K:
    """The device behind a serial link (PtyPair or InMemorySerial). Call `step(t_s, truth)` as time passes."""

    def __init__(self, link, emitter: Optional[L76KEmitter] = None, *, baud: int = cmd.DEFAULT_BAUD,
                 rate_hz: float = 1.0, t0_s: float = 0.0):
        self.link = link
        self.emitter = emitter if emitter is not None else L76KEmitter()
        self.baud = baud
        self.interval_s = cmd.fix_interval_ms(rate_hz) / 1000.0
        self._saved = (baud, self.interval_s, self.emitter.selection, self.emitter.constellations)
        self.next_epoch_s = t0_s
        self._line_free_s = t0_s
        self._pending: deque = deque()            # (t_ready_s, bytes)
        self._rx = NmeaFramer()
        self.commands: list = []                  # (t_s, sentence, changes) the device accepted
        self.ignored_rx_bytes = 0                 # host bytes lost to a baud mismatch
        self.garbled_bytes = 0
        self._garble_rng = random.Random(0x6A4B)  # line noise, separate from the receiver's noise draws
        self.overruns = 0
        self.sent_epochs = 0

    def step(self, t_s: float, truth: Optional[GnssTruth]) -> int:
        """Advance to t_s: read commands, format due epochs from `truth`, send what the line has delivered.
        `truth` may be None when no epoch is due (next_epoch_s > t_s). Returns the bytes written to the link."""
        self._read_commands(t_s)
        while self.next_epoch_s <= t_s:
            t_ep = self.next_epoch_s
            self.next_epoch_s = t_ep + self.interval_s
            if self._line_free_s > t_ep:           # still sending the previous epoch: the module skips one
                self.overruns += 1
                continue
            t_line = t_ep
            assert truth is not None               # an epoch is due
            for seg in self.emitter.epoch(t_ep, truth):
                t_line += len(seg) * 10.0 / self.baud
                self._pending.append((t_line, seg))
            self._line_free_s = t_line
            self.sent_epochs += 1
        written = 0
        while self._pending and self._pending[0][0] <= t_s:
            _, seg = self._pending.popleft()
            written += self._send(seg)
        return written

    def _send(self, seg: bytes) -> int:
        host = self.link.line_baud()
        if host is None:
            return 0
        if host != self.baud:
            n = max(1, round(len(seg) * host / self.baud))
            self.garbled_bytes += n
            seg = self._garble_rng.randbytes(n)
        return self.link.device_write(seg)

    def _read_commands(self, t_s: float) -> None:
        data = self.link.device_read()
        if not data:
            return
        if self.link.line_baud() != self.baud:
            self.ignored_rx_bytes += len(data)
            return
        for sentence in self._rx.feed(data):
            changes = self.emitter.apply_command(sentence)
            if changes is None:
                continue
            self.commands.append((t_s, sentence, changes))
            if "baud" in changes:
                self.baud = changes["baud"]
            if "interval_ms" in changes:
                self.interval_s = changes["interval_ms"] / 1000.0
            if changes.get("save"):
                self._saved = (self.baud, self.interval_s, self.emitter.selection, self.emitter.constellations)
            if changes.get("restart") == 3:
                self.baud, self.interval_s = cmd.DEFAULT_BAUD, 1.0
                self._saved = (self.baud, self.interval_s, self.emitter.selection, self.emitter.constellations)

    def power_cycle(self, t_s: float) -> None:
        """Power loss: back to the saved (or factory) baud, rate and output; bytes in flight are lost."""
        self.baud, self.interval_s, selection, mask = self._saved
        self.emitter.selection = selection
        if mask != self.emitter.constellations:
            self.emitter._set_constellations(mask)
        self._pending.clear()
        self._line_free_s = t_s
        self.next_epoch_s = t_s + 1.0                 # a hot start takes about a second to the first fix


class DeviceThread:
    """Runs an EmulatedL76K on wall time in a thread (for the pty tests and bench demos).

    truth_fn(t_s) gives the truth at the device's time t_s = (wall - start) * speedup. Hold `lock` to touch
    the device from another thread (e.g. `with th.lock: device.power_cycle(th.now_s())`)."""

    def __init__(self, device: EmulatedL76K, truth_fn: Callable[[float], GnssTruth], *, period_s: float = 0.002,
                 speedup: float = 1.0):
        self.device, self.truth_fn = device, truth_fn
        self.period_s, self.speedup = period_s, speedup
        self._stop = threading.Event()
        self.lock = threading.Lock()
        self._t0 = time.monotonic()
        self._thread = threading.Thread(target=self._run, name="emulated-l76k", daemon=True)
        self.error: Optional[BaseException] = None

    def now_s(self) -> float:
        return (time.monotonic() - self._t0) * self.speedup

    def start(self) -> "DeviceThread":
        self._t0 = time.monotonic()
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2.0)

    def _run(self) -> None:
        try:
            while not self._stop.wait(self.period_s):
                t = self.now_s()
                with self.lock:
                    self.device.step(t, self.truth_fn(t))
        except BaseException as exc:   # noqa: BLE001 - surfaced to the test through .error
            self.error = exc

    def __enter__(self) -> "DeviceThread":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


class GnssSimSource:
    """SensorSource of GNSS fixes for the simulator: truth -> emulated L76K -> serial bytes -> L76K driver.

    truth_fn(t_s) -> GnssTruth at the antenna. The device starts at cfg.baud and cfg.rate_hz (as if the
    module had been configured and saved), the driver is polled with the simulation clock, so runs are
    deterministic for a seed. `poll(t_s)` must be called with non-decreasing t_s (every control cycle).
    """

    def __init__(self, cfg: GnssConfig, truth_fn: Callable[[float], GnssTruth], *, transport: str = "memory",
                 seed: int = 0, emitter: Optional[L76KEmitter] = None, t0_s: float = 0.0,
                 beyond_l76k_rate: bool = False):
        """`beyond_l76k_rate`: emit at cfg.rate_hz even where the L76K cannot (it tops out at 5 Hz), as a
        faster receiver on the same line would (studies with 10 Hz receivers); the driver is unchanged."""
        from drivers.gnss.l76k import L76K  # hil depends on drivers, not the other way round

        sel = emitter.selection if emitter is not None else cmd.FACTORY_SELECTION
        if not beyond_l76k_rate:
            cmd.check_link(cfg.rate_hz, cfg.baud, sel)
        self.cfg = cfg
        self.truth_fn = truth_fn
        self.transport = transport
        self._t = t0_s
        self.link: Union[InMemorySerial, PtyPair]
        port: Union[str, Opener]
        if transport == "memory":
            self.link = InMemorySerial(cfg.baud)
            port = self.link.opener
        elif transport == "pty":
            self.link = PtyPair()
            port = self.link.path
        else:
            raise ValueError(f"transport {transport!r}: use 'memory' or 'pty'")
        self.emitter = emitter if emitter is not None else L76KEmitter(cfg, seed=seed)
        self.device = EmulatedL76K(self.link, self.emitter, baud=cfg.baud,
                                   rate_hz=1.0 if beyond_l76k_rate else cfg.rate_hz, t0_s=t0_s)
        if beyond_l76k_rate:
            self.device.interval_s = 1.0 / cfg.rate_hz
        # the boat's system clock: set (by NTP or from GNSS) to the simulated UTC
        self.driver = L76K(port, baud=cfg.baud, cep_m=cfg.cep_m, stale_timeout_s=cfg.stale_timeout_s,
                           clock=lambda: self._t, calendar=lambda: self.emitter.utc_ms(self._t) / 1000.0)
        self.driver.open()
        self._sent = 0

    def poll(self, t_s: float) -> SensorBatch:
        self._t = t_s
        due = self.device.next_epoch_s <= t_s      # ask the plant for truth only when an epoch is formatted
        self._sent += self.device.step(t_s, self.truth_fn(t_s) if due else None)
        fixes = self.driver.poll()
        if self.transport == "pty":
            # The kernel moves pty bytes asynchronously: wait (briefly) until the driver has them all, so
            # the result does not depend on scheduling.
            deadline = time.monotonic() + 0.05
            while self.driver.link.rx_bytes < self._sent and time.monotonic() < deadline:
                time.sleep(0.0002)
                fixes += self.driver.poll()
        return SensorBatch(gps=fixes)

    def position_ok(self, t_s: float) -> bool:
        return self.driver.position_ok(t_s)

    def close(self) -> None:
        self.driver.close()
        self.link.unplug()
