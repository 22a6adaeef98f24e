"""Bit-exact golden model of ``fp_convert`` (mirrors hw/fp/convert.py step by step)."""
from __future__ import annotations

from pimforge.sim.golden.fp import core as fc

__all__ = ["fp_convert"]


def fp_convert(cfg, a):
    """Return the ``cfg.dst`` bit patterns of the ``cfg.src`` bit patterns ``a``, rounded to
    nearest even."""
    src, dst, ftz = cfg.src, cfg.dst, cfg.ftz
    u = fc.unpack(src, fc.as_bits(a, src), ftz)
    width = max(src.precision, dst.precision + 2)  # as hw/fp/convert.py sig_width
    sig = u["sig"] << (width - src.precision)
    rounded = fc.round_pack(dst, u["sign"], u["exp"], sig, width, ftz)
    return fc.special_result(dst, u["nan"], u["inf"], u["sign"], rounded)
