"""The autopilot node when its simulated clock stops (a HIL link outage from the simulator to the Pi while the
simulator runs on, `--on-outage run`), over real DDS: the stand-in's sensors and /clock are cut for 1.5 s while its
plant runs on; the autopilot's answer still reaches it. The autopilot must say it lost its time source and put
the thrusters to neutral (the plant sees 0 N), and on the clock's return accept the 1.5 s jump as one clock-jump
failsafe (HOLD), with no lost-sensor or GNSS-glitch failsafes for the same gap and a finite estimate. Then the
simulator resets (its clock goes back): the autopilot says so once, disarms and sets neutral. The plant is a FOKA
2x draggier than the autopilot's vessel file. The core's side of it: tests/safety/test_clock_jump.py."""
import math

import pytest
import rclpy

from autopilot.files.boat import load_boat_config, resolve_topic
from autopilot.ros.qos import command_qos, sensor_qos
from autopilot.vocab.config import load_mission, load_vessel
from hil.ros.gazebo_standin import standin_for_boat_config
from hil.sim.plant_spec import PlantSpec
from tests.support import ros_env  # noqa: F401  (fails without rclpy)

CUT_FROM_S, CUT_S = 5.0, 1.5          # simulated time of the downlink cut


class Cuttable:
    """A publisher that drops what it is given while `cut[0]` is set (the link from the simulator is down)."""

    def __init__(self, pub, cut):
        self.pub, self.cut = pub, cut

    def publish(self, msg):
        if not self.cut[0]:
            self.pub.publish(msg)

    def get_subscription_count(self):
        return self.pub.get_subscription_count()


@pytest.mark.slow
def test_a_stopped_clock_sets_the_thrusters_neutral_and_its_jump_is_one_clock_jump_failsafe(ctx, repo_root):
    from nav_msgs.msg import Odometry
    from std_msgs.msg import String

    from autopilot.ros.runner import BoatProcess

    cfg = load_boat_config(repo_root / "config/gazebo/foka_boat.yaml")
    vessel = load_vessel("foka")
    mission = load_mission(repo_root / "config/missions/demo.yaml")
    plant_vessel = PlantSpec.resolve(vessel, 1, mismatch={"x_u": 2.0, "x_uu": 2.0}).vessel
    standin = standin_for_boat_config(cfg, plant_vessel, mission, context=ctx, gps_noise="white")
    proc = BoatProcess(cfg, vessel, mission, context=ctx)
    for n in proc.nodes:                 # one executor for everything; the node's clock watch is its own thread
        proc.executor.remove_node(n)
        standin.add_node(n)
    probe = rclpy.create_node("probe", context=ctx)
    standin.add_node(probe)
    events, odom = [], []
    ns, t = cfg.ros.namespace, cfg.ros.topics
    probe.create_subscription(String, resolve_topic(ns, t.events), lambda m: events.append(m.data), command_qos(50))
    probe.create_subscription(Odometry, resolve_topic(ns, t.odometry), odom.append, sensor_qos(50))
    cut = [False]
    for name in ("clock_pub", "fix_pub", "imu_pub", "mag_pub"):
        setattr(standin, name, Cuttable(getattr(standin, name), cut))
    node = proc.autopilot
    try:
        assert standin.wait_for_peers(10.0)
        standin.run(2.0, lockstep_timeout_s=0.5)
        ok, text = node.arm()
        assert ok, text
        assert node.set_mode("AUTO", "test")[0]
        standin.run(CUT_FROM_S - 0.5, lockstep_timeout_s=0.5)       # lockstep: quick to the cruise
        assert node.state_dict()["mode"] == "AUTO" and max(map(abs, standin.thrust_n)) > 1.0

        thrust_at_cut_end = []

        def on_step(t_s, truth):
            cut[0] = CUT_FROM_S <= t_s < CUT_FROM_S + CUT_S
            if abs(t_s - (CUT_FROM_S + CUT_S - 0.1)) < 1e-6:
                thrust_at_cut_end.append(list(standin.thrust_n))
            return False

        standin.run(CUT_FROM_S + CUT_S + 1.0, realtime=True, on_step=on_step, on_outage="run")
        standin.spin_for(0.3)
        final = node.state_dict()
        n_before_reset = len(events)
        from rosgraph_msgs.msg import Clock
        for _ in range(3):                  # a simulator reset: time starts again at 1 s
            standin.clock_pub.publish(Clock(clock=standin.tb.to_stamp(1.0)))
            standin.spin_for(0.1)
        standin.spin_for(0.3)
        after_reset = node.state_dict()
    finally:
        proc.stop()
        standin.destroy()

    lost = [e for e in events[:n_before_reset] if e.startswith("[clock] time source lost")]
    assert len(lost) == 1, events
    assert thrust_at_cut_end == [[0.0, 0.0]], thrust_at_cut_end            # the plant got the neutral command
    failsafes = [e for e in events if e.startswith("[failsafe]")]
    assert len(failsafes) == 1 and failsafes[0].startswith("[failsafe] clock-jump: simulated time jumped 1.") \
        and failsafes[0].endswith("action: hold"), events                   # no imu/gps loss, no glitch
    assert any(e.startswith("[clock] time source back") for e in events), events
    assert final["mode"] == "HOLD" and final["armed"], final
    after = [o for o in odom if o.header.stamp.sec >= CUT_FROM_S + CUT_S]
    assert after and all(math.isfinite(o.pose.pose.position.x) and math.isfinite(o.twist.twist.linear.x)
                         for o in after)
    # the reset: said once, disarmed, and the plant gets neutral
    went_back = [e for e in events if e.startswith("[clock] simulated time went back")]
    assert len(went_back) == 1 and "disarmed" in went_back[0], events[n_before_reset:]
    assert not after_reset["armed"] and standin.thrust_n == [0.0, 0.0], (after_reset, standin.thrust_n)
