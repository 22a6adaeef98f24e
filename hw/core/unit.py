"""A unit's hardware declaration: name, config class, presets, generator and cycle model.

Every generator module ends with its ``UNITS``, a tuple of :class:`HwUnit` (one per unit it
generates).  :mod:`pimforge.hw.catalog` lists those modules; the registry on top pairs each
declaration with its cocotb bench (README, "Anatomy of a unit").
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Callable

from pimforge.base.config import layered_config

__all__ = ["HwUnit"]


@dataclass(frozen=True)
class HwUnit:
    """A generator and the hardware facts of its family.

    Members
    -------
    name : unit name (also the Verilog top module).
    summary : one line for ``pimforge list``.
    config_cls : the frozen config dataclass.
    factory : ``factory(cfg) -> PimComponent``.
    presets : preset name -> field overrides of the default config (``dataclasses.replace``).
    cycle_model : ``cycle_model(cfg, n_ops) -> cycles`` for a job of ``n_ops`` back-to-back ops,
        checked against the RTL's cycle counts by the unit's tests.
    """

    name: str
    summary: str
    config_cls: type
    factory: Callable
    presets: dict = field(default_factory=dict)
    cycle_model: Callable | None = None

    def config(self, preset: str | None = None, *layers: dict, source: str = "config"):
        """The config from defaults, the preset, then each mapping in ``layers`` in turn."""
        return layered_config(self.config_cls, self.presets, preset, *layers, source=source,
                              unit=self.name)

    def default_config(self):
        return self.config_cls()

    def preset_config(self, preset: str):
        return dataclasses.replace(self.config_cls(), **self.presets[preset])
