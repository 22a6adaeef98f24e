"""``fp_log``: ``r = log(a)`` (natural logarithm).

``a = 2**e * (1 + t)`` with the mantissa renormalized into [0.75, 1.5) (mantissas from 1.5 up are
halved and ``e`` incremented), so ``t`` in [-0.25, 0.5) is exact with ``frac_bits + 1`` fraction
bits.  ``log(a) = e ln2 + t g(t)`` with ``g(t) = log1p(t) / t`` from a piecewise-quadratic table;
the product ``t g(t)`` is kept whole, so results near ``a = 1`` keep their full relative precision,
and ``e ln2`` is added in the same fixed point before
:func:`~pimforge.hw.fp.core.round_pack`.  Subnormal inputs are normalized with a leading-zero
count.  log(NaN) = NaN, log(negative, including -Inf) = NaN, log(±0) = -Inf, log(+Inf) = +Inf,
log(1) = +0 exactly.
"""
from __future__ import annotations

from amaranth.hdl import Const, Mux, Signal, signed

from pimforge.hw.core.pipeline import streaming_cycles
from pimforge.hw.core.unit import HwUnit
from pimforge.hw.fp import core
from pimforge.hw.fp.config import FUNC_PRESETS, FpFuncConfig
from pimforge.hw.fp.func_common import FpFuncUnit, normalize, quad_eval
from pimforge.hw.fp.func_tables import log_params

__all__ = ["FpLog", "log_stages"]


def log_stages(fmt, ftz):
    """The log datapath as pipeline stages over a dict with key ``a`` (bit pattern)."""
    par = log_params(fmt)
    tab = par.table
    w = fmt.frac_bits + 1      # fraction bits of 1 + t

    def reduce(m, v):
        u = core.unpack(m, fmt, v["a"], ftz, name="a")
        e, sig = normalize(m, fmt, u, name="norm")
        hi = sig[fmt.frac_bits - 1]          # mantissa >= 1.5
        mant = Signal(w + 1, name="one_plus_t")
        m.d.comb += mant.eq(Mux(hi, sig, sig << 1))
        e_red = Signal(signed(len(e) + 1), name="e_red")
        m.d.comb += e_red.eq(e + hi)
        return {"e": e_red, "mant": mant,
                "nan": u["nan"] | (u["sign"] & ~u["zero"]), "inf": u["zero"] | u["inf"],
                "inf_sign": u["zero"]}

    def kernel(m, v):
        uu = Signal(w, name="g_arg")
        m.d.comb += uu.eq(v["mant"] - (3 << (w - 2)))
        g = quad_eval(m, tab, uu, name="g")      # log1p(t) / t, in (0.8, 1.16)
        t = Signal(signed(w + 1), name="t")
        m.d.comb += t.eq(v["mant"] - (1 << w))
        tg = Signal(signed(len(t) + len(g) - par.tg_shift), name="t_g")
        m.d.comb += tg.eq((t * g) >> par.tg_shift)
        return {"e": v["e"], "tg": tg, **{k: v[k] for k in ("nan", "inf", "inf_sign")}}

    def normalize_sum(m, v):
        s = Signal(signed(par.sum_bits + 1), name="log_sum")
        m.d.comb += s.eq(v["e"] * par.ln2 + v["tg"])
        sign = s[-1]
        mag = Signal(par.sum_bits, name="log_mag")
        m.d.comb += mag.eq(Mux(sign, -s, s))
        r = core.round_shift(m, fmt, Const(par.sum_bits - par.sum_frac - 1, signed(8)), mag,
                             name="rp")
        return {**r, "sign": sign, **{k: v[k] for k in ("nan", "inf", "inf_sign")}}

    def finish(m, v):
        rounded = core.round_finish(m, fmt, v["sign"], v["e_out"], v["mag"], ftz=ftz, name="rp")
        return {"r": core.special_result(fmt, v["nan"], v["inf"], v["inf_sign"], rounded)}

    return [reduce, kernel, normalize_sum, finish]


class FpLog(FpFuncUnit):
    """Pipelined natural logarithm (``fp_log``): stream ``i`` field ``a`` -> stream ``o`` field
    ``r = log(a)``.  Latency ``pipeline_depth`` cycles, one operation per cycle.

    Parameters
    ----------
    cfg : FpFuncConfig
    """

    UNIT = "fp_log"

    def stages(self):
        return log_stages(self.cfg.fmt, self.cfg.ftz)


UNITS = (HwUnit("fp_log", "float natural logarithm log(a), table + quadratic, <= 1 ulp (i: a -> o: r)",
                FpFuncConfig, FpLog, FUNC_PRESETS, streaming_cycles),)
