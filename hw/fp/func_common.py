"""Amaranth pieces shared by the special-function units: ROM tables, the piecewise-quadratic
kernel of :class:`~pimforge.hw.fp.func_tables.QuadTable`, subnormal normalization, and the
component shell.  :mod:`pimforge.sim.golden.fp.func_common` mirrors them.
"""
from __future__ import annotations

from amaranth.hdl import Signal, signed, unsigned
from pimforge.hw.core.activity import Memory

from pimforge.hw.core.component import PipelinedUnit
from pimforge.hw.core.payload import fp
from pimforge.hw.core.pipeline import levels, parallel
from pimforge.hw.fp import core

__all__ = ["rom", "quad_width", "quad_stages", "normalize_stages", "FpFuncUnit", "LV_ROM_OUT",
           "LV_ROM_ADDR", "ROM_BLOCK_BITS"]

# Gate levels worth of a block RAM's clock-to-out and the route out of the RAM row: nextpnr
# gives 5.8 ns for an ECP5 DP16KD read (speed 6), and the data then leaves the device's RAM row
# for the logic.  The clock-to-out alone (14 levels) is too few: a table's output then shares a
# segment with a multiplier stage, and that segment, not the deeper pure-logic ones, limits
# fmax.  18 puts a plain register after ``rom_held`` at depths 16-17 (exp) and 13-14 (recip).
LV_ROM_OUT = 18
# Tables larger than this many bits become block RAMs on ECP5: yosys's memory_libmap prices a ROM
# bit as logic at 1/16 and a DP16KD at 128.  Measured: the fp32 tables (5,952 bits and up) map to
# EBRs, the fp16 ones (1,536 bits at most) to LUTs, whose register stays a plain flip-flop.
ROM_BLOCK_BITS = 2048
# Gate levels worth of a block RAM's address path before its (absorbed) register: the index
# bits fan out to every table's RAM (c0, c1, c2: three EBRs on ECP5, placed in the device's RAM
# rows), so the last route is long.  fp_exp fp32 at depth 17 measured 2.97 ns of routing from
# the index's LUT to the RAMs' address pins and 0.2 ns of setup, about six estimated levels at
# the 0.45 ns a level its 23-level segments take, plus the two of the index itself.
LV_ROM_ADDR = 8


def rom(m, name: str, values, shape):
    """A ROM holding ``values`` with a combinational read port; returns ``(addr, data)``, the
    caller drives ``addr``."""
    mem = Memory(shape=shape, depth=len(values), init=list(values))
    base, k = name, 1
    while True:  # several function units may share one module: keep ROM names unique
        try:
            m.submodules[name] = mem
            break
        except NameError:
            k += 1
            name = f"{base}_{k}"
    port = mem.read_port(domain="comb")
    return port.addr, port.data


def quad_width(tab) -> int:
    """Width of the table kernel's signed output."""
    w0, w1, w2 = tab.widths()
    sq_bits = 2 * (tab.d_bits - tab.sq_pre) - tab.sq_post
    return max(w0, w1 + tab.d_bits + 1 - tab.t1_shift, w2 + sq_bits + 1 - tab.t2_shift) + 2


def quad_stages(tab, in_key: str, out_key: str, name: str = "quad") -> list:
    """The table kernel on the ``tab.in_bits``-bit fraction ``v[in_key]`` as pipeline stages:
    table lookup and the square, the two products (carry-save multipliers, one counter level
    per stage), and the sum into ``v[out_key]`` (signed, ``tab.out_frac`` fraction bits), with
    the same floor shifts as the golden model."""
    w0, w1, w2 = tab.widths()
    k = lambda key: f"{name}_{key}"  # noqa: E731
    a_bits = tab.d_bits - tab.sq_pre

    # As logic, a ROM is a multiplexer tree on the index.  A register right after a large one
    # becomes the output register of a block RAM (ECP5 EBR: yosys maps it with NOREG), which
    # leaves only the address in this segment but puts the RAM's clock-to-out first in the next.
    block_ram = tab.depth * max(w0, w1, w2) > ROM_BLOCK_BITS

    @levels(core.LV_MUX * core.lv_log(tab.depth) + 2,
            cut=(LV_ROM_ADDR, LV_ROM_OUT) if block_ram else None)
    def lookup(m, v):
        u = v[in_key]
        index = Signal(range(tab.depth), name=k("index"))
        m.d.comb += index.eq(u[tab.d_bits:tab.in_bits])
        new = {k("d"): u[:tab.d_bits], k("a"): u[tab.sq_pre:tab.d_bits]}
        for key, values, shape in (("c0", tab.c0, unsigned(w0)), ("c1", tab.c1, signed(w1)),
                                   ("c2", tab.c2, signed(w2))):
            addr, data = rom(m, f"{name}_{key}", values, shape)
            m.d.comb += addr.eq(index)
            new[k(key)] = data
        return core.pass_on(v, (in_key,), **new)

    def rom_held(m, v):
        return v
    # no logic: a register here (the second after the ROM) is a plain flip-flop that takes the
    # block RAM's output, so its clock-to-out does not add to the first multiplier level
    rom_held.levels = 0

    def square_done(m, v):
        sq = Signal(2 * a_bits - tab.sq_post, name=k("sq"))
        m.d.comb += sq.eq(v[k("asq")] >> tab.sq_post)
        return core.pass_on(v, (k("asq"),), **{k("sq"): sq})
    square_done.levels = 0

    square = core.multiply_stages(k("a"), k("a"), k("asq"), a_bits, a_bits) + [square_done]
    t1 = core.multiply_stages(k("c1"), k("d"), k("p1"), w1, tab.d_bits, signed_a=True)

    def term1(m, v):
        t = Signal(signed(w1 + tab.d_bits + 1 - tab.t1_shift), name=k("t1"))
        m.d.comb += t.eq(v[k("p1")] >> tab.t1_shift)
        return core.pass_on(v, (k("p1"),), **{k("t1"): t})
    term1.levels = 0
    sq_bits = 2 * a_bits - tab.sq_post
    t2 = core.multiply_stages(k("c2"), k("sq"), k("p2"), w2, sq_bits, signed_a=True)

    def term2(m, v):
        t = Signal(signed(w2 + sq_bits + 1 - tab.t2_shift), name=k("t2"))
        m.d.comb += t.eq(v[k("p2")] >> tab.t2_shift)
        return core.pass_on(v, (k("p2"),), **{k("t2"): t})
    term2.levels = 0

    @levels(core.lv_add(w0 + 2) + 2)
    def total(m, v):
        out = Signal(signed(quad_width(tab)), name=k("out"))
        m.d.comb += out.eq(v[k("c0")] + v[k("t1")] + v[k("t2")])
        return core.pass_on(v, (k("c0"), k("t1"), k("t2")), **{out_key: out})

    # c1 * d runs beside the square; c2 * sq follows the square
    return [lookup] + ([rom_held] if block_ram else []) + parallel(square + t2 + [term2], t1 + [term1]) + [total]


def normalize_stages(fmt, name: str = "norm") -> list:
    """Shift a subnormal significand ``v["sig"]`` up to a leading one, with ``v["exp"]``
    lowered to match (leading-zero count, then the shift)."""
    p = fmt.precision

    @levels(core.lv_lzc(p))
    def count(m, v):
        return core.pass_on(v, (), **{f"{name}_lz": core.lzc(m, v["sig"], name=f"{name}_lz")})

    @levels(core.LV_MUX * p.bit_length())
    def shift(m, v):
        lz = v[f"{name}_lz"]
        sig = Signal(p, name=f"{name}_sig")
        exp = Signal(core.exp_shape(fmt, 1), name=f"{name}_exp")
        m.d.comb += [sig.eq((v["sig"] << lz)[:p]), exp.eq(v["exp"] - lz)]
        return core.pass_on(v, (f"{name}_lz",), sig=sig, exp=exp)

    return [count, shift]


class FpFuncUnit(PipelinedUnit):
    """Shell of a one-input special-function unit: stream ``i`` with field ``a``, stream ``o``
    with field ``r``; latency ``pipeline_depth``, one operation per cycle.

    Subclasses set ``UNIT`` and implement ``stages()`` (the datapath as pipeline stages over a dict
    with key ``a``, ending with key ``r``).
    """

    def __init__(self, cfg):
        super().__init__(cfg, {"a": fp(cfg.fmt)}, {"r": fp(cfg.fmt)})
