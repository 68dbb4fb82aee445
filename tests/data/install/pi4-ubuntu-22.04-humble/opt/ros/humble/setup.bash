# Stand-in for /opt/ros/humble/setup.bash (the real one runs the ament environment hooks): it leaves
# the variables that ros-humble-ros-base sets on an aarch64 Pi, which install.sh copies into ros.env.
export AMENT_PREFIX_PATH=/opt/ros/humble
export PYTHONPATH=/opt/ros/humble/lib/python3.10/site-packages:/opt/ros/humble/local/lib/python3.10/dist-packages
export LD_LIBRARY_PATH=/opt/ros/humble/opt/rviz_ogre_vendor/lib:/opt/ros/humble/lib/aarch64-linux-gnu:/opt/ros/humble/lib
export ROS_DISTRO=humble
export ROS_VERSION=2
export ROS_PYTHON_VERSION=3
