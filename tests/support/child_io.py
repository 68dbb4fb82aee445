"""What a test reads from a child boat process: its output lines with their arrival times (`Lines`) and systemd's
notify socket (`NotifySocket`), every datagram the service sends."""
from __future__ import annotations

import socket
import subprocess
import threading
import time
from pathlib import Path


class Lines:
    """A child's stderr+stdout, line by line, each with the monotonic time it arrived."""

    def __init__(self, proc: subprocess.Popen):
        self.lines: list = []
        self._thread = threading.Thread(target=self._read, args=(proc,), daemon=True)
        self._thread.start()

    def _read(self, proc) -> None:
        for line in proc.stdout:
            self.lines.append((time.monotonic(), line.rstrip("\n")))

    def text(self) -> str:
        return "\n".join(line for _, line in self.lines)

    def first(self, fragment: str):
        return next((t for t, line in self.lines if fragment in line), None)

    def join(self) -> None:
        self._thread.join(timeout=10)


class NotifySocket:
    """systemd's side of sd_notify: every datagram the service sends, kept."""

    def __init__(self, path: Path):
        self.path = str(path)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self.path)
        self.sock.settimeout(0.2)
        self.messages: list = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        while not self._stop.is_set():
            try:
                self.messages.append(self.sock.recv(4096).decode())
            except socket.timeout:
                continue
            except OSError:
                return

    def close(self) -> None:
        time.sleep(0.3)
        self._stop.set()
        self._thread.join(timeout=2)
        self.sock.close()
