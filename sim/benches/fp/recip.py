"""Bench of ``fp_recip``: every fp16 input, or corners and sampled fp32 inputs."""
from __future__ import annotations

from pimforge.sim.benches.fp.func_common import func_bench
from pimforge.sim.golden.fp.recip import fp_recip

__all__ = ["BENCHES"]

BENCHES = {"fp_recip": func_bench(fp_recip)}
