"""The boat as a MAVLink vehicle: a thin adapter at the rim, like autopilot/ros/, and the only package that
imports pymavlink (MAVLink 2, the ardupilotmega dialect: common plus EKF_STATUS_REPORT).

- links.py: the `mavlink.links` specs (udpout, udpin, tcpin, serial) and opening them with mavutil;
- modes.py: our modes as ArduPilot Rover's custom mode numbers, so ground stations list them by name;
- snapshot.py: what telemetry needs, copied from the autopilot between cycles (no pymavlink);
- telemetry.py: the messages a ground station shows, encoded from a snapshot;
- missions.py: the mission protocol (upload, download; mission, fence and rally) on top of mission_io;
- server.py: the thread that serves all links, hands commands to the OperatorDesk and streams telemetry.

Importing this package does not import pymavlink; `server` and `telemetry` do.
"""
