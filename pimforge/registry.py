"""The table of units: name -> config class, generator, presets, bench and cycle model.

Units register themselves from their area's ``units.py`` (imported lazily by :func:`units`).
"""
from __future__ import annotations

import dataclasses
import importlib
from dataclasses import dataclass, field
from typing import Callable

from pimforge.errors import UserError

__all__ = ["Unit", "register", "units", "get_unit"]

AREAS = ["pimforge.hw.fp.units", "pimforge.hw.pam.units", "pimforge.hw.hilos.units"]


@dataclass(frozen=True)
class Unit:
    """A generator and its family.

    Members
    -------
    name : unit name (also the Verilog top module).
    summary : one line for ``pimforge list``.
    config_cls : the frozen config dataclass.
    factory : ``factory(cfg) -> PimComponent``.
    presets : preset name -> field overrides of the default config (``dataclasses.replace``).
    bench : ``bench(cfg, rng, scale) -> Job`` building stimulus and golden expectations.
    cycle_model : ``cycle_model(cfg, n_ops) -> cycles`` for a job of ``n_ops`` back-to-back ops.
    """

    name: str
    summary: str
    config_cls: type
    factory: Callable
    presets: dict = field(default_factory=dict)
    bench: Callable | None = None
    cycle_model: Callable | None = None

    def config(self, preset: str | None = None, *layers: dict, source: str = "config"):
        from pimforge.config import build_config
        from pimforge.errors import ConfigError
        base = {}
        if preset is not None:
            if preset not in self.presets:
                raise UserError(f"{self.name}: unknown preset '{preset}'; allowed: "
                                f"{', '.join(self.presets) or '(none)'}")
            base = dict(self.presets[preset])
        try:
            return build_config(self.config_cls, base, *layers, source=source, unit=self.name)
        except ConfigError as e:  # configs are shared between units: name the unit asked for
            raise ConfigError(self.name, e.field, e.value, e.allowed) from None

    def default_config(self):
        return self.config_cls()

    def preset_config(self, preset: str):
        return dataclasses.replace(self.config_cls(), **self.presets[preset])


_UNITS: dict = {}


def register(unit: Unit) -> Unit:
    _UNITS[unit.name] = unit
    return unit


def units() -> dict:
    for area in AREAS:
        importlib.import_module(area)
    return dict(_UNITS)


def get_unit(name: str) -> Unit:
    table = units()
    if name not in table:
        raise UserError(f"unknown unit '{name}'; allowed: {', '.join(sorted(table))}")
    return table[name]
