"""`pimforge.hw.core.fanout`: register copies survive synthesis, and `SplitFifo` behaves as
Amaranth's `SyncFIFO` cycle by cycle."""
import random

import pytest
from amaranth.back import verilog
from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import fifo
from amaranth.sim import Simulator

from pimforge.hw.core.fanout import COPY_MARK, SplitFifo, copies
from pimforge.hw.core.ports import top_ports
from pimforge.synth import flows


def _fanout_design(n_copies: int):
    """One select, registered as ``n_copies`` copies, choosing between two 8-lane vectors."""
    m = Module()
    a, b, sel = Signal(64), Signal(64), Signal()
    o = Signal(64)
    regs = copies(m, sel, n_copies, "pick")
    lanes = [Mux(regs[k * n_copies // 8], a[8 * k:8 * k + 8], b[8 * k:8 * k + 8])
             for k in range(8)]
    m.d.sync += o.eq(Cat(*lanes))
    return verilog.convert(m, name="fan", ports=[a, b, sel, o])


@pytest.mark.parametrize("target", ["generic", "ecp5"])
def test_copies_are_kept_by_synthesis(target, tmp_path):
    """Four copies stay four flip-flops (64 output registers besides); yosys' opt_merge would
    fold them into one without the flows' keep mark, as it does for unmarked twins."""
    text = _fanout_design(4)
    assert text.count(COPY_MARK) >= 4
    unmarked = text.replace(COPY_MARK, "_twin")
    flops = {}
    for label, v in (("marked", text), ("unmarked", unmarked)):
        work = tmp_path / label
        if target == "generic":
            flops[label] = flows.generic(v, "fan", work)["flip_flops"]
        else:
            res = flows.ecp5(v, "fan", work, flows.resolve_device("ecp5", None)[1], place=False)
            # the fmax harness: a shift register over the inputs (a, b, sel, rst), the 64
            # outputs registered, and its output pin's register
            n_in = sum(w for d, name, w in top_ports(v, "fan") if d == "input" and name != "clk")
            flops[label] = res["FF"] - n_in - 64 - 1
    assert flops == {"marked": 64 + 4, "unmarked": 64 + 1}


def _run_fifo(dut, width, steps, seed):
    """Drive random writes and reads; returns the per-cycle (w_rdy, r_rdy, level, r_data when
    r_rdy)."""
    rng = random.Random(seed)
    trace = []

    async def bench(ctx):
        for _ in range(steps):
            ctx.set(dut.w_en, rng.random() < 0.6)
            ctx.set(dut.w_data, rng.getrandbits(width))
            ctx.set(dut.r_en, rng.random() < 0.5)
            r_rdy = ctx.get(dut.r_rdy)
            trace.append((ctx.get(dut.w_rdy), r_rdy, ctx.get(dut.level),
                          ctx.get(dut.r_data) if r_rdy else None))
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    return trace


@pytest.mark.parametrize("widths,depth", [([16, 16, 17], 7), ([5, 3], 8), ([9], 1)])
def test_split_fifo_matches_sync_fifo(widths, depth):
    """Same random inputs, same outputs every cycle, including full and empty (the random
    rates fill a small FIFO and drain it)."""
    width = sum(widths)
    ours = _run_fifo(SplitFifo(widths, depth, name="f"), width, 600, seed=depth)
    ref = _run_fifo(fifo.SyncFIFO(width=width, depth=depth), width, 600, seed=depth)
    assert ours == ref
    levels = {t[2] for t in ref}
    assert 0 in levels and depth in levels     # both edges were reached


@pytest.mark.parametrize("lut_ram, ebr", [(False, 2), (True, 0)])
def test_split_fifo_lut_ram_stays_out_of_block_ram(lut_ram, ebr, tmp_path):
    """A 49 x 72 FIFO: Yosys folds the read pointer into two EBRs' address registers unless the
    memory is marked ``ram_style = "distributed"`` (hermes_act's output FIFO: the EBR's 5.8 ns
    clock-to-out started the path to the output port)."""
    f = SplitFifo([72], 49, name="f", lut_ram=lut_ram)
    v = verilog.convert(f, name="ff", ports=[f.w_data, f.w_en, f.w_rdy, f.r_data, f.r_en,
                                             f.r_rdy, f.level])
    res = flows.ecp5(v, "ff", tmp_path, flows.resolve_device("ecp5", None)[1], place=False)
    assert res["EBR"] == ebr
    assert (res["by_type"].get("TRELLIS_DPR16X4", 0) > 0) == lut_ram
