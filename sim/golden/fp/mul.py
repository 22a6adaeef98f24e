"""Bit-exact golden model of ``fp_mul`` (mirrors hw/fp/mul.py step by step).

The exact product has ``2p`` bits (``p`` = precision), so formats up to ``p = 31`` fit int64.
"""
from __future__ import annotations

import numpy as np

from pimforge.sim.golden.fp import core as fc

__all__ = ["fp_mul"]


def fp_mul(cfg, a, b) -> np.ndarray:
    """Return the bit patterns of ``a * b`` for arrays of bit patterns."""
    fmt, ftz = cfg.fmt, cfg.ftz
    ua = fc.unpack(fmt, a, ftz)
    ub = fc.unpack(fmt, b, ftz)
    sign = ua["sign"] ^ ub["sign"]
    prod = ua["sig"] * ub["sig"]  # exact: 2 * precision bits, at most 48 for fp32
    rounded = fc.round_pack(fmt, sign, ua["exp"] + ub["exp"] + 1, prod, 2 * fmt.precision, ftz)
    invalid = (ua["inf"] & ub["zero"]) | (ua["zero"] & ub["inf"])
    nan = ua["nan"] | ub["nan"] | invalid
    inf = ua["inf"] | ub["inf"]
    return fc.special_result(fmt, nan, inf, sign, rounded)
