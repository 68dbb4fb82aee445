"""Serial lines for emulated devices: a pseudo-terminal that the real pyserial opens, and an in-memory port.

Both give the emulated device the same "device end" (`device_write`, `device_read`, `line_baud`) so an
emulator does not care which one it drives:

- `PtyPair`: os.openpty(). The host side is `path` - the slave device (/dev/pts/N), or a symlink to it
  (like /dev/serial/by-id/...) that `unplug()` removes, so a driver can lose the device and find it again
  under the same name. Baud is not physical on a pty, but the line settings are shared: `line_baud()`
  reads with tcgetattr on the master the speed the host programmed on the slave (pyserial's tcsetattr).
- `InMemorySerial`: the host side offers the pyserial calls the L76K driver uses (read, write, in_waiting,
  baudrate, ...); `opener(baud)` stands in for `serial.Serial(path, baud)`. No threads, no kernel: for
  simulations that run far faster than real time.

Device writes never block: bytes nobody can take (pty buffer full, port not open) are dropped and counted,
as on a UART.
"""
from __future__ import annotations

import errno
import os
import select
import termios
import time
import tty
from typing import Optional

_SPEEDS = {getattr(termios, f"B{b}"): b for b in (50, 75, 110, 134, 150, 200, 300, 600, 1200, 1800, 2400, 4800,
                                                  9600, 19200, 38400, 57600, 115200, 230400, 460800, 921600)
           if hasattr(termios, f"B{b}")}


class PtyPair:
    """A pseudo-terminal standing in for a USB/UART serial device. See the module docstring."""

    def __init__(self, link: Optional[str] = None):
        self.master, self._slave = os.openpty()
        tty.setraw(self._slave)                  # no echo, no CR/LF translation before pyserial opens it
        os.set_blocking(self.master, False)
        self.slave_path = os.ttyname(self._slave)
        self.link = link
        if link is not None:
            tmp = f"{link}.tmp{os.getpid()}"
            os.symlink(self.slave_path, tmp)
            os.replace(tmp, link)                # atomically (re)point the device name
        self.path = link if link is not None else self.slave_path
        self.dropped_bytes = 0
        self.closed = False

    # -- device end --------------------------------------------------------------------------------------
    def device_write(self, data: bytes) -> int:
        """Write what the pty takes now; the rest is dropped (counted). Returns the bytes written."""
        if self.closed or not data:
            return 0
        try:
            n = os.write(self.master, data)
        except BlockingIOError:
            n = 0
        except OSError:
            n = 0
        self.dropped_bytes += len(data) - n
        return n

    def device_write_all(self, data: bytes, timeout_s: float = 5.0) -> int:
        """Write everything, waiting for the host to read (for replaying recordings). Returns bytes written."""
        view = memoryview(data)
        deadline = time.monotonic() + timeout_s
        done = 0
        while done < len(data) and not self.closed:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            _, w, _ = select.select([], [self.master], [], min(left, 0.05))
            if not w:
                continue
            try:
                done += os.write(self.master, view[done:])
            except BlockingIOError:
                continue
            except OSError:
                break
        return done

    def device_read(self, size: int = 4096) -> bytes:
        """What the host wrote to the device, without blocking (b'' if nothing)."""
        if self.closed:
            return b""
        try:
            return os.read(self.master, size)
        except (BlockingIOError, InterruptedError):
            return b""
        except OSError as exc:                   # EIO: no host has the slave open
            if exc.errno == errno.EIO:
                return b""
            raise

    def line_baud(self) -> Optional[int]:
        """The baud the host side programmed (tcgetattr on the master reads the slave's settings)."""
        if self.closed:
            return None
        try:
            return _SPEEDS.get(termios.tcgetattr(self.master)[5])
        except termios.error:
            return None

    # -- hot-plug ----------------------------------------------------------------------------------------
    def unplug(self) -> None:
        """The device disappears: the host's reads fail with EIO and the symlink (if any) goes away."""
        if self.closed:
            return
        self.closed = True
        if self.link is not None:
            try:
                if os.path.islink(self.link) and os.readlink(self.link) == self.slave_path:
                    os.unlink(self.link)
            except OSError:
                pass
        for fd in (self.master, self._slave):
            try:
                os.close(fd)
            except OSError:
                pass

    close = unplug

    def __enter__(self) -> "PtyPair":
        return self

    def __exit__(self, *exc) -> None:
        self.unplug()


class InMemorySerial:
    """A serial line in memory: pyserial-like host end, device end for an emulator. Single-threaded use."""

    def __init__(self, baudrate: int = 9600):
        self.baudrate = baudrate
        self.is_open = False
        self.present = True                      # False after unplug(): opening and I/O fail
        self.timeout = 0.0
        self._to_host = bytearray()
        self._to_device = bytearray()
        self.dropped_bytes = 0

    # -- host end (what the driver sees) ------------------------------------------------------------------
    def opener(self, baud: int) -> "InMemorySerial":
        """Stands in for `serial.Serial(path, baud)`: opens this port at `baud`."""
        if not self.present:
            raise FileNotFoundError(errno.ENOENT, "in-memory serial device unplugged")
        self.baudrate = baud
        self.is_open = True
        return self

    def _check(self) -> None:
        if not self.present:
            raise OSError(errno.EIO, "in-memory serial device unplugged")
        if not self.is_open:
            raise OSError(errno.EBADF, "in-memory serial port is closed")

    @property
    def in_waiting(self) -> int:
        self._check()
        return len(self._to_host)

    def read(self, size: int = 1) -> bytes:
        self._check()
        data = bytes(self._to_host[:size])
        del self._to_host[:size]
        return data

    def write(self, data: bytes) -> int:
        self._check()
        self._to_device += data
        return len(data)

    def flush(self) -> None:
        self._check()

    def reset_input_buffer(self) -> None:
        self._to_host.clear()

    def close(self) -> None:
        self.is_open = False

    # -- device end ---------------------------------------------------------------------------------------
    def device_write(self, data: bytes) -> int:
        if not (self.present and self.is_open):
            self.dropped_bytes += len(data)
            return 0
        self._to_host += data
        return len(data)

    def device_read(self, size: int = 4096) -> bytes:
        data = bytes(self._to_device[:size])
        del self._to_device[:size]
        return data

    def line_baud(self) -> Optional[int]:
        return self.baudrate if (self.present and self.is_open) else None

    def unplug(self) -> None:
        self.present = False
        self.is_open = False
        self._to_host.clear()
        self._to_device.clear()

    def replug(self) -> None:
        self.present = True
