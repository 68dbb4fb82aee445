# Stand-in for /opt/ros/jazzy/setup.bash (the real one runs the ament environment hooks): it leaves
# the variables that ros-jazzy-ros-base sets on an aarch64 Pi, which install.sh copies into ros.env.
export AMENT_PREFIX_PATH=/opt/ros/jazzy
export PYTHONPATH=/opt/ros/jazzy/lib/python3.12/site-packages:/opt/ros/jazzy/local/lib/python3.12/dist-packages
export LD_LIBRARY_PATH=/opt/ros/jazzy/opt/rviz_ogre_vendor/lib:/opt/ros/jazzy/lib/aarch64-linux-gnu:/opt/ros/jazzy/lib
export ROS_DISTRO=jazzy
export ROS_VERSION=2
export ROS_PYTHON_VERSION=3
