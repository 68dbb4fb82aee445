"""Every option of every sub-command says what it does in `--help`, and `sim --vessel` lists every preset."""
import argparse

from autopilot.cli.main import build_parser
from autopilot.vocab.config import CONFIG_DIR


def _walk(parser: argparse.ArgumentParser, path: tuple):
    """(command path, action) of every argument of `parser` and of its sub-commands, recursively."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _walk(sub, path + (name,))
        else:
            yield path, action


def undocumented(parser: argparse.ArgumentParser) -> list:
    return [f"autopilot {' '.join(path)} {'/'.join(a.option_strings) or a.dest}"
            for path, a in _walk(parser, ()) if not (a.help and a.help.strip()) and a.help != argparse.SUPPRESS]


def test_every_option_of_every_sub_command_has_help():
    missing = undocumented(build_parser())
    assert missing == [], "options without help text:\n" + "\n".join(missing)


def test_the_walk_finds_an_option_without_help():
    parser = argparse.ArgumentParser(prog="autopilot")
    sub = parser.add_subparsers()
    deep = sub.add_parser("bench").add_subparsers().add_parser("gps")
    deep.add_argument("--port", help="the port")
    deep.add_argument("--quiet")
    assert undocumented(parser) == ["autopilot bench gps --quiet"]


def test_sim_vessel_help_names_every_vessel_preset(capsys):
    sim = build_parser()._subparsers._group_actions[0].choices["sim"]
    (vessel,) = [a for a in sim._actions if "--vessel" in a.option_strings]
    presets = sorted(p.stem for p in (CONFIG_DIR / "vessels").glob("*.yaml"))
    assert "wamv_pods" in presets
    for name in presets:
        assert name in vessel.help, name
