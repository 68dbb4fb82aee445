"""A receiver stuck on an old solution (issue 11, item 2): the same position to the last digit, epoch after
epoch, while it reports the boat moving. The real driver gets real NMEA bytes from an in-memory line."""
from __future__ import annotations

import pynmea2

from drivers.l76k import L76K


class _Line:
    """A serial-like port holding prepared bytes."""

    def __init__(self, data: bytes):
        self.data = bytearray(data)

    @property
    def in_waiting(self) -> int:
        return len(self.data)

    def read(self, size: int = 1) -> bytes:
        out, self.data = bytes(self.data[:size]), self.data[size:]
        return out

    def write(self, data: bytes) -> int:
        return len(data)

    def flush(self) -> None:
        pass

    def reset_input_buffer(self) -> None:
        pass

    def close(self) -> None:
        pass


def _epoch(second: int, lat: str, lon: str, knots: str) -> bytes:
    hhmmss = f"1200{second:02d}.00"
    gga = pynmea2.GGA("GN", "GGA", (hhmmss, lat, "N", lon, "E", "1", "10", "0.9", "120.0", "M", "40.0", "M", "", ""))
    rmc = pynmea2.RMC("GN", "RMC", (hhmmss, "A", lat, "N", lon, "E", knots, "90.0", "221126", "", "", "A"))
    return (str(gga) + "\r\n" + str(rmc) + "\r\n").encode()


def _fixes(epochs):
    clock = {"t": 0.0}
    line = _Line(b"".join(epochs))
    drv = L76K(lambda baud: line, baud=9600, clock=lambda: clock["t"], wall=lambda: clock["t"], sleep=lambda s: None)
    drv.open()
    out = []
    for _ in range(len(epochs) + 5):
        clock["t"] += 1.0
        out += drv.poll()
    return out, drv


def test_a_position_frozen_while_moving_is_marked_invalid_and_counted():
    moving = [_epoch(k, f"5106.{600 + 3 * k:04d}", "01703.6000", "1.6") for k in range(3)]
    frozen = [_epoch(3 + k, "5106.6060", "01703.6000", "1.6") for k in range(5)]
    fixes, drv = _fixes(moving + frozen)
    assert len(fixes) == 8
    assert all(f.valid for f in fixes[:5])           # the first repeats could be real
    assert not any(f.valid for f in fixes[5:])
    assert drv.stats()["frozen_fixes"] == 3


def test_a_boat_at_rest_may_report_the_same_position():
    still = [_epoch(k, "5106.6060", "01703.6000", "0.0") for k in range(8)]
    fixes, drv = _fixes(still)
    assert len(fixes) == 8 and all(f.valid for f in fixes) and drv.stats()["frozen_fixes"] == 0


def test_a_fix_from_the_past_is_not_a_position():
    """A sentence whose time went backwards (corrupted with a checksum that still passes, or replayed)."""
    epochs = [_epoch(k, f"5106.{600 + 3 * k:04d}", "01703.6000", "1.6") for k in (1, 2, 3)]
    epochs.insert(2, _epoch(0, "5107.0000", "01703.6000", "1.6"))     # 12:00:00 after 12:00:02
    fixes, drv = _fixes(epochs)
    assert [f.valid for f in fixes] == [True, True, False, True]
    assert drv.stats()["backward_fixes"] == 1


def test_a_receiver_clock_reset_is_followed_after_three_fixes_not_refused_for_good():
    first = [_epoch(30 + k, f"5106.{600 + 3 * k:04d}", "01703.6000", "1.6") for k in range(2)]
    reset = [_epoch(k, f"5106.{700 + 3 * k:04d}", "01703.6000", "1.6") for k in range(5)]
    fixes, drv = _fixes(first + reset)
    assert [f.valid for f in fixes] == [True, True, False, False, True, True, True]
