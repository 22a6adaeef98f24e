"""Numerics shared by the generators and their golden models.

A constant that both a unit's RTL and its golden model need (a score format, the bit pattern of
a scale, how a token range is cut into blocks or spread over PUs) lives here, in the base layer,
so that ``hw`` never reaches up into ``sim`` for it.
"""
from __future__ import annotations

import math

import numpy as np

from pimforge.base.formats import FP32

__all__ = ["SCORE", "log2_exact", "next_pow2", "float_bits", "bits_float", "scale_bits",
           "mask_bits", "block_starts", "spread"]

SCORE = FP32
"""PAM's score format: scores, maxima, their differences and the log-sum-exp stay fp32 whatever
the accumulator (see :mod:`pimforge.sim.golden.pam.common`)."""


def log2_exact(n: int) -> int:
    """log2 of a power of two (the index of its highest set bit)."""
    return n.bit_length() - 1


def next_pow2(n: int) -> int:
    """The smallest power of two >= ``n`` (1 for ``n`` <= 1)."""
    p = 1
    while p < n:
        p *= 2
    return p


def _np_types(fmt):
    if fmt.width == 16:
        return np.float16, np.uint16
    if fmt.width == 32:
        return np.float32, np.uint32
    raise ValueError(f"only fp16 and fp32 have NumPy types, not {fmt.name}")


def float_bits(fmt, values) -> np.ndarray:
    """Bit patterns of ``values`` rounded to ``fmt`` (fp16 or fp32; NumPy rounds to nearest even)."""
    ftype, itype = _np_types(fmt)
    return np.asarray(values, dtype=np.float64).astype(ftype).view(itype).astype(np.int64)


def bits_float(fmt, bits) -> np.ndarray:
    """float64 values of ``fmt`` bit patterns."""
    ftype, itype = _np_types(fmt)
    return np.asarray(bits, dtype=np.int64).astype(itype).view(ftype).astype(np.float64)


def scale_bits(scale: float) -> int:
    """The score scale as a score-format (fp32) constant."""
    return int(float_bits(SCORE, [scale])[0])


def mask_bits(mask_value: float) -> int:
    """The fp32 bit pattern a masked score becomes (round to nearest even)."""
    return int(float_bits(FP32, [mask_value])[0])


def block_starts(n: int, block: int, segments=None) -> list:
    """``(start, end)`` of every block: chunks of ``block`` positions inside each segment
    (``segments`` = segment lengths summing to n; default one segment)."""
    segments = [n] if segments is None else [int(s) for s in segments]
    if sum(segments) != n:
        raise ValueError(f"segments {segments} do not add up to {n} positions")
    out, a = [], 0
    for seg in segments:
        for b in range(a, a + seg, block):
            out.append((b, min(b + block, a + seg)))
        a += seg
    return out


def spread(n: int, weights) -> list:
    """Split ``n`` tokens into contiguous counts in proportion to ``weights`` (largest remainder;
    ties go to the earlier part)."""
    w = [float(x) for x in weights]
    total = sum(w)
    if total <= 0 or any(x < 0 for x in w):
        raise ValueError("weights must be non-negative with a positive sum")
    exact = [n * x / total for x in w]
    counts = [int(math.floor(e)) for e in exact]
    rest = n - sum(counts)
    order = sorted(range(len(w)), key=lambda i: (-(exact[i] - counts[i]), i))
    for i in order[:rest]:
        counts[i] += 1
    return counts
