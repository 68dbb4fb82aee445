"""Nothing anyone sends stalls the boat (the issue's item 9): `autopilot sim --realtime --mavlink` whose stdout is
a pipe nobody reads, a stranger flooding it with unsigned commands it refuses, and the stranger's disarm still
answered: the refusals are said once a second per link, and what is said goes through a writer thread that
drops lines rather than block."""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys

import pytest

from tests.support.mavlink_gcs import Gcs, M, free_udp_port
from tests.support.paths import DATA, REPO

PASSPHRASE = "nobody reads this pipe"


@pytest.mark.slow
def test_a_boat_whose_stdout_nobody_reads_still_answers_disarm_after_a_flood_of_refusals(tmp_path):
    key_file = tmp_path / "mavlink.key"
    key_file.write_text(PASSPHRASE + "\n")
    os.chmod(key_file, 0o600)
    owner_port, open_port = free_udp_port(), free_udp_port()
    proc = subprocess.Popen([sys.executable, "-m", "autopilot.cli", "sim", str(DATA / "mavlink_pond.yaml"),
                             "--vessel", "foka", "--realtime", "--duration", "600", "--mavlink-key", str(key_file),
                             "--mavlink", f"udpout:127.0.0.1:{owner_port}",
                             "--mavlink", f"udpin:127.0.0.1:{open_port}"],
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)    # stdout: never read
    owner = Gcs(owner_port, key=hashlib.sha256(PASSPHRASE.encode()).digest())
    stranger = Gcs(open_port, system_id=254, connect_out=True)
    try:
        owner.connect(timeout=60.0)
        stranger.connect(timeout=30.0)
        # 3000 unsigned commands, each a different one (each refusal would be its own line: ~250 kB, a pipe
        # holds 64 kB), sent as fast as the socket takes them
        for i in range(3000):
            stranger.mav.command_long_send(stranger.conn.target_system, stranger.conn.target_component,
                                           1000 + i, 0, 0, 0, 0, 0, 0, 0, 0)
            if i % 200 == 0:
                stranger.poll(0.05)
        stranger.poll(2.0)
        ack = stranger.command(M.MAV_CMD_COMPONENT_ARM_DISARM, 0, timeout=15.0)      # anyone may stop the boat
        assert ack is not None and ack.result == M.MAV_RESULT_ACCEPTED, "the boat stopped answering"
        ack = owner.command(M.MAV_CMD_COMPONENT_ARM_DISARM, 0, timeout=15.0)
        assert ack is not None and ack.result == M.MAV_RESULT_ACCEPTED
        assert proc.poll() is None
    finally:
        owner.close()
        stranger.close()
        proc.kill()
        proc.wait(timeout=30)
