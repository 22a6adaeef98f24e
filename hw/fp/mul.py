"""``fp_mul``: IEEE multiplication, round to nearest even.

The two significands (hidden bit explicit, subnormals included) are multiplied exactly into
``2 * precision`` bits whose most significant bit has weight ``2**(ea + eb + 1)``; the shared
:func:`~pimforge.hw.fp.core.round_stages` normalizes, denormalizes and rounds that product once.
The same datapath with a narrower operand format gives the widening multiply
:func:`mul_wide_stages` (fp16 x fp16 -> fp32 in the PAM score path).
"""
from __future__ import annotations

from amaranth.hdl import Cat, Const, Signal

from pimforge.hw.core.component import PipelinedUnit
from pimforge.hw.core.payload import fp
from pimforge.hw.core.pipeline import levels, streaming_cycles
from pimforge.hw.core.unit import HwUnit
from pimforge.hw.fp import core
from pimforge.hw.fp.config import FORMAT_PRESETS, FpConfig

__all__ = ["FpMul", "mul_stages", "mul_wide_stages"]


def mul_stages(fmt, ftz):
    """The multiply datapath as pipeline stages over a dict with keys ``a`` and ``b``."""
    return mul_wide_stages(fmt, fmt, ftz)


def mul_wide_stages(src, dst, ftz):
    """A (widening) multiply: two ``src`` operands, the product in ``dst``, rounded once.

    Equal to ``mul_dst(convert(a), convert(b))`` bit for bit (the conversions are exact), but the
    significand multiplier is only ``src.precision`` bits wide.  When ``dst`` has at least twice
    the precision and enough exponent range (fp16 x fp16 -> fp32), the product is always exact.
    The PAM score path uses it for fp16 Q x K products in fp32.
    """
    pad = max(0, dst.precision + 2 - 2 * src.precision)
    p = src.precision

    @levels(core.lv_add(src.exp_bits + 1) + 1)
    def unpack(m, v):
        a = core.unpack(m, src, v["a"], ftz, name="a")
        b = core.unpack(m, src, v["b"], ftz, name="b")
        # Inf * 0 is invalid; any other Inf operand gives an Inf of the product's sign.
        invalid = (a["inf"] & b["zero"]) | (a["zero"] & b["inf"])
        # ea + eb + 1 = raw_a + raw_b + (1 - 2 bias): the constant is added after the multiplier
        e_sum = Signal(src.exp_bits + 1, name="e_sum")
        m.d.comb += e_sum.eq(a["exp_raw"] + b["exp_raw"])
        return {"sign": a["sign"] ^ b["sign"], "e_sum": e_sum, "sa": a["sig"], "sb": b["sig"],
                "nan": a["nan"] | b["nan"] | invalid, "inf": a["inf"] | b["inf"]}

    def widen(m, v):
        # beside the multiplier's last adder: its input has been registered since unpack
        exp = Signal(core.exp_shape(src, 1), name="prod_exp")
        m.d.comb += exp.eq(v["e_sum"] + (1 - 2 * src.bias))
        return core.pass_on(v, ("prod", "e_sum"), exp=exp,
                            sig=Cat(Const(0, pad), v["prod"]) if pad else v["prod"])
    widen.levels = 0

    def post(m, v, rounded):
        return {"r": core.special_result(dst, v["nan"], v["inf"], v["sign"], rounded)}

    # 2 * emin + 1 <= exp <= 2 * emax + 1 (two subnormal operands' exponents; two largest)
    return [unpack] + core.multiply_stages("sa", "sb", "prod", p, p) + [widen] + core.round_stages(
        dst, ftz, 2 * p + pad, post, exp_min=2 * src.emin + 1, shift_groups=2,
        exp_max=2 * src.emax + 1)


class FpMul(PipelinedUnit):
    """Pipelined float multiplier (``fp_mul``).

    Input stream ``i`` carries fields ``a`` and ``b``; output stream ``o`` carries ``r = a * b``,
    rounded once to nearest even.  Latency is ``pipeline_depth`` cycles and throughput one
    operation per cycle.

    Parameters
    ----------
    cfg : FpConfig
    """

    UNIT = "fp_mul"

    def __init__(self, cfg: FpConfig):
        fmt = cfg.fmt
        super().__init__(cfg, {"a": fp(fmt), "b": fp(fmt)}, {"r": fp(fmt)})

    def stages(self):
        return mul_stages(self.cfg.fmt, self.cfg.ftz)


UNITS = (HwUnit("fp_mul", "IEEE float multiplier, RNE, subnormals, pipelined (i: a, b -> o: r = a * b)",
                FpConfig, FpMul, FORMAT_PRESETS, streaming_cycles,
                paper="IEEE 754-2019 §5.4.1 multiplication",
                activity=core.streaming_activity("mul")),)
