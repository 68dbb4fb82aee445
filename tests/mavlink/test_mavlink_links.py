"""The other links a boat serves: a TCP server (Mission Planner's TCP connection) and a serial port (a SiK
telemetry radio), each with a real client: pymavlink over TCP on 127.0.0.1, and the real pyserial port of
mavutil on a pseudo-terminal whose other end plays the radio."""
from __future__ import annotations

import os
import socket
import threading
import time

import pytest

from tests.support.mavlink_gcs import DATA, M, mavutil


@pytest.fixture
def served(request):
    """The simulated boat (typed sensors, real time) serving the links given by the test's parameter."""
    from autopilot.files.boat import MavlinkConfig
    from autopilot.mavlink.sim_session import SimMavlink
    from autopilot.vocab.config import load_mission, load_vessel
    from autopilot.vocab.schema import build
    from hil.sim.runner import SimOptions, run_sim

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


def _udp_links():
    from tests.support.mavlink_gcs import free_udp_port
    port = free_udp_port()
    return [f"udpout:127.0.0.1:{port}"], port


@pytest.mark.slow
@pytest.mark.parametrize("served", [_udp_links], indirect=True)
def test_rates_home_current_waypoint_and_rc_override_from_a_ground_station(served):
    from tests.support.mavlink_gcs import Gcs
    gcs = Gcs(served)
    try:
        gcs.connect()
        # a message's rate follows MAV_CMD_SET_MESSAGE_INTERVAL; -1 stops it
        assert gcs.command(M.MAV_CMD_SET_MESSAGE_INTERVAL, M.MAVLINK_MSG_ID_ATTITUDE, 100000).result == \
            M.MAV_RESULT_ACCEPTED
        gcs.poll(0.5)
        count = 0
        end = time.monotonic() + 2.0
        while time.monotonic() < end:
            count += gcs.wait("ATTITUDE", timeout=0.3) is not None
        assert count >= 14, count                                   # 10 Hz asked; the default is 4 Hz
        assert gcs.command(M.MAV_CMD_SET_MESSAGE_INTERVAL, M.MAVLINK_MSG_ID_ATTITUDE, -1).result == \
            M.MAV_RESULT_ACCEPTED
        gcs.poll(0.5)
        assert gcs.wait("ATTITUDE", timeout=1.5) is None
        # home: set to where the boat is now, reported in HOME_POSITION
        assert gcs.until(lambda: "GLOBAL_POSITION_INT" in gcs.last, 20.0)
        assert gcs.command(M.MAV_CMD_DO_SET_HOME, 1).result == M.MAV_RESULT_ACCEPTED
        gcs.mav.command_long_send(1, 1, M.MAV_CMD_REQUEST_MESSAGE, 0, M.MAVLINK_MSG_ID_HOME_POSITION, 0, 0, 0, 0,
                                  0, 0)
        home = gcs.wait("HOME_POSITION", timeout=5.0)
        pos = gcs.last["GLOBAL_POSITION_INT"]
        assert home is not None and abs(home.latitude - pos.lat) < 50 and abs(home.longitude - pos.lon) < 80
        # a home at 0, 0 is no position: refused
        assert gcs.command(M.MAV_CMD_DO_SET_HOME, 0, 0, 0, 0, 0.0, 0.0).result == M.MAV_RESULT_DENIED
        # MISSION_SET_CURRENT to an item that is not a waypoint of the mission: refused, the reason as text
        assert gcs.command(M.MAV_CMD_DO_SET_MISSION_CURRENT, 40).result == M.MAV_RESULT_DENIED
        assert gcs.wait_text("item 40"), gcs.texts[-3:]
        assert gcs.command(M.MAV_CMD_DO_SET_MISSION_CURRENT, 2).result == M.MAV_RESULT_ACCEPTED
        # RC override (channel 3 throttle) drives MANUAL; releasing it lets MANUAL time out to neutral
        assert gcs.set_mode(0).result == M.MAV_RESULT_ACCEPTED
        assert gcs.until(lambda: gcs.arm().result == M.MAV_RESULT_ACCEPTED, 20.0), gcs.texts[-3:]
        for _ in range(20):
            gcs.mav.rc_channels_override_send(1, 1, 1500, 0, 1800, 0, 0, 0, 0, 0)
            gcs.poll(0.05)
        servo = gcs.wait("SERVO_OUTPUT_RAW", timeout=2.0)
        assert servo is not None and servo.servo1_raw > 1550 and servo.servo2_raw > 1550
        gcs.poll(2.0)
        servo = gcs.wait("SERVO_OUTPUT_RAW", timeout=2.0)
        assert servo is not None and abs(servo.servo1_raw - 1500) <= 30 and abs(servo.servo2_raw - 1500) <= 30
    finally:
        gcs.close()


def _late_radio_links():
    import tempfile
    master, slave = os.openpty()
    late = os.path.join(tempfile.mkdtemp(), "ttyRADIO")
    from tests.support.mavlink_gcs import free_udp_port
    return [f"udpout:127.0.0.1:{free_udp_port()}", f"serial:{late}:57600"], (master, slave, late)


@pytest.mark.slow
@pytest.mark.parametrize("served", [_late_radio_links], indirect=True)
def test_a_radio_plugged_in_after_start_is_served_from_then_on(served):
    master, slave, late = served
    time.sleep(1.0)                              # the boat started without it (and said so)
    os.symlink(os.ttyname(slave), late)          # the radio appears
    parser = M.MAVLink(None, srcSystem=255, srcComponent=190)
    parser.robust_parsing = True
    os.set_blocking(master, False)
    heartbeat = None
    end = time.monotonic() + 15.0
    while time.monotonic() < end and heartbeat is None:
        try:
            data = os.read(master, 4096)
        except BlockingIOError:
            data = b""
        heartbeat = next((m for m in parser.parse_buffer(data) or [] if m.get_type() == "HEARTBEAT"), None)
        time.sleep(0.05)
    assert heartbeat is not None and heartbeat.type == M.MAV_TYPE_SURFACE_BOAT
