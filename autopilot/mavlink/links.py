"""Opening the MAVLink links a boat config names (autopilot/files/link_specs.py parses them)."""
from __future__ import annotations

from autopilot.files.link_specs import LinkSpec


def open_link(spec: LinkSpec, system_id: int, component_id: int):
    """A mavutil connection for `spec`, speaking MAVLink 2 as (system_id, component_id). OSError when the port
    or device cannot be opened."""
    from autopilot.mavlink.pymav import mavutil
    kwargs = dict(source_system=system_id, source_component=component_id, autoreconnect=True)
    if spec.kind == "serial":
        conn = mavutil.mavlink_connection(spec.host, baud=spec.port, **kwargs)
    else:
        conn = mavutil.mavlink_connection(spec.mavutil_device(), **kwargs)
    conn.WIRE_PROTOCOL_VERSION = "2.0"
    return conn
