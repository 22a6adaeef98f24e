"""Bench of ``fp_exp``: every fp16 input, or corners and sampled fp32 inputs."""
from __future__ import annotations

from pimforge.sim.benches.fp.func_common import func_bench
from pimforge.sim.golden.fp.exp import fp_exp

__all__ = ["BENCHES"]

BENCHES = {"fp_exp": func_bench(fp_exp)}
