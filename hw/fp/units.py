"""Registration of the float units with their families."""
from __future__ import annotations

from pimforge.hw.core.pipeline import streaming_cycles
from pimforge.hw.fp.add import FpAdd
from pimforge.hw.fp.configs import FORMAT_PRESETS, FpConfig
from pimforge.registry import Unit, register





def _add_bench(subtract):
    def bench(cfg, rng, n_random=20000, seed=1):
        from pimforge.sim.benches.fp import operand_job
        from pimforge.sim.golden.fp_add import fp_add
        return operand_job(cfg.fmt, lambda a, b: fp_add(cfg, a, b, subtract), ["a", "b"], "r",
                           rng, n_random, seed)
    return bench


register(Unit("fp_add", "IEEE float adder, RNE, subnormals, pipelined (i: a, b -> o: r = a + b)",
              FpConfig, lambda cfg: FpAdd(cfg), FORMAT_PRESETS, _add_bench(False), streaming_cycles))
register(Unit("fp_sub", "IEEE float subtractor, RNE, subnormals, pipelined (i: a, b -> o: r = a - b)",
              FpConfig, lambda cfg: FpAdd(cfg, subtract=True), FORMAT_PRESETS, _add_bench(True),
              streaming_cycles))

# Each group of units registers itself in its own module.
from pimforge.hw.fp import units_cmpconv, units_func, units_muladd  # noqa: E402,F401  (they register)
