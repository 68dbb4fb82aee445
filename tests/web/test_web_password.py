"""The web password on the boat: `autopilot keys web` writes a salted scrypt hash with mode 600; a file that is
missing, readable by others or not ours is refused with the file and what to do; the boat config's `web:`
section is checked like every other key."""
from __future__ import annotations

import io
import os
import stat

import pytest

from autopilot.cli.main import main
from autopilot.files.boat import load_boat_config
from autopilot.vocab.schema import ConfigError
from autopilot.web.passwords import PasswordFileError, read_password_file


def _boat(tmp_path, web: str = "web: {listen: '127.0.0.1:8080'}"):
    cfg = tmp_path / "boat.yaml"
    cfg.write_text(f"vessel: foka\nbackend: sim\n{web}\n")
    return cfg


def test_keys_web_writes_a_hash_only_the_service_user_reads(tmp_path, monkeypatch, capsys):
    cfg = _boat(tmp_path)
    monkeypatch.setattr("sys.stdin", io.StringIO("lake day password\n"))
    assert main(["keys", "web", "--config", str(cfg), "--password-stdin"]) == 0
    path = tmp_path / "web_password"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert "lake day password" not in path.read_text()
    h = read_password_file(path)
    assert h.verify("lake day password") and not h.verify("lake day passwore") and not h.verify(None)
    assert "web password set" in capsys.readouterr().out


def test_a_short_password_is_refused_and_nothing_is_written(tmp_path, monkeypatch, capsys):
    cfg = _boat(tmp_path)
    monkeypatch.setattr("sys.stdin", io.StringIO("short\n"))
    assert main(["keys", "web", "--config", str(cfg), "--password-stdin"]) == 1
    assert "at least 8 characters" in capsys.readouterr().err
    assert not (tmp_path / "web_password").exists()


def test_unusable_password_files_are_refused_with_the_file_and_the_fix(tmp_path):
    missing = tmp_path / "nothing"
    with pytest.raises(PasswordFileError, match="autopilot keys web"):
        read_password_file(missing)
    loose = tmp_path / "loose"
    loose.write_text("scrypt$16384$8$1$00112233445566778899aabbccddeeff$" + "ab" * 32 + "\n")
    os.chmod(loose, 0o644)
    with pytest.raises(PasswordFileError, match="readable by others"):
        read_password_file(loose)
    junk = tmp_path / "junk"
    junk.write_text("hunter2\n")
    os.chmod(junk, 0o600)
    with pytest.raises(PasswordFileError, match=f"{junk}: not a web password file"):
        read_password_file(junk)


@pytest.mark.parametrize("web, key", [
    ("web: {listen: '8080'}", "listen"),
    ("web: {listen: 'host:99999'}", "listen"),
    ("web: {tiles_url: 'ftp://x/{z}/{x}/{y}'}", "tiles_url"),
    ("web: {session_idle_timeout_s: 5}", "session_idle_timeout_s"),
])
def test_a_bad_web_section_names_its_key(tmp_path, web, key):
    with pytest.raises(ConfigError) as e:
        load_boat_config(_boat(tmp_path, web))
    assert key in str(e.value) and "boat.yaml" in str(e.value)
