"""GPS_RAW_INT from a valid fix whose epoch had no GGA: the L76K driver then gives altitude, HDOP and the position
error as NaN (drivers/gnss/l76k_epoch.py), and the telemetry must say "unknown" rather than fail to encode."""
from __future__ import annotations

import math
from types import SimpleNamespace

from autopilot.mavlink.pymav import mavlink
from autopilot.mavlink.telemetry import encode_gps_raw_int
from autopilot.vocab.types import GpsFix


def test_a_valid_fix_without_altitude_hdop_or_accuracy_encodes_them_as_unknown():
    mav = mavlink.MAVLink(None)
    fix = GpsFix(time_s=12.5, lat_deg=51.11, lon_deg=17.06, alt_m=math.nan, hdop=math.nan, pos_std_m=math.nan,
                 sats=0, valid=True)
    msg = encode_gps_raw_int(mav, SimpleNamespace(fix=fix))
    assert (msg.lat, msg.lon) == (511100000, 170600000)
    assert msg.alt == 0 and msg.eph == 0xFFFF and msg.h_acc == 0


def test_known_altitude_hdop_and_accuracy_are_sent():
    mav = mavlink.MAVLink(None)
    fix = GpsFix(time_s=1.0, lat_deg=51.11, lon_deg=17.06, alt_m=120.25, hdop=0.9, pos_std_m=1.5, sats=9)
    msg = encode_gps_raw_int(mav, SimpleNamespace(fix=fix))
    assert msg.alt == 120250 and msg.eph == 90 and msg.h_acc == 1500 and msg.satellites_visible == 9
