"""A unit's hardware declaration: everything about the unit in one place.

Every generator module ends with its ``UNITS``, a tuple of :class:`HwUnit` (one per unit it
generates): name, summary, the paper section it follows, config class, presets with the clock
each models, generator, cycle model, formal environment and synthesis-benchmark config.
:mod:`pimforge.hw.catalog` lists those modules; the registry on top pairs each declaration with
its cocotb bench.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Callable

from pimforge.base.config import layered_config

__all__ = ["HwUnit", "PresetClock"]


@dataclass(frozen=True)
class PresetClock:
    """The clock of the hardware a preset models.

    Members
    -------
    mhz : the clock in MHz; ``pimforge synth`` checks the preset's logic depth per stage
        against it, and the system models run their cycle counts at it.
    source : where the figure comes from (a paper section, or the netlist's own estimate).
    target : the technology the clock belongs to (``"ASIC"`` or an FPGA family).
    paper_mhz : the paper's clock, where the netlist does not reach it and ``mhz`` is the
        netlist's instead.
    paper_source : where ``paper_mhz`` comes from.
    """

    mhz: float
    source: str
    target: str = "ASIC"
    paper_mhz: float | None = None
    paper_source: str = ""

    def __post_init__(self):
        object.__setattr__(self, "mhz", float(self.mhz))   # one type, whatever the constant's

    def as_dict(self) -> dict:
        """``{"mhz", "source", "target"}``, plus ``paper_mhz`` and ``paper_source`` if set."""
        d = {"mhz": float(self.mhz), "source": self.source, "target": self.target}
        if self.paper_mhz is not None:
            d.update(paper_mhz=self.paper_mhz, paper_source=self.paper_source)
        return d


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
    paper : the paper and section the unit follows (``"PAM §5.2, Alg. 1"``).
    clocks : preset name -> :class:`PresetClock`, for the presets that model a clock.
    formal : ``formal(m, dut, dut_module, ports, active)``, the unit's environment, invariants
        and properties beyond the stream rules (see :class:`~pimforge.hw.core.formal.FormalTop`),
        or None.
    response : ``response(cfg) -> Response``, what the unit owes for its inputs, with the
        latencies of its cycle model (:class:`~pimforge.hw.core.formal.Response`, checked by
        ``pimforge prove``), or None: a unit whose cycle model is
        :func:`~pimforge.hw.core.pipeline.streaming_cycles` then owes one output per input.
    activity : ``activity(cfg, n_ops) -> {action: count}``, the actions
        (:mod:`pimforge.hw.core.activity`) a job of ``n_ops`` back-to-back ops performs, the
        same job as ``cycle_model``'s; the unit's tests check it, and the richer per-job model
        beside it, against the RTL's probe counts exactly.  ``pimforge synth`` turns it into
        power (:mod:`pimforge.hw.core.energy`).
    synth_bench : how ``pimforge bench --only synth`` builds the unit's synthesis row:
        ``{"preset": P, "set": {...}, "timeout_s": N, "skip": reason}``, each key optional.
    """

    name: str
    summary: str
    config_cls: type
    factory: Callable
    presets: dict = field(default_factory=dict)
    cycle_model: Callable | None = None
    paper: str = ""
    clocks: dict = field(default_factory=dict)
    formal: Callable | None = None
    response: Callable | None = None
    synth_bench: dict = field(default_factory=dict)
    activity: Callable | None = None

    def config(self, preset: str | None = None, *layers: dict, source: str = "config"):
        """The config from defaults, the preset, then each mapping in ``layers`` in turn."""
        return layered_config(self.config_cls, self.presets, preset, *layers, source=source,
                              unit=self.name)

    def default_config(self):
        """The config class's defaults."""
        return self.config_cls()

    def preset_config(self, preset: str):
        """The default config with the preset's overrides."""
        return dataclasses.replace(self.config_cls(), **self.presets[preset])
