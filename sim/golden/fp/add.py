"""Bit-exact golden model of ``fp_add`` / ``fp_sub`` (mirrors hw/fp/add.py step by step)."""
from __future__ import annotations

import numpy as np

from pimforge.sim.golden.fp import core as fc

__all__ = ["fp_add"]


def fp_add(cfg, a, b, subtract: bool = False) -> np.ndarray:
    """Return the bit patterns of ``a + b`` (or ``a - b``) for arrays of bit patterns."""
    fmt, ftz = cfg.fmt, cfg.ftz
    a = fc.as_bits(a, fmt)
    b = fc.as_bits(b, fmt)
    ua = fc.unpack(fmt, a, ftz)
    ub = fc.unpack(fmt, b, ftz)
    sb = ub["sign"] ^ int(subtract)
    mag_mask = (1 << (fmt.width - 1)) - 1
    a_big = (a & mag_mask) >= (b & mag_mask)
    e_big = np.where(a_big, ua["exp"], ub["exp"])
    e_small = np.where(a_big, ub["exp"], ua["exp"])
    big = np.where(a_big, ua["sig"], ub["sig"]) << 3
    small = fc.shift_right_sticky(np.where(a_big, ub["sig"], ua["sig"]) << 3, e_big - e_small,
                                  fmt.precision + 3)
    s_big = np.where(a_big, ua["sign"], sb)
    s_small = np.where(a_big, sb, ua["sign"])
    total = np.where(s_big == s_small, big + small, big - small)
    sign = np.where(total == 0, s_big & s_small, s_big)
    rounded = fc.round_pack(fmt, sign, e_big + 1, total, fmt.precision + 4, ftz)
    nan = ua["nan"] | ub["nan"] | (ua["inf"] & ub["inf"] & (ua["sign"] != sb))
    inf = ua["inf"] | ub["inf"]
    inf_sign = np.where(ua["inf"], ua["sign"], sb)
    return fc.special_result(fmt, nan, inf, inf_sign, rounded)
