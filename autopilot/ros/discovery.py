"""Discovery without multicast for a two-machine HIL bench (PC + Pi), written from the two IP addresses.

Wi-Fi access points often drop multicast, so the two machines are told each other's address:
- `<side>.env`: ROS_DOMAIN_ID, ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST and ROS_STATIC_PEERS=<the other machine>
  (rmw_fastrtps_cpp on Iron and later: discovery by unicast to the peer, none by multicast off the machine),
  and, when a keystore is given, the SROS2 security variables (ROS_SECURITY_ENABLE, _STRATEGY, _KEYSTORE);
- `<side>_fastdds.xml`: the same as a Fast DDS participant profile (initial peer = the other machine, discovery
  unicast on this machine's address, no multicast locators), for rmw versions without ROS_STATIC_PEERS; use it
  with FASTDDS_DEFAULT_PROFILES_FILE (Fast DDS 3) / FASTRTPS_DEFAULT_PROFILES_FILE (Fast DDS 2) and
  ROS_AUTOMATIC_DISCOVERY_RANGE=SYSTEM_DEFAULT, which the env file lists commented out.
"""
from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Optional

SIDES = ("pc", "pi")


def _ip(text: str, what: str) -> str:
    try:
        addr = ipaddress.ip_address(text)
    except ValueError:
        raise ValueError(f"{what}: {text!r} is not an IP address") from None
    if addr.version != 4:
        raise ValueError(f"{what}: {text} is IPv6; the Fast DDS profile written here is for UDPv4")
    if addr.is_multicast or addr.is_unspecified:
        raise ValueError(f"{what}: {text} is not a host's address")
    return str(addr)


def fastdds_profile(own_ip: str, peer_ip: str) -> str:
    return f"""<?xml version="1.0" encoding="UTF-8" ?>
<!-- HIL bench: discovery by unicast to {peer_ip} only (written by `autopilot hil discovery`) -->
<dds xmlns="http://www.eprosima.com">
  <profiles>
    <participant profile_name="hil_unicast_discovery" is_default_profile="true">
      <rtps>
        <builtin>
          <metatrafficUnicastLocatorList>
            <locator><udpv4><address>{own_ip}</address></udpv4></locator>
          </metatrafficUnicastLocatorList>
          <initialPeersList>
            <locator><udpv4><address>{peer_ip}</address></udpv4></locator>
          </initialPeersList>
        </builtin>
      </rtps>
    </participant>
  </profiles>
</dds>
"""


def env_file(side: str, own_ip: str, peer_ip: str, domain_id: int, keystore: Optional[str],
             xml_path: str) -> str:
    lines = [f"# HIL bench, the {side.upper()} side ({own_ip}); the other machine is {peer_ip}.",
             "# Source it before `autopilot " + ("hil serve" if side == "pc" else "run") + "`: set -a; . ./"
             f"{side}.env; set +a  (systemd: EnvironmentFile=)",
             f"ROS_DOMAIN_ID={domain_id}",
             "RMW_IMPLEMENTATION=rmw_fastrtps_cpp",
             "ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST",
             f"ROS_STATIC_PEERS={peer_ip}",
             "# Without ROS_STATIC_PEERS support (before Iron): the Fast DDS profile instead of the two lines above",
             "# ROS_AUTOMATIC_DISCOVERY_RANGE=SYSTEM_DEFAULT",
             "# (the absolute path where the profile is on this machine)",
             f"# FASTDDS_DEFAULT_PROFILES_FILE={xml_path}",
             f"# FASTRTPS_DEFAULT_PROFILES_FILE={xml_path}"]
    if keystore:
        lines += ["# DDS security (SROS2): both machines need enclaves from the same keystore",
                  "ROS_SECURITY_ENABLE=true", "ROS_SECURITY_STRATEGY=Enforce", f"ROS_SECURITY_KEYSTORE={keystore}"]
    else:
        lines += ["# DDS security (SROS2): `ros2 security create_keystore` and enclaves, then",
                  "# ROS_SECURITY_ENABLE=true", "# ROS_SECURITY_STRATEGY=Enforce", "# ROS_SECURITY_KEYSTORE=/path"]
    return "\n".join(lines) + "\n"


def write_discovery(pc_ip: str, pi_ip: str, out_dir, domain_id: int = 0,
                    keystore: Optional[str] = None) -> list:
    """Write pc.env, pi.env, pc_fastdds.xml, pi_fastdds.xml into out_dir; returns the paths. ValueError on a bad
    address or domain."""
    pc, pi = _ip(pc_ip, "--pc-ip"), _ip(pi_ip, "--pi-ip")
    if pc == pi:
        raise ValueError(f"--pc-ip and --pi-ip are the same address ({pc})")
    if not 0 <= domain_id <= 232:
        raise ValueError(f"--domain-id: must be 0..232 (Fast DDS's port mapping); got {domain_id}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for side, own, peer in (("pc", pc, pi), ("pi", pi, pc)):
        xml = out / f"{side}_fastdds.xml"
        xml.write_text(fastdds_profile(own, peer), encoding="utf-8")
        env = out / f"{side}.env"
        env.write_text(env_file(side, own, peer, domain_id, keystore, xml.name), encoding="utf-8")
        paths += [env, xml]
    return paths
