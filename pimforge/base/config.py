"""Frozen config dataclasses with self-describing, validated fields.

Every unit config derives from :class:`UnitConfig` and declares its fields with :func:`param`,
which records the documentation, the type and the allowed values.  Validation happens in
``__post_init__`` so that a config object that exists is a valid one, whether it came from
Python, a YAML file or ``--set key=value`` overrides.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, fields

import yaml

from pimforge.base.errors import ConfigError, UserError
from pimforge.base.formats import FloatFormat, parse_format

__all__ = ["UnitConfig", "param", "at_most", "load_yaml", "parse_overrides", "build_config",
           "config_layers", "layered_config", "config_to_dict", "config_line"]


def param(default, doc: str, *, kind=None, choices=None, lo=None, hi=None, check=None):
    """Declare a config field.

    Parameters
    ----------
    default : the default value.
    doc : one-line description shown by ``pimforge list -v`` and in error messages.
    kind : ``int``, ``float``, ``bool``, ``str`` or ``"format"`` (a float format name).
    choices : allowed values (for ints or strings).
    lo, hi : inclusive range for numbers.
    check : extra ``callable(value, cfg) -> str | None`` returning an error text ("allowed" part).
    """
    if kind is None:
        kind = type(default)
    meta = dict(doc=doc, kind=kind, choices=choices, lo=lo, hi=hi, check=check)
    return dataclasses.field(default=default, metadata=meta)


def at_most(field: str, why: str, *, minus: int = 0):
    """A ``check`` for :func:`param`: the value may not exceed the config's ``field`` less
    ``minus`` (for ``op_depth`` against an accumulator's partial-sum count, whose revisit
    distance bounds the adder's latency).  ``why`` ends the error text."""
    def check(value, cfg):
        bound = getattr(cfg, field) - minus
        if value <= bound:
            return None
        name = f"{field} - {minus}" if minus else field
        return f"<= {name} = {bound} ({why})"
    return check


def _allowed_text(meta) -> str:
    kind = meta["kind"]
    if meta["choices"] is not None:
        return ", ".join(str(c) for c in meta["choices"])
    if kind == "format":
        return "fp16, bf16, fp32, or eXmY"
    if kind is bool:
        return "true or false"
    name = {int: "an integer", float: "a number", str: "a string"}[kind]
    if meta["lo"] is not None and meta["hi"] is not None:
        return f"{name} in {meta['lo']}..{meta['hi']}"
    if meta["lo"] is not None:
        return f"{name} >= {meta['lo']}"
    if meta["hi"] is not None:
        return f"{name} <= {meta['hi']}"
    return name


@dataclass(frozen=True)
class UnitConfig:
    """Base of all unit configs; subclasses are frozen dataclasses of :func:`param` fields."""

    UNIT = "unit"  # overridden by subclasses: the unit name used in messages

    def __post_init__(self):
        for f in fields(self):
            meta = f.metadata
            if not meta:
                continue
            value = getattr(self, f.name)
            value = _coerce(self.UNIT, f.name, value, meta)
            object.__setattr__(self, f.name, value)
        for f in fields(self):
            check = f.metadata.get("check") if f.metadata else None
            if check is not None:
                msg = check(getattr(self, f.name), self)
                if msg:
                    raise ConfigError(self.UNIT, f.name, _plain(getattr(self, f.name)), msg)
        self.validate()

    def validate(self):
        """Cross-field checks; raise :class:`~pimforge.base.errors.ConfigError`."""

    @classmethod
    def field_docs(cls) -> dict:
        return {f.name: (f.metadata.get("doc", ""), _allowed_text(f.metadata))
                for f in fields(cls) if f.metadata}


def _plain(value):
    return value.name if isinstance(value, FloatFormat) else value


def _coerce(unit, name, value, meta):
    """Strict type check (YAML and --set give the same answers).  Returns the normalised value."""
    kind = meta["kind"]
    allowed = _allowed_text(meta)
    if kind == "format":
        try:
            return parse_format(value)
        except ValueError:
            raise ConfigError(unit, name, value, allowed) from None
    if kind is bool:
        if not isinstance(value, bool):
            raise ConfigError(unit, name, value, allowed)
    elif kind is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(unit, name, value, allowed)
    elif kind is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise ConfigError(unit, name, value, allowed)
        value = float(value)
    elif kind is str:
        if not isinstance(value, str):
            raise ConfigError(unit, name, value, allowed)
    if meta["choices"] is not None and value not in meta["choices"]:
        raise ConfigError(unit, name, value, allowed)
    if meta["lo"] is not None and value < meta["lo"]:
        raise ConfigError(unit, name, value, allowed)
    if meta["hi"] is not None and value > meta["hi"]:
        raise ConfigError(unit, name, value, allowed)
    return value


def config_to_dict(cfg: UnitConfig) -> dict:
    """Plain dict of a config (formats as names): the YAML and manifest form."""
    return {f.name: _plain(getattr(cfg, f.name)) for f in fields(cfg)}


def config_line(cfg: UnitConfig) -> str:
    """A config on one line, ``field=value ...`` (a bench's label and ``pimforge test``'s
    heading)."""
    return " ".join(f"{k}={v}" for k, v in config_to_dict(cfg).items())


def load_yaml(path) -> dict:
    """Read a YAML config file into a mapping, with one-line errors."""
    try:
        with open(path, "r", encoding="utf-8") as fh:
            text = fh.read()
    except FileNotFoundError:
        raise UserError(f"config file '{path}' does not exist") from None
    except OSError as e:
        raise UserError(f"config file '{path}' cannot be read: {e.strerror}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(e, "problem", None) or "invalid syntax"
        raise UserError(f"config file '{path}': malformed YAML{where}: {problem}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise UserError(f"config file '{path}': the top level must be a mapping of field: value, "
                        f"not a {type(data).__name__}")
    return data


def _parse_scalar(text: str, kind):
    t = text.strip()
    if kind is bool:
        low = t.lower()
        if low in ("true", "yes", "on", "1"):
            return True
        if low in ("false", "no", "off", "0"):
            return False
        return t
    if kind is int:
        try:
            return int(t, 0)
        except ValueError:
            return t
    if kind is float:
        try:
            return float(t)
        except ValueError:
            return t
    return t


def parse_overrides(config_cls, items, unit: str | None = None) -> dict:
    """Turn ``["key=value", ...]`` into a typed mapping using the config's field kinds."""
    out = {}
    kinds = {f.name: f.metadata.get("kind") for f in fields(config_cls) if f.metadata}
    for item in items or []:
        if "=" not in item:
            raise UserError(f"--set expects key=value, got {item!r}")
        key, value = item.split("=", 1)
        key = key.strip()
        if key not in kinds:
            raise UserError(f"{unit or config_cls.UNIT}: unknown field '{key}' in --set; "
                            f"allowed: {', '.join(sorted(kinds))}")
        out[key] = _parse_scalar(value, kinds[key])
    return out


def build_config(config_cls, base: dict | None = None, *layers: dict, source: str = "config",
                 unit: str | None = None):
    """Make a config from defaults, then each mapping in turn (preset, YAML, --set)."""
    names = {f.name for f in fields(config_cls)}
    merged = dict(base or {})
    for layer in layers:
        for key in layer:
            if key not in names:
                raise UserError(f"{unit or config_cls.UNIT}: unknown field '{key}' in {source}; "
                                f"allowed: {', '.join(sorted(names))}")
        merged.update(layer)
    return config_cls(**merged)


def config_layers(config_cls, config_file=None, overrides=None, sets=None,
                  unit: str | None = None) -> list:
    """The layers after the preset, as ``(mapping, source)`` for :func:`layered_config`: the YAML
    file ``config_file``, then the ``overrides`` mapping, then the ``--set`` strings ``sets``;
    the ones not given are left out."""
    layers = []
    if config_file is not None:
        layers.append((load_yaml(config_file), f"config file '{config_file}'"))
    if overrides:
        layers.append((dict(overrides), "overrides"))
    if sets:
        layers.append((parse_overrides(config_cls, sets, unit=unit), "--set"))
    return layers


def layered_config(config_cls, presets: dict, preset: str | None = None, *layers,
                   source: str = "config", unit: str | None = None, owner: str | None = None):
    """The one config layering of pimforge: defaults <- ``presets[preset]`` <- each layer in
    turn (a YAML file, overrides, ``--set``).  A layer is a mapping, or ``(mapping, source)`` to
    name where an unknown field came from (else ``source``).  Errors are one line naming
    ``unit`` (``owner`` for an unknown preset, by default the unit)."""
    unit = unit or config_cls.UNIT
    base = {}
    if preset is not None:
        if preset not in presets:
            raise UserError(f"{owner or unit}: unknown preset '{preset}'; allowed: "
                            f"{', '.join(presets) or '(none)'}")
        base = dict(presets[preset])
    names = {f.name for f in fields(config_cls)}
    mappings = []
    for layer in layers:
        mapping, src = layer if isinstance(layer, tuple) else (layer, source)
        for key in mapping:
            if key not in names:
                raise UserError(f"{unit}: unknown field '{key}' in {src}; "
                                f"allowed: {', '.join(sorted(names))}")
        mappings.append(mapping)
    try:
        return build_config(config_cls, base, *mappings, source=source, unit=unit)
    except ConfigError as e:  # configs are shared between units: name the unit asked for
        raise ConfigError(unit, e.field, e.value, e.allowed) from None
