"""ESC output as servo pulses: the autopilot.interfaces.ActuatorSink of the `hw` and `sim` backends.

`EscOutput(channels, pi)` turns PulseCommand (one pulse width per thruster, vessel config order, us) into
`pi.set_servo_pulsewidth(gpio, us)` on a port: pigpio's `pi`, the kernel's PWM or a PCA9685 board
(drivers/esc/contract.py; `gpio` is the output's number on that port), with, per channel, in this order:
  1. arming: neutral only, for `arming_time_s` after the first write (or `arm(t_s)`); non-blocking, the
     runner keeps calling write() and commands are ignored until the ESC is armed;
  2. reverse: mirror about neutral (p -> 2 neutral - p) for a thruster wired or mounted backwards;
  3. trim: + trim_us (also shifts neutral: the neutral pulse sent is neutral + trim);
  4. clamp to [pulse_min_us, pulse_max_us];
  5. slew-rate limit: at most slew_us_per_s * (t - t_previous) of change per write.
Neutral (neutral + trim) is sent on neutral(), close(), on leaving a `with` block (also by exception), at
interpreter exit (atexit), on SIGTERM/SIGINT (install_signal_handlers(); the previous handler is then called,
or the default action taken), and by a watchdog thread when write() has not been called for
`command_timeout_s` (wall clock). After a timeout the slew restarts from neutral.

A pulse is only sent when it changes (pigpiod repeats the last pulse by itself), and refreshed every
`refresh_interval_s`. A failing pigpio call (pigpiod gone, socket error) is counted and makes `connected`
False; write() never raises for it. With `pi_factory`, the connection is re-made every
`reconnect_interval_s`, then the ESCs are armed again (their signal stopped with pigpiod).

An optional deadman (drivers/esc_deadman.DeadmanLink) gets a heartbeat on every write(); it sets neutral from
a separate guardian process if this process dies or hangs. While the guardian reports a trip, or has died,
outputs stay neutral and `connected` is False.

Hardware: `connect_pigpio(host, port)` refuses on a Raspberry Pi 5 (pigpio does not support its RP1 I/O) and
turns "pigpiod is not running" into an EscError saying how to start it.
"""
from __future__ import annotations

import atexit
import math
import os
import signal
import threading
import time
from dataclasses import dataclass
from typing import Callable, Optional, Sequence

from autopilot.vocab.types import PulseCommand
from drivers.esc.contract import EscBackend, EscError, EscPort
from drivers.esc.deadman import DeadmanLink
from drivers.esc.ports import open_port


@dataclass(frozen=True)
class EscChannel:
    """One ESC signal line. Pulse widths in microseconds; slew in us per second."""

    name: str
    gpio: int
    pulse_min_us: int = 1100
    pulse_neutral_us: int = 1500
    pulse_max_us: int = 1900
    reverse: bool = False
    trim_us: int = 0
    arming_time_s: float = 3.0
    slew_us_per_s: float = 2000.0

    def __post_init__(self):
        if not 0 <= self.gpio <= 31:
            raise EscError(f"ESC channel {self.name!r}: gpio must be a user GPIO 0-31, got {self.gpio}")
        if not 500 <= self.pulse_min_us < self.pulse_neutral_us < self.pulse_max_us <= 2500:
            raise EscError(f"ESC channel {self.name!r}: need 500 <= pulse_min_us < pulse_neutral_us < "
                           f"pulse_max_us <= 2500, got {self.pulse_min_us}/{self.pulse_neutral_us}/"
                           f"{self.pulse_max_us}")

    @classmethod
    def from_thruster(cls, thruster, output: Optional[int] = None) -> "EscChannel":
        """From an autopilot.vocab.config.ThrusterConfig; `output` replaces its GPIO (a PCA9685 board channel)."""
        return cls(
            name=thruster.name,
            gpio=thruster.gpio if output is None else output,
            pulse_min_us=thruster.pulse_min_us,
            pulse_neutral_us=thruster.pulse_neutral_us,
            pulse_max_us=thruster.pulse_max_us,
            reverse=thruster.reverse,
            trim_us=thruster.trim_us,
            arming_time_s=thruster.arming_time_s,
            slew_us_per_s=thruster.slew_us_per_s,
        )

    @property
    def neutral_out_us(self) -> int:
        """The pulse that stops this thruster: neutral plus trim, within the range."""
        return int(min(self.pulse_max_us, max(self.pulse_min_us, self.pulse_neutral_us + self.trim_us)))

    def shape(self, pulse_us: float) -> float:
        """Reverse, trim and clamp one commanded pulse (before slew limiting)."""
        p = 2 * self.pulse_neutral_us - pulse_us if self.reverse else pulse_us
        p += self.trim_us
        return min(self.pulse_max_us, max(self.pulse_min_us, p))

    def unshape(self, out_us: float) -> float:
        """The commanded pulse an output pulse stands for: trim and reversal undone (what a thrust map reads)."""
        p = out_us - self.trim_us
        return 2 * self.pulse_neutral_us - p if self.reverse else p


def channels_from_vessel(vessel, backend=None) -> list:
    """EscChannel per thruster in vessel order. Each `gpio` is the output on `backend` (drivers/esc_backends):
    the thruster's BCM GPIO (which must be set), or for pca9685 the board channel from esc.pca9685_channels."""
    if backend is not None and backend.kind == "pca9685":
        outs = list(backend.pca9685_channels)
        if len(outs) != len(vessel.thrusters):
            raise EscError(f"esc.pca9685_channels lists {len(outs)} outputs for {len(vessel.thrusters)} thrusters: "
                           f"give the board output (0-15) of each thruster, in the vessel's order")
        if any(not 0 <= o <= 15 for o in outs):
            raise EscError(f"esc.pca9685_channels {outs}: a PCA9685 has outputs 0-15")
        return [EscChannel.from_thruster(t, o) for t, o in zip(vessel.thrusters, outs)]
    missing = [t.name for t in vessel.thrusters if t.gpio < 0]
    if missing:
        raise EscError(f"{vessel.source_file or vessel.name}: thrusters {', '.join(missing)} have no gpio: set "
                       f"thrusters[].gpio to the BCM GPIO of each ESC signal wire")
    return [EscChannel.from_thruster(t) for t in vessel.thrusters]


@dataclass
class EscStats:
    writes: int = 0            # write() calls
    pulses_sent: int = 0       # set_servo_pulsewidth calls that succeeded
    errors: int = 0            # failed pigpio calls
    timeouts: int = 0          # command timeouts that set neutral
    reconnects: int = 0
    deadman_trips: int = 0
    outages: int = 0           # times the outputs stopped being vouched for (I/O lost, deadman tripped)
    last_error: str = ""


class EscOutput:
    """autopilot.interfaces.ActuatorSink over pigpio (or hil.devices.fake_pigpiod.FakePi). See the module docstring."""

    def __init__(self, channels: Sequence[EscChannel], pi, *, command_timeout_s: float = 0.3,
                 watchdog: bool = True, clock: Callable[[], float] = time.monotonic,
                 refresh_interval_s: float = 0.5, pi_factory: Optional[Callable[[], EscPort]] = None,
                 reconnect_interval_s: float = 2.0, emergency_pi_factory: Optional[Callable[[], EscPort]] = None,
                 deadman=None, close_pi: bool = False):
        self.channels = list(channels)
        if not self.channels:
            raise EscError("ESC output needs at least one channel")
        gpios = [c.gpio for c in self.channels]
        if len(set(gpios)) != len(gpios):
            raise EscError(f"ESC channels share a GPIO: {gpios}")
        self.pi = pi
        self.command_timeout_s = float(command_timeout_s)
        self.clock = clock
        self.refresh_interval_s = float(refresh_interval_s)
        self.pi_factory = pi_factory
        self.reconnect_interval_s = float(reconnect_interval_s)
        self.emergency_pi_factory = emergency_pi_factory or pi_factory
        self.deadman = deadman
        self.close_pi = close_pi
        self.stats = EscStats()
        self._lock = threading.RLock()
        n = len(self.channels)
        self._out = [float(c.neutral_out_us) for c in self.channels]     # the (slewed) pulses being output
        self._sent: list = [None] * n
        self._sent_clock = [-math.inf] * n
        self._arm_start: Optional[float] = None
        self._last_t: Optional[float] = None
        self._last_write_clock: Optional[float] = None
        self._timed_out = False
        self._io_ok = True
        self._shutdown = False
        self._next_reconnect = -math.inf
        self._deadman_tripped = False
        self._prev_handlers: dict = {}
        self._watchdog_stop = threading.Event()
        self._watchdog: Optional[threading.Thread] = None
        atexit.register(self._atexit)
        if watchdog:
            self._watchdog = threading.Thread(target=self._watchdog_loop, name="esc-watchdog", daemon=True)
            self._watchdog.start()

    # ------------------------------------------------------------------------------ construction helpers
    @classmethod
    def from_vessel(cls, vessel, pi=None, *, backend=None, host: str = "localhost", port: int = 8888,
                    deadman: bool = False, deadman_timeout_s: float = 0.4, **kwargs) -> "EscOutput":
        """Hardware (pi=None): open `backend` (drivers/esc_backends.EscBackend; default pigpiod at host:port;
        EscError if impossible), reopen it on loss, and with deadman=True spawn the guardian process with a port
        of its own. Simulation: pass a hil.devices.fake_pigpiod.FakePi, or an emulated backend and pi=None."""
        backend = backend if backend is not None else EscBackend(host=host, port=port)
        channels = channels_from_vessel(vessel, backend)
        outputs = [c.gpio for c in channels]
        link = None
        if pi is None:
            pi = open_port(backend, outputs)
            kwargs.setdefault("pi_factory", lambda: open_port(backend, outputs))
            kwargs.setdefault("close_pi", True)
            if deadman:
                link = DeadmanLink.spawn(channels, backend=backend, timeout_s=deadman_timeout_s)
        else:
            kwargs.setdefault("emergency_pi_factory", lambda: pi)
        return cls(channels, pi, deadman=link, **kwargs)

    # ------------------------------------------------------------------------------ ActuatorSink
    def arm(self, t_s: float) -> None:
        """Start the arming sequence now (neutral for each channel's arming_time_s); idempotent."""
        with self._lock:
            if self._arm_start is None:
                self._arm_start = float(t_s)
                self._last_t = float(t_s)
                self._send_all_neutral(force=True)

    def armed(self, t_s: float) -> bool:
        """True when every channel has finished its arming time."""
        return self._arm_start is not None and all(
            t_s - self._arm_start >= c.arming_time_s for c in self.channels)

    def write(self, t_s: float, pulses: PulseCommand) -> None:
        """Send one command per channel (vessel order). Never raises on a hardware fault."""
        values = pulses.pulse_us
        if len(values) != len(self.channels):
            raise ValueError(f"PulseCommand has {len(values)} pulses, ESC output has {len(self.channels)} "
                             f"channels")
        with self._lock:
            self.stats.writes += 1
            now = self.clock()
            self._last_write_clock = now
            if self._arm_start is None:
                self.arm(t_s)
            if not self._io_ok and not self._reconnect(now, t_s):
                return
            self._poll_deadman()
            dt = 0.0 if self._last_t is None else max(0.0, t_s - self._last_t)
            if self._timed_out or dt > self.command_timeout_s:
                self._out = [float(c.neutral_out_us) for c in self.channels]
                self._timed_out = False
                dt = 0.0                        # the slew restarts from neutral, not across the gap
            self._last_t = t_s
            assert self._arm_start is not None      # arm() above (or _reconnect's) set it
            hold = self._shutdown or self._deadman_tripped or (
                self.deadman is not None and not (self.deadman.alive and getattr(self.deadman, "vouching", True)))
            for i, (c, p) in enumerate(zip(self.channels, values)):
                if hold or t_s - self._arm_start < c.arming_time_s:
                    target = float(c.neutral_out_us)
                    self._out[i] = target
                else:
                    target = c.shape(float(p))
                    step = c.slew_us_per_s * dt
                    prev = self._out[i]
                    self._out[i] = min(prev + step, max(prev - step, target))
                self._send(i, int(round(self._out[i])), now)
            if self.deadman is not None:
                self.deadman.heartbeat()

    def neutral(self) -> None:
        """Every output to its neutral pulse now."""
        with self._lock:
            self._out = [float(c.neutral_out_us) for c in self.channels]
            self._send_all_neutral(force=True)

    @property
    def connected(self) -> bool:
        """False when the outputs cannot be vouched for: pigpiod unreachable, or the deadman tripped, gone or
        unable to reach pigpiod itself (it could not stop the thrusters)."""
        if not self._io_ok or not getattr(self.pi, "connected", True):
            return False
        if self.deadman is not None:
            if not self.deadman.alive or self._deadman_tripped or not getattr(self.deadman, "vouching", True):
                return False
        return True

    @property
    def outages(self) -> int:
        """How many times the outputs stopped being vouched for since start (pigpiod or the port lost, the deadman
        tripped), counted when it happens: an outage shorter than anyone's look at `connected` still counts."""
        return self.stats.outages

    def output_us(self) -> list:
        """The pulse widths currently being output (after arming, shaping and slew) [us]."""
        return [int(round(p)) for p in self._out]

    def sent_pulses_us(self) -> list:
        """The pulses being output as the autopilot's commands read (trim and reversal undone) [us]: slew and
        arming included, so a thrust map turns them into the thrust the motors are asked for."""
        return [c.unshape(p) for c, p in zip(self.channels, self.output_us())]

    def close(self) -> None:
        """Neutral, stop the watchdog and the deadman guardian; release pigpio if close_pi (from_vessel's own
        connection)."""
        self._watchdog_stop.set()
        with self._lock:
            self._shutdown = True
            self.neutral()
            if self.deadman is not None:
                self.deadman.close()
        if self._watchdog is not None and self._watchdog is not threading.current_thread():
            self._watchdog.join(timeout=1.0)
        stop = getattr(self.pi, "stop", None) if self.close_pi else None
        if stop is not None:
            try:
                stop()
            except Exception:      # noqa: BLE001 - closing a dead connection must not fail the shutdown
                pass
        atexit.unregister(self._atexit)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    # ------------------------------------------------------------------------------ signals
    def install_signal_handlers(self, signals=(signal.SIGTERM, signal.SIGINT)) -> None:
        """On these signals: neutral over a separate pigpio connection, then the previous handler.

        A separate connection, because the signal may interrupt this thread inside a pigpio call that holds the
        client's socket lock. With the default action as previous handler, the signal is re-raised after
        neutral so the process ends as it would have (killed by SIGTERM); SIGINT raises KeyboardInterrupt.
        Call from the main thread.
        """
        for sig in signals:
            self._prev_handlers[sig] = signal.signal(sig, self._on_signal)

    def _on_signal(self, signum, frame) -> None:
        self._shutdown = True
        self.emergency_neutral()
        prev = self._prev_handlers.get(signum, signal.SIG_DFL)
        if callable(prev):
            prev(signum, frame)
        elif prev == signal.SIG_DFL:
            if signum == signal.SIGINT:
                raise KeyboardInterrupt
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)

    def emergency_neutral(self) -> bool:
        """Neutral on every channel over a fresh pigpio connection (no locks shared with the loop)."""
        factory = self.emergency_pi_factory
        if factory is None:
            return False
        try:
            pi = factory()
            for c in self.channels:
                pi.set_servo_pulsewidth(c.gpio, c.neutral_out_us)
            if pi is not self.pi and hasattr(pi, "stop"):
                pi.stop()
            return True
        except Exception as e:    # noqa: BLE001 - report, the caller is shutting down anyway
            self.stats.errors += 1
            self.stats.last_error = f"emergency neutral failed: {e}"
            return False

    # ------------------------------------------------------------------------------ internals
    def _send(self, i: int, pulse: int, now: float, force: bool = False) -> None:
        if not force and pulse == self._sent[i] and now - self._sent_clock[i] < self.refresh_interval_s:
            return
        try:
            self.pi.set_servo_pulsewidth(self.channels[i].gpio, pulse)
        except Exception as e:    # noqa: BLE001 - pigpio.error, socket errors, a stopped client: all faults
            self._io_fault(e)
            return
        self._sent[i] = pulse
        self._sent_clock[i] = now
        self.stats.pulses_sent += 1

    def _send_all_neutral(self, force: bool) -> None:
        now = self.clock()
        for i, c in enumerate(self.channels):
            self._send(i, c.neutral_out_us, now, force=force)

    def _io_fault(self, e: Exception) -> None:
        self.stats.errors += 1
        self.stats.last_error = f"ESC output: {type(e).__name__}: {e}"
        if self._io_ok:
            self.stats.outages += 1
        self._io_ok = False
        self._sent = [None] * len(self.channels)

    def _reconnect(self, now: float, t_s: float) -> bool:
        if self.pi_factory is None or now < self._next_reconnect:
            return False
        self._next_reconnect = now + self.reconnect_interval_s
        try:
            pi = self.pi_factory()
        except Exception as e:    # noqa: BLE001 - still down: try again later
            self.stats.last_error = f"reconnect failed: {e}"
            return False
        old, self.pi = self.pi, pi
        if old is not pi and hasattr(old, "stop"):
            try:
                old.stop()
            except Exception:     # noqa: BLE001
                pass
        self._io_ok = True
        self.stats.reconnects += 1
        self._arm_start = None            # the ESCs lost their signal with pigpiod: arm them again
        self.arm(t_s)
        return self._io_ok

    def _poll_deadman(self) -> None:
        if self.deadman is None:
            return
        trips = self.deadman.poll_trips()
        if trips:
            self.stats.deadman_trips += trips
            if not self._deadman_tripped:
                self.stats.outages += 1
            self._deadman_tripped = True
        elif self._deadman_tripped and self.deadman.alive:
            self._deadman_tripped = False     # heartbeats flow again; outputs restart from neutral
            self._timed_out = True

    def _watchdog_loop(self) -> None:
        period = max(0.005, self.command_timeout_s / 4.0)
        while not self._watchdog_stop.wait(period):
            last = self._last_write_clock
            if last is None or self._timed_out:
                continue
            if self.clock() - last > self.command_timeout_s:
                with self._lock:
                    if self._last_write_clock == last:
                        self.stats.timeouts += 1
                        self._timed_out = True
                        self.neutral()

    def _atexit(self) -> None:
        try:
            self._shutdown = True
            self.neutral()
        except Exception:         # noqa: BLE001 - interpreter shutdown: best effort
            pass
