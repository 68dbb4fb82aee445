"""pymavlink, imported once with MAVLink 2 and the ardupilotmega dialect (set before the first import)."""
import os

os.environ.setdefault("MAVLINK20", "1")
os.environ.setdefault("MAVLINK_DIALECT", "ardupilotmega")

from pymavlink import mavutil  # noqa: E402

mavlink = mavutil.mavlink       # the dialect module: message classes, enums, MAVLink encoder
