"""The boat config: the one file `autopilot run --config FILE` reads.

It names the vessel (preset or file) and the mission, picks the backend (hw: the boat's own drivers; sim: the
built-in simulator; gazebo: sensors and thrusters through ros_gz_bridge topics) and says how the autopilot
appears on ROS 2: namespace, frame ids, topic names, QoS depths, which nodes run in the process. For the gazebo
backend it also maps Gazebo's topics to our sensors and thrusters, so a new world needs a new file, not code.

Gains, thruster tables and sensor noise live in the vessel file only; nothing here repeats them.
Validated with the same schema tools as vessels and missions: unknown keys and bad values are errors naming the
file, the key and the reason. Pure data: no rclpy here.
"""
from __future__ import annotations

import dataclasses
import importlib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Tuple

from autopilot.files.link_specs import parse_link
from autopilot.vocab.config import CONFIG_DIR, read_yaml, resolve_vessel_path
from autopilot.vocab.schema import ConfigError, build, param

NODE_NAMES = ("gnss", "imu", "autopilot", "diagnostics")


@dataclass(frozen=True, kw_only=True)
class FramesConfig:
    """REP-105 frame ids. odom and map are both ENU about the mission's origin; base_link is FLU."""

    map: str = param("map")
    odom: str = param("odom")
    base_link: str = param("base_link")
    gnss: str = param("gnss_link", doc="frame of the GNSS antenna (NavSatFix header)")
    imu: str = param("imu_link", doc="frame of the IMU (Imu and MagneticField headers)")


OPTIONAL_TOPICS = ("joystick", "cmd_vel", "goal")      # '' switches these off
_ROS_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def ros_name_problem(name: str, absolute_ok: bool) -> str:
    """Why `name` is not a ROS 2 topic or namespace name as rclpy validates it ('' when it is one): tokens of
    letters, digits and underscores not starting with a digit, joined by single '/', a leading '/' only when
    `absolute_ok` (or '~/' for a private name), no trailing '/'."""
    if not name:
        return "empty"
    body = name[1:] if name.startswith("/") and absolute_ok else name
    if body.startswith("~/") and name is body:       # private to the node: ~/topic
        body = body[2:]
    if body.startswith("/"):
        return "it starts with '/'" if not absolute_ok else "it has '//'"
    if body.endswith("/"):
        return "it ends with '/'"
    for token in body.split("/"):
        if not token:
            return "it has '//'"
        if not _ROS_TOKEN.fullmatch(token):
            return (f"{token!r}: use letters, digits and '_', not starting with a digit")
    return ""


@dataclass(frozen=True, kw_only=True)
class TopicsConfig:
    """Topic names, relative to the namespace unless they start with '/'. `{name}` is the thruster's name."""

    gnss_fix: str = param("gnss/fix", doc="sensor_msgs/NavSatFix from the receiver")
    gnss_vel: str = param("gnss/vel", doc="geometry_msgs/TwistWithCovarianceStamped: velocity over ground "
                                          "in ENU axes, stamped with the ENU frame frames.odom")
    imu: str = param("imu/data", doc="sensor_msgs/Imu")
    mag: str = param("imu/mag", doc="sensor_msgs/MagneticField")
    odometry: str = param("odometry/filtered", doc="nav_msgs/Odometry: pose in odom, twist in base_link")
    filtered_fix: str = param("gnss/filtered", doc="sensor_msgs/NavSatFix of the estimate")
    path: str = param("guidance/path", doc="nav_msgs/Path of the mission")
    desired_yaw: str = param("guidance/desired_yaw", doc="std_msgs/Float64, ENU yaw of the desired heading [rad] "
                                                         "(REP-103: from east, counter-clockwise), like odometry's")
    yaw: str = param("guidance/yaw", doc="std_msgs/Float64, ENU yaw of the estimate [rad], as in odometry")
    desired_heading: str = param("guidance/desired_heading_compass_deg",
                                 doc="std_msgs/Float64, compass degrees (from north, clockwise), for people")
    heading: str = param("guidance/heading_compass_deg", doc="std_msgs/Float64, estimated compass heading, "
                                                            "for people")
    desired_speed: str = param("guidance/desired_speed_mps", doc="std_msgs/Float64")
    speed: str = param("guidance/speed_mps", doc="std_msgs/Float64, estimated surge speed")
    cross_track_error: str = param("guidance/cross_track_error_m", doc="std_msgs/Float64, + right of the leg")
    waypoint_index: str = param("guidance/waypoint_index", doc="std_msgs/Int32, active waypoint")
    thrust: str = param("thrusters/{name}/thrust", doc="std_msgs/Float64 per thruster [N]")
    pulse: str = param("thrusters/{name}/pulse_us", doc="std_msgs/UInt16 per thruster, ESC pulse width [us]")
    state: str = param("autopilot/state", doc="std_msgs/String (JSON): mode, armed, waypoint, mission state")
    events: str = param("autopilot/events", doc="std_msgs/String: mode changes, arming, warnings")
    command: str = param("autopilot/command", doc="std_msgs/String: 'mode AUTO', 'mission /path.yaml', ...")
    arm: str = param("autopilot/arm", doc="std_srvs/SetBool service: true arms, false disarms")
    hold: str = param("autopilot/hold", doc="std_srvs/Trigger service: switch to HOLD now")
    diagnostics: str = param("/diagnostics", doc="diagnostic_msgs/DiagnosticArray")
    joystick: str = param("joy", doc="sensor_msgs/Joy (the `joy` package) for MANUAL and VELOCITY; '' = none")
    cmd_vel: str = param("cmd_vel", doc="geometry_msgs/Twist for VELOCITY: linear.x surge [m/s], angular.z yaw "
                                        "rate [rad/s, + counter-clockwise, REP-103]; '' = none")
    goal: str = param("goal_pose", doc="geometry_msgs/PoseStamped for GUIDED: a position target, header.frame_id "
                                       "frames.map or frames.odom (ENU, REP-105: x east, y north [m]); the "
                                       "orientation is not used; '' = none")

    def validate(self):
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if value == "" and f.name in OPTIONAL_TOPICS:
                continue
            problem = ros_name_problem(value.replace("{name}", "x"), absolute_ok=True)
            if problem:
                raise ValueError(f"{f.name}: {value!r} is not a ROS topic name: {problem}")

    def thrust_topic(self, name: str) -> str:
        return self.thrust.replace("{name}", name)

    def pulse_topic(self, name: str) -> str:
        return self.pulse.replace("{name}", name)


@dataclass(frozen=True, kw_only=True)
class JoystickConfig:
    """How a gamepad on the `joy` topic drives MANUAL (axes in -1..1; the enable button must be held)."""

    throttle_axis: int = param(1, min=0, max=31, doc="left stick up/down on most gamepads")
    steering_axis: int = param(3, min=0, max=31, doc="right stick left/right; + in the message = left")
    enable_button: int = param(4, min=-1, max=31, doc="deadman button held while driving (-1: none)")
    invert_steering: bool = param(True, doc="joy reports left as +; our steering + turns to starboard")


@dataclass(frozen=True, kw_only=True)
class QosConfig:
    sensor_depth: int = param(10, min=1, max=1000, doc="history depth of sensor topics (best effort)")
    command_depth: int = param(10, min=1, max=1000, doc="history depth of command topics (reliable)")


@dataclass(frozen=True, kw_only=True)
class RosConfig:
    start: str = param("auto", choices=("auto", "on", "off"),
                       doc="the ROS 2 rim of `autopilot run`: auto starts it when rclpy imports; on requires it; "
                           "off never (`ros: off` alone means the same)")
    namespace: str = param("", doc="ROS namespace of every node and relative topic, e.g. /foka")
    node_prefix: str = param("autopilot", doc="node names are PREFIX_gnss, PREFIX_imu, PREFIX (autopilot), ...")
    nodes: Tuple[str, ...] = param(NODE_NAMES, choices=NODE_NAMES,
                                   doc="nodes to run in this process (gnss and imu exist only on hw and sim)")
    frames: FramesConfig = param(default_factory=FramesConfig)
    topics: TopicsConfig = param(default_factory=TopicsConfig)
    qos: QosConfig = param(default_factory=QosConfig)
    joystick: JoystickConfig = param(default_factory=JoystickConfig)
    publish_tf: bool = param(
        True, doc="map -> odom -> base_link on /tf, sensor frames on /tf_static (where tf2_msgs is installed)"
    )
    diagnostics_rate_hz: float = param(1.0, unit="Hz", min=0.1, max=10.0)
    state_rate_hz: float = param(10.0, unit="Hz", min=0.5, max=50.0, doc="odometry, setpoints, state topics")
    sensor_timeout_s: float = param(2.0, unit="s", min=0.1, max=60.0,
                                    doc="a sensor silent this long is reported as an ERROR in diagnostics")

    def validate(self):
        if self.namespace and not self.namespace.startswith("/"):
            raise ValueError(f"namespace: must start with '/', got {self.namespace!r}")
        if self.namespace not in ("", "/"):
            problem = ros_name_problem(self.namespace, absolute_ok=True)
            if problem:
                raise ValueError(f"namespace: {self.namespace!r} is not a ROS namespace: {problem}")
        if not _ROS_TOKEN.fullmatch(self.node_prefix):
            raise ValueError(f"node_prefix: {self.node_prefix!r} is not a ROS node name: use letters, digits "
                             f"and '_', not starting with a digit")
        if "autopilot" not in self.nodes:
            raise ValueError("nodes: must include 'autopilot'")
        if len(set(self.nodes)) != len(self.nodes):
            raise ValueError("nodes: lists a node twice")


@dataclass(frozen=True, kw_only=True)
class GazeboGnssConfig:
    topic: str = param(doc="sensor_msgs/NavSatFix published by ros_gz_bridge")
    velocity_topic: str = param("", doc="optional geometry_msgs/TwistWithCovarianceStamped (ENU); '' = none")
    std_m: Optional[float] = param(None, unit="m", min=0.001, max=100,
                                   doc="1-sigma per axis when the fix has no covariance; default: vessel CEP")
    assumed_sats: int = param(12, min=0, max=64, doc="NavSatFix has no satellite count; pre-arm checks see this")


@dataclass(frozen=True, kw_only=True)
class GazeboImuConfig:
    topic: str = param(doc="sensor_msgs/Imu published by ros_gz_bridge")


@dataclass(frozen=True, kw_only=True)
class GazeboMagConfig:
    topic: str = param("", doc="sensor_msgs/MagneticField; '' when the model has no magnetometer")
    from_imu_orientation: bool = param(False, doc="derive a magnetometer reading from the IMU's orientation "
                                                  "and the vessel's field/declination (VRX WAM-V has no "
                                                  "magnetometer)")


@dataclass(frozen=True, kw_only=True)
class GazeboThrusterConfig:
    name: str = param(doc="thruster name in the vessel file")
    topic: str = param(doc="std_msgs/Float64 thrust [N] bridged to Gazebo")
    scale: float = param(1.0, min=-1e3, max=1e3, doc="newtons on the topic per newton asked (-1: reversed joint)")
    angle_topic: str = param("", doc="azimuth pods: std_msgs/Float64 joint position [rad] bridged to Gazebo "
                                     "(VRX: /wamv/thrusters/NAME/pos); empty for a fixed thruster")
    angle_scale: float = param(-1.0, min=-10.0, max=10.0,
                               doc="joint radians per radian of pod angle (ours: + = thrust to starboard; VRX's "
                                   "z-up joint turns the other way, hence -1)")


@dataclass(frozen=True, kw_only=True)
class GazeboConfig:
    """Where a Gazebo world's bridged topics are. Topic names here are absolute or relative to the namespace."""

    gnss: GazeboGnssConfig = param()
    imu: GazeboImuConfig = param()
    mag: GazeboMagConfig = param(default_factory=GazeboMagConfig)
    thrusters: Tuple[GazeboThrusterConfig, ...] = param()
    clock_topic: str = param("/clock")
    clock_timeout_s: float = param(0.5, unit="s", min=0.05, max=60.0,
                                   doc="wall time without /clock after which the time source is lost: thrusters "
                                       "neutral and an event until it returns (a HIL link outage, a stopped "
                                       "simulator)")
    clock_jump_s: float = param(1.0, unit="s", min=0.0, max=600.0,
                                doc="simulated time advancing more than this while /clock was lost means the "
                                    "simulation ran on without the autopilot: the IMU-loss action "
                                    "(failsafe.imu.action, HOLD); a shorter advance (a paused simulation) is only "
                                    "reported")
    bridge_config: str = param("", doc="the ros_gz_bridge YAML this mapping matches (for humans and tests)")
    thrust_stamp_topic: str = param("hil/thrust_stamped",
                                    doc="sensor_msgs/JointState per cycle: the thrust [N] with the stamp of the "
                                        "newest sensor sample it was computed from (HIL latency from stamps)")
    link_report_topic: str = param("hil/link_report",
                                   doc="std_msgs/String JSON each simulated second: the messages this side "
                                       "received and sent, counted by stamp (HIL loss per topic)")

    def validate(self):
        names = [t.name for t in self.thrusters]
        if len(set(names)) != len(names):
            raise ValueError("thrusters: names must be unique")
        if not self.mag.topic and not self.mag.from_imu_orientation:
            raise ValueError("mag: give a topic or set from_imu_orientation (the estimator needs a heading)")


@dataclass(frozen=True, kw_only=True)
class LoggingConfig:
    """The crash-safe run log of `autopilot run` (one directory per run under `dir`)."""

    dir: Optional[str] = param(None, doc="where runs go, relative to this file; default $AUTOPILOT_LOG_DIR, else "
                                         "runs/ beside this file (never the directory `run` was started in)")
    enabled: bool = param(True)
    rate_hz: float = param(10.0, unit="Hz", min=0.1, max=50.0, doc="state.csv / run.mcap rows per second")
    keep_runs: int = param(50, min=1, max=100000, doc="older runs are deleted beyond this count")
    max_total_mb: float = param(2000.0, unit="MB", min=1.0, max=1e7, doc="and beyond this total size")

    def directory(self, base: Optional[Path] = None) -> Optional[str]:
        """Where runs go: `dir`, else $AUTOPILOT_LOG_DIR, else runs/; a relative path is taken from `base` (the
        boat config's folder), never from the working directory. None when logging is off."""
        if not self.enabled:
            return None
        d = Path(self.dir or os.environ.get("AUTOPILOT_LOG_DIR") or "runs")
        if not d.is_absolute() and base is not None:
            d = Path(base) / d
        return str(d)


@dataclass(frozen=True, kw_only=True)
class CommandsConfig:
    """Who may command the boat (autopilot/commands/auth.py): signed commands, allowed senders, mission folders."""

    auth: str = param("token", choices=("token", "off"),
                      doc="token: commands must be signed with the boat's token (disarm and mode HOLD always "
                          "pass); off: anyone on the ROS domain may command the boat")
    token_file: str = param("command.token", doc="the shared token (mode 600), relative to this file; "
                                                 "`autopilot keys token --config FILE` creates it")
    allowed_nodes: Tuple[str, ...] = param((), doc="ROS nodes that may send commands, e.g. [autopilot_command_"
                                                   "client, /station/qgc_bridge]; [] = any holding the token")
    joystick_nodes: Tuple[str, ...] = param(("joy_node",), doc="nodes whose sensor_msgs/Joy may drive MANUAL "
                                                               "when auth is on (a Joy message carries no token)")
    goal_nodes: Tuple[str, ...] = param((), doc="nodes whose geometry_msgs/PoseStamped goals GUIDED takes when "
                                                "auth is on (a pose carries no token); [] = none")
    max_age_s: float = param(30.0, unit="s", min=1.0, max=3600.0,
                             doc="a signed command older (or newer) than this by the boat's clock is refused")
    mission_dirs: Tuple[str, ...] = param((), doc="`mission PATH` loads only from these folders (relative to "
                                                  "this file); [] = the folder of `mission`")


@dataclass(frozen=True, kw_only=True)
class MavlinkStreamsConfig:
    """Telemetry rates [Hz] a ground station gets until it asks for others (REQUEST_DATA_STREAM,
    MAV_CMD_SET_MESSAGE_INTERVAL); 0 = not sent unless asked for."""

    heartbeat: float = param(1.0, unit="Hz", min=0.0, max=50.0)
    sys_status: float = param(1.0, unit="Hz", min=0.0, max=50.0)
    gps_raw_int: float = param(2.0, unit="Hz", min=0.0, max=50.0)
    global_position_int: float = param(4.0, unit="Hz", min=0.0, max=50.0)
    attitude: float = param(4.0, unit="Hz", min=0.0, max=50.0)
    vfr_hud: float = param(2.0, unit="Hz", min=0.0, max=50.0)
    nav_controller_output: float = param(2.0, unit="Hz", min=0.0, max=50.0)
    mission_current: float = param(1.0, unit="Hz", min=0.0, max=50.0)
    servo_output_raw: float = param(2.0, unit="Hz", min=0.0, max=50.0)
    home_position: float = param(0.2, unit="Hz", min=0.0, max=50.0)   # also sent whenever home changes
    gps_global_origin: float = param(0.2, unit="Hz", min=0.0, max=50.0)   # also sent when first known
    ekf_status_report: float = param(1.0, unit="Hz", min=0.0, max=50.0)
    battery_status: float = param(1.0, unit="Hz", min=0.0, max=50.0)
    extended_sys_state: float = param(1.0, unit="Hz", min=0.0, max=50.0)   # landed state: MAVSDK's in_air


@dataclass(frozen=True, kw_only=True)
class MavlinkConfig:
    """The boat as a MAVLink vehicle (autopilot/mavlink/): links to ground stations, identity, signing."""

    links: Tuple[str, ...] = param(("udpout:127.0.0.1:14550",),
                                   doc="any number of: udpout:HOST:PORT (send to a GCS), udpin:HOST:PORT (a GCS "
                                       "connects in), tcpin:HOST:PORT (TCP server), serial:DEVICE:BAUD (a SiK "
                                       "radio, e.g. serial:/dev/ttyUSB0:57600)")
    system_id: int = param(1, min=1, max=255)
    component_id: int = param(1, min=1, max=255, doc="1 = MAV_COMP_ID_AUTOPILOT1")
    signing_key_file: str = param("", doc="MAVLink 2 signing key (32 bytes, or 64 hex digits; mode 600), "
                                          "relative to this file; when set, unsigned commands are refused "
                                          "(except disarm and HOLD); '' = unsigned")
    streams: MavlinkStreamsConfig = param(default_factory=MavlinkStreamsConfig)

    def validate(self):
        for i, spec in enumerate(self.links):
            try:
                parse_link(spec)
            except ValueError as e:
                raise ValueError(f"links[{i}]: {e}") from None


@dataclass(frozen=True, kw_only=True)
class EscConfig:
    """Where the ESC pulses go (drivers/esc/contract.py). The thrusters' GPIOs and pulse ranges are the vessel
    file's; this says which hardware makes the pulses on this boat."""

    backend: str = param("pigpio", choices=("pigpio", "kernel_pwm", "pca9685"),
                         doc="pigpio: pigpiod (Pi 4 on Raspberry Pi OS Bookworm); kernel_pwm: /sys/class/pwm (Pi 4 "
                             "and Pi 5, pwm-2chan overlay); pca9685: a PCA9685 board on I2C")
    pigpio_host: str = param("localhost")
    pigpio_port: int = param(8888, min=1, max=65535)
    pwm_chip: int = param(-1, min=-1, max=64, doc="kernel_pwm: /sys/class/pwm/pwmchipN; -1 = found from the board")
    pwm_sysfs_root: str = param("/sys/class/pwm", doc="kernel_pwm: where the PWM class is (a container may mount "
                                                      "it elsewhere)")
    pwm_channels: Tuple[int, ...] = param((), min=0, max=15,
                                          doc="kernel_pwm: PWM channel per thruster (vessel order); empty = from "
                                              "each thruster's GPIO (GPIO12 -> 0, 13 -> 1; Pi 5 also 18 -> 2, "
                                              "19 -> 3)")
    i2c_bus: int = param(1, min=0, max=20, doc="pca9685: /dev/i2c-N")
    pca9685_address: int = param(0x40, min=0x03, max=0x77)
    pca9685_channels: Tuple[int, ...] = param((), min=0, max=15,
                                              doc="pca9685: board output per thruster, vessel order (required)")
    pulse_scale: float = param(1.0, min=0.8, max=1.2,
                               doc="pca9685: true pulse / intended pulse of this board's oscillator, measured "
                                   "with `autopilot bench esc --calibrate`")

    def validate(self):
        if self.backend == "pca9685" and not self.pca9685_channels:
            raise ValueError("pca9685_channels: give the board output (0-15) of each thruster, in the vessel's "
                             "order, e.g. [0, 1]")

    def backend_spec(self):
        """The drivers' EscBackend for this section."""
        from drivers.esc.contract import EscBackend
        return EscBackend(kind=self.backend, host=self.pigpio_host, port=self.pigpio_port,
                          sysfs_root=self.pwm_sysfs_root, pwm_chip=self.pwm_chip,
                          pwm_channels=tuple(self.pwm_channels), i2c_bus=self.i2c_bus,
                          pca9685_address=self.pca9685_address, pca9685_channels=tuple(self.pca9685_channels),
                          pulse_scale=self.pulse_scale)


@dataclass(frozen=True, kw_only=True)
class PowerMonitorConfig:
    """The pack's power monitor on the hw backend (drivers/power_monitor/): the voltage the low-battery failsafe,
    the pre-arm check, MAVLink and the thrust maps use, the current and the charge drawn."""

    kind: str = param("ina219", choices=("ina219", "ina226", "ads1115"),
                      doc="ina219: a TI INA219 high-side monitor (Adafruit CircuitPython INA219 library); ina226: "
                          "a TI INA226 high-side monitor, the chip of most boat power modules (the project's own "
                          "register driver); ads1115: an analog power-sense module (pack divider and current "
                          "sense output) read by an ADS1115 ADC (Adafruit CircuitPython ADS1x15 library)")
    bus: int = param(1, min=0, max=20, doc="/dev/i2c-N")
    address: int = param(0x40, min=0x40, max=0x4F, doc="the chip's address (INA219/INA226 A0/A1 straps: "
                                                       "0x40-0x4F; ADS1115 ADDR pin: 0x48-0x4B)")
    shunt_ohms: float = param(0.1, unit="ohm", min=1e-5, max=10.0,
                              doc="ina219/ina226: the shunt resistor (0.1 on Adafruit's INA219 breakout; a 50 A "
                                  "boat shunt: 0.0015)")
    max_current_a: float = param(3.2, unit="A", min=0.01, max=1000.0,
                                 doc="the largest current to measure; x shunt_ohms must stay within 320 mV "
                                     "(ina219) or 81.92 mV (ina226); ads1115: its current output must stay "
                                     "within the gain's full scale")
    voltage_channel: int = param(0, min=0, max=3, doc="ads1115: the input (AIN0-AIN3) of the module's voltage "
                                                      "output")
    current_channel: int = param(1, min=0, max=3, doc="ads1115: the input (AIN0-AIN3) of the module's current "
                                                      "output")
    voltage_ratio: float = param(11.0, min=1.0, max=100.0,
                                 doc="ads1115: pack voltage / voltage output, the module's divider (11 on many "
                                     "3DR-style modules, 10.1 on 3DR's own; ArduPilot's BATT_VOLT_MULT)")
    amps_per_volt: float = param(17.0, unit="A/V", min=0.01, max=10000.0, min_exclusive=True,
                                 doc="ads1115: current per volt of the current output above its offset "
                                     "(ArduPilot's BATT_AMP_PERVLT; 17 on 3DR's module)")
    amps_offset_v: float = param(0.0, unit="V", min=-1.0, max=5.0,
                                 doc="ads1115: the current output at zero current (ArduPilot's BATT_AMP_OFFSET)")
    gain: float = param(1.0, min=0.66, max=16.0,
                        doc="ads1115: the ADC's gain, 0.667 (2/3), 1, 2, 4, 8 or 16 = +-6.144, 4.096, 2.048, "
                            "1.024, 0.512, 0.256 V full scale; neither output may exceed the ADC's supply")
    poll_rate_hz: float = param(10.0, unit="Hz", min=0.5, max=100.0)
    stale_timeout_s: float = param(2.0, unit="s", min=0.2, max=60.0,
                                   doc="a silent monitor's last reading is dropped after this long (battery "
                                       "unknown, its health ERROR)")
    reopen_s: float = param(1.0, unit="s", min=0.1, max=60.0, doc="a failed monitor is set up again this often")

    def validate(self):
        from drivers.power_monitor import ads1115_check, ina219_calibration, ina226_calibration
        if self.kind == "ads1115":
            ads1115_check(self)                  # its messages start with the key
            return
        try:
            (ina226_calibration if self.kind == "ina226" else ina219_calibration)(self.shunt_ohms,
                                                                                  self.max_current_a)
        except ValueError as e:
            raise ValueError(f"max_current_a: {e}") from None


@dataclass(frozen=True, kw_only=True)
class WebConfig:
    """The boat's web page (autopilot/web/): status, map, commands and compass calibration from a phone on the
    boat's Wi-Fi. Served only once a password is set (`autopilot keys web --config FILE`)."""

    listen: str = param("0.0.0.0:8080", doc="HOST:PORT to serve the page on (0.0.0.0: every interface; "
                                            "127.0.0.1: this machine only; port 0: any free port)")
    password_file: str = param("web_password", doc="the page password's scrypt hash (mode 600), relative to this "
                                                   "file; `autopilot keys web --config FILE` writes it")
    public_status: bool = param(False, doc="show the status and map without logging in (read-only; commands "
                                           "still need the password)")
    tiles_dir: str = param("", doc="a folder of map tiles on the boat (Z/X/Y.png, relative to this file), served "
                                   "at /tiles/ for the map; '' = none")
    tiles_url: str = param("", doc="map tiles under the drawing, {z}/{x}/{y} in the URL: an online source, or "
                                   "'' = the tiles_dir folder's (/tiles/{z}/{x}/{y}.png) when one is set, else "
                                   "none")
    session_idle_timeout_s: float = param(8 * 3600.0, unit="s", min=60.0, max=7 * 86400.0,
                                          doc="a login unused this long must log in again")

    def validate(self):
        self.host_port()
        if self.tiles_url and not (self.tiles_url.startswith(("http://", "https://", "/"))
                                   and all(k in self.tiles_url for k in ("{z}", "{x}", "{y}"))):
            raise ValueError("tiles_url: must be an http(s) URL or a /path with {z}, {x} and {y} in it")

    def host_port(self) -> Tuple[str, int]:
        """(host, port) of `listen`; ValueError naming the key when it is not HOST:PORT."""
        host, sep, port = self.listen.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
            raise ValueError(f"listen: {self.listen!r} is not HOST:PORT (e.g. 0.0.0.0:8080)")
        return host.strip("[]"), int(port)

    def tiles_origin(self) -> str:
        """The scheme://host of an online tile source (for the page's content policy); '' otherwise."""
        if not self.tiles_url.startswith(("http://", "https://")):
            return ""
        scheme, _, rest = self.tiles_url.partition("://")
        return f"{scheme}://{rest.split('/', 1)[0]}"


@dataclass(frozen=True, kw_only=True)
class BoatConfig:
    vessel: str = param(doc="vessel preset name (foka) or path to a vessel YAML")
    mission: Optional[str] = param(None, doc="mission YAML; `autopilot run --mission` overrides it")
    backend: str = param("hw", choices=("hw", "sim", "gazebo"))
    ros: RosConfig = param(default_factory=RosConfig)
    gazebo: Optional[GazeboConfig] = param(None, doc="required for backend gazebo")
    logging: LoggingConfig = param(default_factory=LoggingConfig)
    esc: EscConfig = param(default_factory=EscConfig, doc="the ESC output backend of the hw backend")
    commands: CommandsConfig = param(default_factory=CommandsConfig)
    mavlink: Optional[MavlinkConfig] = param(None, doc="serve MAVLink ground stations (QGC, Mission Planner, "
                                                      "MAVProxy); absent = no MAVLink")
    web: Optional[WebConfig] = param(None, doc="the boat's web page (status, map, commands, calibration); "
                                               "absent = no page")
    battery: Optional[PowerMonitorConfig] = param(None, doc="the pack's power monitor (hw backend); absent = the "
                                                           "battery is not measured")
    status_socket: str = param("", doc="the unix socket `autopilot status` asks the running boat on, relative to "
                                       "this file; '' = $AUTOPILOT_STATUS_SOCKET, else /run/autopilot/status.sock "
                                       "under systemd, else one in the temporary folder named after this file "
                                       "(autopilot/runtime/status_endpoint.py)")
    source_file: str = param("")

    def validate(self):
        if self.backend == "gazebo" and self.gazebo is None:
            raise ValueError("gazebo: required when backend is gazebo")
        if self.backend == "gazebo" and self.ros.start == "off":
            raise ValueError("ros: backend gazebo needs ROS 2 (its sensors and clock are ROS topics); "
                             "ros.start cannot be off")
        b = self.battery
        if b is not None and self.esc.backend == "pca9685" and (b.bus, b.address) == (self.esc.i2c_bus,
                                                                                       self.esc.pca9685_address):
            raise ValueError(f"battery.address: 0x{b.address:02x} on i2c-{b.bus} is the PCA9685's "
                             f"(esc.pca9685_address): two chips cannot share an address; strap one of them to "
                             f"another")

    def vessel_path(self) -> Path:
        return _relative_to_file(self.vessel, self.source_file, is_vessel=True)

    def mission_path(self) -> Optional[Path]:
        return None if self.mission is None else _relative_to_file(self.mission, self.source_file)

    def log_directory(self) -> Optional[str]:
        """The run-log directory (LoggingConfig.directory), relative paths taken from this file's folder."""
        return self.logging.directory(Path(self.source_file).resolve().parent if self.source_file else None)

    def _beside(self, name: str) -> Path:
        """`name` as a path: as given when absolute (or for a config read from no file), else relative to this
        file's folder."""
        p = Path(name)
        if p.is_absolute() or not self.source_file:
            return p
        return Path(self.source_file).resolve().parent / p

    def token_path(self) -> Path:
        return self._beside(self.commands.token_file)

    def signing_key_path(self) -> Optional[Path]:
        if self.mavlink is None or not self.mavlink.signing_key_file:
            return None
        return self._beside(self.mavlink.signing_key_file)

    def web_tiles_dir(self) -> Optional[Path]:
        if self.web is None or not self.web.tiles_dir:
            return None
        return self._beside(self.web.tiles_dir)

    def web_password_path(self) -> Path:
        return self._beside(self.web.password_file if self.web is not None else "web_password")

    def mission_dirs(self) -> Tuple[Path, ...]:
        """Folders `mission PATH` may load from, resolved (symlinks followed)."""
        base = Path(self.source_file).resolve().parent if self.source_file else Path.cwd()
        if self.commands.mission_dirs:
            return tuple((base / d).resolve() for d in self.commands.mission_dirs)
        own = self.mission_path()
        return ((own.resolve().parent if own is not None else base),)


def _relative_to_file(value: str, source_file: str, is_vessel: bool = False) -> Path:
    """A preset name (vessels only) or a path: absolute, else relative to the config file's folder if the file
    is there, else to the repository root, else to the working directory."""
    if is_vessel and "/" not in value and not value.endswith((".yaml", ".yml")):
        return resolve_vessel_path(value)
    p = Path(value)
    if p.is_absolute():
        return p
    for base in ([Path(source_file).resolve().parent] if source_file else []) + [CONFIG_DIR.parent]:
        if (base / p).exists():
            return base / p
    return p


def normalise_boat_yaml(data: dict) -> dict:
    """The boat config's YAML as the schema takes it: no `source_file`, and `commands.auth: off` (which YAML 1.1
    reads as false) as the string it was meant to be; `ros: off | on | auto` as `ros: {start: ...}`."""
    data = {k: v for k, v in data.items() if k != "source_file"}
    ros = data.get("ros")
    if isinstance(ros, bool) or ros == "auto":      # `ros: off | on | auto` (YAML 1.1 reads off/on as booleans)
        data["ros"] = {"start": "auto" if ros == "auto" else ("on" if ros else "off")}
    elif isinstance(ros, dict) and isinstance(ros.get("start"), bool):
        data["ros"] = dict(ros, start="on" if ros["start"] else "off")
    commands = data.get("commands")
    if isinstance(commands, dict) and commands.get("auth") is False:
        data["commands"] = dict(commands, auth="off")
    return data


def load_boat_config(path) -> BoatConfig:
    """Read and validate a boat config; the vessel and mission files it names must exist and validate too."""
    from autopilot.vocab.config import load_mission, load_vessel

    data = normalise_boat_yaml(read_yaml(path))
    cfg = build(BoatConfig, data, str(path))
    cfg = dataclasses.replace(cfg, source_file=str(path))
    vessel = load_vessel(str(cfg.vessel_path()))
    n = len(vessel.thrusters)
    for key in ("pwm_channels", "pca9685_channels"):
        given = getattr(cfg.esc, key)
        if given and len(given) != n:
            raise ConfigError(path, f"esc.{key}", f"lists {len(given)} outputs but the vessel has {n} thrusters "
                                                  f"(one per thruster, in the vessel's order)")
        if len(set(given)) != len(given):
            raise ConfigError(path, f"esc.{key}", f"{list(given)}: each thruster needs its own output")
    mission_path = cfg.mission_path()
    if mission_path is not None:
        load_mission(mission_path)
    pods = [t.name for t in vessel.thrusters if t.azimuth is not None]
    if pods and cfg.backend == "hw":
        raise ConfigError(path, "backend", f"hw: vessel {vessel.name!r} has azimuth pods ({', '.join(pods)}) and "
                                           f"the hw backend has no output for their angle servos yet; fly it with "
                                           f"backend sim or gazebo")
    if cfg.gazebo is not None:
        known = {t.name for t in vessel.thrusters}
        for i, t in enumerate(cfg.gazebo.thrusters):
            if pods and not t.angle_topic:
                raise ConfigError(path, f"gazebo.thrusters[{i}].angle_topic",
                                  f"vessel {vessel.name!r} has azimuth pods: {t.name!r} needs the topic of its "
                                  f"joint position (VRX: /wamv/thrusters/{t.name}/pos)")
        for i, t in enumerate(cfg.gazebo.thrusters):
            if t.name not in known:
                raise ConfigError(path, f"gazebo.thrusters[{i}].name",
                                  f"no thruster {t.name!r} in vessel {vessel.name!r} (has {', '.join(sorted(known))})")
        missing = known - {t.name for t in cfg.gazebo.thrusters}
        if missing:
            raise ConfigError(path, "gazebo.thrusters", f"no topic for thruster(s) {', '.join(sorted(missing))}")
        ns, topics = cfg.ros.namespace, cfg.ros.topics
        ours = {resolve_topic(ns, topics.thrust_topic(t.name)) for t in vessel.thrusters}
        for i, t in enumerate(cfg.gazebo.thrusters):
            if resolve_topic(ns, t.topic) in ours:
                raise ConfigError(path, f"gazebo.thrusters[{i}].topic",
                                  f"{resolve_topic(ns, t.topic)} is also the autopilot's own thrust topic "
                                  "(ros.topics.thrust): give one of them another name")
    return cfg


def resolve_topic(namespace: str, topic: str) -> str:
    """The absolute name of `topic` under `namespace` (ROS's rule: a leading '/' means absolute)."""
    if topic.startswith("/"):
        return topic
    ns = namespace.rstrip("/")
    return f"{ns}/{topic}" if ns else f"/{topic}"


def ros_decision(cfg) -> Tuple[Optional[bool], str]:
    """(start the ROS 2 rim?, the line that says so). None: the config needs ROS and this machine has none
    (the text says what to do)."""
    wanted = cfg.ros.start
    needs = cfg.backend == "gazebo"
    if wanted == "off" and not needs:
        return False, ("ROS 2: off (ros.start: off): no topics, services, TF or diagnostics; MAVLink and the run "
                       "log as usual")
    try:
        importlib.import_module("rclpy")       # the ROS rim's one dependency this process cannot do without
    except ImportError as e:
        why = f"rclpy does not import: {e}"
        if wanted == "on" or needs:
            what = "ros.start is on" if wanted == "on" else "backend gazebo needs ROS 2"
            return None, (f"error: {what}, but {why}. On a boat with ROS 2: `source /opt/ros/$ROS_DISTRO/setup.bash` "
                          "before starting; on a laptop: `pip install .[ros]`; or set `ros: {start: off}`.")
        return False, (f"ROS 2: off ({why}): no topics, services, TF or diagnostics; MAVLink and the run log "
                       "as usual (with ROS 2 installed, `ros.start: auto` starts them)")
    return True, f"ROS 2: on (ros.start: {wanted}, rclpy imports)"
