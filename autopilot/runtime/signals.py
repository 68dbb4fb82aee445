"""SIGINT and SIGTERM as a stop request that wakes whatever waits: the boat process's one signal handling."""
from __future__ import annotations

import signal
import socket
import threading
from typing import Callable, Optional


class StopOnSignal:
    """SIGINT and SIGTERM set `stop` and call the waker at once.

    Python runs a signal handler only when the main thread is back in Python, not while it sits in the executor's
    wait; the C-level handler writes the signal number to the wakeup fd immediately, so a small thread reading it
    does the waking (the Python handler, when it runs later, only sets `stop` again)."""

    def __init__(self, stop: threading.Event):
        self.stop = stop
        self.waker: Optional[Callable[[], None]] = None
        self._r, self._w = socket.socketpair()
        self._w.setblocking(False)
        signal.set_wakeup_fd(self._w.fileno(), warn_on_full_buffer=False)
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, self._on_signal)
        threading.Thread(target=self._watch, name="signal-wake", daemon=True).start()

    def _on_signal(self, signum, frame) -> None:
        self.stop.set()

    def _watch(self) -> None:
        while True:
            try:
                if not self._r.recv(64):
                    return
            except OSError:
                return
            self.stop.set()
            waker = self.waker
            if waker is not None:
                waker()

    def close(self) -> None:
        signal.set_wakeup_fd(-1)
        self._w.close()
        self._r.close()
