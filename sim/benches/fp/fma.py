"""Bench of ``fp_fma``: corners, random triples and near-cancellation triples."""
from __future__ import annotations

import numpy as np

from pimforge.hw.fp.config import FpConfig
from pimforge.sim.benches.fp.common import corner_tuples, operand_job, random_operands
from pimforge.sim.golden.fp.fma import fp_fma
from pimforge.sim.golden.fp.mul import fp_mul

__all__ = ["BENCHES", "fma_operands", "fma_classes", "window_corners"]


def fma_operands(fmt, rng, n: int) -> list:
    """Three arrays of ``n`` FMA operand bit patterns, a third each of:

    * :func:`~pimforge.sim.benches.fp.common.random_operands` triples (uniform, or nearby exponents);
    * near-cancellations: ``c`` is ``-round(a*b)`` moved by at most 3 ulps, with ``a`` and ``b``
      sometimes given short significands so that exact zero sums occur too;
    * ``c`` of random significand with an exponent within 3 of the rounded product's.

    In the last two parts the product exponent is drawn over the whole range, subnormal included.
    """
    a, b, c = random_operands(fmt, rng, n, 3)
    third = n // 3
    k = n - third
    # a and b whose product exponent is uniform over [emin - precision, emax]
    target = rng.integers(fmt.emin - fmt.precision, fmt.emax + 1, size=k)
    ea = rng.integers(fmt.emin, fmt.emax + 1, size=k)
    eb = np.clip(target - ea, fmt.emin, fmt.emax)
    fa = rng.integers(0, 1 << fmt.frac_bits, size=k)
    fb = rng.integers(0, 1 << fmt.frac_bits, size=k)
    short = rng.random(k) < 0.25
    keep = rng.integers(0, fmt.frac_bits + 1, size=k)  # fraction bits kept when short
    low = (np.int64(1) << (fmt.frac_bits - keep)) - 1
    fa = np.where(short, fa & ~low, fa)
    fb = np.where(short, fb & ~low, fb)
    sa = rng.integers(0, 2, size=k) << (fmt.width - 1)
    sb = rng.integers(0, 2, size=k) << (fmt.width - 1)
    a[third:] = sa | ((ea + fmt.bias) << fmt.frac_bits) | fa
    b[third:] = sb | ((eb + fmt.bias) << fmt.frac_bits) | fb
    prod = fp_mul(FpConfig(fmt=fmt), a[third:], b[third:])
    mask = (1 << fmt.width) - 1
    near = (prod ^ fmt.sign_bit) + rng.integers(-3, 4, size=k)
    e_prod = (prod >> fmt.frac_bits) & fmt.exp_all_ones
    e_c = np.clip(e_prod + rng.integers(-3, 4, size=k), 0, fmt.exp_all_ones - 1)
    nearby = (rng.integers(0, 2, size=k) << (fmt.width - 1)) | (e_c << fmt.frac_bits) \
        | rng.integers(0, 1 << fmt.frac_bits, size=k)
    half = k // 2
    c[third:third + half] = near[:half] & mask
    c[third + half:] = nearby[half:]
    return [a, b, c]


def fma_classes(n: int) -> np.ndarray:
    """The part of :func:`fma_operands` each of its ``n`` triples comes from: 0 random triples,
    1 near-cancellations, 2 ``c`` near the product's exponent."""
    third = n // 3
    half = (n - third) // 2
    out = np.zeros(n, dtype=np.int64)
    out[third:third + half] = 1
    out[third + half:] = 2
    return out


def window_corners(fmt) -> list:
    """Triples where a subnormal times a large normal gives a product with ``p - 1`` leading
    zeros, and ``c`` (just above the smallest normal, either sign) has bits below the product's
    LSB: the difference rounds from a guard bit three places below the product, so a datapath
    that keeps fewer bits there rounds wrongly (fp16 ``0x0001 * 0x7000 + 0x8403`` is ``0x0eff``,
    not ``0x0f00``)."""
    p = fmt.precision
    a = [1, 1, 1, 3]
    b = [(fmt.bias + p + k) << fmt.frac_bits for k in (2, 2, 3, 2)]
    c = [fmt.sign_bit | (1 << fmt.frac_bits) | f for f in (3, 1, 3, 5)]
    c += [x ^ fmt.sign_bit for x in c]
    return [np.array(x + x, dtype=np.int64) for x in (a, b)] + [np.array(c, dtype=np.int64)]


def fma_bench(cfg, rng, n_random=20000, seed=1):
    corners = [np.concatenate(z) for z in zip(corner_tuples(cfg.fmt, 3), window_corners(cfg.fmt))]
    return operand_job(cfg.fmt, lambda a, b, c: fp_fma(cfg, a, b, c), ["a", "b", "c"], "r", rng,
                       n_random, seed, corners=corners, randoms=fma_operands(cfg.fmt, rng, n_random),
                       classes=fma_classes(n_random))


BENCHES = {"fp_fma": fma_bench}
