"""Opening a port on the ESC backend a boat config names (drivers/esc/contract.py says what a port is)."""
from __future__ import annotations

from typing import Optional, Sequence

from drivers.esc.contract import EscBackend


def open_port(backend: EscBackend, outputs: Sequence[int], model: Optional[str] = None):
    """A port on `backend` for these outputs, configured for servo pulses. EscError saying what to do if not."""
    if backend.kind == "pigpio":
        from drivers.esc.pigpio_port import connect_pigpio
        return connect_pigpio(backend.host, backend.port, model=model)
    if backend.kind == "kernel_pwm":
        from drivers.esc.kernel_pwm import KernelPwmPort
        return KernelPwmPort.open(backend, outputs, model=model)
    from drivers.esc.pca9685 import Pca9685Port
    return Pca9685Port.open(backend, list(outputs))
