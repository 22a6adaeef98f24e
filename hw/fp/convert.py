"""``fp_convert``: conversion between any two float formats, round to nearest even.

The source is unpacked (its exponent is already unbiased, so rebasing onto the destination is
only a matter of handing it to the destination's rounding), its significand is padded with zero
bits on the right to at least the destination precision + 2 bits (the rounding core's guard and sticky
positions), and the shared :func:`~pimforge.hw.fp.core.round_stages` of the destination normalizes
source subnormals, denormalizes into the destination's subnormal range, rounds and detects
overflow (which gives Inf).  NaN gives the destination's canonical quiet NaN, Inf keeps its sign,
and zeros keep their sign.  A significand wider than the padding target needs no sticky bit: the
whole source value reaches the rounding unchanged.
"""
from __future__ import annotations

import itertools

from amaranth.hdl import Cat, Const

from pimforge.hw.core.component import PipelinedUnit
from pimforge.hw.core.payload import fp
from pimforge.hw.core.pipeline import levels, streaming_cycles
from pimforge.hw.core.unit import HwUnit
from pimforge.hw.fp import core
from pimforge.hw.fp.config import FpConvertConfig

__all__ = ["FpConvert", "convert_stages", "sig_width"]


def sig_width(src, dst) -> int:
    """Width of the significand handed to the destination's rounding stages."""
    return max(src.precision, dst.precision + 2)


def convert_stages(src, dst, ftz):
    """The conversion datapath as pipeline stages over a dict with key ``a`` (src bits): unpack,
    then the shared normalize, round and pack of the destination."""
    pad = sig_width(src, dst) - src.precision

    @levels(core.lv_add(src.exp_bits + 2))
    def unpack(m, v):
        a = core.unpack(m, src, v["a"], ftz, name="a")
        # The source MSB (hidden-bit position) has weight 2**exp, the rounding core's convention.
        sig = Cat(Const(0, pad), a["sig"]) if pad else a["sig"]
        return {"sign": a["sign"], "nan": a["nan"], "inf": a["inf"], "exp": a["exp"], "sig": sig}

    def post(m, v, rounded):
        return {"r": core.special_result(dst, v["nan"], v["inf"], v["sign"], rounded)}

    return [unpack] + core.round_stages(dst, ftz, sig_width(src, dst), post, exp_min=src.emin,
                                        shift_groups=2, exp_max=src.emax)


class FpConvert(PipelinedUnit):
    """Pipelined float-to-float converter (``fp_convert``).

    Input stream ``i`` carries field ``a`` in the ``src`` format; output stream ``o`` carries
    ``r``, the value of ``a`` rounded to the ``dst`` format.  Latency is ``pipeline_depth`` cycles
    and throughput one conversion per cycle.

    Parameters
    ----------
    cfg : FpConvertConfig
    """

    UNIT = "fp_convert"

    def __init__(self, cfg: FpConvertConfig):
        super().__init__(cfg, {"a": fp(cfg.src)}, {"r": fp(cfg.dst)})

    def stages(self):
        return convert_stages(self.cfg.src, self.cfg.dst, self.cfg.ftz)


CONVERT_PRESETS = {f"{s}_to_{d}": {"src": s, "dst": d}
                   for s, d in itertools.permutations(("fp16", "bf16", "fp32"), 2)}

UNITS = (HwUnit("fp_convert", "float-to-float format conversion, RNE, subnormals, pipelined "
                "(i: a -> o: r = a in dst format)",
                FpConvertConfig, FpConvert, CONVERT_PRESETS, streaming_cycles,
                paper="IEEE 754-2019 §5.4.2 convertFormat",
                activity=core.streaming_activity("convert", "dst")),)
