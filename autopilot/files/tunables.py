"""The parameters a user adjusts in the field, as a ground station lists and sets them (MAVLink PARAM_*).

Each tunable names one field of the vessel or mission file (`path`). Setting one goes through the same schema
as the file (autopilot/vocab/schema.py: ranges, choices, cross-field rules), so a value the file would refuse
is refused here with the same reason, and nothing changes. An accepted value is written to the overlay file
(`<boat config stem>.params.yaml` next to the boat config: NAME: value, only what was set), so a restart keeps
it, and pushed into the running autopilot where that is safe (`live`; the rest at the next start).

Ground stations carry every parameter as a float: a choice is its index in `choices` (FS_LINK_ACTION 0 rtl,
1 loiter, 2 hold), a whole number is rounded, 0 is "automatic" where `zero_is_auto` says so.
"""
from __future__ import annotations

import dataclasses
import math
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Tuple

from autopilot.vocab.config import MissionConfig, VesselConfig
from autopilot.vocab.schema import ConfigError, build


@dataclass(frozen=True)
class Tunable:
    name: str                          # MAVLink param id: upper case, at most 16 characters
    path: str                          # "vessel.control.heading.zeta", "mission.cruise_speed_mps"
    unit: str
    doc: str
    live: bool = True                  # pushed into a running autopilot at once
    choices: Tuple[str, ...] = ()      # a string field: the value is the index of the choice
    zero_is_auto: bool = False         # an optional field: 0 means "not set" (None)


TUNABLES: Tuple[Tunable, ...] = (
    Tunable("CRUISE_SPEED", "mission.cruise_speed_mps", "m/s", "speed along the mission's legs"),
    Tunable("WP_RADIUS", "mission.acceptance_radius_m", "m", "a waypoint counts as reached within this"),
    Tunable("LOIT_RADIUS", "mission.loiter_radius_m", "m", "LOITER keeps the boat within this of its centre"),
    Tunable("NAV_LOOKAHEAD", "mission.guidance.lookahead_m", "m", "LOS/ILOS lookahead (0: hull lengths)",
            zero_is_auto=True),
    Tunable("NAV_ILOS_SIGMA", "mission.guidance.sigma", "", "ILOS integral gain (0: plain LOS)"),
    Tunable("HDG_OMEGA", "vessel.control.heading.omega_n_rps", "rad/s", "heading loop natural frequency"),
    Tunable("HDG_ZETA", "vessel.control.heading.zeta", "", "heading loop damping ratio"),
    Tunable("HDG_TI", "vessel.control.heading.integral_time_s", "s", "heading integral time (0: no integral)"),
    Tunable("SPD_KP", "vessel.control.speed.kp_per_s", "1/s", "speed loop proportional gain"),
    Tunable("SPD_KI", "vessel.control.speed.ki_per_s2", "1/s^2", "speed loop integral gain"),
    Tunable("SPD_ACCEL", "vessel.control.speed.accel_limit_mps2", "m/s^2", "ramp of the speed setpoint"),
    Tunable("FS_GNSS_TIMEOUT", "vessel.failsafe.gnss.loss_timeout_s", "s", "no GNSS fix this long = GNSS lost"),
    Tunable("FS_GNSS_JUMP", "vessel.failsafe.gnss.max_jump_m", "m", "a fix jumping this far is a glitch"),
    Tunable("FS_LINK_TIMEOUT", "vessel.failsafe.link.timeout_s", "s", "no operator heartbeat this long"),
    Tunable("FS_LINK_ACTION", "vessel.failsafe.link.action", "", "on link loss: 0 rtl, 1 loiter, 2 hold",
            choices=("rtl", "loiter", "hold")),
    Tunable("FS_BATT_ACTION", "vessel.failsafe.battery.action", "", "on low battery: 0 rtl, 1 loiter, 2 hold",
            choices=("rtl", "loiter", "hold")),
    Tunable("FS_FENCE_MARGIN", "vessel.failsafe.geofence.margin_m", "m", "stop this far inside the fence"),
    Tunable("FS_FENCE_ACTION", "vessel.failsafe.geofence.action", "", "after a fence stop: 0 rtl, 1 hold",
            choices=("rtl", "hold")),
    Tunable("FS_MANUAL_TMO", "vessel.failsafe.manual.timeout_s", "s", "MANUAL: neutral after this long "
                                                                      "without a command"),
    Tunable("ARM_MIN_SATS", "vessel.failsafe.arming.min_sats", "", "satellites needed to arm"),
    Tunable("ARM_MAX_HDOP", "vessel.failsafe.arming.max_hdop", "", "HDOP above this refuses arming"),
)
BY_NAME = {t.name: t for t in TUNABLES}


def overlay_path_for(config_file) -> Path:
    """Where a boat config's parameter overlay lives: `<stem>.params.yaml` beside it."""
    p = Path(config_file)
    return p.with_name(p.stem + ".params.yaml")


def _get(obj, dotted: str):
    for part in dotted.split("."):
        obj = getattr(obj, part)
    return obj


def _replace(obj, dotted: str, value):
    head, _, rest = dotted.partition(".")
    if not rest:
        return dataclasses.replace(obj, **{head: value})
    return dataclasses.replace(obj, **{head: _replace(getattr(obj, head), rest, value)})


class ParamStore:
    """The tunables of one vessel and mission, with an overlay file (None: kept in memory only).

    Until `attach`, the mission is the one the store was made with (the start-up files with the overlay). Once
    attached to a running autopilot the store keeps no mission of its own: the mission tunables are read from
    and set on the mission that autopilot flies now, whichever path loaded it."""

    def __init__(self, vessel: VesselConfig, mission: MissionConfig, overlay_path: Optional[Path] = None):
        self.vessel = vessel
        self._mission = mission
        self._autopilot = None
        self.overlay_path = Path(overlay_path) if overlay_path is not None else None
        self.overlay: dict = {}
        if self.overlay_path is not None and self.overlay_path.exists():
            self._load_overlay()

    @property
    def mission(self) -> MissionConfig:
        """The mission the tunables apply to: the attached autopilot's current one, else the start-up one."""
        return self._autopilot.mission if self._autopilot is not None else self._mission

    def attach(self, autopilot) -> None:
        """Serve a running autopilot.vehicle.Autopilot: from now on `set` re-tunes it at once (the vessel's
        tunables, and the mission tunables on the mission it flies; its waypoints, fence and progress stay).
        Call it, and `set`, from the thread that steps the autopilot (or under its lock)."""
        self._autopilot = autopilot

    def names(self) -> list:
        return [t.name for t in TUNABLES]

    def value(self, name: str) -> float:
        """The parameter as a ground station sees it (a float). KeyError if unknown."""
        t = BY_NAME[name]
        v = _get(self._root(t), t.path.split(".", 1)[1])
        if t.choices:
            return float(t.choices.index(v))
        if v is None:
            return 0.0
        return float(v)

    def set(self, name: str, value: float) -> tuple[bool, str]:
        """Validate, persist, keep and (once attached) apply; (ok, message). KeyError if unknown. Nothing changes
        when refused."""
        t = BY_NAME[name]
        try:
            vessel, mission = self._with(t, value, f"parameter {name}")
        except ConfigError as e:
            return False, f"{name} = {value!r} refused: {e.key}: {e.reason}"
        if self.overlay_path is not None:
            overlay = dict(self.overlay, **{name: self._field_value(t, value)})
            try:
                self._write(overlay)
            except OSError as e:
                return False, f"{name} refused: cannot write {self.overlay_path}: {e.strerror}"
            self.overlay = overlay
        else:
            self.overlay[name] = self._field_value(t, value)
        self.vessel = vessel
        if self._autopilot is not None:
            self._autopilot.retune(vessel, mission)
        else:
            self._mission = mission
        when = "applied now" if t.live else "applied at the next start"
        kept = f"kept in {self.overlay_path}" if self.overlay_path is not None else "not kept across a restart"
        return True, f"{name} = {self.value(name):g} {t.unit}".rstrip() + f" ({when}; {kept})"

    # ------------------------------------------------------------------ helpers
    def _root(self, t: Tunable):
        return self.vessel if t.path.startswith("vessel.") else self.mission

    def _field_value(self, t: Tunable, value: float):
        """The file's value for a ground station's float: the choice's name, a whole number, None for an
        automatic 0, or the float (also what the overlay file holds). ConfigError when it cannot be one."""
        try:
            value = float(value)
        except (TypeError, ValueError):
            raise ConfigError("parameter", t.name, f"must be a number, got {value!r}") from None
        if not math.isfinite(value):
            raise ConfigError("parameter", t.name, f"must be a finite number, got {value}")
        if t.choices:
            k = int(round(value))
            if abs(value - k) > 1e-6 or not 0 <= k < len(t.choices):
                raise ConfigError("parameter", t.name, "must be one of " +
                                  ", ".join(f"{i} ({c})" for i, c in enumerate(t.choices)) + f"; got {value:g}")
            return t.choices[k]
        if t.zero_is_auto and value == 0.0:
            return None
        root_field = self._field_type(t)
        if root_field is int:
            if abs(value - round(value)) > 1e-6:
                raise ConfigError("parameter", t.name, f"must be a whole number, got {value:g}")
            return int(round(value))
        return value

    def _field_type(self, t: Tunable):
        import typing
        obj = self._root(t)
        parts = t.path.split(".")[1:]
        for part in parts[:-1]:
            obj = getattr(obj, part)
        hint = typing.get_type_hints(type(obj))[parts[-1]]
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        return args[0] if args else hint

    def _with(self, t: Tunable, value, source: str):
        """(vessel, mission) with `t` set to `value`, rebuilt through the schema (ConfigError when refused)."""
        v = self._field_value(t, value)
        vessel, mission = self.vessel, self.mission
        dotted = t.path.split(".", 1)[1]
        if t.path.startswith("vessel."):
            vessel = self._rebuild(VesselConfig, _replace(vessel, dotted, v), source, t)
        else:
            mission = self._rebuild(MissionConfig, _replace(mission, dotted, v), source, t)
        return vessel, mission

    @staticmethod
    def _rebuild(cls, obj, source: str, t: Tunable):
        """Run the whole schema over the changed config, as loading its file would."""
        data = dataclasses.asdict(obj)
        keep = data.pop("source_file", "")
        try:
            built = build(cls, data, source)
        except ConfigError as e:
            key = t.path.split(".", 1)[1] if e.key.startswith(t.path.split(".", 1)[1]) else e.key
            raise ConfigError(source, key, e.reason) from None
        return dataclasses.replace(built, source_file=keep)

    def _load_overlay(self) -> None:
        from autopilot.vocab.config import read_yaml
        path = self.overlay_path
        assert path is not None       # called only when the overlay file exists
        data = read_yaml(path)
        for name, raw in data.items():
            t = BY_NAME.get(str(name))
            if t is None:
                raise ConfigError(str(path), str(name), f"unknown parameter (known: {', '.join(BY_NAME)})")
            value = t.choices.index(raw) if t.choices and isinstance(raw, str) and raw in t.choices else raw
            if isinstance(value, bool) or not isinstance(value, (int, float)) and value is not None:
                raise ConfigError(str(path), str(name), f"must be a number, got {raw!r}")
            try:
                self.vessel, self._mission = self._with(t, 0.0 if value is None else value, str(path))
            except ConfigError as e:
                raise ConfigError(str(path), str(name), e.reason) from None
            self.overlay[str(name)] = raw

    def _write(self, overlay: dict) -> None:
        import yaml
        path = self.overlay_path
        assert path is not None       # called only when an overlay file is kept
        path.parent.mkdir(parents=True, exist_ok=True)
        text = ("# Parameters set from a ground station (autopilot/files/tunables.py); they override the vessel and\n"
                "# mission files at every start. Delete a line to go back to the file's value.\n"
                + yaml.safe_dump(overlay, sort_keys=True))
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
        try:
            with os.fdopen(fd, "w") as f:
                f.write(text)
                f.flush()
                os.fsync(f.fileno())
            os.chmod(tmp, 0o644)
            os.replace(tmp, path)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise


def load_with_overlay(vessel: VesselConfig, mission: MissionConfig, overlay_path: Optional[Path]) -> ParamStore:
    """A ParamStore with the overlay (if the file exists) applied; fly `store.vessel` and `store.mission`.
    ConfigError naming the overlay file, the parameter and the reason when the overlay is bad."""
    return ParamStore(vessel, mission, overlay_path)
