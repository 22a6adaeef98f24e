"""``fp_recip``: ``r = 1 / a``.

The input is normalized (leading-zero count for subnormals) to ``2**e * m`` with ``m`` in [1, 2);
``1 / m`` in (0.5, 1] comes from a piecewise-quadratic table indexed by the top fraction bits
(exact for ``m = 1``, so powers of two give exact results) and
:func:`~pimforge.hw.fp.core.round_pack` applies ``2**-e``: huge inputs give correctly rounded
subnormals (or zero), tiny ones Inf.  recip(±0) = ±Inf, recip(±Inf) = ±0, recip(NaN) = NaN.
"""
from __future__ import annotations

from amaranth.hdl import Cat, Const, Mux

from pimforge.hw.core.pipeline import streaming_cycles
from pimforge.hw.core.unit import HwUnit
from pimforge.hw.fp import core
from pimforge.hw.fp.config import FUNC_PRESETS, FpFuncConfig
from pimforge.hw.fp.func_common import FpFuncUnit, normalize, quad_eval
from pimforge.hw.fp.func_tables import recip_params

__all__ = ["FpRecip", "recip_stages"]


def recip_stages(fmt, ftz):
    """The reciprocal datapath as pipeline stages over a dict with key ``a`` (bit pattern)."""
    tab = recip_params(fmt).table
    flags = ("sign", "nan", "zero", "inf")

    def reduce(m, v):
        u = core.unpack(m, fmt, v["a"], ftz, name="a")
        e, sig = normalize(m, fmt, u, name="norm")
        return {"e": e, "frac": sig[:fmt.frac_bits], **{k: u[k] for k in flags}}

    def kernel(m, v):
        g = quad_eval(m, tab, v["frac"], name="inv")     # 1 / m, in (0.5, 1]
        return {"e": v["e"], "g": g[:tab.out_frac + 1], **{k: v[k] for k in flags}}

    def normalize_result(m, v):
        r = core.round_shift(m, fmt, -v["e"], v["g"], name="rp")
        return {**r, **{k: v[k] for k in flags}}

    def finish(m, v):
        rounded = core.round_finish(m, fmt, v["sign"], v["e_out"], v["mag"], ftz=ftz, name="rp")
        rounded = Mux(v["inf"], Cat(Const(0, fmt.width - 1), v["sign"]), rounded)
        return {"r": core.special_result(fmt, v["nan"], v["zero"], v["sign"], rounded)}

    return [reduce, kernel, normalize_result, finish]


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
                FpFuncConfig, FpRecip, FUNC_PRESETS, streaming_cycles),)
