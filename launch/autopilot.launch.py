"""ROS 2 launch file: the same composed process `autopilot run` starts, for systems that have ROS 2's launch.

    ros2 launch launch/autopilot.launch.py config:=/etc/autopilot/boat.yaml [mission:=/path/mission.yaml]

It runs `autopilot run --config CONFIG [--mission MISSION]` (one process, one executor, nodes and backend from the
boat config), restarts nothing by itself (systemd does that on the boat) and forwards SIGINT so the thrusters go
to neutral. With a gazebo boat config, start ros_gz_bridge beside it:
    ros2 launch launch/autopilot.launch.py config:=config/gazebo/wamv_boat.yaml bridge:=config/gazebo/vrx_wamv.yaml
"""
from launch.actions import DeclareLaunchArgument, ExecuteProcess, OpaqueFunction
from launch.substitutions import LaunchConfiguration

from launch import LaunchDescription


def _processes(context, *args, **kwargs):
    config = LaunchConfiguration("config").perform(context)
    mission = LaunchConfiguration("mission").perform(context)
    bridge = LaunchConfiguration("bridge").perform(context)
    cmd = ["autopilot", "run", "--config", config] + (["--mission", mission] if mission else [])
    actions = [ExecuteProcess(cmd=cmd, name="autopilot", output="screen", sigterm_timeout="5")]
    if bridge:
        actions.append(ExecuteProcess(
            cmd=["ros2", "run", "ros_gz_bridge", "parameter_bridge", "--ros-args", "-p", f"config_file:={bridge}"],
            name="ros_gz_bridge", output="screen"))
    return actions


def generate_launch_description():
    return LaunchDescription([
        DeclareLaunchArgument("config", default_value="/etc/autopilot/boat.yaml", description="boat config YAML"),
        DeclareLaunchArgument("mission", default_value="", description="mission YAML (overrides the config's)"),
        DeclareLaunchArgument("bridge", default_value="", description="ros_gz_bridge YAML to start alongside"),
        OpaqueFunction(function=_processes),
    ])
