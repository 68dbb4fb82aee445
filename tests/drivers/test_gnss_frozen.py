"""Fixes that are well formed but cannot be true (issue 11, items 2 and 3): a receiver stuck on an old solution,
time going backwards, a jump no boat can make, a date far from the clock. Each is what a corruption that passes
NMEA's checksum, or a faulty receiver, produces. The real driver gets real NMEA bytes from an in-memory line."""
from __future__ import annotations

import datetime
import time

import pynmea2

from drivers.gnss.l76k import L76K


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


def _epoch(second: int, lat: str, lon: str, knots: str, ddmmyy: str = "221126") -> bytes:
    hhmmss = f"12{second // 60:02d}{second % 60:02d}.00"
    gga = pynmea2.GGA("GN", "GGA", (hhmmss, lat, "N", lon, "E", "1", "10", "0.9", "120.0", "M", "40.0", "M", "", ""))
    rmc = pynmea2.RMC("GN", "RMC", (hhmmss, "A", lat, "N", lon, "E", knots, "90.0", ddmmyy, "", "", "A"))
    return (str(gga) + "\r\n" + str(rmc) + "\r\n").encode()


def _fixes(epochs, **kwargs):
    """Each epoch arrives one second after the previous one, as from a 1 Hz receiver."""
    clock = {"t": 0.0}
    line = _Line(b"")
    drv = L76K(lambda baud: line, baud=9600, clock=lambda: clock["t"], wall=lambda: clock["t"], sleep=lambda s: None,
               **kwargs)
    drv.open()
    out = []
    for k in range(len(epochs) + 5):
        clock["t"] += 1.0
        if k < len(epochs):
            line.data += epochs[k]
        out += drv.poll()
    return out, drv


def test_a_position_frozen_while_moving_is_marked_invalid_and_counted():
    moving = [_epoch(k, f"5106.{600 + 3 * k:04d}", "01703.6000", "1.6") for k in range(3)]
    frozen = [_epoch(3 + k, "5106.0609", "01703.6000", "1.6") for k in range(5)]
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


def test_a_receiver_clock_reset_is_followed_after_two_fixes_not_refused_for_good():
    first = [_epoch(30 + k, f"5106.{600 + 3 * k:04d}", "01703.6000", "1.6") for k in range(2)]
    reset = [_epoch(k, f"5106.{700 + 3 * k:04d}", "01703.6000", "1.6") for k in range(5)]
    fixes, drv = _fixes(first + reset)
    assert [f.valid for f in fixes] == [True, True, False, True, True, True, True]


def _track(seconds, first=0, lat_step=3):
    """Epochs of a boat going north at 5.5 m/s (0.003' of latitude a second)."""
    return [_epoch(k, f"5106.{600 + lat_step * k:04d}", "01703.6000", "10.7") for k in range(first, first + seconds)]


def test_a_fix_no_boat_could_reach_is_refused_and_the_next_good_one_is_not():
    """One corrupted digit of the minutes of latitude: 0.1' is 185 m, one second after a good fix."""
    epochs = _track(6)
    epochs[3] = _epoch(3, "5106.1609", "01703.6000", "10.7")
    fixes, drv = _fixes(epochs)
    assert [f.valid for f in fixes] == [True, True, True, False, True, True]
    assert drv.stats()["jump_fixes"] == 1 and fixes[3].refused == "jump"


def test_a_small_jump_within_the_noise_is_left_to_the_estimator():
    epochs = _track(6)
    epochs[3] = _epoch(3, "5106.0663", "01703.6000", "10.7")     # 10 m ahead of the track: noise can do that
    fixes, drv = _fixes(epochs)
    assert all(f.valid for f in fixes) and drv.stats()["jump_fixes"] == 0


def test_a_receiver_that_really_moved_its_solution_is_followed_from_the_second_fix():
    """A relocation after a cold start: every later fix is 1 km from the last good one, and they agree."""
    epochs = _track(3) + [_epoch(k, f"5107.{100 + 3 * k:04d}", "01703.6000", "10.7") for k in range(3, 9)]
    fixes, drv = _fixes(epochs)
    assert [f.valid for f in fixes] == [True] * 3 + [False] + [True] * 5
    assert drv.stats()["jump_fixes"] == 1 and drv.stats()["followed_runs"] == 1


def test_scattered_corrupted_fixes_never_become_the_truth():
    """Jumps that do not agree with each other are refused however many there are."""
    epochs = _track(12)
    for k, lat in ((3, "5107.0609"), (4, "5105.0612"), (5, "5106.9615"), (8, "5104.0624")):
        epochs[k] = _epoch(k, lat, "01703.6000", "10.7")
    fixes, drv = _fixes(epochs)
    assert [k for k, f in enumerate(fixes) if not f.valid] == [3, 4, 5, 8]
    assert drv.stats()["followed_runs"] == 0


def _year_ahead(years: int) -> str:
    d = datetime.datetime.now(datetime.timezone.utc).date()
    return f"{d.day:02d}{d.month:02d}{(d.year + years) % 100:02d}"


def test_a_date_far_from_a_set_system_clock_is_refused():
    """A corrupted year (or a GPS week rollover): 20 years from the clock the driver runs with in the field."""
    now = datetime.datetime.now(datetime.timezone.utc).date()
    epochs = [_epoch(k, f"5106.{600 + 3 * k:04d}", "01703.6000", "10.7",
                     ddmmyy=_year_ahead(20 if k == 2 else 0)) for k in range(4)]
    fixes, drv = _fixes(epochs, calendar=time.time)
    assert [f.valid for f in fixes] == [True, True, False, True], now
    assert drv.stats()["calendar_fixes"] == 1


def test_an_unset_system_clock_does_not_refuse_gnss():
    """A Pi without a real-time clock boots in 1970 until NTP sets it: GNSS is then the only time there is."""
    epochs = [_epoch(k, f"5106.{600 + 3 * k:04d}", "01703.6000", "10.7") for k in range(4)]
    fixes, drv = _fixes(epochs, calendar=lambda: 86400.0 * 365)
    assert all(f.valid for f in fixes) and drv.stats()["calendar_fixes"] == 0


def test_the_configured_driver_checks_the_date_against_the_system_clock():
    from autopilot.vocab.config import GnssConfig

    line = _Line(b"")
    clock = {"t": 0.0}
    drv = L76K.from_config(GnssConfig(baud=9600, rate_hz=1.0), port=lambda baud: line, clock=lambda: clock["t"],
                           wall=lambda: clock["t"], sleep=lambda s: None)
    drv.open()
    fixes = []
    for k in range(6):
        clock["t"] += 1.0
        if k < 3:
            line.data += _epoch(k, f"5106.{600 + 3 * k:04d}", "01703.6000", "10.7", ddmmyy=_year_ahead(-21))
        fixes += drv.poll()
    assert len(fixes) == 3 and not any(f.valid for f in fixes)


def test_a_time_pushed_forward_is_refused_and_the_true_fix_after_it_is_not():
    """A corrupted digit of the seconds' tens: 12:00:03 becomes 12:00:53, with a correct checksum."""
    epochs = _track(6)
    epochs[3] = _epoch(53, "5106.0609", "01703.6000", "10.7")
    fixes, drv = _fixes(epochs)
    assert [f.valid for f in fixes] == [True, True, True, False, True, True]
    assert drv.stats()["skew_fixes"] == 1 and drv.stats()["backward_fixes"] == 0


def test_fixes_read_late_in_a_bunch_are_not_a_skew():
    """The reader fell behind (a busy Pi): four epochs arrive at once, then the line is timely again."""
    epochs = _track(10)
    clock = {"t": 0.0}
    line = _Line(b"")
    drv = L76K(lambda baud: line, baud=9600, clock=lambda: clock["t"], wall=lambda: clock["t"], sleep=lambda s: None)
    drv.open()
    fixes = []
    for k in range(14):
        clock["t"] += 1.0
        if k < 3 or 6 <= k < 10:
            line.data += epochs[k]
        elif k == 5:
            line.data += epochs[3] + epochs[4] + epochs[5]
        fixes += drv.poll()
    assert len(fixes) == 10 and all(f.valid for f in fixes)
