"""What systemd/install.sh puts in /etc/autopilot for a boat config, with the paths in it rewritten.

Contract. `plan_install(boat, installed, library)` reads the boat config `boat` (never changes it) and returns an
InstallPlan: every file /etc/autopilot will hold after the install, each an InstallFile whose `dest` is
relative to /etc/autopilot and whose `action` is

- "copy": `source` copied as it is (mode `mode`; `secret` ones belong to the service user, mode 0600);
- "write": `source` with paths rewritten, the new text in InstallPlan.text[dest];
- "kept": already in `installed` (the /etc/autopilot being installed over): never written over, the user's
  edits stay; `source` is the installed file;
- "later": named by the config but not there yet (a magnetometer calibration the boat writes on its first
  calibration, a token or signing key the installer creates): nothing copied, the name points into
  /etc/autopilot.

The files a new boat.yaml names: its vessel (a preset name `foka` -> vessels/foka.yaml, a path -> copied to
vessels/), the vessel file's sensors.mag.calibration_file (calibration/, the one folder the service may write), the
mission
(missions/), commands.token_file, mavlink.signing_key_file and web.password_file (top level; a missing web
password stays missing: only the user knows it). Each is resolved as the autopilot
resolves it (BoatConfig.vessel_path(), mission_path(), token_path(), signing_key_path(); the calibration file
relative to the vessel file), and the key naming it is rewritten to the installed copy, relative to the file
that names it, so the installed tree checks and runs the same wherever it is laid out (a staging directory for
the dry run's `autopilot check`). A file that does not exist is not copied and its key is left alone, except
the "later" ones above; `autopilot check` reports the rest. The library of presets (`library`/vessels/*.yaml,
`library`/missions/*.yaml) is copied beside them; a file the config names wins over a preset of the same name.
An installed boat.yaml is kept and so are the names in it: only the library is added then.

Rewriting edits only the scalar values it replaces (found with PyYAML's node positions): comments, order and
style of everything else stay. Two different files that would be installed as one name are refused
(InstallPlanError).

`stage(plan, dest_dir)` lays the planned tree out under dest_dir (kept files copied from the installed ones).
`python -m autopilot.files.install_plan --config BOAT --installed DIR --library DIR --stage DIR` stages it and
prints the plan for install.sh (plan_lines).
Exit status 0; 1 with `install_plan: REASON` on stderr when the plan cannot be made.
"""
from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import yaml

from autopilot.files.boat import BoatConfig, CommandsConfig, MavlinkConfig, WebConfig
from autopilot.vocab.config import read_yaml
from autopilot.vocab.schema import ConfigError

Keys = Tuple[str, ...]


class InstallPlanError(ValueError):
    """The plan cannot be made (two files for one installed name)."""


@dataclass(frozen=True)
class InstallFile:
    dest: str                      # relative to /etc/autopilot: "boat.yaml", "vessels/foka.yaml"
    action: str                    # copy | write | kept | later
    source: Optional[Path]         # the file copied, rewritten or kept; None for "later"
    what: str                      # for people: "the vessel", "the mission (missions/demo.yaml)", ...
    mode: str = "0644"
    secret: bool = False


@dataclass
class InstallPlan:
    files: List[InstallFile] = field(default_factory=list)
    text: Dict[str, str] = field(default_factory=dict)        # dest -> rewritten content ("write")
    rewrites: List[Tuple[str, str, str, str]] = field(default_factory=list)   # (dest, dotted key, old, new)

    def get(self, dest: str) -> Optional[InstallFile]:
        return next((f for f in self.files if f.dest == dest), None)

    def rewrite(self, f: InstallFile, data: Dict[str, Any], new: Dict[Keys, str]) -> None:
        """Add `f` as "write", its text `f.source`'s with the scalars at the key paths in `new` replaced
        (replace_scalars); each change recorded in `rewrites` (old values taken from `data`, the parsed text)."""
        self.add(f, replace_scalars(f.source.read_text(encoding="utf-8") if f.source else "", new))
        for keys, value in new.items():
            old = _lookup(data, keys)
            if isinstance(old, str) and old != value:
                self.rewrites.append((f.dest, ".".join(keys), old, value))

    def add(self, f: InstallFile, text: Optional[str] = None) -> None:
        """Add `f`; one already planned for its dest from the same source is left as it is, another refused."""
        have = self.get(f.dest)
        if have is not None:
            if have.source is not None and f.source is not None and have.source.resolve() == f.source.resolve():
                return
            raise InstallPlanError(f"{have.source or have.what} and {f.source or f.what} would both be installed "
                                   f"as {f.dest}: rename one")
        self.files.append(f)
        if text is not None:
            self.text[f.dest] = text


def plan_install(boat: Path, installed: Path, library: Path) -> InstallPlan:
    """The plan for installing boat config `boat` over `installed` (see the module docstring)."""
    plan = InstallPlan()
    boat, installed, library = Path(boat).absolute(), Path(installed), Path(library).absolute()
    if (installed / "boat.yaml").exists():
        plan.add(InstallFile("boat.yaml", "kept", installed / "boat.yaml", "the boat config"))
        _plan_kept_secrets(plan, installed)
    else:
        _plan_boat_config(plan, boat)
    for kind in ("vessels", "missions"):
        for preset in sorted((library / kind).glob("*.yaml")):
            dest = f"{kind}/{preset.name}"
            if plan.get(dest) is None:
                plan.add(InstallFile(dest, "copy", preset, f"a {kind[:-1]} preset"))
    return _keep_installed(plan, installed)


def _plan_kept_secrets(plan: InstallPlan, installed: Path) -> None:
    """The token and signing key an installed boat.yaml names inside `installed`, as "later" (the installer
    creates what is missing; _keep_installed keeps what is there)."""
    try:
        cfg = _paths_only(read_yaml(installed / "boat.yaml"), installed / "boat.yaml")
    except ConfigError:
        return                                    # the check reports it
    if cfg is None:
        return
    for path, what in ((cfg.token_path(), "the command token"), (cfg.signing_key_path(), "the MAVLink signing key")):
        if path is not None and path.resolve().parent == installed.resolve():
            plan.add(InstallFile(path.name, "later", None, what, mode="0600", secret=True))


def _keep_installed(plan: InstallPlan, installed: Path) -> InstallPlan:
    """`plan` with every file already under `installed` turned into "kept" (its rewritten text dropped)."""
    kept = InstallPlan()
    for f in plan.files:
        kept.rewrites.extend(r for r in plan.rewrites if r[0] == f.dest and not (installed / f.dest).exists())
        there = installed / f.dest
        if f.action != "kept" and (there.exists() or there.is_symlink()):
            kept.add(InstallFile(f.dest, "kept", there, f.what, f.mode, f.secret))
        else:
            kept.add(f, plan.text.get(f.dest))
    return kept


def _plan_boat_config(plan: InstallPlan, boat: Path) -> None:
    """Plan a new boat.yaml from `boat` and the files it names, their keys rewritten to the installed copies."""
    data = read_yaml(boat)
    cfg = _paths_only(data, boat)
    new: Dict[Keys, str] = {}
    if cfg is not None:
        _plan_vessel(plan, cfg, data, new)
        mission = cfg.mission_path()
        if mission is not None and mission.is_file():
            dest = f"missions/{mission.name}"
            plan.add(InstallFile(dest, "copy", mission, "the mission"))
            new[("mission",)] = dest
        _plan_secret(plan, cfg.token_path(), ("commands", "token_file"), data, new, "the command token")
        key = cfg.signing_key_path()
        if key is not None:
            _plan_secret(plan, key, ("mavlink", "signing_key_file"), data, new, "the MAVLink signing key")
        if cfg.web is not None:
            _plan_web_password(plan, cfg.web_password_path(), data, new)
    plan.rewrite(InstallFile("boat.yaml", "write", boat, "the boat config"), data, new)


def _paths_only(data: Dict[str, Any], boat: Path) -> Optional[BoatConfig]:
    """A BoatConfig carrying only the names of the files `data` gives (strings only), to resolve them as the
    autopilot does; None without a vessel name (the check reports that)."""
    vessel = data.get("vessel")
    if not isinstance(vessel, str) or not vessel:
        return None
    mission = data.get("mission")
    token = _lookup(data, ("commands", "token_file"))
    key = _lookup(data, ("mavlink", "signing_key_file"))
    cmds = CommandsConfig(token_file=token) if isinstance(token, str) and token else CommandsConfig()
    web = None
    if isinstance(data.get("web"), dict):
        pw = _lookup(data, ("web", "password_file"))
        web = WebConfig(password_file=pw) if isinstance(pw, str) and pw else WebConfig()
    return BoatConfig(vessel=vessel, mission=mission if isinstance(mission, str) else None, source_file=str(boat),
                      commands=cmds, mavlink=MavlinkConfig(signing_key_file=key) if isinstance(key, str) and key
                      else None, web=web)


def _plan_vessel(plan: InstallPlan, cfg: BoatConfig, data: Dict[str, Any], new: Dict[Keys, str]) -> None:
    """Plan the vessel file (and its calibration file) the boat config names; the new `vessel:` into `new`."""
    source = cfg.vessel_path()
    if not source.is_file():
        return
    dest = f"vessels/{source.name}"
    if data["vessel"] != dest:
        new[("vessel",)] = dest
    try:
        vessel = read_yaml(source)
    except ConfigError:
        plan.add(InstallFile(dest, "copy", source, "the vessel"))          # the check says what is wrong
        return
    name = _lookup(vessel, ("sensors", "mag", "calibration_file"))
    if not isinstance(name, str) or not name:
        plan.add(InstallFile(dest, "copy", source, "the vessel"))
        return
    cal = Path(name) if Path(name).is_absolute() else source.resolve().parent / name
    # calibration/ is the one folder the service may write (ReadWritePaths in the unit): CALIBRATE_ON_WATER and
    # the continuous calibration rewrite the file there
    cal_dest = f"calibration/{cal.name}"
    cal_name = f"../{cal_dest}"
    if cal.is_file():
        plan.add(InstallFile(cal_dest, "copy", cal, f"the magnetometer calibration of {dest}"))
    else:
        plan.add(InstallFile(cal_dest, "later", None, f"the magnetometer calibration of {dest}: not made yet; "
                                                      f"`autopilot calibrate mag` writes it there"))
    if name == cal_name:
        plan.add(InstallFile(dest, "copy", source, "the vessel"))
    else:
        plan.rewrite(InstallFile(dest, "write", source, "the vessel"), vessel,
                     {("sensors", "mag", "calibration_file"): cal_name})


def _plan_secret(plan: InstallPlan, path: Path, keys: Keys, data: Dict[str, Any], new: Dict[Keys, str],
                 what: str) -> None:
    """Plan a token or key file (mode 0600, the service user's) at the top of /etc/autopilot: copied when it
    exists, "later" (the installer creates it) otherwise; the key naming it (if the config has one) into `new`."""
    dest = path.name
    action, source = ("copy", path) if path.is_file() else ("later", None)
    plan.add(InstallFile(dest, action, source, what, mode="0600", secret=True))
    if _lookup(data, keys) not in (None, dest):
        new[keys] = dest


def _plan_web_password(plan: InstallPlan, path: Path, data: Dict[str, Any], new: Dict[Keys, str]) -> None:
    """The web page's password hash (mode 0600, the service user's): copied when it exists; otherwise "later"
    and not a secret the installer makes, since only the user knows the password: its text says how to set it."""
    dest = path.name
    if path.is_file():
        plan.add(InstallFile(dest, "copy", path, "the web page's password", mode="0600", secret=True))
    else:
        plan.add(InstallFile(dest, "later", None, "the web page's password: not set, so the page is not served; "
                             "set it with `sudo autopilot keys web --config /etc/autopilot/boat.yaml`, then "
                             f"`sudo chown autopilot: /etc/autopilot/{dest}`", mode="0600"))
    if _lookup(data, ("web", "password_file")) not in (None, dest):
        new[("web", "password_file")] = dest


def _lookup(data: Any, keys: Keys) -> Any:
    """data[k0][k1]... or None where a level is missing or not a mapping."""
    for k in keys:
        if not isinstance(data, dict):
            return None
        data = data.get(k)
    return data


def replace_scalars(text: str, new: Dict[Keys, str]) -> str:
    """`text` (a YAML mapping) with the scalar at each key path in `new` replaced by its new value, written
    plain where YAML reads it back as that string, else double-quoted. Key paths `text` lacks, or whose value
    is not a scalar, are left alone; nothing else in the text changes."""
    if not new:
        return text
    root = yaml.compose(text, Loader=yaml.SafeLoader)
    edits = []
    for keys, value in new.items():
        node = _scalar_node(root, keys)
        if node is not None:
            edits.append((node.start_mark.index, node.end_mark.index, _yaml_string(value)))
    for start, end, value in sorted(edits, reverse=True):
        text = text[:start] + value + text[end:]
    return text


def _scalar_node(node: Any, keys: Keys) -> Optional[yaml.ScalarNode]:
    for k in keys:
        if not isinstance(node, yaml.MappingNode):
            return None
        node = next((v for kn, v in node.value if isinstance(kn, yaml.ScalarNode) and kn.value == k), None)
    return node if isinstance(node, yaml.ScalarNode) else None


def _yaml_string(value: str) -> str:
    if re.fullmatch(r"[A-Za-z0-9_./][A-Za-z0-9_./-]*", value) and yaml.safe_load(value) == value:
        return value
    return json.dumps(value)                 # a JSON string is a YAML double-quoted scalar


def stage(plan: InstallPlan, dest_dir: Path) -> None:
    """Lay the planned tree out under `dest_dir` as it will be in /etc/autopilot ("later" files are absent)."""
    for f in plan.files:
        out = Path(dest_dir) / f.dest
        if f.action == "later" or f.source is None:
            continue
        out.parent.mkdir(parents=True, exist_ok=True)
        if f.action == "write":
            out.write_text(plan.text[f.dest], encoding="utf-8")
        else:
            shutil.copyfile(f.source, out)
        out.chmod(int(f.mode, 8))


def plan_lines(plan: InstallPlan) -> List[str]:
    """The plan as install.sh reads it, tab-separated (no field empty: bash's `read` would merge the tabs): per
    file action, mode, secret (0/1), dest, source ("-" for none), what; then per rewritten key `rewrite`, dest,
    dotted key, old value, new value."""
    return (["\t".join((f.action, f.mode, "1" if f.secret else "0", f.dest, str(f.source or "-"), f.what))
             for f in plan.files]
            + ["\t".join(("rewrite",) + r) for r in plan.rewrites])


def main(argv: Optional[Sequence[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="python -m autopilot.files.install_plan", description=__doc__.split("\n\n")[0])
    p.add_argument("--config", required=True, type=Path, help="the boat config to install")
    p.add_argument("--installed", required=True, type=Path, help="the /etc/autopilot installed over (may be absent)")
    p.add_argument("--library", required=True, type=Path, help="the repository's config/ (vessel and mission presets)")
    p.add_argument("--stage", required=True, type=Path, help="where to lay the planned tree out")
    args = p.parse_args(argv)
    try:
        plan = plan_install(args.config, args.installed, args.library)
        stage(plan, args.stage)
    except (ConfigError, InstallPlanError, OSError, yaml.YAMLError) as e:
        print(f"install_plan: {e}", file=sys.stderr)
        return 1
    print("\n".join(plan_lines(plan)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
