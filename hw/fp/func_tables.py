"""Fixed-point parameters and ROM tables of the special-function units (exp, log, reciprocal).

Pure Python (no Amaranth): the RTL generators and the NumPy golden models both import this module,
so the tables and every shift amount are identical by construction.

Each function reduces its argument to a fixed-point ``u`` in [0, 1) and evaluates a smooth kernel
with a :class:`QuadTable`, a piecewise quadratic in the low bits of ``u``::

    i = u >> d_bits            (segment index: the top ``index_bits`` bits)
    d = u & (2**d_bits - 1)    (offset inside the segment)
    sq = ((d >> sq_pre) ** 2) >> sq_post
    g = c0[i] + ((c1[i] * d) >> t1_shift) + ((c2[i] * sq) >> t2_shift)

``g`` has ``out_frac`` fraction bits.  The shifts are floor shifts (arithmetic on signed products)
in both models.  ``c0`` is the kernel's value at the segment start rounded to ``out_frac`` bits, so
a segment start (``d == 0``) is as exact as the table; ``c1`` and ``c2`` interpolate the kernel at
two points placed so that the cubic error term ``d (d - d1) (d - d2)`` equioscillates on the
segment (a constrained Chebyshev fit).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from pimforge.base.formats import FloatFormat

__all__ = ["QuadTable", "build_quad_table", "ExpParams", "LogParams", "RecipParams",
           "exp_params", "log_params", "recip_params"]


@dataclass(frozen=True)
class QuadTable:
    """A piecewise-quadratic kernel of a ``in_bits``-bit fraction ``u`` (see the module doc)."""

    in_bits: int
    index_bits: int
    out_frac: int
    c1_frac: int
    c2_frac: int
    sq_pre: int
    sq_post: int
    c0: tuple
    c1: tuple
    c2: tuple

    @property
    def d_bits(self) -> int:
        return self.in_bits - self.index_bits

    @property
    def depth(self) -> int:
        return len(self.c0)

    @property
    def t1_shift(self) -> int:
        return self.in_bits + self.c1_frac - self.out_frac

    @property
    def t2_shift(self) -> int:
        return 2 * self.in_bits - 2 * self.sq_pre - self.sq_post + self.c2_frac - self.out_frac

    def widths(self) -> tuple:
        """(c0 unsigned width, c1 signed width, c2 signed width)."""
        return (max(v.bit_length() for v in self.c0),
                max(abs(v).bit_length() for v in self.c1) + 1,
                max(abs(v).bit_length() for v in self.c2) + 1)

    def eval_int(self, u: int) -> int:
        """Scalar reference of the kernel evaluation (plain Python ints)."""
        i, d = u >> self.d_bits, u & ((1 << self.d_bits) - 1)
        a = d >> self.sq_pre
        sq = (a * a) >> self.sq_post
        return self.c0[i] + ((self.c1[i] * d) >> self.t1_shift) + ((self.c2[i] * sq) >> self.t2_shift)


# Interior interpolation nodes, as fractions of the segment width: the roots other than the left
# end of T3 mapped from [-sqrt(3)/2, 1] onto [0, 1], so that x (x - n1) (x - n2) equioscillates.
_R3 = math.sqrt(3.0) / 2.0
_NODES = (_R3 / (1.0 + _R3), 2.0 * _R3 / (1.0 + _R3))


def build_quad_table(func, in_bits: int, index_bits: int, depth: int, out_frac: int,
                     c1_frac: int, c2_frac: int, sq_pre: int = 0, sq_post: int = 0) -> QuadTable:
    """Fit ``func`` (a float function on [0, depth / 2**index_bits)) segment by segment.

    Parameters
    ----------
    func : callable
        The kernel, ``func(x) -> float`` for ``x = u / 2**in_bits``.
    depth : int
        Number of segments actually used (at most ``2**index_bits``).
    out_frac, c1_frac, c2_frac : int
        Fraction bits of the result / ``c0``, of ``c1`` and of ``c2``.
    sq_pre, sq_post : int
        Bits dropped from the segment offset before squaring, and from the square.
    """
    h = 2.0 ** -index_bits
    c0, c1, c2 = [], [], []
    for i in range(depth):
        a = i * h
        f0 = func(a)
        d1, d2 = _NODES[0] * h, _NODES[1] * h
        q1 = (func(a + d1) - f0) / d1
        q2 = (func(a + d2) - f0) / d2
        k2 = (q2 - q1) / (d2 - d1)
        k1 = q1 - k2 * d1
        c0.append(int(round(f0 * 2.0 ** out_frac)))
        c1.append(int(round(k1 * 2.0 ** c1_frac)))
        c2.append(int(round(k2 * 2.0 ** c2_frac)))
    return QuadTable(in_bits, index_bits, out_frac, c1_frac, c2_frac, sq_pre, sq_post,
                     tuple(c0), tuple(c1), tuple(c2))


def _name(fmt: FloatFormat) -> str:
    if fmt.name not in ("fp16", "fp32"):
        raise ValueError(f"special-function units support fp16 and fp32, not {fmt.name}")
    return fmt.name


# ---- exp ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ExpParams:
    """``exp(x) = 2**n * 2**f`` with ``n + f = x * log2(e)``.

    ``y = (sig * log2e) >> (frac_bits + log2e_frac - y_frac - exp)`` is ``|x| log2(e)`` with
    ``y_frac`` fraction bits; inputs with ``exp >= sat_exp`` saturate (Inf or +0).  The kernel
    ``2**f`` is a :class:`QuadTable` on the ``y_frac`` fraction bits, ``out_frac`` bits out.
    """

    sat_exp: int
    log2e_frac: int
    log2e: int
    y_frac: int
    table: QuadTable


@lru_cache(maxsize=None)
def exp_params(fmt: FloatFormat) -> ExpParams:
    # fp16: |x| >= 32 is beyond both overflow (11.09) and total underflow (-17.33).
    # fp32: |x| >= 128 is beyond 88.72 and -103.97.  The products sig * log2e stay below 2**62.
    # fp16 is sized for an 11-bit result: a search over all 65,536 inputs picked the cheapest
    # kernel (generic-flow NAND2) whose worst error stays near half an ulp: 0.515 ulp, 183 inputs
    # not correctly rounded.  A kernel sized for fp32 rounds closer (0.5003 ulp) at about twice
    # the logic and ROM.
    sat_exp, fl, yf, k, r, s1, s2, pre, post = {
        "fp16": (5, 20, 18, 5, 18, 16, 10, 6, 6),
        "fp32": (7, 37, 32, 8, 34, 34, 26, 10, 8),
    }[_name(fmt)]
    tab = build_quad_table(lambda x: 2.0 ** x, yf, k, 1 << k, r, s1, s2, pre, post)
    return ExpParams(sat_exp, fl, int(round(math.log2(math.e) * 2.0 ** fl)), yf, tab)


# ---- log ---------------------------------------------------------------------------------------
def _log1p_over_t(t: float) -> float:
    return 1.0 if t == 0.0 else math.log1p(t) / t


@dataclass(frozen=True)
class LogParams:
    """``log(x) = e * ln2 + t * g(t)`` with ``x = 2**e * (1 + t)``, ``1 + t`` in [0.75, 1.5).

    ``t`` has ``frac_bits + 1`` fraction bits; the kernel ``g(t) = log1p(t) / t`` is a
    :class:`QuadTable` of ``u = 1 + t - 0.75``.  The product ``t g`` is shifted right by
    ``tg_shift``; the sum has ``sum_frac`` fraction bits and fits ``sum_bits`` bits of magnitude
    (most significant bit weight ``2**(sum_bits - sum_frac - 1)``).
    """

    table: QuadTable
    tg_shift: int
    sum_frac: int
    sum_bits: int
    ln2: int


@lru_cache(maxsize=None)
def log_params(fmt: FloatFormat) -> LogParams:
    # fp32: e * ln2 reaches 103 * 2**sum_frac, so sum_frac stays at 54 (t g is shifted by 4)
    k, r, s1, s2, pre, post, tg_shift = {
        "fp16": (5, 22, 22, 20, 0, 0, 0),
        "fp32": (8, 34, 34, 30, 0, 8, 4),
    }[_name(fmt)]
    w = fmt.frac_bits + 1
    depth = 3 << (k - 2)  # u < 0.75
    tab = build_quad_table(lambda v: _log1p_over_t(v - 0.25), w, k, depth, r, s1, s2, pre, post)
    sum_frac = w + r - tg_shift
    e_max = max(fmt.frac_bits - fmt.emin, fmt.emax + 1)   # largest |exponent| after renormalizing
    int_bits = math.ceil(math.log2(e_max * math.log(2.0) + 0.5))
    ln2 = int(round(math.log(2.0) * 2.0 ** sum_frac))
    return LogParams(tab, tg_shift, sum_frac, int_bits + sum_frac, ln2)


# ---- reciprocal --------------------------------------------------------------------------------
@dataclass(frozen=True)
class RecipParams:
    """``1/x = 2**-e / m`` with ``m = 1 + frac`` in [1, 2); the kernel ``1/m`` is a
    :class:`QuadTable` of the fraction bits with ``out_frac`` fraction bits (value in (0.5, 1])."""

    table: QuadTable


@lru_cache(maxsize=None)
def recip_params(fmt: FloatFormat) -> RecipParams:
    k, r, s1, s2, pre, post = {
        "fp16": (6, 22, 22, 20, 0, 0),
        "fp32": (9, 36, 36, 32, 0, 8),
    }[_name(fmt)]
    return RecipParams(build_quad_table(lambda v: 1.0 / (1.0 + v), fmt.frac_bits, k, 1 << k,
                                        r, s1, s2, pre, post))
