"""Bench of ``fp_mul``: corners and random operand pairs against the golden multiplier."""
from __future__ import annotations

from pimforge.sim.benches.fp.common import operand_job
from pimforge.sim.golden.fp.mul import fp_mul

__all__ = ["BENCHES"]


def mul_bench(cfg, rng, n_random=20000, seed=1):
    return operand_job(cfg.fmt, lambda a, b: fp_mul(cfg, a, b), ["a", "b"], "r", rng, n_random,
                       seed)


BENCHES = {"fp_mul": mul_bench}
