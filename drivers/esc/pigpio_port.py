"""ESC pulses through pigpiod: a connected pigpio.pi is the port drivers/esc/output.EscOutput writes to."""
from __future__ import annotations

from typing import Optional

from drivers.esc.contract import EscError
from drivers.esc.pi_board import is_raspberry_pi_5, raspberry_pi_model

PI5_ADVICE = ("pigpio does not support the Raspberry Pi 5 (its GPIO sits behind the RP1 chip). Drive the ESCs "
              "from the kernel's hardware PWM instead: `esc: {backend: kernel_pwm}` in the boat config, with "
              "`dtoverlay=pwm-2chan,pin=12,func=4,pin2=13,func2=4` in /boot/firmware/config.txt and the ESC "
              "signals on GPIO12 and 13 (systemd/install.sh sets this up), or from a PCA9685 board "
              "(`esc: {backend: pca9685}`).")


def connect_pigpio(host: str = "localhost", port: int = 8888, model: Optional[str] = None):
    """A connected pigpio.pi, or EscError saying why not (Pi 5, pigpiod not running)."""
    model = raspberry_pi_model() if model is None else model
    if is_raspberry_pi_5(model):
        raise EscError(f"this is a {model}: {PI5_ADVICE}")
    import pigpio
    pi = pigpio.pi(host, port, show_errors=False)
    if not pi.connected:
        where = "" if (host, int(port)) == ("localhost", 8888) else f" at {host}:{port}"
        raise EscError(f"pigpiod is not running{where} (cannot connect to {host}:{port}): start it with "
                       f"`sudo systemctl start pigpiod` (and `sudo systemctl enable pigpiod` to start it at boot)")
    return pi
