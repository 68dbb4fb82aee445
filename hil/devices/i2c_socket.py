"""Serve an emulated I2C register device on a Unix socket, so other processes reach the same chip.

`I2cSocketServer(device, path).start()` answers drivers/i2c_adapter.SocketRegisters clients (one thread per
connection) with the device's `probe`, `read_registers` and `write_registers`; an OSError from the device goes
back as its errno (121 for a chip that is not there). An autopilot process, its deadman guardian and a test can
thus share one emulated PCA9685, as they would share /dev/i2c-1 on a Pi.
"""
from __future__ import annotations

import os
import socket
import struct
import threading


class I2cSocketServer:
    def __init__(self, device, path):
        self.device = device
        self.path = str(path)
        self._sock = None
        self._stop = threading.Event()

    def start(self) -> "I2cSocketServer":
        if os.path.exists(self.path):
            os.unlink(self.path)
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.bind(self.path)
        self._sock.listen(8)
        threading.Thread(target=self._accept, name="i2c-socket", daemon=True).start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._sock is not None:
            self._sock.close()
        try:
            os.unlink(self.path)
        except OSError:
            pass

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            while True:
                head = _recv(conn, 5)
                if head is None:
                    return
                op, addr, reg, n = head[:1], head[1], head[2], struct.unpack("<H", head[3:5])[0]
                data = _recv(conn, n) if op == b"W" else b""
                if data is None:
                    return
                body, code = b"", 0
                try:
                    if op == b"P":
                        self.device.probe(addr)
                    elif op == b"R":
                        body = bytes(self.device.read_registers(addr, reg, n))
                    elif op == b"W":
                        self.device.write_registers(addr, reg, data)
                    else:
                        code = 22                                    # EINVAL
                except OSError as e:
                    code = e.errno or 5
                try:
                    conn.sendall(struct.pack("<BH", code, len(body)) + body)
                except OSError:
                    return


def _recv(conn: socket.socket, n: int):
    out = b""
    while len(out) < n:
        try:
            chunk = conn.recv(n - len(out))
        except OSError:
            return None
        if not chunk:
            return None
        out += chunk
    return out
