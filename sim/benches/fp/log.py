"""Bench of ``fp_log``: every fp16 input, or corners and sampled fp32 inputs."""
from __future__ import annotations

from pimforge.sim.benches.fp.func_common import func_bench
from pimforge.sim.golden.fp.log import fp_log

__all__ = ["BENCHES"]

BENCHES = {"fp_log": func_bench(fp_log)}
