"""What drivers/power_monitor.PowerMonitor needs of one kind of power-monitor chip (one module per chip beside this).

A chip object is built from the boat config's `battery:` section (PowerMonitorConfig) without touching the bus,
and then:

  `hardware_id`   names it in logs and health ("INA226 i2c-1 0x40");
  `open(i2c)`     sets the chip up on a busio.I2C-like bus; raises (OSError from the bus, WrongChipError for a
                  device at the address that is not this chip, RuntimeError/ValueError otherwise) on failure;
  `read()`        (pack voltage [V], current [A], positive discharging) from the opened chip, raising as open()
                  does, and ValueError for a reading outside what the chip or its wiring can give;
  `close()`       forgets the set-up (the next read opens again).

PowerMonitor turns every exception into a counted fault; a chip module never logs or keeps the last reading.
"""
from __future__ import annotations

from typing import Any, Protocol, Tuple


class WrongChipError(RuntimeError):
    """The device at the configured address answers, but it is not the chip `battery.kind` names."""


class Chip(Protocol):
    hardware_id: str

    def open(self, i2c: Any) -> None: ...

    def read(self) -> Tuple[float, float]: ...

    def close(self) -> None: ...


def register_read(device: Any, register: int) -> int:
    """A 16-bit big-endian register of an adafruit_bus_device I2CDevice (pointer write, repeated start, read)."""
    buf = bytearray(2)
    with device as i2c:
        i2c.write_then_readinto(bytes([register]), buf)
    return (buf[0] << 8) | buf[1]


def register_write(device: Any, register: int, value: int) -> None:
    """Write a 16-bit register, big-endian, of an adafruit_bus_device I2CDevice."""
    with device as i2c:
        i2c.write(bytes([register, (value >> 8) & 0xFF, value & 0xFF]))


def signed16(value: int) -> int:
    return value - 0x10000 if value & 0x8000 else value
