"""Benches of ``fp_add`` and ``fp_sub``: corners and random operand pairs against the golden adder."""
from __future__ import annotations

from pimforge.sim.benches.fp.common import operand_job
from pimforge.sim.golden.fp.add import fp_add

__all__ = ["BENCHES"]


def _add_bench(subtract):
    def bench(cfg, rng, n_random=20000, seed=1):
        return operand_job(cfg.fmt, lambda a, b: fp_add(cfg, a, b, subtract), ["a", "b"], "r",
                           rng, n_random, seed)
    return bench


BENCHES = {"fp_add": _add_bench(False), "fp_sub": _add_bench(True)}
