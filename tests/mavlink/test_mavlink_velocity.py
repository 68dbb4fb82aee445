"""A ground station drives the simulated boat by speed and turn rate: ACRO (our VELOCITY) with
SET_POSITION_TARGET_LOCAL_NED in a body frame, from pymavlink's mavutil over real UDP on 127.0.0.1 against
`autopilot sim --mavlink ... --realtime` in its own process."""
from __future__ import annotations

import time

import pytest

from tests.support.mavlink_gcs import Gcs, M, SimBoat, free_udp_port

ACRO = 1
USE_VX_AND_YAW_RATE = 0xFFF & ~(M.POSITION_TARGET_TYPEMASK_VX_IGNORE | M.POSITION_TARGET_TYPEMASK_YAW_RATE_IGNORE)


def _target(gcs, frame, vx, yaw_rate, mask=USE_VX_AND_YAW_RATE):
    gcs.mav.set_position_target_local_ned_send(0, gcs.conn.target_system, gcs.conn.target_component, frame, mask,
                                               0, 0, 0, vx, 0, 0, 0, 0, 0, 0, yaw_rate)


@pytest.mark.slow
def test_acro_follows_body_velocity_targets_and_refuses_other_frames(tmp_path):
    port = free_udp_port()
    gcs = Gcs(port)
    sim = SimBoat(tmp_path, port)
    try:
        gcs.connect()
        assert gcs.set_mode(ACRO).result == M.MAV_RESULT_ACCEPTED
        assert gcs.until(lambda: gcs.arm().result == M.MAV_RESULT_ACCEPTED, 30.0), gcs.texts[-5:]
        assert gcs.until(lambda: gcs.mode() == ACRO, 10.0)
        assert gcs.conn.flightmode == "ACRO"                      # pymavlink names it from the Rover table
        # a position target in the local frame is not what VELOCITY follows: refused once, with the reason
        for _ in range(5):
            _target(gcs, M.MAV_FRAME_LOCAL_NED, 0.8, 0.0)
            gcs.poll(0.05)
        assert gcs.wait_text("not a body frame"), gcs.texts[-5:]
        assert sum("not a body frame" in t for t in gcs.texts) == 1
        # 0.8 m/s ahead, 0.15 rad/s clockwise (to starboard)
        end, rates, speeds = time.monotonic() + 8.0, [], []
        while time.monotonic() < end:
            _target(gcs, M.MAV_FRAME_BODY_NED, 0.8, 0.15)
            gcs.poll(0.1)
            att, hud = gcs.last.get("ATTITUDE"), gcs.last.get("VFR_HUD")
            if att is not None and hud is not None and end - time.monotonic() < 3.0:
                rates.append(att.yawspeed)
                speeds.append(hud.groundspeed)
        assert rates and sum(rates) / len(rates) > 0.08, rates[-5:]
        assert 0.5 < sum(speeds) / len(speeds) < 1.1, speeds[-5:]
        # the targets stop: the 1 s timeout returns the thrusters to neutral
        assert gcs.wait_text("no velocity command"), gcs.texts[-5:]
    finally:
        gcs.close()
        sim.stop()
    assert "Traceback" not in sim.out_path.read_text()
