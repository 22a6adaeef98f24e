"""`pimforge synth` timing: the critical path and per-stage depth of the generic netlist
(`pimforge.synth.timing`), nextpnr's ECP5 critical path, the preset clocks and the ASAP7 clock
check, and the guard that ECP5 fmax does not fall as an operator's pipeline deepens."""
import dataclasses
import json
import os
import threading
import time

import pytest

from pimforge import api, bench
from pimforge.cli import main
from pimforge.hw.catalog import HW_UNITS
from pimforge.registry import get_unit
from pimforge.software.devices import PAM_TIERS, SMARTSSD
from pimforge.synth import flows, run, timing
from pimforge.synth_cli import parse_targets


# the run's synthesis cache (conftest.py): each float operator is synthesized once
pytestmark = pytest.mark.usefixtures("synth_cache")


def _generic(unit, preset=None, flat=False, **over):
    cfg = api.config(unit, preset=preset, overrides=over)
    targets, devices = parse_targets("generic", None)
    return run.synthesize(run.SynthJob(get_unit(unit), cfg, preset or "default", flat=flat),
                          targets, devices)


def _preset_clock_check(unit, preset, flat):
    """The generic report of ``unit --preset preset`` and its clock check."""
    rep = _generic(unit, preset, flat=flat)
    return rep, rep["clock_check"]


# An 8-input AND needs three levels of two-input gates (and a MUX cannot shorten it without a
# constant input), so ABC must map it to exactly three levels between the two registers.
TINY = """
module tiny(input clk, input [7:0] d, output y);
  reg [7:0] src = 0;
  reg dst = 0;
  always @(posedge clk) begin src <= d; dst <= &src; end
  assign y = dst;
endmodule
"""


def test_tiny_netlist_three_levels_and_names(tmp_path):
    g = flows.generic(TINY, "tiny", tmp_path)
    t = g["timing"]
    assert g["logic_depth"] == 3 and t["levels"] == 3, t
    assert t["start"].startswith("src[") and t["end"] == "dst" and t["end_kind"] == "register"
    rows = {r["stage"]: r for r in t["stages"]}
    assert rows["dst"]["levels"] == 3 and rows["dst"]["bits"] == 1
    assert rows["src"]["levels"] == 0 and rows["src"]["bits"] == 8   # d goes straight in
    assert rows["(outputs)"]["levels"] == 0 and rows["(outputs)"]["start"] == "dst"
    assert t["loops"] == 0
    assert not (tmp_path / "netlist.json").exists()  # read, then deleted


def test_levels_equal_ltp_on_fp_add():
    g = _generic("fp_add", "fp16")["targets"]["generic"]
    t = g["timing"]
    assert t["levels"] == g["logic_depth"] > 10
    stages = {r["stage"]: r for r in t["stages"]}
    assert {"pipe0", "pipe1", "(outputs)"} <= set(stages), sorted(stages)
    assert max(r["levels"] for r in t["stages"]) == t["levels"]
    # the path's ends are named after the design's own registers and ports
    assert t["start"].split("[")[0] in {"i__payload", "pipe0_big", "pipe0_small", "pipe1_sum",
                                        "pipe1_exp", "pipe0_e_big"} or t["start"].startswith("pipe")
    assert t["end"].startswith(("pipe", "o__"))


def test_hierarchical_timing_is_the_deepest_part():
    g = _generic("pam_ru", vector_width=4, head_dim=64, op_depth=1)["targets"]["generic"]
    t = g["timing"]
    assert g["flow"].startswith("hierarchical")
    assert t["levels"] == g["logic_depth"]
    assert any(r["stage"].startswith("[") for r in t["stages"])   # operators' stages, labelled
    assert any(not r["stage"].startswith("[") for r in t["stages"])  # and the unit's own
    # the handshake paths are the unit's own: o.ready ends at registers, reaches no ready
    h = t["ready_paths"]
    assert [r["port"] for r in h["inputs"]] == ["o__ready"] and h["levels"] >= 1
    assert h["ready_to_ready"] is None and h["inputs"][0]["reaches"] == {}


@pytest.mark.parametrize("name, group", [
    ("pipe1_sum[3]", "pipe1"), ("pipe0_e_big", "pipe0"), ("op_p2_mag[0]", "op_p2"),
    ("lt0_3_p0_e_big[4]", "lt*_*_p0"), ("lt1_12_p0_small", "lt*_*_p0"), ("bt1_p1_sum", "bt*_p1"),
    ("fma2_p1_sign", "fma*_p1"), ("ms_exp_p2_mag[0]", "ms_exp_p2"),
    ("lane3.acc.stage2_x[1]", "lane*.acc.stage2"), ("lane_3.s1_y", "lane_*.s1"),
    ("pipe0.x_p1_y", "pipe0.x_p1"), ("drain_beat", "drain_beat"), ("count1[0]", "count*"),
    ("$127[4]", "(unnamed)"), ("k_beat[0]", "k_beat")])
def test_stage_groups(name, group):
    assert timing.stage_of(name) == group


def test_clock_check_flags_a_design_too_deep():
    t = {"levels": 50,
         "stages": [{"stage": "pipe0", "levels": 50}, {"stage": "pipe1", "levels": 10}]}
    c = timing.clock_check(t, {"mhz": 1000.0, "source": "test", "target": "ASIC"})
    a = timing.ASAP7_TIMING
    assert c["delay_ps"] == round(50 * a["level_ps"] + a["clk_to_q_ps"] + a["setup_ps"])
    assert c["delay_ps"] > 1000 and not c["met"] and c["failing_stages"] == 1
    assert [s["met"] for s in c["stages"]] == [False, True]
    assert c["max_levels"] == int((1000 - a["clk_to_q_ps"] - a["setup_ps"]) // a["level_ps"])
    slow = timing.clock_check(t, {"mhz": 200.0, "source": "test"})
    assert slow["met"] and slow["failing_stages"] == 0


def test_preset_clocks_match_the_models():
    for unit, hw in HW_UNITS.items():
        assert set(hw.clocks) <= set(hw.presets), unit
        for p, c in hw.clocks.items():
            assert c.mhz > 0 and c.source, (unit, p)
    for tier in ("hbm", "ddr", "ssd"):  # the system model runs at the same clocks
        assert HW_UNITS["pam_pu"].clocks[tier].mhz == PAM_TIERS[tier].clock_mhz
        assert HW_UNITS["pam_device"].clocks[tier].mhz == PAM_TIERS[tier].clock_mhz
    assert HW_UNITS["hilos_attention"].clocks["hilos_dgroup4"].mhz == SMARTSSD.clock_mhz == 296
    assert HW_UNITS["papi_pu"].clocks["fc_pim"].mhz == 666
    assert HW_UNITS["hermes_gemv"].clocks["hermes"].mhz == 1000


def test_cli_report_has_clock_check(tmp_path, capsys):
    out = tmp_path / "r"
    assert main(["synth", "pamif_buffer", "--preset", "small_hbm_to_ddr", "--out", str(out)]) == 0
    rep = json.loads((out / "report.json").read_text())
    c = rep["clock_check"]
    g = rep["targets"]["generic"]
    assert c["clock_mhz"] == 1000 and c["levels"] == g["timing"]["levels"] == g["logic_depth"]
    assert c["met"] == (c["delay_ps"] <= c["period_ps"])
    md = (out / "report.md").read_text()
    assert "## Clock check (ASAP7 estimate)" in md and "Critical path:" in md
    h = g["timing"]["ready_paths"]
    assert {r["port"] for r in h["inputs"]} == {"o__ready", "o_free__ready"}
    assert f"Ready paths: the 2 `*__ready` input(s) reach at most {h['levels']} gate levels" in md
    assert "no ready output depends combinationally on a ready input" in md
    assert "36 ps per gate level" in md
    # no clock stated: no section
    assert main(["synth", "fp_cmp", "--preset", "fp16", "--out", str(tmp_path / "c")]) == 0
    assert "clock_check" not in json.loads((tmp_path / "c" / "report.json").read_text())


def test_ecp5_critical_path_parse():
    def seg(kind, cell, delay, net=None):
        s = {"type": kind, "delay": delay, "from": {"cell": cell}, "to": {"cell": cell}}
        return dict(s, net=net) if net else s
    report = {"critical_paths": [
        {"from": "<async>", "to": "posedge clk", "path": [seg("routing", "sin", 5.0, "sin")]},
        {"from": "posedge clk", "to": "posedge clk", "path": [
            seg("clk-to-q", "dut.pipe1_sum_TRELLIS_FF_Q_3", 0.5),
            seg("routing", "dut.x_LUT4_Z", 0.9, "dut.pipe1_sum[3]"),
            seg("logic", "dut.x_LUT4_Z", 0.25),
            seg("routing", "oreg_TRELLIS_FF_Q_7", 0.6, "dut.o"),
            seg("logic", "oreg_TRELLIS_FF_Q_7", 0.25),
            seg("setup", "oreg_TRELLIS_FF_Q_7", 0.4)]}]}
    cp = flows.ecp5_critical_path(report)
    assert cp["start"] == "pipe1_sum[3]" and cp["end"].startswith("harness output register")
    assert cp["logic_levels"] == 2 and cp["routing_segments"] == 2
    assert cp["total_ns"] == pytest.approx(2.9) and cp["setup_ns"] == pytest.approx(0.4)


def _bench_spec(monkeypatch, name: str, spec: dict):
    """Benchmark ``name`` at ``spec`` instead of its declaration's ``synth_bench``."""
    real = bench.get_unit
    monkeypatch.setattr(bench, "get_unit", lambda n: dataclasses.replace(real(n), synth_bench=spec)
                        if n == name else real(n))


def test_bench_unit_rows_measure_skip_and_time_out(tmp_path, monkeypatch):
    rows = bench.unit_synth_rows(tmp_path / "a", progress=lambda m: None,
                                 names=["fp_cmp", "pam_system"])
    r = rows["fp_cmp"]
    assert r["nand2_eq"] > 100 and r["logic_depth"] > 5 and r["ecp5_fits"]
    assert r["ecp5_fmax_mhz"] > 20 and r["ecp5_logic_levels"] > 0 and all(r["critical_path"])
    assert r["ecp5_ff"] > 0 and r["ecp5_ebr"] == 0        # a comparator: registers, no memory
    assert "pam_device and pam_ru are measured" in rows["pam_system"]["skipped"]
    real = bench._synth_subprocess  # an ECP5 run that times out keeps the generic figures
    monkeypatch.setattr(bench, "_synth_subprocess", lambda u, spec, target, work: (
        (None, "ecp5 took over 600 s") if target == "ecp5" else real(u, spec, target, work)))
    kept = bench.unit_synth_rows(tmp_path / "a", progress=lambda m: None, names=["fp_cmp"])
    assert kept["fp_cmp"]["nand2_eq"] == r["nand2_eq"] and "ecp5_fmax_mhz" not in kept["fp_cmp"]
    assert kept["fp_cmp"]["ecp5_skipped"] == "ecp5 took over 600 s"
    monkeypatch.setattr(bench, "_synth_subprocess", real)
    monkeypatch.setattr(bench, "UNIT_TIMEOUT_S", 1)   # its process group is ended, not left
    slow = bench.unit_synth_rows(tmp_path / "b", progress=lambda m: None, names=["fp_exp"])
    assert slow["fp_exp"]["skipped"] == "generic took over 1 s"
    # a config's own limit (the long ECP5 runs) takes the place of the default
    monkeypatch.setattr(bench, "UNIT_TIMEOUT_S", 600)
    _bench_spec(monkeypatch, "fp_exp", {"timeout_s": 1})
    own = bench.unit_synth_rows(tmp_path / "c", progress=lambda m: None, names=["fp_exp"])
    assert own["fp_exp"]["skipped"] == "generic took over 1 s"


def test_bench_unit_rows_run_in_parallel_longest_limit_first(tmp_path, monkeypatch):
    """``workers`` rows at once, the longest stated limit started first; rows come back by
    name whatever order they finish in, each finished one reported."""
    started, barrier = [], None

    def fake(name, spec, target, work):
        if target == "ecp5":
            return None, "no ECP5 here"
        started.append(name)
        if barrier and name in ("fp_cmp", "fp_exp"):   # passes only if both run at once
            barrier.wait()
        return {"nand2_eq": len(name), "logic_depth": 3, "timing": {}}, None
    monkeypatch.setattr(bench, "_synth_subprocess", fake)
    _bench_spec(monkeypatch, "fp_exp", {"timeout_s": 99})
    names = ["fp_log", "fp_cmp", "fp_exp"]
    bench.unit_synth_rows(tmp_path, lambda m: None, names, 1)
    assert started == ["fp_exp", "fp_cmp", "fp_log"]
    barrier, parts = threading.Barrier(2, timeout=10), []

    def write_in_two(msg):   # two writes with a pause: lines from two threads must not mix
        parts.append(msg[:4])
        time.sleep(0.05)
        parts.append(msg[4:])
    rows = bench.unit_synth_rows(tmp_path, write_in_two, names, 2)
    lines = [a + b for a, b in zip(parts[::2], parts[1::2])]
    assert list(rows) == ["fp_cmp", "fp_exp", "fp_log"]
    assert rows["fp_log"]["nand2_eq"] == 6 and rows["fp_exp"]["ecp5_skipped"] == "no ECP5 here"
    ends = [x for x in lines if x.startswith("  [")]
    assert sorted(int(x.split("/")[0].split("[")[1]) for x in ends) == [1, 2, 3]
    assert sorted(x.split()[0] for x in lines if x.endswith(": started")) == sorted(names)


def test_bench_synth_units_refreshes_only_those_rows(tmp_path, monkeypatch, capsys):
    """`pimforge bench --only synth --units A,B` runs only those units' rows, as many at once
    as there are cores (without the `synth all` and pam_pu hbm timings, about 10 minutes), and
    says so in synth.json."""
    seen = []

    def rows(work, progress, names=None, workers=1):
        seen.append(list(names))
        assert workers == (os.cpu_count() or 1)   # the CLI runs the rows in parallel
        progress("  [1/2] fp_cmp (default): 1 NAND2")
        return {n: {"config": "default"} for n in names}
    monkeypatch.setattr(bench, "unit_synth_rows", rows)
    assert main(["bench", "--only", "synth", "--units", "fp_cmp, pam_ru", "--out",
                 str(tmp_path)]) == 0
    data = json.loads((tmp_path / "synth.json").read_text())
    assert seen == [["fp_cmp", "pam_ru"]] and data["units_only"] == ["fp_cmp", "pam_ru"]
    assert sorted(data["units"]) == ["fp_cmp", "pam_ru"] and data["results"] == {}
    assert "fp_cmp (default)" in capsys.readouterr().out


def test_bench_synth_all_reports_each_config(tmp_path):
    """The benchmark's `synth all` phase (minutes of synthesis for every preset of every unit)
    says which config finished, one indented line each, as `pimforge synth all` does."""
    unit = get_unit("fp_cmp")
    jobs = [run.SynthJob(unit, unit.preset_config(p), p) for p in sorted(unit.presets)[:2]]
    lines = []
    wall, reports = bench._synth_timed(jobs, ["generic"], 1, tmp_path, lines.append)
    assert len(reports) == 2 and wall > 0
    assert sorted(ln.split("]")[0] for ln in lines) == ["    [1/2", "    [2/2"]
    assert all("fp_cmp" in ln and "generic" in ln for ln in lines)


# Regression guard: a deeper fp_add pipeline must never be slower on ECP5.  nextpnr runs with
# --seed 1, so each figure is deterministic; about 8 s of synthesis per depth.  It fails on a
# library whose registers are spread over a few coarse stages, where a second register cuts
# nothing on the critical path.
def test_ecp5_fmax_does_not_fall_with_pipeline_depth():
    targets, devices = parse_targets("ecp5", None)
    fmax, levels = {}, {}
    for depth in (1, 2, 4, 8):
        cfg = api.config("fp_add", preset="fp16", overrides={"pipeline_depth": depth})
        e = run.synthesize(run.SynthJob(get_unit("fp_add"), cfg, f"d{depth}"), targets,
                           devices)["targets"]["ecp5"]
        fmax[depth], levels[depth] = e["fmax_mhz"], e["critical_path"]["logic_levels"]
    print(f"fp_add fp16 ECP5 fmax by pipeline depth: {fmax}; LUT levels: {levels}")
    depths = sorted(fmax)
    for lo, hi in zip(depths, depths[1:]):
        assert fmax[hi] >= fmax[lo], f"fmax falls from depth {lo} to {hi}: {fmax} (levels {levels})"


# PAM's tier clocks are the netlists' (hw/pam/config.py TIER_CLOCK_MHZ): each PU preset's ASAP7
# estimate must meet the clock the system model runs it at, and the paper's clock is reported
# beside it.  The hbm preset (16 lanes; ssd is the same config) in the default run, about a
# minute of synthesis from a cold cache; ddr and the flat netlists (which join paths across
# operator boundaries; hbm_fp32's bounds its clock and needs ABC's fallback script) in the long
# run.  A clock set above the netlist
# (the paper's 666 MHz, or 560) or more than 10% below it (470) fails it.
@pytest.mark.parametrize("preset, flat", [
    ("hbm", False),
    pytest.param("ddr", False, marks=pytest.mark.slow), pytest.param("hbm_fp32", True, marks=pytest.mark.slow),
    pytest.param("hbm", True, marks=pytest.mark.slow), pytest.param("ddr", True, marks=pytest.mark.slow)])
def test_pam_tier_clocks_are_backed_by_the_netlist(preset, flat):
    _, c = _preset_clock_check("pam_pu", preset, flat)
    clock = HW_UNITS["pam_pu"].clocks[preset]
    assert c["clock_mhz"] == clock.mhz and c["paper_mhz"] == clock.paper_mhz
    assert c["met"] and c["failing_stages"] == 0, (c["levels"], c["estimated_fmax_mhz"])
    # the clock is the lower of the hierarchical and flat estimates, rounded down to 10 MHz:
    # not set far below what the netlist does
    assert clock.mhz <= c["estimated_fmax_mhz"]
    if clock.mhz < clock.paper_mhz:
        assert 0.9 * c["estimated_fmax_mhz"] <= clock.mhz
    # the paper's clock is reported met exactly where the netlist reaches it (DDR's 500 MHz)
    assert c["paper_met"] == (c["estimated_fmax_mhz"] >= clock.paper_mhz)


# PAPI's presets state the paper's 666 MHz FPU clock and buy it with pipeline depth: at their
# op_depth (4) the deepest stage is an fp16 multiplier's (op_depth 2 would reach about
# 431 MHz).  No control path may be deeper than the operators: an output count of
# rows x banks x groups multiplied in the accept cycle, or a vector mask as a 64-bit shift,
# would be.  small_1p1b in the default run (seconds), a paper preset and the flat netlist in
# the long run.
@pytest.mark.parametrize("preset, flat", [
    ("small_1p1b", False), pytest.param("small_1p1b", True, marks=pytest.mark.slow),
    pytest.param("attn_pim", False, marks=pytest.mark.slow)])
def test_papi_preset_clock_is_backed_by_the_netlist(preset, flat):
    rep, c = _preset_clock_check("papi_pu", preset, flat)
    assert c["clock_mhz"] == HW_UNITS["papi_pu"].clocks[preset].mhz == 666
    assert c["met"] and c["failing_stages"] == 0, (c["levels"], c["estimated_fmax_mhz"])
    deepest = max(rep["targets"]["generic"]["timing"]["stages"], key=lambda r: r["levels"])
    assert not deepest["stage"].startswith(("job_", "outputs_", "rows_")), deepest


# HILOS's GEMVs at the paper's sizes meet the SmartSSD kernel clock (296 MHz) at the presets'
# op_depth 2, with no level to spare: 91 levels, the most that fits.  Long run: a few minutes
# of synthesis each.
@pytest.mark.slow
@pytest.mark.parametrize("unit", ["qk_gemv", "sv_gemv"])
def test_hilos_gemv_preset_clock_is_backed_by_the_netlist(unit):
    _, c = _preset_clock_check(unit, "hilos_dgroup4", False)
    assert c["clock_mhz"] == HW_UNITS[unit].clocks["hilos_dgroup4"].mhz == 296
    assert c["met"] and c["failing_stages"] == 0, (c["levels"], c["estimated_fmax_mhz"])


# Hermes's NDP core and LoL-PIM's AiM PU run at the papers' 1 GHz, bought with op_depth 4: at 3
# the fp32 accumulate add's alignment shift and significand add share a stage (about 34
# levels, where 25 fit).  The paper's clock is the preset's clock, so the check is "met".
# lolpim_pingpong in the default run (seconds, hierarchical), the 256-multiplier GEMV engine in
# the long run.
@pytest.mark.parametrize("unit, preset", [
    ("lolpim_pingpong", "aim"), pytest.param("hermes_gemv", "hermes", marks=pytest.mark.slow)])
def test_one_ghz_presets_meet_the_papers_clock(unit, preset):
    _, c = _preset_clock_check(unit, preset, False)
    assert c["clock_mhz"] == HW_UNITS[unit].clocks[preset].mhz == 1000
    assert c["met"] and c["failing_stages"] == 0, (c["levels"], c["estimated_fmax_mhz"])
