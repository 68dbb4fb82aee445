"""ROS 2 message definitions for run.mcap, so the log is written without a ROS install.

Each definition is the message's fields followed by its dependencies, separated the way rosbag2 and the MCAP
`ros2msg` schema encoding expect (a line of '=' and `MSG: pkg/Name`). Field lists match the ROS 2 Humble and
Jazzy interfaces (comments dropped); CDR encoding and decoding come from mcap-ros2-support.
"""
from __future__ import annotations

_SEP = "=" * 80

_DEFS = {
    "std_msgs/Header": "builtin_interfaces/Time stamp\nstring frame_id",
    "geometry_msgs/Point": "float64 x\nfloat64 y\nfloat64 z",
    "geometry_msgs/Vector3": "float64 x\nfloat64 y\nfloat64 z",
    "geometry_msgs/Quaternion": "float64 x 0\nfloat64 y 0\nfloat64 z 0\nfloat64 w 1",
    "geometry_msgs/Pose": "Point position\nQuaternion orientation",
    "geometry_msgs/Twist": "Vector3 linear\nVector3 angular",
    "geometry_msgs/Wrench": "Vector3 force\nVector3 torque",
    "geometry_msgs/PoseWithCovariance": "Pose pose\nfloat64[36] covariance",
    "geometry_msgs/TwistWithCovariance": "Twist twist\nfloat64[36] covariance",
    "geometry_msgs/WrenchStamped": "std_msgs/Header header\nWrench wrench",
    "nav_msgs/Odometry": "std_msgs/Header header\nstring child_frame_id\n"
                         "geometry_msgs/PoseWithCovariance pose\ngeometry_msgs/TwistWithCovariance twist",
    "sensor_msgs/NavSatStatus": "int8 STATUS_UNKNOWN = -2\nint8 STATUS_NO_FIX = -1\nint8 STATUS_FIX = 0\n"
                                "int8 STATUS_SBAS_FIX = 1\nint8 STATUS_GBAS_FIX = 2\nint8 status -2\n"
                                "uint16 SERVICE_UNKNOWN = 0\nuint16 SERVICE_GPS = 1\nuint16 SERVICE_GLONASS = 2\n"
                                "uint16 SERVICE_COMPASS = 4\nuint16 SERVICE_GALILEO = 8\nuint16 service",
    "sensor_msgs/NavSatFix": "std_msgs/Header header\nNavSatStatus status\nfloat64 latitude\n"
                             "float64 longitude\nfloat64 altitude\nfloat64[9] position_covariance\n"
                             "uint8 COVARIANCE_TYPE_UNKNOWN = 0\nuint8 COVARIANCE_TYPE_APPROXIMATED = 1\n"
                             "uint8 COVARIANCE_TYPE_DIAGONAL_KNOWN = 2\nuint8 COVARIANCE_TYPE_KNOWN = 3\n"
                             "uint8 position_covariance_type",
    "std_msgs/MultiArrayDimension": "string label\nuint32 size\nuint32 stride",
    "std_msgs/MultiArrayLayout": "MultiArrayDimension[] dim\nuint32 data_offset",
    "std_msgs/Float64MultiArray": "MultiArrayLayout layout\nfloat64[] data",
    "diagnostic_msgs/KeyValue": "string key\nstring value",
    "diagnostic_msgs/DiagnosticStatus": "byte OK=0\nbyte WARN=1\nbyte ERROR=2\nbyte STALE=3\nbyte level\n"
                                        "string name\nstring message\nstring hardware_id\nKeyValue[] values",
    "diagnostic_msgs/DiagnosticArray": "std_msgs/Header header\nDiagnosticStatus[] status",
    "geometry_msgs/PoseStamped": "std_msgs/Header header\nPose pose",
    "geometry_msgs/TwistWithCovarianceStamped": "std_msgs/Header header\nTwistWithCovariance twist",
    "geometry_msgs/Transform": "Vector3 translation\nQuaternion rotation",
    "geometry_msgs/TransformStamped": "std_msgs/Header header\nstring child_frame_id\nTransform transform",
    "tf2_msgs/TFMessage": "geometry_msgs/TransformStamped[] transforms",
    "nav_msgs/Path": "std_msgs/Header header\ngeometry_msgs/PoseStamped[] poses",
    "sensor_msgs/Imu": "std_msgs/Header header\ngeometry_msgs/Quaternion orientation\n"
                       "float64[9] orientation_covariance\ngeometry_msgs/Vector3 angular_velocity\n"
                       "float64[9] angular_velocity_covariance\ngeometry_msgs/Vector3 linear_acceleration\n"
                       "float64[9] linear_acceleration_covariance",
    "sensor_msgs/MagneticField": "std_msgs/Header header\ngeometry_msgs/Vector3 magnetic_field\n"
                                 "float64[9] magnetic_field_covariance",
    "std_msgs/Float64": "float64 data",
    "std_msgs/Int32": "int32 data",
    "std_msgs/UInt16": "uint16 data",
    "std_msgs/String": "string data",
    "rcl_interfaces/Log": "uint8 DEBUG=10\nuint8 INFO=20\nuint8 WARN=30\nuint8 ERROR=40\nuint8 FATAL=50\n"
                          "builtin_interfaces/Time stamp\nuint8 level\nstring name\nstring msg\nstring file\n"
                          "string function\nuint32 line",
}

_DEPS = {
    "std_msgs/Header": (),
    "geometry_msgs/Pose": ("geometry_msgs/Point", "geometry_msgs/Quaternion"),
    "geometry_msgs/Twist": ("geometry_msgs/Vector3",),
    "geometry_msgs/Wrench": ("geometry_msgs/Vector3",),
    "geometry_msgs/PoseWithCovariance": ("geometry_msgs/Pose",),
    "geometry_msgs/TwistWithCovariance": ("geometry_msgs/Twist",),
    "geometry_msgs/WrenchStamped": ("std_msgs/Header", "geometry_msgs/Wrench"),
    "nav_msgs/Odometry": ("std_msgs/Header", "geometry_msgs/PoseWithCovariance",
                          "geometry_msgs/TwistWithCovariance"),
    "sensor_msgs/NavSatFix": ("std_msgs/Header", "sensor_msgs/NavSatStatus"),
    "geometry_msgs/PoseStamped": ("std_msgs/Header", "geometry_msgs/Pose"),
    "geometry_msgs/TwistWithCovarianceStamped": ("std_msgs/Header", "geometry_msgs/TwistWithCovariance"),
    "geometry_msgs/Transform": ("geometry_msgs/Vector3", "geometry_msgs/Quaternion"),
    "geometry_msgs/TransformStamped": ("std_msgs/Header", "geometry_msgs/Transform"),
    "tf2_msgs/TFMessage": ("geometry_msgs/TransformStamped",),
    "nav_msgs/Path": ("std_msgs/Header", "geometry_msgs/PoseStamped"),
    "sensor_msgs/Imu": ("std_msgs/Header", "geometry_msgs/Quaternion", "geometry_msgs/Vector3"),
    "sensor_msgs/MagneticField": ("std_msgs/Header", "geometry_msgs/Vector3"),
    "std_msgs/MultiArrayLayout": ("std_msgs/MultiArrayDimension",),
    "std_msgs/Float64MultiArray": ("std_msgs/MultiArrayLayout",),
    "diagnostic_msgs/DiagnosticStatus": ("diagnostic_msgs/KeyValue",),
    "diagnostic_msgs/DiagnosticArray": ("std_msgs/Header", "diagnostic_msgs/DiagnosticStatus"),
}


def schema_text(name: str) -> str:
    """The concatenated definition of `name` ("nav_msgs/Odometry" or "nav_msgs/msg/Odometry") with all it
    depends on. KeyError for a message not defined here."""
    name = short_name(name)
    order = []

    def visit(n):
        for d in _DEPS.get(n, ()):
            visit(d)
        if n not in order:
            order.append(n)

    visit(name)
    deps = [d for d in order if d != name]
    parts = [_DEFS[name]] + [f"{_SEP}\nMSG: {d}\n{_DEFS[d]}" for d in deps]
    return "\n".join(parts) + "\n"


def ros2_name(name: str) -> str:
    """The schema name rosbag2 records: nav_msgs/Odometry -> nav_msgs/msg/Odometry (unchanged if it has /msg/)."""
    pkg, msg = short_name(name).split("/")
    return f"{pkg}/msg/{msg}"


def short_name(name: str) -> str:
    """nav_msgs/msg/Odometry -> nav_msgs/Odometry (the form the MSG: separators use)."""
    parts = name.split("/")
    return f"{parts[0]}/{parts[-1]}"
