"""What every emulated I2C chip on the emulated bus shares: its address, a NACK when absent or addressed wrongly,
injected transaction errors, and the smbus-like handle the drivers open (drivers.i2c_adapter.RegisterBus)."""
from __future__ import annotations

import errno

from drivers.i2c_adapter import RegisterBus


class EmulatedI2cChip:
    """Base of the register-level chip emulators. A subclass calls `_init_link(address)` in its constructor and
    `_transaction(address)` at the start of each register access."""

    address: int
    present: bool
    pending_errors: int
    transactions: int

    def _init_link(self, address: int) -> None:
        self.address = int(address)
        self.present = True
        self.pending_errors = 0
        self.transactions = 0

    def set_present(self, present: bool) -> None:
        """Connect or disconnect the chip: a missing chip NACKs its address (OSError EREMOTEIO)."""
        self.present = bool(present)

    def inject_errors(self, count: int) -> None:
        """Make the next `count` transactions fail with EREMOTEIO."""
        self.pending_errors = int(count)

    def smbus(self) -> RegisterBus:
        return RegisterBus(self)

    def probe(self, address: int) -> None:
        self._transaction(address)

    def _transaction(self, address: int) -> None:
        """Count the transaction; raise OSError(EREMOTEIO) for an injected error, an absent chip or another
        address."""
        self.transactions += 1
        if self.pending_errors > 0:
            self.pending_errors -= 1
            raise OSError(errno.EREMOTEIO, f"emulated I2C error at 0x{address:02X}")
        if not self.present or address != self.address:
            raise OSError(errno.EREMOTEIO, f"no acknowledge from 0x{address:02X}")
