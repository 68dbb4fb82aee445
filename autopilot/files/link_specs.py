"""MAVLink link specs from the boat config.

    udpout:HOST:PORT     send to a ground station at HOST:PORT (QGC listens on 14550); replies come back
    udpin:HOST:PORT      listen; a ground station that sends here gets the telemetry (the last one heard)
    tcpin:HOST:PORT      a TCP server (Mission Planner's "TCP" connection, MAVProxy --master=tcp:...)
    serial:DEVICE:BAUD   a telemetry radio, e.g. serial:/dev/ttyUSB0:57600 (a SiK radio's default)

`parse_link` is pure (the boat config's validator calls it); autopilot/mavlink/links.py opens them.
"""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass

KINDS = ("udpout", "udpin", "tcpin", "serial")


@dataclass(frozen=True)
class LinkSpec:
    kind: str
    host: str          # an IP address, or the serial device path
    port: int          # UDP/TCP port, or the serial baud rate

    def __str__(self) -> str:
        return f"{self.kind}:{self.host}:{self.port}"

    def mavutil_device(self) -> str:
        """The device string mavutil.mavlink_connection takes."""
        if self.kind == "serial":
            return self.host
        return f"{self.kind}:{self.host}:{self.port}"


def parse_link(spec: str) -> LinkSpec:
    """A LinkSpec from 'udpout:127.0.0.1:14550' and the like; ValueError saying what is wrong."""
    if not isinstance(spec, str):
        raise ValueError(f"a link is a string like udpout:127.0.0.1:14550, got {type(spec).__name__}")
    kind, sep, rest = spec.partition(":")
    if not sep or kind not in KINDS:
        raise ValueError(f"{spec[:80]!r}: a link starts with one of {', '.join(KINDS)} "
                         f"(udpout:HOST:PORT, udpin:HOST:PORT, tcpin:HOST:PORT, serial:DEVICE:BAUD)")
    host, sep, number = rest.rpartition(":")
    if not sep or not host:
        what = "DEVICE:BAUD" if kind == "serial" else "HOST:PORT"
        raise ValueError(f"{spec[:80]!r}: expected {kind}:{what}")
    try:
        value = int(number)
    except ValueError:
        raise ValueError(f"{spec[:80]!r}: {'baud rate' if kind == 'serial' else 'port'} {number[:20]!r} is not a "
                         f"whole number") from None
    if kind == "serial":
        if not host.startswith("/"):
            raise ValueError(f"{spec[:80]!r}: the serial device must be a path such as /dev/ttyUSB0")
        if not 1200 <= value <= 4_000_000:
            raise ValueError(f"{spec[:80]!r}: baud rate {value} out of 1200..4000000")
        return LinkSpec(kind, host, value)
    if not 1 <= value <= 65535:
        raise ValueError(f"{spec[:80]!r}: port {value} out of 1..65535")
    if host != "localhost":
        try:
            ipaddress.ip_address(host)
        except ValueError:
            raise ValueError(f"{spec[:80]!r}: {host[:40]!r} is not an IP address (names are not resolved: a "
                             f"boat may have no DNS)") from None
    return LinkSpec(kind, host, value)
