"""Faults injected into the simulator's devices: `autopilot sim MISSION --fault KIND@START_S[:DURATION_S]`.

Each fault acts where the real one would, below the drivers, so the drivers, the EKF and the failsafes see
what they would see on the boat:

  gps-loss        the L76K reports no position (GGA quality 0, RMC status V): the receiver lost its satellites
  gps-glitch      the position the L76K sends jumps GLITCH_M (50 m) north of the truth (multipath, a bad fix)
  gps-forge       a fraction of epochs (FORGE_FRACTION, or =F) carry one wrong value with a correct checksum:
                  a digit of latitude, time, date, speed..., see hil/devices/nmea_forgery.py; never two epochs in a
                  row, so each forged fix stands alone (a lasting wrong position is gps-glitch)
  imu-loss        the LSM9DS1 leaves the I2C bus (both devices NACK)
  imu-zero        the LSM9DS1 answers, but every data register (accel, gyro, magnetometer) reads zero
  imu-frozen      the LSM9DS1 answers, but its data registers stay at the values they had when the fault began
  mag-loss        the magnetometer's I2C address NACKs (the accelerometer/gyro keeps answering)
  mag-shift       the hard iron changes by MAG_SHIFT_UT (10 uT, or =UT) along MAG_SHIFT_DIRECTION (body FRD):
                  the emulated chip reads the new field, the driver still applies the old calibration (a
                  tool or a spare battery stowed next to the compass)
  esc-disconnect  the pigpio connection goes away: every call raises and the ESC signals stop (pigpiod died)
  link-loss       the operator's station stops sending heartbeats
  low-battery     the measured pack voltage drops below the vessel's battery.low_voltage_v
  thruster-weak   thruster NAME (the vessel file's name) gives F x the thrust it is driven to, 0 < F < 1 (weed
                  on the propeller, a tired motor): `thruster-weak@60:left=0.5`
  thruster-dead   thruster NAME gives no thrust (a blown ESC, a dead motor): `thruster-dead@60:left`
                  Both act on the plant's thrust only (the truth): the ESC still receives its pulses and the
                  autopilot still believes it is pushing.

START_S is simulated time; without DURATION_S the fault lasts to the end of the run. A gps-glitch takes an
optional size: `gps-glitch@60:10=20` jumps 20 m instead of GLITCH_M; a gps-forge takes the fraction of epochs
forged: `gps-forge@30:120=0.3`; a mag-shift takes the size of the step in microtesla, either sign (negative:
opposite to MAG_SHIFT_DIRECTION): `mag-shift@300=10`. The thruster faults name their thruster after the times:
`thruster-weak@START_S[:DURATION_S]:NAME=F`, `thruster-dead@START_S[:DURATION_S]:NAME`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Sequence

KINDS = (
    "gps-loss",
    "gps-glitch",
    "gps-forge",
    "imu-loss",
    "imu-zero",
    "imu-frozen",
    "mag-loss",
    "mag-shift",
    "esc-disconnect",
    "link-loss",
    "low-battery",
    "thruster-weak",
    "thruster-dead",
)
THRUSTER_KINDS = ("thruster-weak", "thruster-dead")
GLITCH_M = 50.0                       # size of the gps-glitch position jump [m]
GLITCH_DIRECTION_RAD = 0.0            # toward true north
FORGE_FRACTION = 0.2                  # gps-forge: share of epochs forged
MAG_SHIFT_UT = 10.0                   # mag-shift: size of the hard-iron step [uT]
MAG_SHIFT_DIRECTION = (1.0, 0.0, 0.0)  # mag-shift: its direction, body FRD (toward the bow): unit vector
MAG_SHIFT_MAX_UT = 1000.0             # a larger step is no hard iron a compass survives (1 mT: range 4-16 G)
FORGE_KINDS = None                    # gps-forge: the forgeries drawn from (None: hil.devices.nmea_forgery.KINDS)


@dataclass(frozen=True)
class Fault:
    kind: str
    start_s: float
    duration_s: Optional[float] = None    # None: to the end of the run
    size_m: Optional[float] = None        # gps-glitch: the jump [m] (None: GLITCH_M); gps-forge: the fraction
                                          # of epochs forged, in (0, 1] (None: FORGE_FRACTION); mag-shift: the
                                          # hard-iron step [uT], either sign (None: MAG_SHIFT_UT);
                                          # thruster-weak: the thrust factor F in (0, 1)
    thruster: Optional[str] = None        # thruster-weak / thruster-dead: the vessel file's thruster name

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"unknown fault kind {self.kind!r}; known: {', '.join(KINDS)}")
        if not (math.isfinite(self.start_s) and self.start_s >= 0.0):
            raise ValueError(f"fault start must be a time >= 0 s, got {self.start_s!r}")
        if self.duration_s is not None and not (math.isfinite(self.duration_s) and self.duration_s > 0.0):
            raise ValueError(f"fault duration must be > 0 s, got {self.duration_s!r}")
        if self.kind in THRUSTER_KINDS:
            if not self.thruster:
                raise ValueError(f"a {self.kind} fault names its thruster: {self.kind}@START_S[:DURATION_S]:NAME"
                                 + ("=F" if self.kind == "thruster-weak" else ""))
            if self.kind == "thruster-dead" and self.size_m is not None:
                raise ValueError("a thruster-dead fault takes no factor (=F): it gives no thrust at all")
            if self.kind == "thruster-weak" and not (self.size_m is not None and 0.0 < self.size_m < 1.0):
                raise ValueError(f"a thruster-weak factor (=F) must be given and within (0, 1) (0: use "
                                 f"thruster-dead), got {self.size_m!r}")
            return
        if self.thruster is not None:
            raise ValueError(f"only the thruster faults name a thruster, not {self.kind}")
        if self.size_m is not None and self.kind == "mag-shift":
            if not (math.isfinite(self.size_m) and self.size_m != 0.0 and abs(self.size_m) <= MAG_SHIFT_MAX_UT):
                raise ValueError(f"a mag-shift size (=UT) must be a non-zero number of microtesla within "
                                 f"+-{MAG_SHIFT_MAX_UT:g}, got {self.size_m!r}")
        elif self.size_m is not None and self.kind == "gps-forge":
            if not 0.0 < self.size_m <= 1.0:
                raise ValueError(f"a gps-forge fraction (=F) must be in (0, 1], got {self.size_m!r}")
        elif self.size_m is not None and (self.kind != "gps-glitch" or not (math.isfinite(self.size_m)
                                                                          and self.size_m > 0.0)):
            raise ValueError(f"a size (=M) is only for gps-glitch, gps-forge and mag-shift, and must be > 0 m for "
                             f"gps-glitch, got {self.size_m!r}")

    @property
    def end_s(self) -> float:
        return math.inf if self.duration_s is None else self.start_s + self.duration_s

    def active(self, t_s: float) -> bool:
        return self.start_s <= t_s < self.end_s

    @property
    def label(self) -> str:
        return (f"{self.kind}@{self.start_s:g}" + ("" if self.duration_s is None else f":{self.duration_s:g}")
                + ("" if self.thruster is None else f":{self.thruster}")
                + ("" if self.size_m is None else f"={self.size_m:g}"))

    @property
    def thrust_factor(self) -> float:
        """What a thruster fault leaves of its thruster's thrust (0 dead, F weak); 1 for the other kinds."""
        if self.kind == "thruster-dead":
            return 0.0
        if self.kind == "thruster-weak" and self.size_m is not None:
            return self.size_m
        return 1.0


def parse_fault(text: str) -> Fault:
    """`KIND@START_S[:DURATION_S][=SIZE_M]`, e.g. `gps-loss@60:60`; the thruster faults
    `KIND@START_S[:DURATION_S]:NAME[=F]`, e.g. `thruster-weak@60:left=0.5`. ValueError naming what is wrong
    (the thruster name is checked against a vessel by `check_thrusters`)."""
    kind, sep, when = text.strip().partition("@")
    when, has_size, size = when.partition("=")
    if not sep or not kind or not when:
        raise ValueError(f"fault {text!r}: expected KIND@START_S[:DURATION_S] (e.g. gps-loss@60:30), "
                         f"KIND one of {', '.join(KINDS)}")
    thruster = None
    if kind in THRUSTER_KINDS:
        parts = when.split(":")
        if len(parts) not in (2, 3) or not parts[-1].strip():
            raise ValueError(f"fault {text!r}: expected {kind}@START_S[:DURATION_S]:NAME"
                             + ("=F (e.g. thruster-weak@60:left=0.5)" if kind == "thruster-weak"
                                else " (e.g. thruster-dead@60:left)"))
        thruster = parts[-1].strip()
        when = ":".join(parts[:-1])
    start, _, duration = when.partition(":")
    try:
        start_s = float(start)
        duration_s = float(duration) if duration else None
        size_m = float(size) if has_size else None
    except ValueError:
        raise ValueError(f"fault {text!r}: START_S, DURATION_S and SIZE_M must be numbers") from None
    try:
        return Fault(kind, start_s, duration_s, size_m, thruster)
    except ValueError as e:
        raise ValueError(f"fault {text!r}: {e}") from None


def check_thrusters(faults: Sequence[Fault], vessel) -> None:
    """ValueError naming the fault and the vessel's thrusters when a thruster fault names none of them."""
    names = [t.name for t in vessel.thrusters]
    for f in faults:
        if f.thruster is not None and f.thruster not in names:
            raise ValueError(f"fault {f.label!r}: vessel {vessel.name!r} has no thruster {f.thruster!r} "
                             f"(its thrusters: {', '.join(names)})")


def thrust_factors(faults: Sequence[Fault], vessel, t_s: float) -> Optional[list]:
    """Per thruster (vessel order), what the thruster faults active at t_s [s] leave of its thrust (product of
    their factors); None when none is active (the thrust reaches the plant untouched)."""
    out = None
    for f in faults:
        if f.thruster is not None and f.active(t_s):
            if out is None:
                out = [1.0] * len(vessel.thrusters)
            i = [t.name for t in vessel.thrusters].index(f.thruster)
            out[i] *= f.thrust_factor
    return out


class FaultInjector:
    """Switches each fault on and off in the byte-level devices as simulated time passes.

    `apply(t_s)` once per cycle before the sensors are sampled (cheap between transitions); `link_up` says
    whether the operator's heartbeats get through; `battery_v()` is the pack voltage the boat measures.
    """

    def __init__(self, faults: Sequence[Fault], sensors, escs, vessel, seed: int = 0):
        self.faults = list(faults)
        self.seed = seed
        self.sensors = sensors
        self.escs = escs
        self.nominal_v = vessel.battery.voltage_v
        low = vessel.battery.low_voltage_threshold_v
        self.low_v = (low - 0.5) if low > 0.0 else 0.75 * self.nominal_v
        self._on = [False] * len(self.faults)
        self.link_up = True
        self._battery_low = False
        self._next = min([f.start_s for f in self.faults], default=math.inf)

    def apply(self, t_s: float) -> None:
        if t_s < self._next:
            return
        nxt = math.inf
        for i, f in enumerate(self.faults):
            on = f.active(t_s)
            if on != self._on[i]:
                self._on[i] = on
                self._set(f, on)
            for edge in (f.start_s, f.end_s):
                if edge > t_s:
                    nxt = min(nxt, edge)
        self._next = nxt

    def active(self, t_s: float) -> list:
        return [f for f in self.faults if f.active(t_s)]

    def battery_v(self) -> float:
        return self.low_v if self._battery_low else self.nominal_v

    def _set(self, fault: Fault, on: bool) -> None:
        s, kind = self.sensors, fault.kind
        if kind == "gps-loss":
            s.gnss.emitter.has_fix = not on
        elif kind == "gps-glitch":
            d = (GLITCH_M if fault.size_m is None else fault.size_m) if on else 0.0
            s.gnss_offset_ne = (d * math.cos(GLITCH_DIRECTION_RAD), d * math.sin(GLITCH_DIRECTION_RAD))
        elif kind == "gps-forge":
            from hil.devices import nmea_forgery
            from hil.devices.nmea_forgery import NmeaForger
            fraction = FORGE_FRACTION if fault.size_m is None else fault.size_m
            s.gnss.emitter.forger = NmeaForger(seed=self.seed, fraction=fraction, spacing=1,
                                                   kinds=FORGE_KINDS or nmea_forgery.KINDS) if on else None
        elif kind == "imu-loss":
            s.imu_emulator.set_present(not on)
        elif kind in ("imu-zero", "imu-frozen"):
            s.imu_emulator.set_data_fault(kind[4:] if on else None)
        elif kind == "mag-loss":
            s.imu_emulator.inject_errors(10 ** 12 if on else 0, address=s.imu_emulator.mag_address)
        elif kind == "mag-shift":
            size_t = (MAG_SHIFT_UT if fault.size_m is None else fault.size_m) * 1e-6 if on else 0.0
            s.imu_emulator.hard_iron_shift_t = tuple(size_t * d for d in MAG_SHIFT_DIRECTION)
        elif kind == "esc-disconnect":
            if on:
                self.escs.unplug()
            else:
                self.escs.plug()
        elif kind == "link-loss":
            self.link_up = not on
        elif kind == "low-battery":
            self._battery_low = on
        # thruster faults act on the thrust the runner hands the plant (thrust_factors), not on a device
