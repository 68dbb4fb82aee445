"""Output that never blocks the control loop: lines go to a writer thread through a bounded queue.

A boat's stdout or stderr is a pipe (systemd's journal, a test harness, a shell with `| less`): when nobody
reads it, a write blocks once the pipe is full, and whatever thread wrote it stops there, with the loop's lock
held, or the MAVLink thread that answers disarm. `ConsoleWriter.write` only queues; its thread writes to the
file descriptor. When the queue is full the line is dropped and counted, and the thread says how many were
dropped once it can write again. `ConsoleHandler` is a logging handler on top of it (`autopilot run`'s log);
`RepeatQuieter` (autopilot/commands/limits.py) keeps a flood of refusals from one origin to one line a second.
"""
from __future__ import annotations

import logging
import os
import queue
import threading
import time
from typing import Optional, TextIO

QUEUE_LINES = 1000


class ConsoleWriter:
    """Writes queued lines to `stream`'s file descriptor in its own daemon thread (see the module doc)."""

    def __init__(self, stream: TextIO, max_lines: int = QUEUE_LINES):
        self.stream = stream
        self.dropped = 0                 # lines dropped because the queue was full, since start
        self._unsaid = 0                 # of them, not yet said
        self._q: "queue.Queue[Optional[str]]" = queue.Queue(maxsize=max_lines)
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="console-writer", daemon=True)
        self._thread.start()

    def write(self, line: str) -> None:
        """Queue `line` (a newline is added); never blocks. Dropped, and counted, when the queue is full."""
        try:
            self._q.put_nowait(line)
        except queue.Full:
            with self._lock:
                self.dropped += 1
                self._unsaid += 1

    def _run(self) -> None:
        try:
            self.stream.flush()               # what was printed before the writer took over goes first
        except (OSError, ValueError):
            pass
        fd = self.stream.fileno()
        while True:
            line = self._q.get()
            if line is None:
                return
            with self._lock:
                unsaid, self._unsaid = self._unsaid, 0
            text = line + "\n"
            if unsaid:
                text = f"[{unsaid} lines of output dropped: nobody read them fast enough]\n" + text
            data = text.encode("utf-8", "replace")
            try:
                while data:
                    data = data[os.write(fd, data):]
            except OSError:
                return                        # the reader went away: nothing more can be said

    def drain(self, timeout_s: float = 2.0) -> None:
        """Wait up to `timeout_s` for the queued lines to be written (before a final print of the caller's)."""
        end = time.monotonic() + timeout_s
        while not self._q.empty() and time.monotonic() < end and self._thread.is_alive():
            time.sleep(0.01)
        time.sleep(0.01)

    def close(self, timeout_s: float = 2.0) -> None:
        """Write what is queued (up to `timeout_s`) and stop the thread."""
        self.drain(timeout_s)
        try:
            self._q.put_nowait(None)
        except queue.Full:
            pass
        self._thread.join(timeout=0.2)


class ConsoleHandler(logging.Handler):
    """A logging handler that formats the record and hands it to a ConsoleWriter: emit never blocks."""

    def __init__(self, writer: ConsoleWriter):
        super().__init__()
        self.writer = writer

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.writer.write(self.format(record))
        except Exception:           # a record that cannot be formatted must not stop the caller
            self.writer.write(f"[log record not written: {record.msg!r:.200}]")
