"""Bench of ``fp_convert``: corners and random inputs of the source format."""
from __future__ import annotations

from pimforge.sim.benches.fp.common import operand_job
from pimforge.sim.golden.fp.convert import fp_convert

__all__ = ["BENCHES"]


def convert_bench(cfg, rng, n_random=20000, seed=1):
    return operand_job(cfg.src, lambda a: fp_convert(cfg, a), ["a"], "r", rng, n_random, seed)


BENCHES = {"fp_convert": convert_bench}
