"""Registration of ``fp_cmp`` and ``fp_convert`` with their families.

This module is imported at the bottom of :mod:`pimforge.hw.fp.units`, so it must not import that
module at load time; the shared cycle model is looked up when called.
"""
from __future__ import annotations

import itertools

from pimforge.hw.fp.cmp import FpCmp
from pimforge.hw.fp.configs import FpConfig, FpConvertConfig
from pimforge.hw.fp.convert import FpConvert
from pimforge.hw.core.pipeline import streaming_cycles
from pimforge.registry import Unit, register

# A compare is two magnitude comparisons and a select: one register stage is plenty.
CMP_PRESETS = {name: {"fmt": name, "pipeline_depth": 1} for name in ("fp16", "bf16", "fp32")}
CONVERT_PRESETS = {f"{s}_to_{d}": {"src": s, "dst": d}
                   for s, d in itertools.permutations(("fp16", "bf16", "fp32"), 2)}




def _cmp_bench(cfg, rng, n_random=20000, seed=1):
    from pimforge.sim.benches.fp import operand_job
    from pimforge.sim.golden.fp_cmp import fp_cmp
    return operand_job(cfg.fmt, lambda a, b: fp_cmp(cfg, a, b), ["a", "b"], None, rng, n_random, seed)


def _convert_bench(cfg, rng, n_random=20000, seed=1):
    from pimforge.sim.benches.fp import operand_job
    from pimforge.sim.golden.fp_convert import fp_convert
    return operand_job(cfg.src, lambda a: fp_convert(cfg, a), ["a"], "r", rng, n_random, seed)


register(Unit("fp_cmp", "IEEE quiet compare with maximum/minimum, pipelined "
                        "(i: a, b -> o: less, equal, greater, unordered, max, min)",
              FpConfig, lambda cfg: FpCmp(cfg), CMP_PRESETS, _cmp_bench, streaming_cycles))
register(Unit("fp_convert", "float-to-float format conversion, RNE, subnormals, pipelined "
                            "(i: a -> o: r = a in dst format)",
              FpConvertConfig, lambda cfg: FpConvert(cfg), CONVERT_PRESETS, _convert_bench,
              streaming_cycles))
