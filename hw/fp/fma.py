"""``fp_fma``: fused multiply-add ``a * b + c`` with a single rounding (round to nearest even).

The product of the two significands is kept exact (``2p`` bits, ``p`` = precision).  Product and
addend are both normalized to ``2p``-bit values with the most significant bit set (a zero loses
every magnitude comparison), the larger magnitude is chosen by (exponent, significand), the smaller
is aligned with three extra bits (guard, round, sticky-in-LSB), the two are added or subtracted
exactly in ``2p + 4`` bits, and :func:`~pimforge.hw.fp.core.round_pack` rounds once.

An exact zero sum is ``+0`` unless both the product and ``c`` are negative, so
``x*y + (-(x*y)) = +0`` and ``(-0)*1 + (-0) = -0``.  The result is NaN for a NaN operand,
``Inf * 0``, or an Inf product plus an Inf ``c`` of the opposite sign.
"""
from __future__ import annotations

from amaranth.hdl import Mux, Signal

from pimforge.hw.core.component import PipelinedUnit
from pimforge.hw.core.payload import fp
from pimforge.hw.core.pipeline import streaming_cycles
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
    """The FMA datapath as pipeline stages over a dict with keys ``a``, ``b`` and ``c``."""
    p = fmt.precision
    w = 2 * p          # normalized product / addend width
    eshape = core.exp_shape(fmt, fma_exp_extra(fmt))

    def multiply(m, v):
        a = core.unpack(m, fmt, v["a"], ftz, name="a")
        b = core.unpack(m, fmt, v["b"], ftz, name="b")
        c = core.unpack(m, fmt, v["c"], ftz, name="c")
        s_prod = a["sign"] ^ b["sign"]
        prod_inf = a["inf"] | b["inf"]
        invalid = ((a["inf"] & b["zero"]) | (a["zero"] & b["inf"])
                   | (prod_inf & c["inf"] & (s_prod != c["sign"])))
        # c's significand placed at the top of w bits: MSB weight stays 2**exp_c.
        c_wide = Signal(w, name="c_wide")
        m.d.comb += c_wide.eq(c["sig"] << p)
        return {
            "s_prod": s_prod, "s_c": c["sign"],
            "e_prod": a["exp"] + b["exp"] + 1, "prod": a["sig"] * b["sig"],
            "e_c": c["exp"], "c": c_wide,
            "nan": a["nan"] | b["nan"] | c["nan"] | invalid,
            "inf": prod_inf | c["inf"], "inf_sign": Mux(prod_inf, s_prod, c["sign"]),
        }

    def align(m, v):
        lz_p = core.lzc(m, v["prod"], name="prod_lz")
        lz_c = core.lzc(m, v["c"], name="c_lz")
        prod_n = Signal(w, name="prod_n")
        c_n = Signal(w, name="c_n")
        ep = Signal(eshape, name="ep")
        ec = Signal(eshape, name="ec")
        m.d.comb += [prod_n.eq((v["prod"] << lz_p)[:w]), c_n.eq((v["c"] << lz_c)[:w]),
                     ep.eq(v["e_prod"] - lz_p), ec.eq(v["e_c"] - lz_c)]
        p_zero = prod_n[w - 1] == 0
        c_zero = c_n[w - 1] == 0
        # Zero operands always lose; otherwise compare (exponent, significand).
        p_big = c_zero | (~p_zero & ((ep > ec) | ((ep == ec) & (prod_n >= c_n))))
        e_big = Signal(eshape, name="e_big")
        e_small = Signal(eshape, name="e_small")
        m.d.comb += [e_big.eq(Mux(p_big, ep, ec)), e_small.eq(Mux(p_big, ec, ep))]
        diff = e_big - e_small
        # diff < 0 only when the smaller operand is zero, where any shift gives zero.
        amount = Mux(diff < 0, 0, diff).as_unsigned()
        sig_small = Signal(w + 3, name="sig_small")
        m.d.comb += sig_small.eq(Mux(p_big, c_n, prod_n) << 3)
        small = core.shift_right_sticky(m, sig_small, amount, name="align")
        big = Signal(w + 3, name="sig_big")
        m.d.comb += big.eq(Mux(p_big, prod_n, c_n) << 3)
        return {**{k: v[k] for k in ("nan", "inf", "inf_sign", "s_prod", "s_c")},
                "s_big": Mux(p_big, v["s_prod"], v["s_c"]),
                "s_small": Mux(p_big, v["s_c"], v["s_prod"]),
                "e_big": e_big, "big": big, "small": small}

    return [multiply, align] + core.aligned_add_stages(fmt, ftz, w + 4)


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
