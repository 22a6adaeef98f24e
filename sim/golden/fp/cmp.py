"""Bit-exact golden model of ``fp_cmp`` (mirrors hw/fp/cmp.py step by step)."""
from __future__ import annotations

import numpy as np

from pimforge.sim.golden.fp import core as fc

__all__ = ["fp_cmp"]


def fp_cmp(cfg, a, b) -> dict:
    """Return ``{"less", "equal", "greater", "unordered", "max", "min"}`` int64 arrays for bit arrays
    ``a`` and ``b`` (flags are 0/1, ``max``/``min`` are bit patterns)."""
    fmt, ftz = cfg.fmt, cfg.ftz
    a = fc.as_bits(a, fmt)
    b = fc.as_bits(b, fmt)
    ua = fc.unpack(fmt, a, ftz)
    ub = fc.unpack(fmt, b, ftz)
    mag_mask = (1 << (fmt.width - 1)) - 1
    mag_a = np.where(ua["zero"], 0, a & mag_mask)
    mag_b = np.where(ub["zero"], 0, b & mag_mask)
    # Strict order with -0 < +0 (see hw/fp/cmp.py).
    a_below = np.where(ua["sign"] != ub["sign"], ua["sign"] == 1,
                       np.where(ua["sign"] == 1, mag_b < mag_a, mag_a < mag_b))
    same = (ua["sign"] == ub["sign"]) & (mag_a == mag_b)
    both_zero = ua["zero"] & ub["zero"]
    unordered = ua["nan"] | ub["nan"]
    eq = ~unordered & (same | both_zero)
    lt = ~unordered & ~both_zero & a_below
    gt = ~unordered & ~eq & ~lt
    eff_a = (ua["sign"] << (fmt.width - 1)) | mag_a
    eff_b = (ub["sign"] << (fmt.width - 1)) | mag_b
    hi = np.where(a_below, eff_b, eff_a)
    lo = np.where(a_below, eff_a, eff_b)
    return {
        "less": lt.astype(np.int64), "equal": eq.astype(np.int64), "greater": gt.astype(np.int64),
        "unordered": unordered.astype(np.int64),
        "max": np.where(unordered, fmt.canonical_nan, hi).astype(np.int64),
        "min": np.where(unordered, fmt.canonical_nan, lo).astype(np.int64),
    }
