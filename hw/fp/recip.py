"""``fp_recip``: ``r = 1 / a``.

The input is normalized (leading-zero count for subnormals) to ``2**e * m`` with ``m`` in [1, 2);
``1 / m`` in (0.5, 1] comes from a piecewise-quadratic table indexed by the top fraction bits
(exact for ``m = 1``, so powers of two give exact results) and
:func:`~pimforge.hw.fp.core.round_stages` applies ``2**-e``: huge inputs give correctly rounded
subnormals (or zero), tiny ones Inf.  recip(±0) = ±Inf, recip(±Inf) = ±0, recip(NaN) = NaN.
"""
from __future__ import annotations

from amaranth.hdl import Cat, Const, Mux, Signal

from pimforge.hw.core.pipeline import levels, streaming_cycles
from pimforge.hw.core.unit import HwUnit
from pimforge.hw.fp import core
from pimforge.hw.fp.config import FUNC_PRESETS, FpFuncConfig
from pimforge.hw.fp.func_common import FpFuncUnit, normalize_stages, quad_stages
from pimforge.hw.fp.func_tables import recip_params

__all__ = ["FpRecip", "recip_stages"]


def recip_stages(fmt, ftz):
    """The reciprocal datapath as pipeline stages over a dict with key ``a`` (bit pattern):
    unpack, subnormal normalization, the table kernel, then the shared normalize, round and
    pack."""
    tab = recip_params(fmt).table

    @levels(core.lv_add(fmt.exp_bits + 2))
    def reduce(m, v):
        u = core.unpack(m, fmt, v["a"], ftz, name="a")
        return {"sig": u["sig"], "exp": u["exp"], **{k: u[k] for k in ("sign", "nan", "zero", "inf")}}

    def fraction(m, v):
        return core.pass_on(v, ("sig",), frac=v["sig"][:fmt.frac_bits])
    fraction.levels = 0

    kernel = quad_stages(tab, "frac", "inv", name="inv")     # 1 / m, in (0.5, 1]

    @levels(core.lv_add(fmt.exp_bits + 4))
    def prepare(m, v):
        e = Signal(core.exp_shape(fmt, 2), name="r_exp")
        m.d.comb += e.eq(-v["exp"])
        return core.pass_on(v, ("inv", "exp"), exp=e, sig=v["inv"][:tab.out_frac + 1])

    def post(m, v, rounded):
        rounded = Mux(v["inf"], Cat(Const(0, fmt.width - 1), v["sign"]), rounded)
        return {"r": core.special_result(fmt, v["nan"], v["zero"], v["sign"], rounded)}

    # the normalized input exponent is at most emax, so 2**-e never needs more than emax + 1
    return ([reduce] + normalize_stages(fmt) + [fraction] + kernel + [prepare]
            + core.round_stages(fmt, ftz, tab.out_frac + 1, post, exp_min=-fmt.emax,
                                shift_groups=2))


class FpRecip(FpFuncUnit):
    """Pipelined reciprocal (``fp_recip``): stream ``i`` field ``a`` -> stream ``o`` field
    ``r = 1 / a``.  Latency ``pipeline_depth`` cycles, one operation per cycle.

    Parameters
    ----------
    cfg : FpFuncConfig
    """

    UNIT = "fp_recip"

    def stages(self):
        return recip_stages(self.cfg.fmt, self.cfg.ftz)


UNITS = (HwUnit("fp_recip", "float reciprocal 1/a, table + quadratic, <= 1 ulp (i: a -> o: r)",
                FpFuncConfig, FpRecip, FUNC_PRESETS, streaming_cycles,
                paper="IEEE 754-2019 §3.4 formats; 1 / a within 1 ulp (not correctly rounded)",
                activity=core.streaming_activity("recip")),)
