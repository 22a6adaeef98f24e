"""Bit-exact golden model of ``fp_fma``.

It normalizes the exact product and ``c``, orders them by magnitude and aligns the smaller one,
which is not how hw/fp/fma.py gets there (it aligns ``c`` against the unnormalized product in a
``3p + 6``-bit window, which would not fit int64 for fp32).  A fused multiply-add rounded once
to nearest even has one correct result, and NaN is always the format's canonical NaN, so the
two agree bit for bit; the RTL bench and Berkeley SoftFloat check that.

The widest intermediate is the ``2p + 4``-bit sum (``p`` = precision): 52 bits for fp32, so
formats up to ``p = 29`` fit the int64 arrays.
"""
from __future__ import annotations

import numpy as np

from pimforge.sim.golden.fp import core as fc

__all__ = ["fp_fma"]


def _normalize(sig, exp, width):
    """Shift ``sig`` left until bit ``width - 1`` is set (all the way for zero); adjust ``exp``."""
    lz = width - fc.bit_length(sig)
    return sig << lz, exp - lz


def fp_fma(cfg, a, b, c) -> np.ndarray:
    """Return the bit patterns of the fused ``a * b + c`` (one rounding) for bit-pattern arrays."""
    fmt, ftz = cfg.fmt, cfg.ftz
    p = fmt.precision
    w = 2 * p
    ua = fc.unpack(fmt, a, ftz)
    ub = fc.unpack(fmt, b, ftz)
    uc = fc.unpack(fmt, c, ftz)
    s_prod = ua["sign"] ^ ub["sign"]
    s_c = uc["sign"]
    prod_n, ep = _normalize(ua["sig"] * ub["sig"], ua["exp"] + ub["exp"] + 1, w)
    c_n, ec = _normalize(uc["sig"] << p, uc["exp"], w)
    p_zero = prod_n == 0
    c_zero = c_n == 0
    p_big = c_zero | (~p_zero & ((ep > ec) | ((ep == ec) & (prod_n >= c_n))))
    e_big = np.where(p_big, ep, ec)
    e_small = np.where(p_big, ec, ep)
    amount = np.maximum(e_big - e_small, 0)
    big = np.where(p_big, prod_n, c_n) << 3
    small = fc.shift_right_sticky(np.where(p_big, c_n, prod_n) << 3, amount, w + 3)
    s_big = np.where(p_big, s_prod, s_c)
    s_small = np.where(p_big, s_c, s_prod)
    total = np.where(s_big == s_small, big + small, big - small)
    sign = np.where(total == 0, s_prod & s_c, s_big)
    rounded = fc.round_pack(fmt, sign, e_big + 1, total, w + 4, ftz)
    prod_inf = ua["inf"] | ub["inf"]
    invalid = ((ua["inf"] & ub["zero"]) | (ua["zero"] & ub["inf"])
               | (prod_inf & uc["inf"] & (s_prod != s_c)))
    nan = ua["nan"] | ub["nan"] | uc["nan"] | invalid
    inf = prod_inf | uc["inf"]
    inf_sign = np.where(prod_inf, s_prod, s_c)
    return fc.special_result(fmt, nan, inf, inf_sign, rounded)
