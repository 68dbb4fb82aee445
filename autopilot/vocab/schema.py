"""A small declarative validator: YAML mappings -> frozen dataclasses.

Every config field is a dataclass field made with `param()`, which records unit, range and allowed values.
`build(cls, data, file)` walks the dataclass, rejects unknown keys, checks types and ranges, fills defaults,
and raises ConfigError naming the file, the dotted key and the reason. Nothing half-loaded escapes.
`build(..., all_errors=True)` goes on past the first mistake and raises ConfigErrors (a ConfigError) listing
every one it found, each with its own file, key and reason (what `autopilot check` prints at once).
"""
from __future__ import annotations

import dataclasses
import typing
from dataclasses import MISSING, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Type, TypeVar, Union

T = TypeVar("T")
Meta = Mapping[str, Any]


class ConfigError(ValueError):
    """A config file is wrong. `str()` reads `FILE: KEY: REASON`."""

    def __init__(self, file: object, key: str, reason: str):
        self.file, self.key, self.reason = str(file), key, reason
        super().__init__(f"{self.file}: {key or '<top level>'}: {reason}")


class ConfigErrors(ConfigError):
    """Several mistakes in one file (`build(..., all_errors=True)`): `errors` lists each as a ConfigError, in
    the order the file's keys were checked. `file`, `key` and `reason` are the first one's; `str()` is one
    `FILE: KEY: REASON` line per mistake."""

    def __init__(self, errors: Sequence[ConfigError]):
        flat: List[ConfigError] = []
        for e in errors:
            flat.extend(e.errors if isinstance(e, ConfigErrors) else [e])
        if not flat:
            raise ValueError("ConfigErrors needs at least one error")
        self.errors: Tuple[ConfigError, ...] = tuple(flat)
        first = flat[0]
        super().__init__(first.file, first.key, first.reason)
        self.args = ("\n".join(str(e) for e in flat),)

    def __str__(self) -> str:
        return str(self.args[0])


def every_error(e: ConfigError) -> Tuple[ConfigError, ...]:
    """The mistakes a ConfigError stands for: its `errors` for a ConfigErrors, else itself alone."""
    return e.errors if isinstance(e, ConfigErrors) else (e,)


class _Collector:
    """Where a build with all_errors=True puts its mistakes; without it, the first one is raised at once."""

    def __init__(self, all_errors: bool):
        self.all_errors = all_errors
        self.errors: List[ConfigError] = []

    def add(self, e: ConfigError) -> None:
        if not self.all_errors:
            raise e
        self.errors.extend(every_error(e))

    def raise_any(self) -> None:
        if self.errors:
            raise self.errors[0] if len(self.errors) == 1 else ConfigErrors(self.errors)


def param(default: Any = MISSING, *, unit: str = "", min: Optional[float] = None, max: Optional[float] = None,
          choices: Optional[Tuple[str, ...]] = None, doc: str = "", default_factory: Any = MISSING,
          min_exclusive: bool = False, length: Optional[int] = None) -> Any:
    """A validated config field. `min`/`max` bound numbers (and each element of a list of numbers)."""
    meta = dict(unit=unit, min=min, max=max, choices=choices, doc=doc, min_exclusive=min_exclusive,
                length=length)
    if default_factory is not MISSING:
        return field(default_factory=default_factory, metadata=meta)
    return field(default=default, metadata=meta)


def _type_name(tp: object) -> str:
    return getattr(tp, "__name__", str(tp))


def _check_number(value: float, meta: Meta, file: object, key: str) -> None:
    lo, hi = meta.get("min"), meta.get("max")
    if lo is not None:
        if meta.get("min_exclusive") and not value > lo:
            raise ConfigError(file, key, f"must be greater than {lo}{_unit(meta)}, got {value}")
        if value < lo:
            raise ConfigError(file, key, f"must be at least {lo}{_unit(meta)}, got {value}")
    if hi is not None and value > hi:
        raise ConfigError(file, key, f"must be at most {hi}{_unit(meta)}, got {value}")


def _in_unit(meta: Meta) -> str:
    return f" (in {meta['unit']})" if meta.get("unit") else ""


def _unit(meta: Meta) -> str:
    return f" {meta['unit']}" if meta.get("unit") else ""


def _convert(tp: Any, value: Any, meta: Meta, file: object, key: str, all_errors: bool = False) -> Any:
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is Union:
        if value is None and type(None) in args:
            return None
        inner = [a for a in args if a is not type(None)]
        if len(inner) == 1:
            return _convert(inner[0], value, meta, file, key)
        errors = []
        for a in inner:
            try:
                return _convert(a, value, meta, file, key)
            except ConfigError as e:
                errors.append(e.reason)
        raise ConfigError(file, key, "; or ".join(errors))
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return build(tp, value, file, key, all_errors=all_errors)
    if origin in (list, tuple):
        if not isinstance(value, (list, tuple)):
            raise ConfigError(file, key, f"must be a list, got {type(value).__name__} {value!r}")
        if meta.get("length") is not None and len(value) != meta["length"]:
            raise ConfigError(file, key, f"must have {meta['length']} elements, got {len(value)}")
        elem = args[0] if args else Any
        found = _Collector(all_errors)
        out = []
        for i, v in enumerate(value):
            try:
                out.append(_convert(elem, v, meta, file, f"{key}[{i}]", all_errors))
            except ConfigError as e:
                found.add(e)
        found.raise_any()
        return tuple(out)
    if origin is dict:
        if not isinstance(value, dict):
            raise ConfigError(file, key, f"must be a mapping, got {type(value).__name__}")
        vt = args[1] if len(args) == 2 else Any
        found = _Collector(all_errors)
        converted = {}
        for k, v in value.items():
            try:
                converted[str(k)] = _convert(vt, v, meta, file, f"{key}.{k}", all_errors)
            except ConfigError as e:
                found.add(e)
        found.raise_any()
        return converted
    if tp is Any:
        return value
    if tp is bool:
        if not isinstance(value, bool):
            raise ConfigError(file, key, f"must be true or false, got {value!r}")
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(file, key, f"must be an integer{_in_unit(meta)}, got {value!r}")
        _check_number(value, meta, file, key)
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(file, key, f"must be a number{_in_unit(meta)}, got {value!r}")
        try:
            value = float(value)
        except OverflowError:                     # an integer beyond any float (fuzzing found it)
            raise ConfigError(file, key, "must be a finite number, got an integer far out of range") from None
        if value != value or value in (float("inf"), float("-inf")):
            raise ConfigError(file, key, f"must be a finite number, got {value}")
        _check_number(value, meta, file, key)
        return value
    if tp is str:
        if not isinstance(value, str):
            raise ConfigError(file, key, f"must be a string, got {value!r}")
        choices = meta.get("choices")
        if choices and value not in choices:
            raise ConfigError(file, key, f"must be one of {', '.join(choices)}; got {value!r}")
        return value
    raise ConfigError(file, key, f"unsupported type {_type_name(tp)}")


def build(cls: Type[T], data: Any, file: object, prefix: str = "", *, all_errors: bool = False) -> T:
    """Validate `data` (a mapping from YAML) against dataclass `cls` and return an instance. A mistake raises
    ConfigError: the first one found, or with `all_errors` every one (ConfigErrors when there are several).
    A section's cross-field rules (`validate()`) are checked only once its own fields are all right."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(file, prefix, f"must be a mapping, got {type(data).__name__} {data!r}")
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}  # type: ignore[arg-type]  # cls is a dataclass
    found = _Collector(all_errors)
    unknown = sorted(set(map(str, data)) - set(fields))
    for k in unknown:
        found.add(ConfigError(file, _join(prefix, k), f"unknown key (allowed here: {', '.join(sorted(fields))})"))
    kwargs: Dict[str, Any] = {}
    for name, f in fields.items():
        key = _join(prefix, name)
        if name in data:
            try:
                kwargs[name] = _convert(hints[name], data[name], dict(f.metadata), file, key, all_errors)
            except ConfigError as e:
                found.add(e)
        elif f.default is MISSING and f.default_factory is MISSING:
            found.add(ConfigError(file, key, "is required"))
    found.raise_any()
    try:
        obj = cls(**kwargs)
    except ConfigError:
        raise
    except (ValueError, TypeError) as e:
        raise ConfigError(file, prefix, str(e)) from None
    check = getattr(obj, "validate", None)
    if check is not None:
        try:
            check()
        except ConfigError:
            raise
        except ValueError as e:
            # validate() raises ValueError("key: reason") for cross-field rules
            msg = str(e)
            sub, _, reason = msg.partition(": ")
            if reason:
                raise ConfigError(file, _join(prefix, sub), reason) from None
            raise ConfigError(file, prefix, msg) from None
    return obj


def _join(prefix: str, name: str) -> str:
    return f"{prefix}.{name}" if prefix else name
