"""Run logs: contents, rate, rotation, ROS 2 messages in run.mcap, and a reader that trusts nothing."""
from __future__ import annotations

import json
import math
import os
import re
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pytest
from mcap.reader import make_reader
from mcap_ros2.decoder import DecoderFactory

from autopilot.runlog import STATE_COLUMNS, RunLogger, read_run, state_columns
from autopilot.runlog.mcap_log import read_mcap
from autopilot.runlog.ros2_schemas import _DEFS
from autopilot.runlog.rundir import list_runs
from autopilot.vocab.types import GpsFix
from tests.support.paths import REPO

FOKA = REPO / "config" / "vessels" / "foka.yaml"
DEMO = REPO / "config" / "missions" / "demo.yaml"


def row(t, k=0, n_thr=2, truth=False):
    r = {c: None for c in state_columns(n_thr, truth)}
    r.update(time_s=t, mode="AUTO", armed=True, north_m=10.0 + k, east_m=20.0, lat_deg=51.1100001,
             lon_deg=17.0600002, heading_deg=90.0, surge_mps=1.0, sway_mps=0.1, yaw_rate_dps=5.0, pos_std_m=0.5,
             heading_ref_deg=91.0, speed_ref_mps=1.2, xte_m=-0.25, waypoint_index=2, surge_force_n=12.5,
             yaw_moment_nm=-1.5, gps_age_s=0.4, gnss_fix_quality=1, battery_v=20.9)
    for i in range(n_thr):
        r[f"thrust_n_{i}"] = 6.0 + i
        r[f"pulse_us_{i}"] = 1600 + i
    if truth:
        r.update(truth_north_m=10.2 + k, truth_east_m=19.9, truth_heading_deg=89.0)
    return r


def test_a_run_directory_holds_the_files_used_and_the_three_logs(tmp_path):
    with RunLogger(tmp_path / "runs", FOKA, DEMO, rate_hz=10, mission_name="Demo lake/survey #1",
                   utc_now=lambda: datetime(2025, 6, 1, 12, 30, 5, tzinfo=timezone.utc)) as log:
        for k in range(20):
            log.log_cycle(0.1 * k, row(0.1 * k, k))
        log.event(0.55, "mode", "AUTO -> RTL", reason="operator link lost", from_mode="AUTO")
        log.event(0.6, "failsafe", "gps loss: dead reckoning")
    assert log.run_dir.name == "20250601T123005Z_Demo-lake-survey-1"
    assert sorted(os.listdir(log.run_dir)) == ["demo.yaml", "events.jsonl", "foka.yaml", "meta.json",
                                               "metadata.yaml", "run.mcap", "state.csv"]
    assert (log.run_dir / "foka.yaml").read_bytes() == FOKA.read_bytes()
    header = (log.run_dir / "state.csv").read_text().splitlines()[0].split(",")
    assert header == list(STATE_COLUMNS) + ["thrust_n_0", "thrust_n_1", "pulse_us_0", "pulse_us_1",
                                            "applied_thrust_n_0", "applied_thrust_n_1"]

    run = read_run(log.run_dir)
    assert len(run) == 20 and run.closed_cleanly and run.skipped_lines == 0
    assert run["time_s"] == pytest.approx(0.1 * np.arange(20))
    assert run["north_m"][3] == 13.0 and run["lat_deg"][0] == pytest.approx(51.1100001, abs=1e-9)
    assert list(run["mode"][:2]) == ["AUTO", "AUTO"] and run["armed"][0] == 1.0
    assert run["pulse_us_1"][0] == 1601 and run.thruster_count() == 2
    assert run.events[0] == {"time_s": 0.55, "kind": "mode", "message": "AUTO -> RTL", "level": "info",
                             "reason": "operator link lost", "from_mode": "AUTO"}
    assert run.events[1]["level"] == "warn"
    assert run.file("mission") == log.run_dir / "demo.yaml"
    assert run.meta["columns"] == header and run.meta["rows"] == 20


def test_rows_are_taken_at_the_configured_rate_from_a_faster_loop(tmp_path):
    with RunLogger(tmp_path, rate_hz=10) as log:
        taken = [log.log_cycle(k * 0.02, row(k * 0.02)) for k in range(500)]     # 10 s of a 50 Hz loop
    assert sum(taken) == 100
    t = read_run(log.run_dir)["time_s"]
    assert np.diff(t) == pytest.approx(0.1, abs=1e-9)
    with RunLogger(tmp_path, rate_hz=50) as log:
        assert all(log.log_cycle(k * 0.02, row(k * 0.02)) for k in range(100))
    with pytest.raises(ValueError, match=r"rate_hz must be in \(0, 50\]"):
        RunLogger(tmp_path, rate_hz=100)


def test_a_key_that_is_not_a_column_is_an_error_at_the_first_row(tmp_path):
    with RunLogger(tmp_path) as log:
        with pytest.raises(ValueError, match="not state.csv columns: heading_rad"):
            log.log_cycle(0.0, {"time_s": 0.0, "heading_rad": 1.0})


def test_an_enum_mode_is_written_by_its_name(tmp_path):
    import enum

    class Mode(enum.Enum):
        LOITER = 3
    with RunLogger(tmp_path) as log:
        log.log_cycle(0.0, dict(row(0.0), mode=Mode.LOITER))
    assert list(read_run(log.run_dir)["mode"]) == ["LOITER"]
    diag = read_mcap(log.run_dir / "run.mcap").topic("/diagnostics")[0][1]
    assert diag.status[0].message == "LOITER armed"


def test_simulation_rows_carry_truth_columns(tmp_path):
    with RunLogger(tmp_path) as log:
        log.log_cycle(0.0, row(0.0, truth=True))
    run = read_run(log.run_dir)
    assert run["truth_north_m"][0] == pytest.approx(10.2)
    truth = read_mcap(log.run_dir / "run.mcap").topic("/sim/truth/odometry")
    assert truth[0][1].pose.pose.position.y == pytest.approx(10.2)          # NED north -> ENU y


def test_mcap_holds_the_live_topics_as_ros2_messages_that_the_stock_reader_decodes(tmp_path):
    from autopilot.files.boat import RosConfig
    with RunLogger(tmp_path, thruster_names=("left", "right"), ros=RosConfig(namespace="/foka")) as log:
        log.log_cycle(0.0, row(0.0))
        log.log_gnss(0.05, GpsFix(0.05, 51.11, 17.06, alt_m=120.0, fix_quality=2, pos_std_m=1.5))
        log.event(0.07, "failsafe", "geofence: stopping short", distance_m=4.2)
    offset = read_run(log.run_dir).meta["time_offset_s"]
    with open(log.run_dir / "run.mcap", "rb") as f:            # the stock seeking reader: needs the footer
        msgs = {ch.topic: Decoded(sc, ch, m) for sc, ch, _, m in
                make_reader(f, decoder_factories=[DecoderFactory()]).iter_decoded_messages()}
    ns = "/foka/"
    assert set(msgs) == {ns + t for t in (
        "odometry/filtered", "gnss/filtered", "gnss/fix", "guidance/desired_yaw", "guidance/yaw",
        "guidance/desired_heading_compass_deg", "guidance/heading_compass_deg", "guidance/desired_speed_mps",
        "guidance/speed_mps", "guidance/cross_track_error_m", "guidance/waypoint_index",
        "thrusters/left/thrust", "thrusters/right/thrust", "thrusters/left/pulse_us", "thrusters/right/pulse_us",
        "autopilot/state", "autopilot/events")} | {"/diagnostics", "/rosout", "/tf"}
    odo = msgs[ns + "odometry/filtered"]
    assert odo.schema.name == "nav_msgs/msg/Odometry"
    o = odo.ros_msg
    # NED (north 10, east 20), heading 090 (east) -> ENU x = 20, y = 10, yaw 0 -> identity quaternion
    assert (o.pose.pose.position.x, o.pose.pose.position.y) == (20.0, 10.0)
    assert o.pose.pose.orientation.w == pytest.approx(1.0) and o.pose.pose.orientation.z == pytest.approx(0.0)
    assert o.pose.covariance[0] == 0.25 and o.header.frame_id == "odom" and o.child_frame_id == "base_link"
    assert o.twist.twist.linear.y == pytest.approx(-0.1)                              # starboard -> -y (FLU)
    assert o.twist.twist.angular.z == pytest.approx(-math.radians(5.0))
    assert o.header.stamp.sec + o.header.stamp.nanosec * 1e-9 == pytest.approx(offset, abs=1e-6)
    fix = msgs[ns + "gnss/fix"].ros_msg
    assert (fix.latitude, fix.longitude, fix.altitude, fix.status.status) == (51.11, 17.06, 120.0, 1)
    assert fix.position_covariance[0] == pytest.approx(2.25) and fix.header.frame_id == "gnss_link"
    assert msgs[ns + "thrusters/right/thrust"].ros_msg.data == 7.0
    assert msgs[ns + "thrusters/right/pulse_us"].ros_msg.data == 1601
    assert msgs[ns + "thrusters/left/thrust"].channel.metadata["thruster"] == "left"
    assert msgs[ns + "guidance/desired_heading_compass_deg"].ros_msg.data == 91.0
    assert msgs[ns + "guidance/desired_yaw"].ros_msg.data == pytest.approx(math.radians(-1.0))   # ENU yaw
    assert msgs[ns + "guidance/cross_track_error_m"].ros_msg.data == -0.25
    assert msgs[ns + "guidance/waypoint_index"].ros_msg.data == 2
    assert json.loads(msgs[ns + "autopilot/state"].ros_msg.data)["mode"] == "AUTO"
    assert msgs[ns + "autopilot/events"].ros_msg.data == "[failsafe] geofence: stopping short"
    tf = msgs["/tf"].ros_msg.transforms
    assert [(t.header.frame_id, t.child_frame_id) for t in tf] == [("map", "odom"), ("odom", "base_link")]
    assert (tf[1].transform.translation.x, tf[1].transform.translation.y) == (20.0, 10.0)
    log_line = msgs["/rosout"].ros_msg
    assert log_line.level == 30 and log_line.msg == 'failsafe: geofence: stopping short {"distance_m": 4.2}'
    diag = {kv.key: kv.value for kv in msgs["/diagnostics"].ros_msg.status[0].values}
    assert diag["mode"] == "AUTO" and diag["xte_m"] == "-0.25"


class Decoded:
    def __init__(self, schema, channel, ros_msg):
        self.schema, self.channel, self.ros_msg = schema, channel, ros_msg


def test_schemas_match_the_installed_ros2_interfaces():
    """Our embedded definitions list the same fields as the .msg files shipped with the ROS 2 packages, and, for
    those not on the package index (tf2_msgs), as rosbags' own Humble definitions."""
    from rosbags.typesys import Stores, get_typestore
    share = Path(sys.prefix) / "share"
    store = get_typestore(Stores.ROS2_HUMBLE)
    for name, text in _DEFS.items():
        pkg, msg = name.split("/")
        path = share / pkg / "msg" / f"{msg}.msg"
        installed = path.read_text() if path.exists() else \
            store.generate_msgdef(f"{pkg}/msg/{msg}")[0].split("=" * 80)[0]
        assert _fields(text) == _fields(installed), name


def _fields(text):
    out = []
    for ln in text.splitlines():
        ln = ln.split("#")[0].strip()
        if ln:
            typ, rest = ln.split(None, 1)
            out.append((typ.split("/")[-1], re.sub(r"\s+", "", rest)))
    return out


def test_old_runs_are_rotated_by_count_and_by_size(tmp_path):
    base = tmp_path / "runs"
    for k in range(5):
        d = base / f"2025010{k + 1}T000000Z_old"
        d.mkdir(parents=True)
        (d / "state.csv").write_bytes(b"x" * 300_000)
    (base / "not-a-run").mkdir()
    with RunLogger(base, keep_runs=3, max_total_mb=None) as log:
        pass
    assert [p.name for p in list_runs(base)] == ["20250104T000000Z_old", "20250105T000000Z_old", log.run_dir.name]
    assert (base / "not-a-run").is_dir()
    with RunLogger(base, keep_runs=None, max_total_mb=0.5) as log2:       # 0.5 MB: one old run still fits
        pass
    assert [p.name for p in list_runs(base)] == ["20250105T000000Z_old", log.run_dir.name, log2.run_dir.name]


def test_a_bad_value_stops_the_log_not_the_caller(tmp_path, caplog):
    with RunLogger(tmp_path) as log:
        bad = row(0.0)
        bad["xte_m"] = "far"                             # cannot be formatted as a number
        assert log.log_cycle(0.0, bad) is True           # the loop is not the one to pay for it
        deadline = time.monotonic() + 5
        while log.healthy and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not log.healthy and "ValueError" in log.error
        assert log.log_cycle(1.0, row(1.0)) is False
        log.event(1.0, "mode", "still no exception")
    assert [r.levelname for r in caplog.records if r.name == "autopilot.runlog"] == ["ERROR"]
    events = [json.loads(ln) for ln in (log.run_dir / "events.jsonl").read_text().splitlines()]
    assert events[-1]["kind"] == "log_stopped"


def test_reader_skips_a_cut_last_line(tmp_path):
    with RunLogger(tmp_path, write_mcap=False) as log:
        for k in range(5):
            log.log_cycle(float(k), row(float(k)))
        log.event(1.0, "mode", "AUTO")
    with open(log.run_dir / "state.csv", "a") as f:
        f.write("5.000,AUTO,1,10.5,20")                 # what a kill mid-write leaves
    with open(log.run_dir / "events.jsonl", "a") as f:
        f.write('{"time_s": 2.0, "kind": "fail')
    run = read_run(log.run_dir / "state.csv")
    assert len(run) == 5 and run.skipped_lines == 2 and len(run.events) == 1


def test_a_realtime_logger_that_falls_behind_drops_rows_and_says_so(tmp_path):
    with RunLogger(tmp_path, rate_hz=50, queue_s=0.2) as log:          # room for 110 rows
        taken = [log.log_cycle(k * 0.02, row(k * 0.02)) for k in range(2000)]   # 40 s of rows at once
    assert log.rows_dropped > 0 and sum(taken) == 2000 - log.rows_dropped
    overruns = [e for e in read_run(log.run_dir).events if e["kind"] == "log_overrun"]
    assert len(overruns) == 1 and overruns[0]["level"] == "warn"


def test_a_simulation_logger_waits_for_the_writer_instead(tmp_path):
    with RunLogger(tmp_path, rate_hz=50, queue_s=0.2, realtime=False) as log:
        assert all(log.log_cycle(k * 0.02, row(k * 0.02)) for k in range(2000))
    assert log.rows_dropped == 0 and len(read_run(log.run_dir)) == 2000
