"""A stand-in for pigpiod: the GPIO state it keeps, served in-process (FakePi) or over pigpio's socket protocol.

`GpioState` holds what pigpiod holds per GPIO (mode, level, servo pulse width, PWM duty/range/frequency) and
records every servo pulse width set, with a time stamp from its clock, per GPIO (`servo_log[gpio]` = list of
(t_s, pulse_us)). The simulator reads `pulse_us(gpio)`; tests read the log.

`FakePi(state)` offers the pigpio.pi methods the ESC driver and bench tools call, in-process and without sockets
(the simulator's fast path); like pigpio.pi it raises on a negative status (`PigpioError`, or returns it when
`exceptions=False`).

`FakePigpiod(state, port=0)` listens on 127.0.0.1 and speaks pigpiod's socket protocol, so the real pigpio client
(`pigpio.pi('127.0.0.1', port)`) drives it:
  request  16 bytes: cmd, p1, p2, p3 (uint32, little-endian); p3 > 0 announces p3 bytes of extension after it;
  response 16 bytes: cmd, p1, p2 echoed and the result (int32; negative = pigpio error code).
On connect the client opens a second socket and sends BR1 then NOIB on it; that socket becomes the notification
stream (12-byte reports) and is closed by NC. Commands served: MODES 0, MODEG 1, PUD 2, READ 3, WRITE 4, PWM 5,
PRS 6, PFS 7, SERVO 8, BR1 10, BR2 11, TICK 16, HWVER 17, NB 19, NC 21, PRG 22, PFG 23, PRRG 24, PIGPV 26,
GDC 83, GPW 84, NOIB 99. Any other command answers PI_UNKNOWN_COMMAND (-88), as pigpiod does for commands it
lacks; in particular pigpio scripts (PROC...) are not emulated: the project's deadman is a guardian process
(drivers/esc/deadman.py), not a script inside pigpiod.
"""
from __future__ import annotations

import socket
import struct
import threading
import time
from typing import Callable, Dict, List, Optional, Tuple

# pigpio status codes (pigpio.h)
PI_BAD_USER_GPIO = -2
PI_BAD_GPIO = -3
PI_BAD_MODE = -4
PI_BAD_LEVEL = -5
PI_BAD_PUD = -6
PI_BAD_PULSEWIDTH = -7
PI_BAD_DUTYCYCLE = -8
PI_BAD_DUTYRANGE = -21
PI_NO_HANDLE = -24
PI_BAD_HANDLE = -25
PI_UNKNOWN_COMMAND = -88
PI_NOT_PWM_GPIO = -92
PI_NOT_SERVO_GPIO = -93

INPUT, OUTPUT = 0, 1
PIGPIO_VERSION = 79
PI4B_REVISION = 0xC03111          # Raspberry Pi 4 Model B rev 1.1, 4 GB
# PWM frequencies pigpiod offers at its default 5 us sample rate [Hz]
PWM_FREQUENCIES_HZ = (8000, 4000, 2000, 1600, 1000, 800, 500, 400, 320, 250, 200, 160, 100, 80, 50, 40, 20, 10)

CMD = {"MODES": 0, "MODEG": 1, "PUD": 2, "READ": 3, "WRITE": 4, "PWM": 5, "PRS": 6, "PFS": 7, "SERVO": 8,
       "BR1": 10, "BR2": 11, "TICK": 16, "HWVER": 17, "NB": 19, "NC": 21, "PRG": 22, "PFG": 23, "PRRG": 24,
       "PIGPV": 26, "GDC": 83, "GPW": 84, "NOIB": 99}
_REQUEST = struct.Struct("<IIII")
_RESPONSE = struct.Struct("<IIIi")


class PigpioError(Exception):
    """A negative pigpio status raised by FakePi (pigpio.pi raises pigpio.error the same way)."""

    def __init__(self, status: int, what: str):
        self.status = status
        super().__init__(f"{what} failed with pigpio status {status}")


class GpioState:
    """pigpiod's GPIO state, thread-safe. Methods return pigpio status codes (>= 0 OK, < 0 error)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, hw_revision: int = PI4B_REVISION,
                 max_log: int = 200_000):
        self.clock = clock
        self.hw_revision = hw_revision
        self.max_log = max_log
        self._lock = threading.Lock()
        self._t0 = time.monotonic()
        self.modes = [INPUT] * 54
        self.levels = [0] * 54
        self.servo = [0] * 32
        self.pwm_duty: List[Optional[int]] = [None] * 32
        self.pwm_range = [255] * 32
        self.pwm_freq = [800] * 32
        self.servo_log: Dict[int, List[Tuple[float, int]]] = {}
        self.commands = 0

    # ------------------------------------------------------------------------------ what tests / sim read
    def pulse_us(self, gpio: int) -> int:
        """The servo pulse width being sent on `gpio` [us]; 0 when servo pulses are off."""
        return self.servo[gpio]

    def log(self, gpio: int) -> List[Tuple[float, int]]:
        with self._lock:
            return list(self.servo_log.get(gpio, ()))

    # ------------------------------------------------------------------------------ pigpio semantics
    def set_mode(self, gpio: int, mode: int) -> int:
        if not 0 <= gpio <= 53:
            return PI_BAD_GPIO
        if not 0 <= mode <= 7:
            return PI_BAD_MODE
        with self._lock:
            self.modes[gpio] = mode
            if mode != OUTPUT and gpio < 32:
                self._stop_pulses(gpio)
        return 0

    def get_mode(self, gpio: int) -> int:
        return self.modes[gpio] if 0 <= gpio <= 53 else PI_BAD_GPIO

    def set_pull_up_down(self, gpio: int, pud: int) -> int:
        if not 0 <= gpio <= 53:
            return PI_BAD_GPIO
        if not 0 <= pud <= 2:
            return PI_BAD_PUD
        if self.modes[gpio] == INPUT:
            self.levels[gpio] = 1 if pud == 2 else 0
        return 0

    def read(self, gpio: int) -> int:
        return self.levels[gpio] if 0 <= gpio <= 53 else PI_BAD_GPIO

    def write(self, gpio: int, level: int) -> int:
        if not 0 <= gpio <= 53:
            return PI_BAD_GPIO
        if level not in (0, 1):
            return PI_BAD_LEVEL
        with self._lock:
            if gpio < 32:
                self._stop_pulses(gpio)
            self.modes[gpio] = OUTPUT
            self.levels[gpio] = level
        return 0

    def set_servo_pulsewidth(self, gpio: int, pulse_us: int) -> int:
        if not 0 <= gpio <= 31:
            return PI_BAD_USER_GPIO
        if pulse_us != 0 and not 500 <= pulse_us <= 2500:
            return PI_BAD_PULSEWIDTH
        with self._lock:
            self.commands += 1
            self.pwm_duty[gpio] = None
            self.modes[gpio] = OUTPUT
            self.servo[gpio] = pulse_us
            log = self.servo_log.setdefault(gpio, [])
            if len(log) >= self.max_log:
                del log[: self.max_log // 2]
            log.append((self.clock(), pulse_us))
        return 0

    def get_servo_pulsewidth(self, gpio: int) -> int:
        if not 0 <= gpio <= 31:
            return PI_BAD_USER_GPIO
        return self.servo[gpio] if self.servo[gpio] else PI_NOT_SERVO_GPIO

    def set_PWM_dutycycle(self, gpio: int, duty: int) -> int:
        if not 0 <= gpio <= 31:
            return PI_BAD_USER_GPIO
        if not 0 <= duty <= self.pwm_range[gpio]:
            return PI_BAD_DUTYCYCLE
        with self._lock:
            if self.servo[gpio]:
                self._stop_pulses(gpio)
            self.modes[gpio] = OUTPUT
            self.pwm_duty[gpio] = duty
        return 0

    def get_PWM_dutycycle(self, gpio: int) -> int:
        if not 0 <= gpio <= 31:
            return PI_BAD_USER_GPIO
        duty = self.pwm_duty[gpio]
        return PI_NOT_PWM_GPIO if duty is None else duty

    def set_PWM_range(self, gpio: int, range_: int) -> int:
        if not 0 <= gpio <= 31:
            return PI_BAD_USER_GPIO
        if not 25 <= range_ <= 40000:
            return PI_BAD_DUTYRANGE
        self.pwm_range[gpio] = range_
        return range_

    def get_PWM_range(self, gpio: int) -> int:
        return self.pwm_range[gpio] if 0 <= gpio <= 31 else PI_BAD_USER_GPIO

    def get_PWM_real_range(self, gpio: int) -> int:
        if not 0 <= gpio <= 31:
            return PI_BAD_USER_GPIO
        return 200_000 // self.pwm_freq[gpio]    # 5 us sample rate: real range = 1e6 / (5 * frequency)

    def set_PWM_frequency(self, gpio: int, frequency: int) -> int:
        if not 0 <= gpio <= 31:
            return PI_BAD_USER_GPIO
        self.pwm_freq[gpio] = min(PWM_FREQUENCIES_HZ, key=lambda f: abs(f - frequency))
        return self.pwm_freq[gpio]

    def get_PWM_frequency(self, gpio: int) -> int:
        return self.pwm_freq[gpio] if 0 <= gpio <= 31 else PI_BAD_USER_GPIO

    def read_bank_1(self) -> int:
        return sum(level << g for g, level in enumerate(self.levels[:32]))

    def read_bank_2(self) -> int:
        return sum(level << (g - 32) for g, level in enumerate(self.levels[32:], start=32))

    def get_current_tick(self) -> int:
        return int((time.monotonic() - self._t0) * 1e6) & 0xFFFFFFFF

    def _stop_pulses(self, gpio: int) -> None:
        if self.servo[gpio]:
            self.servo[gpio] = 0
            self.servo_log.setdefault(gpio, []).append((self.clock(), 0))
        self.pwm_duty[gpio] = None


class FakePi:
    """In-process pigpio.pi look-alike on a GpioState (the simulator's fast path: no sockets, no daemon)."""

    def __init__(self, state: Optional[GpioState] = None, exceptions: bool = True):
        self.state = state if state is not None else GpioState()
        self.exceptions = exceptions
        self.connected = True

    def _ok(self, status: int, what: str) -> int:
        if status < 0 and self.exceptions:
            raise PigpioError(status, what)
        return status

    def set_mode(self, gpio, mode):
        return self._ok(self.state.set_mode(gpio, mode), "set_mode")

    def get_mode(self, gpio):
        return self._ok(self.state.get_mode(gpio), "get_mode")

    def set_pull_up_down(self, gpio, pud):
        return self._ok(self.state.set_pull_up_down(gpio, pud), "set_pull_up_down")

    def read(self, gpio):
        return self._ok(self.state.read(gpio), "read")

    def write(self, gpio, level):
        return self._ok(self.state.write(gpio, level), "write")

    def set_servo_pulsewidth(self, user_gpio, pulsewidth):
        return self._ok(self.state.set_servo_pulsewidth(user_gpio, int(pulsewidth)), "set_servo_pulsewidth")

    def get_servo_pulsewidth(self, user_gpio):
        return self._ok(self.state.get_servo_pulsewidth(user_gpio), "get_servo_pulsewidth")

    def set_PWM_dutycycle(self, user_gpio, dutycycle):
        return self._ok(self.state.set_PWM_dutycycle(user_gpio, int(dutycycle)), "set_PWM_dutycycle")

    def get_PWM_dutycycle(self, user_gpio):
        return self._ok(self.state.get_PWM_dutycycle(user_gpio), "get_PWM_dutycycle")

    def set_PWM_range(self, user_gpio, range_):
        return self._ok(self.state.set_PWM_range(user_gpio, range_), "set_PWM_range")

    def get_PWM_range(self, user_gpio):
        return self._ok(self.state.get_PWM_range(user_gpio), "get_PWM_range")

    def get_PWM_real_range(self, user_gpio):
        return self._ok(self.state.get_PWM_real_range(user_gpio), "get_PWM_real_range")

    def set_PWM_frequency(self, user_gpio, frequency):
        return self._ok(self.state.set_PWM_frequency(user_gpio, frequency), "set_PWM_frequency")

    def get_PWM_frequency(self, user_gpio):
        return self._ok(self.state.get_PWM_frequency(user_gpio), "get_PWM_frequency")

    def read_bank_1(self):
        return self.state.read_bank_1()

    def read_bank_2(self):
        return self.state.read_bank_2()

    def get_current_tick(self):
        return self.state.get_current_tick()

    def get_hardware_revision(self):
        return self.state.hw_revision

    def get_pigpio_version(self):
        return PIGPIO_VERSION

    def stop(self):
        self.connected = False


class FakePigpiod:
    """pigpiod's socket protocol on 127.0.0.1:`port` (0 = any free port; see `.port`), over a GpioState."""

    def __init__(self, state: Optional[GpioState] = None, port: int = 0, host: str = "127.0.0.1"):
        self.state = state if state is not None else GpioState()
        self._server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._server.bind((host, port))
        self._server.listen(16)
        self.host, self.port = self._server.getsockname()
        self._running = False
        self._threads: List[threading.Thread] = []
        self._conns: List[socket.socket] = []
        self._notify_handles: Dict[int, int] = {}       # handle -> monitored GPIO bits
        self._lock = threading.Lock()
        self.connections = 0

    def start(self) -> "FakePigpiod":
        self._running = True
        t = threading.Thread(target=self._accept_loop, name="fake-pigpiod-accept", daemon=True)
        t.start()
        self._threads.append(t)
        return self

    def stop(self) -> None:
        """Stop accepting and close command connections. Notification streams stay open until their client
        sends NC or goes away (closing them under a live pigpio client makes its thread spin on recv)."""
        self._running = False
        try:
            self._server.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._server.close()
        with self._lock:
            conns, self._conns = self._conns, []
        for conn in conns:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        return False

    def _accept_loop(self) -> None:
        while self._running:
            try:
                conn, _ = self._server.accept()
            except OSError:
                return
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.connections += 1
            t = threading.Thread(target=self._serve, args=(conn,), name="fake-pigpiod-conn", daemon=True)
            with self._lock:
                self._conns.append(conn)
            t.start()

    @staticmethod
    def _recv_exact(conn: socket.socket, n: int) -> Optional[bytes]:
        buf = bytearray()
        while len(buf) < n:
            chunk = conn.recv(n - len(buf))
            if not chunk:
                return None
            buf.extend(chunk)
        return bytes(buf)

    def _serve(self, conn: socket.socket) -> None:
        notify_handle = None
        try:
            while True:
                head = self._recv_exact(conn, 16)
                if head is None:
                    return
                cmd, p1, p2, p3 = _REQUEST.unpack(head)
                if p3:
                    if self._recv_exact(conn, p3) is None:
                        return
                if cmd == CMD["NOIB"]:
                    res = notify_handle = self._open_notify()
                    with self._lock:                        # a notification stream: stop() leaves it open
                        if conn in self._conns:
                            self._conns.remove(conn)
                elif cmd == CMD["NC"] and notify_handle is not None and p1 == notify_handle:
                    self._close_notify(notify_handle)
                    return                                  # the client closes its end after NC
                else:
                    res = self._execute(cmd, p1, p2)
                conn.sendall(_RESPONSE.pack(cmd, p1, p2, res))
        except OSError:
            return
        finally:
            if notify_handle is not None:
                self._close_notify(notify_handle)
            with self._lock:
                if conn in self._conns:
                    self._conns.remove(conn)
            conn.close()

    def _open_notify(self) -> int:
        with self._lock:
            for handle in range(32):
                if handle not in self._notify_handles:
                    self._notify_handles[handle] = 0
                    return handle
        return PI_NO_HANDLE

    def _close_notify(self, handle: int) -> None:
        with self._lock:
            self._notify_handles.pop(handle, None)

    def _execute(self, cmd: int, p1: int, p2: int) -> int:
        s = self.state
        if cmd == CMD["SERVO"]:
            return s.set_servo_pulsewidth(p1, p2)
        if cmd == CMD["GPW"]:
            return s.get_servo_pulsewidth(p1)
        if cmd == CMD["MODES"]:
            return s.set_mode(p1, p2)
        if cmd == CMD["MODEG"]:
            return s.get_mode(p1)
        if cmd == CMD["PUD"]:
            return s.set_pull_up_down(p1, p2)
        if cmd == CMD["READ"]:
            return s.read(p1)
        if cmd == CMD["WRITE"]:
            return s.write(p1, p2)
        if cmd == CMD["PWM"]:
            return s.set_PWM_dutycycle(p1, p2)
        if cmd == CMD["GDC"]:
            return s.get_PWM_dutycycle(p1)
        if cmd == CMD["PRS"]:
            return s.set_PWM_range(p1, p2)
        if cmd == CMD["PRG"]:
            return s.get_PWM_range(p1)
        if cmd == CMD["PRRG"]:
            return s.get_PWM_real_range(p1)
        if cmd == CMD["PFS"]:
            return s.set_PWM_frequency(p1, p2)
        if cmd == CMD["PFG"]:
            return s.get_PWM_frequency(p1)
        if cmd == CMD["BR1"]:
            return s.read_bank_1()
        if cmd == CMD["BR2"]:
            return s.read_bank_2()
        if cmd == CMD["TICK"]:
            return _as_int32(s.get_current_tick())
        if cmd == CMD["HWVER"]:
            return s.hw_revision
        if cmd == CMD["PIGPV"]:
            return PIGPIO_VERSION
        if cmd == CMD["NB"]:
            with self._lock:
                if p1 not in self._notify_handles:
                    return PI_BAD_HANDLE
                self._notify_handles[p1] = p2
            return 0
        if cmd == CMD["NC"]:
            with self._lock:
                return 0 if self._notify_handles.pop(p1, None) is not None else PI_BAD_HANDLE
        return PI_UNKNOWN_COMMAND


def _as_int32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def main(argv=None) -> int:
    """`python -m hil.devices.fake_pigpiod [--port N]`: serve a fake pigpiod until interrupted (bench tools, demos)."""
    import argparse
    parser = argparse.ArgumentParser(description="Fake pigpiod on 127.0.0.1 (pigpio socket protocol).")
    parser.add_argument("--port", type=int, default=8888)
    args = parser.parse_args(argv)
    daemon = FakePigpiod(port=args.port).start()
    print(f"fake pigpiod listening on 127.0.0.1:{daemon.port}", flush=True)
    try:
        while True:
            time.sleep(1.0)
    except KeyboardInterrupt:
        daemon.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
