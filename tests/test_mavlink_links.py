"""The other links a boat serves: a TCP server (Mission Planner's TCP connection) and a serial port (a SiK
telemetry radio), each with a real client: pymavlink over TCP on 127.0.0.1, and the real pyserial port of
mavutil on a pseudo-terminal whose other end plays the radio."""
from __future__ import annotations

import os
import socket
import threading
import time

import pytest

from tests.mavlink_gcs import DATA, M, mavutil


@pytest.fixture
def served(request):
    """The simulated boat (typed sensors, real time) serving the links given by the test's parameter."""
    from autopilot.boat_config import MavlinkConfig
    from autopilot.config import load_mission, load_vessel
    from autopilot.config_schema import build
    from autopilot.mavlink.sim_session import SimMavlink
    from hil.sim_runner import SimOptions, run_sim

    links = request.param() if callable(request.param) else request.param
    vessel, mission = load_vessel("foka"), load_mission(DATA / "mavlink_pond.yaml")
    session = SimMavlink(build(MavlinkConfig, {"links": links[0]}, "test"), vessel)
    stop = threading.Event()
    opts = SimOptions(realtime=True, auto_arm=False, operator_link=False, stop=stop, on_cycle=session.on_cycle,
                      initial_mode="HOLD", duration_s=120.0, devices="typed", gps_noise="white")
    th = threading.Thread(target=run_sim, args=(vessel, mission, opts), daemon=True)
    th.start()
    yield links[1]
    stop.set()
    th.join(timeout=10)
    session.close()


def _tcp_links():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return [f"tcpin:127.0.0.1:{port}"], port


def _pty_links():
    master, slave = os.openpty()
    return [f"serial:{os.ttyname(slave)}:57600"], (master, slave)


@pytest.mark.parametrize("served", [_tcp_links], indirect=True)
def test_a_ground_station_connects_over_tcp_and_commands_the_boat(served):
    port = served
    gcs = None
    for _ in range(50):                       # the server opens its port at the first simulated cycle
        try:
            gcs = mavutil.mavlink_connection(f"tcp:127.0.0.1:{port}", source_system=255, source_component=190,
                                             retries=0)
            break
        except Exception:
            time.sleep(0.1)
    assert gcs is not None
    hb = gcs.recv_match(type="HEARTBEAT", blocking=True, timeout=10)
    assert hb is not None and hb.type == M.MAV_TYPE_SURFACE_BOAT
    gcs.mav.command_long_send(1, 1, M.MAV_CMD_DO_SET_MODE, 0, M.MAV_MODE_FLAG_CUSTOM_MODE_ENABLED, 5, 0, 0, 0, 0, 0)
    ack = gcs.recv_match(type="COMMAND_ACK", blocking=True, timeout=10)
    assert ack is not None and ack.command == M.MAV_CMD_DO_SET_MODE
    gcs.close()


@pytest.mark.parametrize("served", [_pty_links], indirect=True)
def test_a_telemetry_radio_on_a_serial_port_carries_telemetry_and_commands(served):
    master, _slave = served
    parser = M.MAVLink(None, srcSystem=255, srcComponent=190)
    parser.robust_parsing = True
    got = {}
    end = time.monotonic() + 15.0
    sent = False
    while time.monotonic() < end and "COMMAND_ACK" not in got:
        os.set_blocking(master, False)
        try:
            data = os.read(master, 4096)
        except BlockingIOError:
            data = b""
        for msg in parser.parse_buffer(data) or []:
            got[msg.get_type()] = msg
        if "HEARTBEAT" in got and not sent:
            os.write(master, parser.command_long_encode(1, 1, M.MAV_CMD_REQUEST_MESSAGE, 0,
                                                        M.MAVLINK_MSG_ID_AUTOPILOT_VERSION, 0, 0, 0, 0, 0, 0
                                                        ).pack(parser))
            sent = True
        time.sleep(0.02)
    assert got.get("HEARTBEAT") is not None and got["HEARTBEAT"].type == M.MAV_TYPE_SURFACE_BOAT
    assert got.get("COMMAND_ACK") is not None and got["COMMAND_ACK"].result == M.MAV_RESULT_ACCEPTED
    assert "GLOBAL_POSITION_INT" in got or "GPS_RAW_INT" in got
