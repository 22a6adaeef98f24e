"""``fp_fma``: fused multiply-add ``a * b + c`` with a single rounding (round to nearest even).

The product of the two significands is kept exact (``2p`` bits, ``p`` = precision).  Product and
addend are both normalized to ``2p``-bit values with the most significant bit set (a zero loses
every magnitude comparison), the larger magnitude is chosen by (exponent, significand), the smaller
is aligned with three extra bits (guard, round, sticky-in-LSB), the two are added or subtracted
exactly in ``2p + 4`` bits, and :func:`~pimforge.hw.fp.core.round_stages` rounds once.

An exact zero sum is ``+0`` unless both the product and ``c`` are negative, so
``x*y + (-(x*y)) = +0`` and ``(-0)*1 + (-0) = -0``.  The result is NaN for a NaN operand,
``Inf * 0``, or an Inf product plus an Inf ``c`` of the opposite sign.
"""
from __future__ import annotations

from amaranth.hdl import Cat, Const, Mux, Signal

from pimforge.hw.core.component import PipelinedUnit
from pimforge.hw.core.payload import fp
from pimforge.hw.core.pipeline import levels, streaming_cycles
from pimforge.hw.core.unit import HwUnit
from pimforge.hw.fp import core
from pimforge.hw.fp.config import FORMAT_PRESETS, FpConfig

__all__ = ["FpFma", "fma_stages", "fma_exp_extra"]


def fma_exp_extra(fmt) -> int:
    """Extra exponent bits (over :func:`core.exp_shape`) for normalized product exponents.

    A normalized product exponent lies in ``[2*emin + 1 - 2p, 2*emax + 1]``; one more bit keeps
    the sum with the later ``+ 1`` clear of overflow.
    """
    bound = 2 * fmt.bias + 2 * fmt.precision + 2
    return max(0, bound.bit_length() + 1 - (fmt.exp_bits + 3))


def fma_stages(fmt, ftz):
    """The FMA datapath as pipeline stages over a dict with keys ``a``, ``b`` and ``c``: unpack,
    carry-save multiply, leading-zero counts, normalize shifts (two stages), order, exponent
    difference, alignment shift (two stages), then the shared add, normalize and round."""
    p = fmt.precision
    w = 2 * p          # normalized product / addend width
    eshape = core.exp_shape(fmt, fma_exp_extra(fmt))
    norm_steps = core.amount_bits(w, w.bit_length())

    @levels(core.lv_add(fmt.exp_bits + 1) + 1)
    def unpack(m, v):
        a = core.unpack(m, fmt, v["a"], ftz, name="a")
        b = core.unpack(m, fmt, v["b"], ftz, name="b")
        c = core.unpack(m, fmt, v["c"], ftz, name="c")
        s_prod = a["sign"] ^ b["sign"]
        prod_inf = a["inf"] | b["inf"]
        invalid = ((a["inf"] & b["zero"]) | (a["zero"] & b["inf"])
                   | (prod_inf & c["inf"] & (s_prod != c["sign"])))
        # ea + eb + 1 = raw_a + raw_b + (1 - 2 bias): the constant is added a stage later
        e_sum = Signal(fmt.exp_bits + 1, name="e_sum")
        m.d.comb += e_sum.eq(a["exp_raw"] + b["exp_raw"])
        return {
            "s_prod": s_prod, "s_c": c["sign"], "e_sum": e_sum, "sa": a["sig"], "sb": b["sig"],
            "e_c": c["exp"], "sc": c["sig"],
            "nan": a["nan"] | b["nan"] | c["nan"] | invalid,
            "inf": prod_inf | c["inf"], "inf_sign": Mux(prod_inf, s_prod, c["sign"]),
        }

    @levels(core.lv_lzc(w))
    def count(m, v):
        # c's significand sits at the top of w bits (MSB weight stays 2**exp_c), so its
        # leading-zero count is that of its p bits.
        e_prod = Signal(eshape, name="e_prod")
        m.d.comb += e_prod.eq(v["e_sum"] + (1 - 2 * fmt.bias))
        return core.pass_on(v, ("e_sum",), lz_p=core.lzc(m, v["prod"], name="prod_lz"),
                            lz_c=core.lzc(m, v["sc"], name="c_lz"), e_prod=e_prod)

    def shift(g, groups):
        def st(m, v):
            first, last = g == 0, g == groups - 1
            steps = norm_steps[g * len(norm_steps) // groups:(g + 1) * len(norm_steps) // groups]
            pc = v["prod"] if first else v["pn_cur"]
            cc = Cat(Const(0, p), v["sc"]) if first else v["cn_cur"]
            pc, _ = core.shift_steps(m, pc, v["lz_p"], steps, True, name=f"pn{g}")
            cc, _ = core.shift_steps(m, cc, v["lz_c"], steps, True, name=f"cn{g}")
            drop = ["prod", "sc", "pn_cur", "cn_cur"]
            if not last:
                return core.pass_on(v, drop, pn_cur=pc, cn_cur=cc)
            ep, ec = Signal(eshape, name="ep"), Signal(eshape, name="ec")
            m.d.comb += [ep.eq(v["e_prod"] - v["lz_p"]), ec.eq(v["e_c"] - v["lz_c"])]
            return core.pass_on(v, drop + ["lz_p", "lz_c", "e_prod", "e_c"], prod_n=pc, c_n=cc,
                                ep=ep, ec=ec)
        st.levels = core.LV_MUX * (len(norm_steps) // groups) + 1
        return st

    @levels(core.lv_cmp(w) + 3)
    def order(m, v):
        prod_n, c_n, ep, ec = v["prod_n"], v["c_n"], v["ep"], v["ec"]
        p_zero = prod_n[w - 1] == 0
        c_zero = c_n[w - 1] == 0
        # Zero operands always lose; otherwise compare (exponent, significand).
        p_big = Signal(name="p_big")
        m.d.comb += p_big.eq(c_zero | (~p_zero & ((ep > ec) | ((ep == ec) & (prod_n >= c_n)))))
        return core.pass_on(v, (), p_big=p_big)

    @levels(core.lv_add(eshape.width) + 2)
    def swap(m, v):
        p_big = v["p_big"]
        e_big = Signal(eshape, name="e_big")
        e_small = Signal(eshape, name="e_small")
        m.d.comb += [e_big.eq(Mux(p_big, v["ep"], v["ec"])), e_small.eq(Mux(p_big, v["ec"], v["ep"]))]
        diff = e_big - e_small
        # diff < 0 only when the smaller operand is zero, where any shift gives zero.
        amount = Signal(eshape.width, name="align_amt")
        m.d.comb += amount.eq(Mux(diff < 0, 0, diff))
        sig_small = Signal(w + 3, name="sig_small")
        big = Signal(w + 3, name="sig_big")
        m.d.comb += [sig_small.eq(Mux(p_big, v["c_n"], v["prod_n"]) << 3),
                     big.eq(Mux(p_big, v["prod_n"], v["c_n"]) << 3)]
        return core.pass_on(v, ("p_big", "ep", "ec", "prod_n", "c_n", "s_prod", "s_c"),
                            s_big=Mux(p_big, v["s_prod"], v["s_c"]),
                            s_small=Mux(p_big, v["s_c"], v["s_prod"]),
                            e_big=e_big, big=big, sig_small=sig_small, align_amt=amount)

    align = core.shifter_stages("sig_small", "align_amt", "small", w + 3,
                                core.amount_bits(w + 3, eshape.width), False, 2, "align",
                                sticky=True)
    return ([unpack] + core.multiply_stages("sa", "sb", "prod", p, p) + [count]
            + [shift(0, 2), shift(1, 2), order, swap] + align
            # e_big >= the lowest normalized product exponent (a zero c always loses)
            + core.aligned_add_stages(fmt, ftz, w + 4, exp_min=2 * fmt.emin + 1 - w))


class FpFma(PipelinedUnit):
    """Pipelined fused multiply-add (``fp_fma``).

    Input stream ``i`` carries fields ``a``, ``b`` and ``c``; output stream ``o`` carries
    ``r = a * b + c`` computed FUSED: the product is exact and the sum is rounded once, to
    nearest even (not ``round(round(a * b) + c)``).  Latency is ``pipeline_depth`` cycles and
    throughput one operation per cycle.

    Parameters
    ----------
    cfg : FpConfig
    """

    UNIT = "fp_fma"

    def __init__(self, cfg: FpConfig):
        fmt = cfg.fmt
        super().__init__(cfg, {"a": fp(fmt), "b": fp(fmt), "c": fp(fmt)}, {"r": fp(fmt)})

    def stages(self):
        return fma_stages(self.cfg.fmt, self.cfg.ftz)


UNITS = (HwUnit("fp_fma", "IEEE fused multiply-add, single rounding, RNE, subnormals, pipelined "
                "(i: a, b, c -> o: r = a * b + c)", FpConfig, FpFma, FORMAT_PRESETS, streaming_cycles),)
