"""Bench of ``fp_fma``: corners, random triples and near-cancellation triples."""
from __future__ import annotations

import numpy as np

from pimforge.hw.fp.config import FpConfig
from pimforge.sim.benches.fp.common import corner_tuples, operand_job, random_operands
from pimforge.sim.golden.fp.fma import fp_fma
from pimforge.sim.golden.fp.mul import fp_mul

__all__ = ["BENCHES", "fma_operands", "fma_classes", "window_corners", "sticky_corners",
           "product_sticky_corners"]


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


def _float(fmt, sign: int, e: int, sig: int) -> int:
    """The bit pattern of ``(-1)**sign * sig * 2**(e - frac_bits)``, ``sig`` of ``precision``
    bits (hidden bit set), normal exponent ``e``."""
    return (sign << (fmt.width - 1)) | ((e + fmt.bias) << fmt.frac_bits) \
        | (sig & ((1 << fmt.frac_bits) - 1))


def _largest_below(fmt, e: int) -> int:
    """The largest positive float below ``2**e`` (``e`` above the smallest subnormal's)."""
    if e - 1 >= fmt.emin:
        return _float(fmt, 0, e - 1, (1 << fmt.precision) - 1)
    return (1 << (e - fmt.emin + fmt.frac_bits)) - 1


def sticky_corners(fmt) -> list:
    """Triples where only bits of ``c`` that the alignment shifts below the sum window decide
    the rounding, so a datapath that drops the alignment's sticky bit rounds them wrongly (the
    window of hw/fp/fma.py ends three bits below the product's LSB).

    * The product is an exact tie (``(1 + k 2**(1-p)) * 1.5``, ``k`` = 1 or 3: the lower
      neighbour odd or even) and ``c`` lies wholly below the window, under an eighth of the
      product's LSB: the smallest subnormal, or the largest float below that bound.  Its sign
      alone picks the neighbour.  Product exponents from the lowest where such a ``c`` exists
      up to ``emax - 1``.
    * A power-of-two product (the smallest subnormal times ``2**eb``, ``eb >= p + 3``) and
      ``c`` whose bits inside the window make the sum an exact tie (``2u`` below the product or
      ``4u`` above it, ``u`` the window's LSB weight), plus one smallest subnormal below the
      window: only the sticky breaks the tie.
    """
    p, q = fmt.precision, fmt.emin - fmt.frac_bits    # q: the smallest subnormal's exponent
    A, B, C = [], [], []
    b15 = 3 << (p - 2)
    # the product's LSB weight is 2**(ea + eb - 2(p - 1)); the window's, GUARD (3) bits below
    low = fmt.emin + p + 3                            # c = the smallest subnormal still fits
    for ep in (low, (low + fmt.emax) // 2, fmt.emax - 1):
        ea = ep // 2
        eb = ep - ea
        lsb = ep - 2 * (p - 1) - 3
        for k in (1, 3):
            for s_p in (0, 1):
                for s_c in (0, 1):
                    for c in (1, _largest_below(fmt, lsb)):
                        A.append(_float(fmt, s_p, ea, (1 << (p - 1)) + k))
                        B.append(_float(fmt, 0, eb, b15))
                        C.append((s_c << (fmt.width - 1)) | c)
    # u = 2**(emin + eb - 2p - 1): 2 to 2**(p - 3) smallest subnormals, so that c fits p bits
    for eb in sorted({p + 3, min(2 * p - 1, fmt.emax)}):
        u = eb - 2 * p - 1 + fmt.emin - q
        for s_p in (0, 1):
            for s_c, mag in ((1, (2 << u) + 1), (0, (4 << u) + 1)):
                A.append((s_p << (fmt.width - 1)) | 1)
                B.append(_float(fmt, 0, eb, 1 << (p - 1)))
                C.append(((s_c ^ s_p) << (fmt.width - 1)) | _encode_small(fmt, mag))
    return [np.array(x, dtype=np.int64) for x in (A, B, C)]


def product_sticky_corners(fmt) -> list:
    """Triples where ``c`` is the larger operand and only the product's lowest bits decide a tie:
    ``c + a*b`` with ``|a*b|`` just above half an ulp of ``c``, ``a*b = (2**(2p-1) + r) 2**k``
    with ``0 < r < 2**(p-3)`` (``a = 2**(p-1) + x``, ``b = 2**p - 2x + 1``, ``r = 2**(p-1) -
    x(2x - 1)``), so that the sum lies just off a tie and ``r`` sits more than ``p + 2`` bits
    below ``c``'s LSB.  ``c``'s significand is even, so dropping ``r`` rounds to ``c`` instead
    of away from it; either sign of the product, ``c`` at two exponents.  A datapath that
    shifts the product (the golden model's) needs the sticky there; hw/fp/fma.py keeps the
    whole product in its window and needs its slice's sticky OR."""
    p = fmt.precision
    x = next(x for x in range(1, 1 << p) if x * (2 * x - 1) > 3 << (p - 3))
    sa, sb = (1 << (p - 1)) + x, (1 << p) - (2 * x - 1)
    A, B, C = [], [], []
    for s in (0, fmt.emax - p - 1):             # ea + eb; c's exponent s + p + 1
        for s_p in (0, 1):
            for s_c in (0, 1):
                A.append(_float(fmt, s_p, s // 2, sa))
                B.append(_float(fmt, 0, s - s // 2, sb))
                C.append(_float(fmt, s_c, s + p + 1, (1 << (p - 1)) + 2))
    return [np.array(v, dtype=np.int64) for v in (A, B, C)]


def _encode_small(fmt, m: int) -> int:
    """The bit pattern of ``m`` smallest subnormals (``m`` of at most ``precision`` bits)."""
    if m < 1 << fmt.frac_bits:
        return m
    e = m.bit_length() - 1 + fmt.emin - fmt.frac_bits     # exponent of m's leading bit
    return _float(fmt, 0, e, m << (fmt.precision - m.bit_length()))


def fma_bench(cfg, rng, n_random=20000, seed=1):
    corners = [np.concatenate(z) for z in zip(corner_tuples(cfg.fmt, 3), window_corners(cfg.fmt),
                                                  sticky_corners(cfg.fmt),
                                                  product_sticky_corners(cfg.fmt))]
    return operand_job(cfg.fmt, lambda a, b, c: fp_fma(cfg, a, b, c), ["a", "b", "c"], "r", rng,
                       n_random, seed, corners=corners, randoms=fma_operands(cfg.fmt, rng, n_random),
                       classes=fma_classes(n_random))


BENCHES = {"fp_fma": fma_bench}
