"""``fp_add``: IEEE addition or subtraction, round to nearest even.

Far/near paths are merged: the larger magnitude is selected by comparing the magnitude bits,
the smaller significand is aligned with three extra bits (guard, round, sticky-in-LSB), the two
are added or subtracted exactly, and the shared :func:`~pimforge.hw.fp.core.round_stages`
normalizes and rounds.  ``x - x`` gives +0; ``-0 + -0`` gives -0.
"""
from __future__ import annotations

from amaranth.hdl import Mux, Signal

from pimforge.hw.core.component import PipelinedUnit
from pimforge.hw.core.payload import fp
from pimforge.hw.core.pipeline import levels, streaming_cycles
from pimforge.hw.core.unit import HwUnit
from pimforge.hw.fp import core
from pimforge.hw.fp.config import FORMAT_PRESETS, FpConfig

__all__ = ["FpAdd", "add_stages"]


def add_stages(fmt, ftz, subtract):
    """The add datapath as pipeline stages over a dict with keys ``a`` and ``b`` (bit patterns):
    unpack, order and both exponent differences, swap, alignment shift (two stages), then the
    shared :func:`~pimforge.hw.fp.core.aligned_add_stages` (add, leading-zero count, normalize,
    round)."""
    p = fmt.precision

    # The magnitude compare (a carry chain on an FPGA) and the swap it selects are two stages,
    # so a deep pipeline can put a register between them: as one stage, input to swapped
    # operands was fp_add fp32's deepest ECP5 segment at depth 16, and qk_gemv's at op_depth 16
    # (32 cells).  At shallow depths the placer keeps them together.  Both exponent
    # differences are formed beside the compare and the swap selects one, so the alignment
    # amount is not a second carry chain behind the first; they subtract the raw exponent
    # fields, whose bias cancels, so no bias subtraction runs before them either.
    @levels(max(core.lv_cmp(fmt.width - 1), core.lv_add(fmt.exp_bits + 1)))
    def order(m, v):
        a = core.unpack(m, fmt, v["a"], ftz, name="a")
        b = core.unpack(m, fmt, v["b"], ftz, name="b")
        sb = b["sign"] ^ int(subtract)
        a_big = Signal(name="a_big")
        d_ab = Signal(fmt.exp_bits + 1, name="d_ab")
        d_ba = Signal(fmt.exp_bits + 1, name="d_ba")
        m.d.comb += [a_big.eq(v["a"][:fmt.width - 1] >= v["b"][:fmt.width - 1]),
                     d_ab.eq(a["exp_raw"] - b["exp_raw"]), d_ba.eq(b["exp_raw"] - a["exp_raw"])]
        return {
            "a_big": a_big, "sa": a["sign"], "sb": sb, "ea": a["exp"], "eb": b["exp"],
            "d_ab": d_ab, "d_ba": d_ba, "ma": a["sig"], "mb": b["sig"],
            "nan": a["nan"] | b["nan"] | (a["inf"] & b["inf"] & (a["sign"] != sb)),
            "inf": a["inf"] | b["inf"], "inf_sign": Mux(a["inf"], a["sign"], sb),
        }

    @levels(core.LV_MUX)
    def swap(m, v):
        a_big = v["a_big"]
        e_big = Signal(v["ea"].shape(), name="e_big")
        amount = Signal(fmt.exp_bits + 1, name="align_amt")
        m.d.comb += [e_big.eq(Mux(a_big, v["ea"], v["eb"])),
                     amount.eq(Mux(a_big, v["d_ab"], v["d_ba"]))]
        return core.pass_on(
            v, ("a_big", "sa", "sb", "ea", "eb", "d_ab", "d_ba", "ma", "mb"),
            s_big=Mux(a_big, v["sa"], v["sb"]), s_small=Mux(a_big, v["sb"], v["sa"]),
            e_big=e_big, align_amt=amount,
            big=Mux(a_big, v["ma"], v["mb"]) << 3, sig_small=Mux(a_big, v["mb"], v["ma"]) << 3)

    steps = core.amount_bits(p + 3, fmt.exp_bits + 1)
    align = core.shifter_stages("sig_small", "align_amt", "small", p + 3, steps, False, 2,
                                "align", sticky=True)
    return [order, swap] + align + core.aligned_add_stages(fmt, ftz, p + 4, exp_min=fmt.emin)


class FpAdd(PipelinedUnit):
    """Pipelined float adder (``fp_add``) or subtractor (``fp_sub``).

    Input stream ``i`` carries fields ``a`` and ``b``; output stream ``o`` carries ``r = a + b``
    (or ``a - b``).  Latency is ``pipeline_depth`` cycles and throughput one operation per cycle.

    Parameters
    ----------
    cfg : FpConfig
    subtract : bool
        Compute ``a - b`` instead of ``a + b``.
    """

    UNIT = "fp_add"

    def __init__(self, cfg: FpConfig, subtract: bool = False):
        self.subtract = subtract
        if subtract:
            self.UNIT = "fp_sub"
        fmt = cfg.fmt
        super().__init__(cfg, {"a": fp(fmt), "b": fp(fmt)}, {"r": fp(fmt)})

    def stages(self):
        return add_stages(self.cfg.fmt, self.cfg.ftz, self.subtract)


UNITS = (
    HwUnit("fp_add", "IEEE float adder, RNE, subnormals, pipelined (i: a, b -> o: r = a + b)",
           FpConfig, FpAdd, FORMAT_PRESETS, streaming_cycles, paper="IEEE 754-2019 §5.4.1 addition",
           activity=core.streaming_activity("add")),
    HwUnit("fp_sub", "IEEE float subtractor, RNE, subnormals, pipelined (i: a, b -> o: r = a - b)",
           FpConfig, lambda cfg: FpAdd(cfg, subtract=True), FORMAT_PRESETS, streaming_cycles,
           paper="IEEE 754-2019 §5.4.1 subtraction",
           activity=core.streaming_activity("sub")),
)
