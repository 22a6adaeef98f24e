"""Bench of ``fp_cmp``: corners and random operand pairs, all six output fields checked."""
from __future__ import annotations

from pimforge.sim.benches.fp.common import operand_job
from pimforge.sim.golden.fp.cmp import fp_cmp

__all__ = ["BENCHES"]


def cmp_bench(cfg, rng, n_random=20000, seed=1):
    return operand_job(cfg.fmt, lambda a, b: fp_cmp(cfg, a, b), ["a", "b"], None, rng, n_random,
                       seed)


BENCHES = {"fp_cmp": cmp_bench}
