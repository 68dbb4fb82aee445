"""The launch file starts exactly `autopilot run --config ... [--mission ...]` (+ the bridge when asked).

ROS 2's `launch` package is not on PyPI; where it is missing this test drives the file with a minimal recording
stand-in for the few launch classes it uses, so the command line it builds is still checked."""
import importlib.util
import sys
import types

from tests.support import ros_env  # noqa: F401


def load_with_recording_launch(repo_root):
    rec = types.ModuleType("launch")
    actions = types.ModuleType("launch.actions")
    subs = types.ModuleType("launch.substitutions")

    class Obj:
        def __init__(self, *a, **k):
            self.args, self.kwargs = a, k
    for name in ("DeclareLaunchArgument", "ExecuteProcess", "OpaqueFunction"):
        setattr(actions, name, type(name, (Obj,), {}))
    rec.LaunchDescription = type("LaunchDescription", (Obj,), {})

    class LaunchConfiguration:
        def __init__(self, name):
            self.name = name

        def perform(self, context):
            return context[self.name]
    subs.LaunchConfiguration = LaunchConfiguration
    saved = {k: sys.modules.get(k) for k in ("launch", "launch.actions", "launch.substitutions")}
    sys.modules.update({"launch": rec, "launch.actions": actions, "launch.substitutions": subs})
    try:
        spec = importlib.util.spec_from_file_location("autopilot_launch", repo_root / "launch/autopilot.launch.py")
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
    finally:
        for k, v in saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v
    return mod


def test_launch_builds_the_autopilot_run_command(repo_root):
    mod = load_with_recording_launch(repo_root)
    desc = mod.generate_launch_description()
    declared = {
        a.args[0]: a.kwargs["default_value"] for a in desc.args[0] if type(a).__name__ == "DeclareLaunchArgument"
    }
    assert declared["config"] == "/etc/autopilot/boat.yaml"
    procs = mod._processes({"config": "c.yaml", "mission": "m.yaml", "bridge": ""})
    assert [p.kwargs["cmd"] for p in procs] == [["autopilot", "run", "--config", "c.yaml", "--mission", "m.yaml"]]
    procs = mod._processes({"config": "g.yaml", "mission": "", "bridge": "config/gazebo/vrx_wamv.yaml"})
    assert procs[0].kwargs["cmd"] == ["autopilot", "run", "--config", "g.yaml"]
    assert procs[1].kwargs["cmd"][:4] == ["ros2", "run", "ros_gz_bridge", "parameter_bridge"]
    assert procs[1].kwargs["cmd"][-1] == "config_file:=config/gazebo/vrx_wamv.yaml"
