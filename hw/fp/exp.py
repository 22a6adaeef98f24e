"""``fp_exp``: ``r = exp(a)``.

Range reduction ``x log2(e) = n + f`` (``n`` an integer, ``f`` in [0, 1)) in fixed point: the
significand is multiplied by a ``log2e_frac``-bit constant and shifted to ``y_frac`` fraction
bits, so the reduced argument is exact to about 2**-y_frac for every input that does not saturate.
``2**f`` comes from a piecewise-quadratic table (:mod:`~pimforge.hw.fp.func_tables`) and
:func:`~pimforge.hw.fp.core.round_stages` applies ``2**n``, which gives Inf on overflow and correctly
rounded subnormals (or zero) on underflow.  exp(NaN) = NaN, exp(+Inf) = +Inf, exp(-Inf) = +0,
exp(±0) = 1 exactly.
"""
from __future__ import annotations

from amaranth.hdl import Const, Mux, Signal, signed

from pimforge.hw.core.pipeline import levels, streaming_cycles
from pimforge.hw.core.unit import HwUnit
from pimforge.hw.fp import core
from pimforge.hw.fp.config import FUNC_PRESETS, FpFuncConfig
from pimforge.hw.fp.func_common import FpFuncUnit, quad_stages
from pimforge.hw.fp.func_tables import exp_params

__all__ = ["FpExp", "exp_stages"]


def exp_stages(fmt, ftz):
    """The exp datapath as pipeline stages over a dict with key ``a`` (bit pattern): unpack,
    the constant multiply by log2(e) (carry-save), the alignment shift, the sign, the table
    kernel, then the shared normalize, round and pack."""
    par = exp_params(fmt)
    tab = par.table
    kb = par.log2e.bit_length()
    pw = fmt.precision + kb

    # The shift is a constant minus the exponent, clamped to [0, 62].  The bias folds into the
    # constant, so it is one subtraction from the biased field ``exp_raw``, and the clamp and
    # saturation tests compare that field with constants beside it (the unbiased exponent would
    # put a second adder in front: ECP5 measured 16 logic cells from the input, exp fp32 at
    # depth 24).
    sh_const = fmt.frac_bits + par.log2e_frac - par.y_frac + fmt.bias

    @levels(core.lv_add(fmt.exp_bits + 1) + 2 * core.LV_MUX)
    def reduce(m, v):
        u = core.unpack(m, fmt, v["a"], ftz, name="a")
        raw = u["exp_raw"]
        diff = Signal(fmt.exp_bits + 1, name="y_shift_raw")
        m.d.comb += diff.eq(sh_const - raw)
        # saturating inputs may ask for a left shift (raw > sh_const), but their result is
        # replaced below, so clamping to 0 is harmless
        sh = Signal(range(63), name="y_shift")
        m.d.comb += sh.eq(Mux(raw > sh_const, 0, Mux(raw < sh_const - 62, 62, diff)))
        big = raw >= par.sat_exp + fmt.bias   # includes Inf and NaN
        return {"x_sig": u["sig"], "y_shift": sh, "x_sign": u["sign"], "nan": u["nan"],
                "overflow": big & ~u["sign"] & ~u["nan"], "underflow": big & u["sign"] & ~u["nan"]}

    product = core.multiply_stages("x_sig", par.log2e, "x_log2e", fmt.precision, kb)
    shift = core.shifter_stages("x_log2e", "y_shift", "y", pw, core.amount_bits(pw, 6), False, 2,
                                "ysh")

    @levels(core.lv_add(pw + 1) + 1)
    def split(m, v):
        t = Signal(signed(pw + 1), name="y_signed")
        m.d.comb += t.eq(Mux(v["x_sign"], -v["y"], v["y"]))
        return core.pass_on(v, ("y", "x_sign"), n=t[par.y_frac:].as_signed(), f=t[:par.y_frac])

    kernel = quad_stages(tab, "f", "pow2", name="pow2")   # 2**f, in [1, 2]

    @levels(core.lv_add(pw))
    def prepare(m, v):
        exp = Signal(signed(len(v["n"]) + 1), name="r_exp")
        m.d.comb += exp.eq(v["n"] + 1)
        return core.pass_on(v, ("n", "pow2"), exp=exp, sig=v["pow2"][:tab.out_frac + 2],
                            sign=Const(0, 1))

    def post(m, v, rounded):
        rounded = Mux(v["underflow"], 0, rounded)
        return {"r": core.special_result(fmt, v["nan"], v["overflow"], Const(0, 1), rounded)}

    return ([reduce] + product + shift + [split] + kernel + [prepare]
            + core.round_stages(fmt, ftz, tab.out_frac + 2, post, shift_groups=2))


class FpExp(FpFuncUnit):
    """Pipelined exponential (``fp_exp``): stream ``i`` field ``a`` -> stream ``o`` field
    ``r = exp(a)``.  Latency ``pipeline_depth`` cycles, one operation per cycle.

    Parameters
    ----------
    cfg : FpFuncConfig
    """

    UNIT = "fp_exp"

    def stages(self):
        return exp_stages(self.cfg.fmt, self.cfg.ftz)


UNITS = (HwUnit("fp_exp", "float exponential exp(a), table + quadratic, <= 1 ulp (i: a -> o: r)",
                FpFuncConfig, FpExp, FUNC_PRESETS, streaming_cycles),)
