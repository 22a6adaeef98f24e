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

    # The shift is a constant minus the exponent, clamped to [0, 62], and the saturation test is
    # a compare of the exponent: both are functions of the exponent field alone (a zero field
    # reads as 1, the same shift as a field of 1), so they are one decode of that field, a case
    # per value.  Written as arithmetic (zero test, subtraction, clamps) they became a chain of
    # LUTs, a carry chain and a clamp folded into the register's reset on ECP5, a long path
    # from the input where a decode is a few LUT levels.
    sh_const = fmt.frac_bits + par.log2e_frac - par.y_frac + fmt.bias
    shift_of = [min(62, max(0, sh_const - max(e, 1))) for e in range(1 << fmt.exp_bits)]
    big_from = par.sat_exp + fmt.bias    # fields at or above it saturate (includes Inf and NaN)

    # a decode of e bits: an AND tree over the field (lv_log(e)) into an OR of up to 2**e / 2
    # terms (e levels), and the flag gating after it (1)
    @levels(core.lv_log(fmt.exp_bits) + fmt.exp_bits + 1)
    def reduce(m, v):
        u = core.unpack(m, fmt, v["a"], ftz, name="a")
        field = v["a"][fmt.frac_bits:fmt.frac_bits + fmt.exp_bits]
        sh = Signal(range(63), name="y_shift")
        big = Signal(name="x_big")
        with m.Switch(field):
            for e, amount in enumerate(shift_of):
                with m.Case(e):
                    m.d.comb += [sh.eq(amount), big.eq(e >= big_from)]
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
                FpFuncConfig, FpExp, FUNC_PRESETS, streaming_cycles,
                paper="IEEE 754-2019 §9.2 exp, within 1 ulp (not correctly rounded)",
                activity=core.streaming_activity("exp")),)
