"""Failsafe, arming and manual-control settings: the `failsafe:` section of a vessel config.

Every threshold the failsafes (autopilot/safety/failsafe.py) and the pre-arm checks (autopilot/safety/prearm.py)
use lives here, with its unit and a default for a 1-5 m boat on a river or lake. A vessel YAML may override any
of them, e.g.

    failsafe:
      gnss: {dead_reckon_s: 20, then: hold}
      link: {expect: always, timeout_s: 5}
      geofence:
        polygon: [{lat_deg: 51.1098, lon_deg: 17.0597}, {lat_deg: 51.1105, lon_deg: 17.0597},
                  {lat_deg: 51.1105, lon_deg: 17.0613}, {lat_deg: 51.1098, lon_deg: 17.0613}]

The defaults:
- GNSS: no accepted fix for 3 s starts dead reckoning; the mode carries on for 30 s, then holds its heading at
  0.3 m/s for 15 s, then LOITERs on the estimate; an estimate uncertain by more than 10 m: HOLD. A position jump
  of more than 10 m when the EKF trusts GNSS again (after rejecting it for up to 15 s): HOLD.
- IMU silent for 0.5 s: HOLD. Magnetometer: 8 s without an accepted heading: HOLD.
- Geofence: stop short of the fence by the stopping distance plus 3 m, then RTL.
- Operator link: RTL after 10 s without a heartbeat, only once one has been seen (`expect: auto`).
- Low battery (battery.low_voltage_v of the vessel, 0 disables): below it for 5 s: RTL.
- Control loop: 10 missed deadlines (later than 20 ms) within 5 s: HOLD; the first one is reported.
- ESC output disconnected: disarm (not configurable).
- A thruster delivering under 0.6 of its commanded thrust (relative to the best one) for 15 s: a warning; under
  0.2: a twin boat HOLDs (it cannot steer), a boat with spare thrusters leaves it out and RTLs at half speed.
- Arming in a navigating mode: a 3-D fix (quality >= 1) with HDOP <= 2.5 and >= 6 satellites.
- MANUAL: thrusters neutral when no operator command arrived for 1 s.
Why these defaults: docs/design-notes/core.md, "Safety".
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Tuple

from autopilot.vocab.schema import param

ACTIONS_AFTER_DR = ("loiter", "hold")
ACTIONS_RETURN = ("rtl", "loiter", "hold")


@dataclass(frozen=True, kw_only=True)
class GnssFailsafeConfig:
    loss_timeout_s: float = param(3.0, unit="s", min=0.5, max=60.0,
                                  doc="no accepted GNSS position for this long = GNSS lost (fixes missing, "
                                      "invalid or rejected by the EKF's gate)")
    dead_reckon_s: float = param(30.0, unit="s", min=0.0, max=3600.0,
                                 doc="the mode carries on, on the dead-reckoned estimate, this long after the "
                                     "last accepted fix")
    slow_s: float = param(15.0, unit="s", min=0.0, max=3600.0,
                          doc="then the boat holds its heading at slow_speed_mps this long (AUTO and RTL only)")
    slow_speed_mps: float = param(0.3, unit="m/s", min=0.0, max=20.0, doc="speed while holding the heading")
    then: str = param("loiter", choices=ACTIONS_AFTER_DR,
                      doc="after that: LOITER on the dead-reckoned estimate, or HOLD (thrusters neutral)")
    max_pos_std_m: float = param(10.0, unit="m", min=0.5, max=1000.0,
                                 doc="estimated position error beyond which navigating is pointless: HOLD")
    glitch_reject_s: float = param(15.0, unit="s", min=1.0, max=600.0,
                                   doc="how long the EKF keeps rejecting GNSS positions that disagree with it "
                                       "before it trusts GNSS again (EkfTuning.gps_reacquire_s)")
    max_jump_m: float = param(10.0, unit="m", min=1.0, max=1000.0,
                              doc="a re-acquisition that moves the estimate further than this: HOLD")


@dataclass(frozen=True, kw_only=True)
class ImuFailsafeConfig:
    # 0.35 s: with the driver's 40 ms stuck-output detection and a cycle or two, the boat acts on a dead or
    # frozen IMU within 0.5 s (issue 11); an I2C hiccup the driver recovers from lasts far less
    imu_timeout_s: float = param(0.35, unit="s", min=0.05, max=10.0, doc="no gyro update for this long = IMU lost")
    mag_timeout_s: float = param(8.0, unit="s", min=0.1, max=120.0,
                                 doc="no accepted magnetometer heading for this long = magnetometer lost (longer "
                                     "than the EKF's 5 s of rejecting a disturbed heading before re-trusting it)")
    action: str = param("hold", choices=("hold", "disarm"))


@dataclass(frozen=True, kw_only=True)
class FencePointConfig:
    lat_deg: float = param(unit="deg", min=-90, max=90)
    lon_deg: float = param(unit="deg", min=-180, max=180)


@dataclass(frozen=True, kw_only=True)
class GeofenceFailsafeConfig:
    enabled: bool = param(True, doc="watch the mission's geofence and the polygon below")
    polygon: Tuple[FencePointConfig, ...] = param((), doc="the vessel's own operating area (WGS84, >= 3 points), "
                                                          "in addition to any mission geofence")
    margin_m: float = param(3.0, unit="m", min=0.0, max=1000.0,
                            doc="stop this far short of the fence, beyond the stopping distance")
    reaction_s: float = param(1.0, unit="s", min=0.0, max=30.0,
                              doc="time counted at the present speed before braking takes hold")
    action: str = param("rtl", choices=("rtl", "hold"), doc="after stopping")

    def validate(self) -> None:
        if self.polygon and len(self.polygon) < 3:
            raise ValueError("polygon: needs at least 3 points")


@dataclass(frozen=True, kw_only=True)
class LinkFailsafeConfig:
    expect: str = param("auto", choices=("auto", "always", "off"),
                        doc="auto: watch the link once a heartbeat was seen; always: from arming on (arming "
                            "needs a heartbeat); off: never")
    timeout_s: float = param(10.0, unit="s", min=0.5, max=600.0, doc="no operator heartbeat for this long")
    action: str = param("rtl", choices=ACTIONS_RETURN)


@dataclass(frozen=True, kw_only=True)
class BatteryFailsafeConfig:
    delay_s: float = param(5.0, unit="s", min=0.0, max=600.0,
                           doc="below battery.low_voltage_v for this long (load sag is brief)")
    action: str = param("rtl", choices=ACTIONS_RETURN)


@dataclass(frozen=True, kw_only=True)
class OverrunFailsafeConfig:
    late_s: float = param(0.02, unit="s", min=0.001, max=10.0, doc="a cycle this late counts as a missed deadline")
    count: int = param(10, min=1, max=10000, doc="missed deadlines within window_s that trigger the action")
    window_s: float = param(5.0, unit="s", min=0.1, max=600.0)
    action: str = param("hold", choices=("hold", "disarm"))


@dataclass(frozen=True, kw_only=True)
class ThrusterFailsafeConfig:
    enabled: bool = param(False, doc="watch each thruster's effectiveness (autopilot/safety/thruster_health.py); "
                                     "off unless set: it can still take a healthy hull unlike its vessel file for "
                                     "one with a dead thruster (docs/design-notes/thruster-health.md)")
    weak_below: float = param(0.6, min=0.05, max=0.95,
                              doc="effectiveness (delivered over commanded thrust, relative to the best thruster) "
                                  "below which a thruster is reported weak: a warning, the mission goes on")
    dead_below: float = param(0.2, min=0.0, max=0.9,
                              doc="effectiveness below which a thruster is dead: a twin boat goes neutral (HOLD); "
                                  "a boat with spare thrusters leaves it out and returns home (RTL); "
                                  "must be below weak_below")
    hold_s: float = param(15.0, unit="s", min=0.5, max=600.0,
                          doc="the effectiveness must stay below a threshold this long, with thrust "
                              "commanded, before it is acted on")
    memory_s: float = param(120.0, unit="s", min=5.0, max=3600.0,
                            doc="how far back the estimate remembers: it follows a change within about this long")
    rtl_speed_fraction: float = param(0.5, min=0.1, max=1.0,
                                      doc="a boat returning home on its remaining thrusters goes at this "
                                          "fraction of the mission's cruise speed")


@dataclass(frozen=True, kw_only=True)
class ArmingConfig:
    min_fix_quality: int = param(1, min=1, max=6, doc="GGA quality: 1 GPS, 2 DGPS, 4 RTK fixed, 5 RTK float")
    max_hdop: float = param(2.5, min=0.5, max=50.0)
    min_sats: int = param(6, min=0, max=64)
    require_mag_calibration: bool = param(True, doc="refuse to arm in a navigating mode without one")


@dataclass(frozen=True, kw_only=True)
class ManualConfig:
    timeout_s: float = param(1.0, unit="s", min=0.05, max=30.0,
                             doc="MANUAL: thrusters neutral when no operator command came for this long")


@dataclass(frozen=True, kw_only=True)
class FailsafeConfig:
    gnss: GnssFailsafeConfig = param(default_factory=GnssFailsafeConfig)
    imu: ImuFailsafeConfig = param(default_factory=ImuFailsafeConfig)
    geofence: GeofenceFailsafeConfig = param(default_factory=GeofenceFailsafeConfig)
    link: LinkFailsafeConfig = param(default_factory=LinkFailsafeConfig)
    battery: BatteryFailsafeConfig = param(default_factory=BatteryFailsafeConfig)
    overrun: OverrunFailsafeConfig = param(default_factory=OverrunFailsafeConfig)
    thruster: ThrusterFailsafeConfig = param(default_factory=ThrusterFailsafeConfig)
    arming: ArmingConfig = param(default_factory=ArmingConfig)
    manual: ManualConfig = param(default_factory=ManualConfig)
    check_period_s: float = param(0.1, unit="s", min=0.02, max=1.0,
                                  doc="how often the monitors that read the estimator's health run")
