"""ROS 2 adapters over the pure autopilot core: the only package (with hil's Gazebo adapter and stand-in) that
imports rclpy. Nothing outside it imports it at module level; `autopilot run` and `autopilot sim --transport ros`
import it lazily."""
