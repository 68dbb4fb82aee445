"""Who may command the boat (issue 11, item 5): signed commands, replays, stale signatures, the token file."""
from __future__ import annotations

import os

import pytest

from autopilot.commands.auth import CommandGate, TokenError, node_allowed, read_token, sign, write_new_token

TOKEN = b"0123456789abcdef0123456789abcdef"


def _gate(**kw):
    clock = {"t": 1_800_000_000.0}
    kw.setdefault("auth", "token")
    kw.setdefault("token", TOKEN)
    return CommandGate(clock=lambda: clock["t"], **kw), clock


def test_a_signed_command_is_admitted_with_its_origin():
    gate, clock = _gate()
    adm = gate.admit(sign(TOKEN, "alice@laptop", "mode AUTO", now_s=clock["t"]), "/station/qgc")
    assert adm.command == "mode AUTO" and adm.signed
    assert "alice@laptop" in adm.origin and "/station/qgc" in adm.origin


def test_an_unsigned_command_that_moves_the_boat_is_refused_and_says_why():
    gate, _ = _gate()
    for text in ("arm", "mode AUTO", "mission /etc/autopilot/missions/lake.yaml", "manual 1 0", "heartbeat"):
        adm = gate.admit(text, "/stranger")
        assert adm.command is None and "unauthenticated" in adm.reason and "/stranger" in adm.origin


@pytest.mark.parametrize("text", ["disarm", "disarm operator saw a swimmer", "mode HOLD", "MODE hold"])
def test_stopping_the_boat_never_waits_for_a_token(text):
    gate, _ = _gate(token=None)
    assert gate.admit(text, None).command == text


def test_a_wrong_token_a_replay_and_a_stale_signature_are_refused():
    gate, clock = _gate()
    forged = sign(b"not-the-boat-token-at-all-000000", "mallory", "arm", now_s=clock["t"])
    assert "bad signature" in gate.admit(forged).reason
    good = sign(TOKEN, "alice", "arm", now_s=clock["t"])
    assert gate.admit(good).command == "arm"
    assert "replayed" in gate.admit(good).reason                    # a recorded command sent again
    old = sign(TOKEN, "alice", "arm", now_s=clock["t"] - 120.0)
    assert "from the boat's clock" in gate.admit(old).reason
    clock["t"] += 100.0                                             # later: the nonce is forgotten, the time too old
    assert gate.admit(good).command is None


def test_a_command_changed_in_transit_fails_its_signature():
    gate, clock = _gate()
    signed = sign(TOKEN, "alice", "mode HOLD", now_s=clock["t"])
    assert "bad signature" in gate.admit(signed.replace("mode HOLD", "mode AUTO")).reason


def test_the_allow_list_names_the_nodes_that_may_command():
    gate, clock = _gate(allowed_nodes=("autopilot_command_client", "/station/qgc_bridge"))
    ok = lambda node: gate.admit(sign(TOKEN, "alice", "arm", now_s=clock["t"]), node)  # noqa: E731
    assert ok("/foka/autopilot_command_client").command == "arm"       # a bare name, in any namespace
    assert ok("/station/qgc_bridge").command == "arm"
    assert "not in commands.allowed_nodes" in ok("/other/qgc_bridge").reason
    assert "not in commands.allowed_nodes" in ok(None).reason
    assert node_allowed("/a/b", ()) and not node_allowed(None, ("x",))


def test_auth_off_admits_everything_and_says_so_in_the_origin():
    gate, _ = _gate(auth="off", token=None)
    adm = gate.admit("arm", "/anyone")
    assert adm.command == "arm" and "auth off" in adm.origin


def test_without_a_readable_token_the_refusal_names_the_file():
    gate, clock = _gate(token=None)
    gate.token_problem = "/etc/autopilot/command.token: no command token"
    assert "/etc/autopilot/command.token" in gate.admit("arm").reason
    assert "/etc/autopilot/command.token" in gate.admit(sign(TOKEN, "a", "arm", now_s=clock["t"])).reason


def test_the_token_file_is_created_private_and_never_overwritten(tmp_path):
    p = write_new_token(tmp_path / "command.token")
    assert os.stat(p).st_mode & 0o777 == 0o600 and len(read_token(p)) == 64
    with pytest.raises(FileExistsError):
        write_new_token(p)


def test_a_token_others_can_read_or_an_empty_one_is_refused(tmp_path):
    p = tmp_path / "command.token"
    p.write_text("x" * 40)
    os.chmod(p, 0o644)
    with pytest.raises(TokenError, match="chmod 600"):
        read_token(p)
    os.chmod(p, 0o600)
    p.write_text("short\n")
    with pytest.raises(TokenError, match="shorter"):
        read_token(p)
    with pytest.raises(TokenError, match="autopilot keys token"):
        read_token(tmp_path / "missing.token")
