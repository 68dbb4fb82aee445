"""An smbus2-backed I2C bus offering the busio.I2C methods that Adafruit CircuitPython drivers use.

`SMBusI2C(bus_number)` opens /dev/i2c-N through smbus2 and provides try_lock/unlock, writeto, readfrom_into,
writeto_then_readfrom and scan, so `adafruit_lsm9ds1.LSM9DS1_I2C(SMBusI2C(1))` runs on a Raspberry Pi (or on an
emulated bus) without Adafruit Blinka choosing a board. Any object with the smbus2.SMBus methods used here
(i2c_rdwr, read_i2c_block_data, write_i2c_block_data, write_quick, read_byte, close) can stand in for the bus:
`RegisterBus(device)` offers them over any register-level device, which is how the emulated LSM9DS1 and PCA9685
(hil/) are attached, in this process or, through `SocketRegisters(path)`, served by another one.

A register read (one address byte out, up to 32 bytes in) goes out as an SMBus I2C-block read, which on the
wire is the same combined transaction (start, write register, repeated start, read) as i2c_rdwr; longer or
unusual transfers use i2c_rdwr. Bus faults surface as OSError, as with busio.

`import_without_blinka(module)` imports an Adafruit driver whose annotations name busio/digitalio types, with
light stand-ins for those two modules, so that Blinka's platform detection never runs on import.
"""
from __future__ import annotations

import importlib
import sys
import threading
import types
from typing import Optional

SMBUS_BLOCK_MAX = 32   # largest transfer of one SMBus I2C-block call [bytes]


class I2CBusError(OSError):
    """The I2C bus itself cannot be used (missing device node, no permission). The message says what to do."""


def open_smbus(bus_number: int):
    """Open /dev/i2c-<bus_number> with smbus2; failures become I2CBusError with an actionable message."""
    from smbus2 import SMBus
    try:
        return SMBus(bus_number)
    except FileNotFoundError:
        raise I2CBusError(f"I2C bus {bus_number} not found (/dev/i2c-{bus_number} does not exist): enable I2C "
                          f"(`sudo raspi-config nonint do_i2c 0` or `dtparam=i2c_arm=on` in config.txt) "
                          f"and check the bus number in the vessel config (sensors.imu.bus)") from None
    except PermissionError:
        raise I2CBusError(f"no permission to open /dev/i2c-{bus_number}: add the user to the `i2c` group "
                          f"(`sudo usermod -aG i2c $USER`, then log in again)") from None


class SMBusI2C:
    """busio.I2C-compatible bus on top of an smbus2.SMBus (or any object offering the same methods).

    `bus_number` names /dev/i2c-N; pass `bus=` to use an already opened SMBus-like object instead.
    The lock is the busio contract: callers (adafruit_bus_device) take it around each transaction.
    """

    def __init__(self, bus_number: int, *, bus=None):
        self.bus_number = int(bus_number)
        self._bus = bus if bus is not None else open_smbus(self.bus_number)
        self._lock = threading.Lock()

    # ---------------------------------------------------------------- busio.I2C contract
    def try_lock(self) -> bool:
        return self._lock.acquire(blocking=False)

    def unlock(self) -> None:
        if self._lock.locked():
            self._lock.release()

    def scan(self) -> list:
        """7-bit addresses that acknowledge a one-byte read (as `i2cdetect -r`)."""
        found = []
        for address in range(0x03, 0x78):
            try:
                self._bus.read_byte(address)
            except OSError:
                continue
            found.append(address)
        return found

    def writeto(self, address: int, buffer, *, start: int = 0, end: Optional[int] = None) -> None:
        data = bytes(buffer[start:len(buffer) if end is None else end])
        if not data:
            self._bus.write_quick(address)
        elif len(data) <= SMBUS_BLOCK_MAX + 1:
            self._bus.write_i2c_block_data(address, data[0], list(data[1:]))
        else:
            from smbus2 import i2c_msg
            self._bus.i2c_rdwr(i2c_msg.write(address, data))

    def readfrom_into(self, address: int, buffer, *, start: int = 0, end: Optional[int] = None) -> None:
        from smbus2 import i2c_msg
        end = len(buffer) if end is None else end
        msg = i2c_msg.read(address, end - start)
        self._bus.i2c_rdwr(msg)
        buffer[start:end] = bytes(msg)

    def writeto_then_readfrom(self, address: int, buffer_out, buffer_in, *, out_start: int = 0,
                              out_end: Optional[int] = None, in_start: int = 0,
                              in_end: Optional[int] = None) -> None:
        out_end = len(buffer_out) if out_end is None else out_end
        in_end = len(buffer_in) if in_end is None else in_end
        count = in_end - in_start
        if out_end - out_start == 1 and 0 < count <= SMBUS_BLOCK_MAX:
            data = self._bus.read_i2c_block_data(address, buffer_out[out_start], count)
        else:
            from smbus2 import i2c_msg
            write = i2c_msg.write(address, bytes(buffer_out[out_start:out_end]))
            read = i2c_msg.read(address, count)
            self._bus.i2c_rdwr(write, read)
            data = bytes(read)
        buffer_in[in_start:in_end] = bytes(data)

    def deinit(self) -> None:
        self.close()

    def close(self) -> None:
        close = getattr(self._bus, "close", None)
        if close is not None:
            close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __repr__(self) -> str:
        return f"SMBusI2C(bus={self.bus_number})"


class RegisterBus:
    """The smbus2.SMBus methods SMBusI2C uses, over any register device: an object with `probe(addr)`,
    `read_registers(addr, reg, n) -> bytes` and `write_registers(addr, reg, data)` (an emulated chip, or
    SocketRegisters for one served by another process). Errors are OSError, as smbus2's."""

    def __init__(self, device):
        self.device = device
        self.closed = False

    def read_i2c_block_data(self, i2c_addr: int, register: int, length: int, force=None) -> list:
        return list(self.device.read_registers(i2c_addr, register, length))

    def write_i2c_block_data(self, i2c_addr: int, register: int, data, force=None) -> None:
        self.device.write_registers(i2c_addr, register, bytes(data))

    def read_byte_data(self, i2c_addr: int, register: int, force=None) -> int:
        return self.device.read_registers(i2c_addr, register, 1)[0]

    def write_byte_data(self, i2c_addr: int, register: int, value: int, force=None) -> None:
        self.device.write_registers(i2c_addr, register, bytes([value]))

    def read_byte(self, i2c_addr: int, force=None) -> int:
        self.device.probe(i2c_addr)
        return 0

    def write_quick(self, i2c_addr: int, force=None) -> None:
        self.device.probe(i2c_addr)

    def i2c_rdwr(self, *msgs) -> None:
        """Combined transaction of smbus2.i2c_msg objects: a write sets the register pointer (and writes data
        after it); a following read returns registers from that pointer."""
        pointer = None
        for msg in msgs:
            data = bytes(msg)
            if msg.flags & 0x0001:                        # I2C_M_RD
                if pointer is None:
                    self.device.probe(msg.addr)
                    values = bytes(msg.len)
                else:
                    values = self.device.read_registers(msg.addr, pointer, msg.len)
                for i, value in enumerate(values):
                    msg.buf[i] = bytes([value])
            else:
                if not data:
                    self.device.probe(msg.addr)
                    continue
                pointer = data[0]
                if len(data) > 1:
                    self.device.write_registers(msg.addr, pointer, data[1:])

    def close(self) -> None:
        self.closed = True
        close = getattr(self.device, "close", None)
        if close is not None:
            close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


class SocketRegisters:
    """A register device served by another process on a Unix socket (hil/devices/i2c_socket.py serves emulated chips
    this way, so an autopilot, its deadman guardian and a test share one emulated bus). One request at a time:
    op (P probe, R read, W write), address, register, count, data; the answer is an errno (0 = done) and the
    bytes read. A vanished server is OSError(EIO)."""

    def __init__(self, path: str):
        import socket
        self.path = path
        self._lock = threading.Lock()
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self._sock.connect(path)
        except OSError as e:
            self._sock.close()
            raise OSError(e.errno or 5, f"no emulated I2C bus at {path}: {e.strerror or e}") from None

    def _call(self, op: bytes, addr: int, reg: int, n: int, data: bytes = b"") -> bytes:
        import struct
        with self._lock:
            try:
                self._sock.sendall(op + struct.pack("<BBH", addr, reg, n) + data)
                head = self._recv(3)
                code, length = struct.unpack("<BH", head)
                body = self._recv(length)
            except OSError as e:
                raise OSError(5, f"emulated I2C bus at {self.path} gone: {e}") from None
        if code:
            import os
            raise OSError(code, os.strerror(code))
        return body

    def _recv(self, n: int) -> bytes:
        out = b""
        while len(out) < n:
            chunk = self._sock.recv(n - len(out))
            if not chunk:
                raise OSError(5, "connection closed")
            out += chunk
        return out

    def probe(self, addr: int) -> None:
        self._call(b"P", addr, 0, 0)

    def read_registers(self, addr: int, reg: int, n: int) -> bytes:
        return self._call(b"R", addr, reg, n)

    def write_registers(self, addr: int, reg: int, data: bytes) -> None:
        self._call(b"W", addr, reg, len(data), bytes(data))

    def close(self) -> None:
        self._sock.close()


class _PlaceholderSPI:
    """Stands in for busio.SPI in annotations only; SPI is not used by this project."""


class _PlaceholderDigitalInOut:
    """Stands in for digitalio.DigitalInOut in annotations only."""


def import_without_blinka(module_name: str):
    """Import an Adafruit CircuitPython driver without running Blinka's board detection.

    adafruit_bus_device evaluates annotations that name `busio.I2C`, `busio.SPI` and `digitalio.DigitalInOut`;
    importing the real busio makes Blinka detect the platform (and fail or guess on a non-Pi). While the driver
    is imported, light stand-ins answer for busio and digitalio; afterwards they are removed again, so code that
    really wants Blinka still gets it. Modules already imported (real Blinka loaded earlier) are left alone.
    """
    if module_name in sys.modules:
        return sys.modules[module_name]
    inserted = []
    for name, attrs in (("busio", {"I2C": SMBusI2C, "SPI": _PlaceholderSPI}),
                        ("digitalio", {"DigitalInOut": _PlaceholderDigitalInOut})):
        if name not in sys.modules:
            stand_in = types.ModuleType(name, f"stand-in for {name} while importing {module_name} (no Blinka)")
            stand_in.__dict__.update(attrs)
            sys.modules[name] = stand_in
            inserted.append(name)
    try:
        return importlib.import_module(module_name)
    finally:
        for name in inserted:
            sys.modules.pop(name, None)
