"""``fp_log``: ``r = log(a)`` (natural logarithm).

``a = 2**e * (1 + t)`` with the mantissa renormalized into [0.75, 1.5) (mantissas from 1.5 up are
halved and ``e`` incremented), so ``t`` in [-0.25, 0.5) is exact with ``frac_bits + 1`` fraction
bits.  ``log(a) = e ln2 + t g(t)`` with ``g(t) = log1p(t) / t`` from a piecewise-quadratic table;
the product ``t g(t)`` is kept whole, so results near ``a = 1`` keep their full relative precision,
and ``e ln2`` is added in the same fixed point before
:func:`~pimforge.hw.fp.core.round_stages`.  Subnormal inputs are normalized with a leading-zero
count.  log(NaN) = NaN, log(negative, including -Inf) = NaN, log(±0) = -Inf, log(+Inf) = +Inf,
log(1) = +0 exactly.
"""
from __future__ import annotations

from amaranth.hdl import Const, Mux, Signal, signed

from pimforge.hw.core.pipeline import levels, parallel, streaming_cycles
from pimforge.hw.core.unit import HwUnit
from pimforge.hw.fp import core
from pimforge.hw.fp.config import FUNC_PRESETS, FpFuncConfig
from pimforge.hw.fp.func_common import FpFuncUnit, normalize_stages, quad_stages, quad_width
from pimforge.hw.fp.func_tables import log_params

__all__ = ["FpLog", "log_stages"]


def log_stages(fmt, ftz):
    """The log datapath as pipeline stages over a dict with key ``a`` (bit pattern): unpack,
    subnormal normalization, mantissa range reduction, the table kernel, ``t g(t)`` and
    ``e ln2`` (carry-save multipliers side by side), the sum and its magnitude, then the shared
    normalize, round and pack."""
    par = log_params(fmt)
    tab = par.table
    w = fmt.frac_bits + 1      # fraction bits of 1 + t
    e_bits = core.exp_shape(fmt, 2).width

    @levels(core.lv_add(fmt.exp_bits + 2))
    def reduce(m, v):
        u = core.unpack(m, fmt, v["a"], ftz, name="a")
        return {"sig": u["sig"], "exp": u["exp"],
                "nan": u["nan"] | (u["sign"] & ~u["zero"]), "inf": u["zero"] | u["inf"],
                "inf_sign": u["zero"]}

    @levels(core.lv_add(e_bits) + 1)
    def mantissa(m, v):
        sig = v["sig"]
        hi = sig[fmt.frac_bits - 1]          # mantissa >= 1.5
        mant = Signal(w + 1, name="one_plus_t")
        m.d.comb += mant.eq(Mux(hi, sig, sig << 1))
        e_red = Signal(signed(e_bits), name="e_red")
        m.d.comb += e_red.eq(v["exp"] + hi)
        return core.pass_on(v, ("sig", "exp"), mant=mant, e=e_red)

    @levels(core.lv_add(w + 1))
    def argument(m, v):
        uu = Signal(w, name="g_arg")
        t = Signal(signed(w + 1), name="t")
        m.d.comb += [uu.eq(v["mant"] - (3 << (w - 2))), t.eq(v["mant"] - (1 << w))]
        return core.pass_on(v, ("mant",), g_arg=uu, t=t)

    kernel = quad_stages(tab, "g_arg", "g", name="g")      # log1p(t) / t, in (0.8, 1.16)

    def positive(m, v):   # g > 0: its bits without the sign are its value
        return core.pass_on(v, ("g",), g_mag=v["g"][:len(v["g"]) - 1])
    positive.levels = 0
    g_bits = quad_width(tab) - 1
    tg = core.multiply_stages("t", "g_mag", "tg_full", w + 1, g_bits, signed_a=True)
    eln2 = core.multiply_stages("e", par.ln2, "e_ln2", e_bits, par.ln2.bit_length(), signed_a=True)

    @levels(core.lv_add(par.sum_bits + 1))
    def total(m, v):
        tgs = Signal(signed(w + 1 + g_bits - par.tg_shift), name="t_g")
        m.d.comb += tgs.eq(v["tg_full"] >> par.tg_shift)
        s = Signal(signed(par.sum_bits + 1), name="log_sum")
        m.d.comb += s.eq(v["e_ln2"] + tgs)
        return core.pass_on(v, ("tg_full", "e_ln2"), log_sum=s)

    @levels(core.lv_add(par.sum_bits + 1) + 1)
    def magnitude(m, v):
        s = v["log_sum"]
        mag = Signal(par.sum_bits, name="log_mag")
        m.d.comb += mag.eq(Mux(s[-1], -s, s))
        return core.pass_on(v, ("log_sum",), sign=s[-1], sig=mag,
                            exp=Const(par.sum_bits - par.sum_frac - 1, signed(8)))

    def post(m, v, rounded):
        return {"r": core.special_result(fmt, v["nan"], v["inf"], v["inf_sign"], rounded)}

    return ([reduce] + normalize_stages(fmt) + [mantissa, argument] + kernel + [positive]
            + parallel(tg, eln2) + [total, magnitude]
            + core.round_stages(fmt, ftz, par.sum_bits, post,
                                exp_min=par.sum_bits - par.sum_frac - 1, shift_groups=2))


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
                FpFuncConfig, FpLog, FUNC_PRESETS, streaming_cycles,
                paper="IEEE 754-2019 §9.2 log, within 1 ulp (not correctly rounded)",
                activity=core.streaming_activity("log")),)
