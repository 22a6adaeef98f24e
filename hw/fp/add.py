"""``fp_add``: IEEE addition or subtraction, round to nearest even.

Far/near paths are merged: the larger magnitude is selected by comparing the magnitude bits,
the smaller significand is aligned with three extra bits (guard, round, sticky-in-LSB), the two
are added or subtracted exactly, and the shared :func:`~pimforge.hw.fp.core.round_pack`
normalizes and rounds.  ``x - x`` gives +0; ``-0 + -0`` gives -0.
"""
from __future__ import annotations

from amaranth.hdl import Mux

from pimforge.hw.core.component import PipelinedUnit
from pimforge.hw.core.payload import fp
from pimforge.hw.core.pipeline import streaming_cycles
from pimforge.hw.core.unit import HwUnit
from pimforge.hw.fp import core
from pimforge.hw.fp.config import FORMAT_PRESETS, FpConfig

__all__ = ["FpAdd", "add_stages"]


def add_stages(fmt, ftz, subtract):
    """The add datapath as pipeline stages over a dict with keys ``a`` and ``b`` (bit patterns)."""
    p = fmt.precision

    def align(m, v):
        a = core.unpack(m, fmt, v["a"], ftz, name="a")
        b = core.unpack(m, fmt, v["b"], ftz, name="b")
        sb = b["sign"] ^ int(subtract)
        a_big = v["a"][:fmt.width - 1] >= v["b"][:fmt.width - 1]
        e_big = Mux(a_big, a["exp"], b["exp"])
        e_small = Mux(a_big, b["exp"], a["exp"])
        sig_big = Mux(a_big, a["sig"], b["sig"]) << 3
        sig_small = Mux(a_big, b["sig"], a["sig"]) << 3
        small = core.shift_right_sticky(m, sig_small, (e_big - e_small).as_unsigned(), name="align")
        return {
            "s_big": Mux(a_big, a["sign"], sb), "s_small": Mux(a_big, sb, a["sign"]),
            "e_big": e_big, "big": sig_big, "small": small,
            "nan": a["nan"] | b["nan"] | (a["inf"] & b["inf"] & (a["sign"] != sb)),
            "inf": a["inf"] | b["inf"], "inf_sign": Mux(a["inf"], a["sign"], sb),
        }

    return [align] + core.aligned_add_stages(fmt, ftz, p + 4)


class FpAdd(PipelinedUnit):
    """Pipelined float adder (``fp_add``) or subtractor (``fp_sub``).

    Input stream ``i`` carries fields ``a`` and ``b``; output stream ``o`` carries ``r = a + b``
    (or ``a - b``).  Latency is ``pipeline_depth`` cycles and throughput one operation per cycle.

    Parameters
    ----------
    cfg : FpConfig
    subtract : bool
        Compute ``a - b`` instead of ``a + b``.
    """

    UNIT = "fp_add"

    def __init__(self, cfg: FpConfig, subtract: bool = False):
        self.subtract = subtract
        if subtract:
            self.UNIT = "fp_sub"
        fmt = cfg.fmt
        super().__init__(cfg, {"a": fp(fmt), "b": fp(fmt)}, {"r": fp(fmt)})

    def stages(self):
        return add_stages(self.cfg.fmt, self.cfg.ftz, self.subtract)


UNITS = (
    HwUnit("fp_add", "IEEE float adder, RNE, subnormals, pipelined (i: a, b -> o: r = a + b)",
           FpConfig, FpAdd, FORMAT_PRESETS, streaming_cycles),
    HwUnit("fp_sub", "IEEE float subtractor, RNE, subnormals, pipelined (i: a, b -> o: r = a - b)",
           FpConfig, lambda cfg: FpAdd(cfg, subtract=True), FORMAT_PRESETS, streaming_cycles),
)
