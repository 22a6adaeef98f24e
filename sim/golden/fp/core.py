"""Vectorized NumPy mirror of :mod:`pimforge.hw.fp.core` (same conventions, same rounding points).

All arrays are ``np.int64`` holding bit patterns or significands; significands stay below 2**62.
"""
from __future__ import annotations

import numpy as np

from pimforge.base.formats import FloatFormat

__all__ = ["unpack", "bit_length", "shift_right_sticky", "round_pack", "special_result", "as_bits"]


def as_bits(x, fmt: FloatFormat) -> np.ndarray:
    a = np.asarray(x, dtype=np.int64)
    return a & ((1 << fmt.width) - 1)


def unpack(fmt: FloatFormat, x, ftz: bool = False) -> dict:
    x = as_bits(x, fmt)
    e_field = (x >> fmt.frac_bits) & fmt.exp_all_ones
    f_field = x & ((1 << fmt.frac_bits) - 1)
    sign = (x >> (fmt.width - 1)) & 1
    e_zero = e_field == 0
    e_ones = e_field == fmt.exp_all_ones
    exp = np.where(e_zero, fmt.emin, e_field - fmt.bias).astype(np.int64)
    if ftz:
        sig = np.where(e_zero, 0, f_field | (1 << fmt.frac_bits))
        zero = e_zero
    else:
        sig = np.where(e_zero, f_field, f_field | (1 << fmt.frac_bits))
        zero = e_zero & (f_field == 0)
    return {"sign": sign, "exp": exp, "sig": sig.astype(np.int64), "zero": zero,
            "inf": e_ones & (f_field == 0), "nan": e_ones & (f_field != 0)}


def bit_length(v) -> np.ndarray:
    """Number of significant bits of each non-negative int64 (0 for 0)."""
    v = np.asarray(v, dtype=np.int64).copy()
    n = np.zeros(v.shape, dtype=np.int64)
    for s in (32, 16, 8, 4, 2, 1):
        big = v >= (np.int64(1) << s)
        n = np.where(big, n + s, n)
        v = np.where(big, v >> s, v)
    return n + (v > 0)


def shift_right_sticky(value, amount, width: int) -> np.ndarray:
    value = np.asarray(value, dtype=np.int64)
    amt = np.minimum(np.asarray(amount, dtype=np.int64), width + 1)
    amt = np.minimum(amt, 62)
    shifted = value >> amt
    lost = (shifted << amt) != value
    return shifted | lost.astype(np.int64)


def round_pack(fmt: FloatFormat, sign, exp, sig, width: int, ftz: bool = False) -> np.ndarray:
    """Mirror of ``core.round_pack``: ``sig`` has ``width`` bits, MSB weight ``2**exp``, sticky in LSB."""
    assert width >= fmt.precision + 2 and width <= 62
    sign = np.asarray(sign, dtype=np.int64)
    exp = np.asarray(exp, dtype=np.int64)
    sig = np.asarray(sig, dtype=np.int64)
    lz = width - bit_length(sig)
    e_norm = exp - lz
    normal = e_norm >= fmt.emin
    shl = np.where(normal, lz, exp - fmt.emin)
    e_out = np.where(normal, e_norm, fmt.emin)
    mask = (np.int64(1) << width) - 1
    left = (sig << np.clip(shl, 0, width)) & mask
    right = shift_right_sticky(sig, np.where(shl < 0, -shl, 0), width)
    mag = np.where(shl >= 0, left, right)
    p = fmt.precision
    mant = mag >> (width - p)
    guard = (mag >> (width - p - 1)) & 1
    sticky = (mag & ((np.int64(1) << (width - p - 1)) - 1)) != 0
    round_up = guard & (sticky | (mant & 1))
    mant_r = mant + round_up
    carry = (mant_r >> p) & 1
    hidden = ((mant_r >> (p - 1)) & 1) | carry
    e_fin = e_out + carry + fmt.bias
    overflow = (hidden == 1) & (e_fin >= fmt.exp_all_ones)
    frac = np.where(carry == 1, 0, mant_r & ((1 << fmt.frac_bits) - 1))
    biased = np.where(hidden == 1, e_fin & fmt.exp_all_ones, 0)
    out = (sign << (fmt.width - 1)) | (biased << fmt.frac_bits) | frac
    out = np.where(overflow, (sign << (fmt.width - 1)) | fmt.inf, out)
    if ftz:
        out = np.where((hidden == 0) & ~overflow, sign << (fmt.width - 1), out)
    return out.astype(np.int64)


def special_result(fmt: FloatFormat, is_nan, is_inf, inf_sign, rounded) -> np.ndarray:
    inf = (np.asarray(inf_sign, dtype=np.int64) << (fmt.width - 1)) | fmt.inf
    return np.where(is_nan, fmt.canonical_nan, np.where(is_inf, inf, rounded)).astype(np.int64)
