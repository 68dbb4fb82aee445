"""The ROS rim's backends: Gazebo through ros_gz_bridge topics and /clock (autopilot.ros.gazebo_backend); hw and
sim come from the runtime (autopilot/runtime/backends.py) and do not need ROS."""
from __future__ import annotations

from autopilot.runtime.backends import make_backend as make_plain_backend
from autopilot.runtime.backends import refuse_unsteerable_pods


def make_backend(cfg, vessel, mission, frame, node, time_base, seed: int = 1, allow_sim_calibration: bool = False):
    """The backend the boat config asks for: gazebo wired to `node`'s topics, the others as the runtime makes
    them, with the node's clock (core seconds) as the drivers' clock. ValueError as make_plain_backend."""
    if cfg.backend == "gazebo":
        refuse_unsteerable_pods(cfg.backend, vessel)
        from autopilot.ros.gazebo_backend import GazeboBackend
        return GazeboBackend(node, cfg.gazebo, vessel, time_base, namespace=cfg.ros.namespace,
                             sensor_depth=cfg.ros.qos.sensor_depth)

    def clock_s() -> float:
        return time_base.from_ns(node.get_clock().now().nanoseconds)

    return make_plain_backend(cfg, vessel, mission, frame, clock_s, seed=seed,
                              allow_sim_calibration=allow_sim_calibration)
