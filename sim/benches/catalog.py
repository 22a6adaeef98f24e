"""Every unit's cocotb bench, read from the bench modules' ``BENCHES``.

A unit's bench lives at the mirror of its generator: ``hw/<area>/<module>.py`` ->
``sim/benches/<area>/<module>.py`` (docs/dev/anatomy.md).  The bench modules are found by that
rule from :data:`pimforge.hw.catalog.UNIT_MODULES`, so a new unit adds one line to the hardware
catalog and none here.
"""
from __future__ import annotations

import importlib

from pimforge.hw.catalog import UNIT_MODULES

__all__ = ["BENCH_MODULES", "BENCHES", "bench_module_name"]


def bench_module_name(generator: str) -> str:
    """``pimforge.hw.<area>.<module>`` -> ``pimforge.sim.benches.<area>.<module>``."""
    return generator.replace("pimforge.hw.", "pimforge.sim.benches.", 1)


BENCH_MODULES = tuple(importlib.import_module(bench_module_name(g))
                      for g in dict.fromkeys(UNIT_MODULES.values()))

BENCHES = {name: bench for mod in BENCH_MODULES for name, bench in mod.BENCHES.items()}
"""name -> ``bench(cfg, rng, seed=1, **kw) -> Job``"""
