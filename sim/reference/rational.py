"""Exact rational arithmetic as an independent reference for the float operations.

Every finite float is a dyadic rational, so a ``fractions.Fraction`` holds it exactly, and the
sum, product or fused ``a * b + c`` of such values is exact too.  The reference decodes bit
patterns to (class, sign, Fraction), computes the exact result and rounds it once to the target
format by IEEE 754's round-to-nearest, ties-to-even rule, with gradual underflow (subnormals) and
overflow to Inf.  The special cases follow IEEE 754-2019 (§6.2 NaN, §6.3 the sign of an exact
zero sum: ``+0`` under round-to-nearest unless both addends are negative, §7.2 invalid
operations); a NaN result is the format's canonical quiet NaN (the project's convention, which
``tests/conftest.py``'s comparison expects).  ``ftz`` reads subnormal inputs as zeros of their
sign and flushes a result that is subnormal after rounding, as the units' ``ftz`` option does.

It is written from the standard alone: it reads only a format's ``exp_bits``, ``frac_bits`` and
``canonical_nan``, derives bias and exponent range itself, and imports nothing from the RTL
(``hw``) or the golden models (``sim.golden``) and no SoftFloat, so it runs on every supported
Python.  Python loops over Fractions are slow (tens of microseconds an operation): use it on
sampled sets of a few thousand operands.
"""
from __future__ import annotations

from fractions import Fraction

import numpy as np

__all__ = ["Params", "decode", "round_value", "is_tie", "encode_exact", "exact", "binary", "fma",
           "convert", "compare", "flush"]

NAN, INF, FINITE = "nan", "inf", "finite"


class Params:
    """IEEE 754 binary-format parameters, derived from the field widths alone."""

    def __init__(self, fmt):
        self.e_bits = int(fmt.exp_bits)
        self.f_bits = int(fmt.frac_bits)
        self.width = 1 + self.e_bits + self.f_bits
        self.p = self.f_bits + 1                       # precision, hidden bit included
        self.bias = (1 << (self.e_bits - 1)) - 1
        self.emax = self.bias
        self.emin = 1 - self.bias
        self.e_ones = (1 << self.e_bits) - 1
        self.sign_shift = self.width - 1
        self.qmin = self.emin - self.f_bits           # exponent of the subnormal quantum
        self.nan = int(fmt.canonical_nan)


def _params(fmt) -> Params:
    return fmt if isinstance(fmt, Params) else Params(fmt)


def decode(fmt, bits: int, ftz: bool = False):
    """``(class, sign, value)`` of one bit pattern: class ``nan``, ``inf`` or ``finite``; the
    magnitude ``value`` is a Fraction (None for NaN and Inf)."""
    q = _params(fmt)
    bits = int(bits)
    sign = (bits >> q.sign_shift) & 1
    e = (bits >> q.f_bits) & q.e_ones
    f = bits & ((1 << q.f_bits) - 1)
    if e == q.e_ones:
        return (NAN if f else INF), sign, None
    if e == 0:
        if ftz:
            return FINITE, sign, Fraction(0)
        return FINITE, sign, _scaled(f, q.qmin)
    return FINITE, sign, _scaled(f | (1 << q.f_bits), e - q.bias - q.f_bits)


def _scaled(m: int, k: int) -> Fraction:
    """``m * 2**k`` exactly."""
    return Fraction(m << k) if k >= 0 else Fraction(m, 1 << -k)


def _round(q: Params, sign: int, value: Fraction, ftz: bool):
    """(bits, tie) of the magnitude ``value >= 0`` rounded to nearest even; ``tie`` says the
    value lay exactly halfway between two neighbours."""
    s = sign << q.sign_shift
    if value == 0:
        return s, False
    num, den = value.numerator, value.denominator
    e = num.bit_length() - den.bit_length()          # 2**e <= value < 2**(e + 2)
    if (num << max(0, -e)) < (den << max(0, e)):
        e -= 1
    elif (num << max(0, -e - 1)) >= (den << max(0, e + 1)):
        e += 1                                       # now 2**e <= value < 2**(e + 1)
    k = max(e, q.emin) - q.f_bits                    # exponent of the quantum at the value
    if k >= 0:
        n, rem = divmod(num, den << k)
        half = den << k
    else:
        n, rem = divmod(num << -k, den)
        half = den
    twice = 2 * rem
    tie = twice == half
    if twice > half or (tie and n & 1):
        n += 1
    if n == 1 << q.p:                                # rounding carried into the next binade
        n, k = n >> 1, k + 1
    if k + q.f_bits > q.emax:
        return s | (q.e_ones << q.f_bits), tie       # overflow: Inf under round-to-nearest
    if n < 1 << q.f_bits:                            # subnormal (or zero) after rounding
        return (s if ftz else s | n), tie
    return s | ((k + q.f_bits + q.bias) << q.f_bits) | (n - (1 << q.f_bits)), tie


def round_value(fmt, sign: int, value: Fraction, ftz: bool = False) -> int:
    """Bit pattern of ``(-1)**sign * value`` (``value >= 0``) rounded to nearest even."""
    return _round(_params(fmt), sign, value, ftz)[0]


def is_tie(fmt, value: Fraction) -> bool:
    """Whether the magnitude ``value`` lies exactly halfway between two neighbours of ``fmt``
    (ties above the largest finite value included)."""
    return _round(_params(fmt), 0, abs(value), False)[1]


def encode_exact(fmt, value: Fraction):
    """The bit pattern of ``value`` when ``fmt`` holds it exactly, else None."""
    q = _params(fmt)
    bits = round_value(q, int(value < 0), abs(value))
    kind, sign, got = decode(q, bits)
    return bits if kind == FINITE and got == abs(value) else None


def _inf(q: Params, sign: int) -> int:
    return (sign << q.sign_shift) | (q.e_ones << q.f_bits)


def _zero_sum_sign(s1: int, s2: int) -> int:
    # IEEE 754 §6.3: an exact zero sum is +0 under round-to-nearest unless both addends are -0
    # or negative; the same holds for x + (-x) and for a product that cancels an addend.
    return s1 & s2


def _add_one(q, a, b, ftz, negate_b):
    ka, sa, va = decode(q, a, ftz)
    kb, sb, vb = decode(q, b, ftz)
    sb ^= negate_b
    if NAN in (ka, kb) or (ka == INF and kb == INF and sa != sb):
        return q.nan
    if ka == INF:
        return _inf(q, sa)
    if kb == INF:
        return _inf(q, sb)
    total = (-va if sa else va) + (-vb if sb else vb)
    if total == 0:
        return _zero_sum_sign(sa, sb) << q.sign_shift
    return round_value(q, int(total < 0), abs(total), ftz)


def _mul_one(q, a, b, ftz, out):
    ka, sa, va = decode(q, a, ftz)
    kb, sb, vb = decode(q, b, ftz)
    sign = sa ^ sb
    if NAN in (ka, kb) or (ka == INF and kb == FINITE and vb == 0) \
            or (kb == INF and ka == FINITE and va == 0):
        return out.nan
    if INF in (ka, kb):
        return _inf(out, sign)
    return round_value(out, sign, va * vb, ftz)


def _fma_one(q, a, b, c, ftz):
    ka, sa, va = decode(q, a, ftz)
    kb, sb, vb = decode(q, b, ftz)
    kc, sc, vc = decode(q, c, ftz)
    sp = sa ^ sb
    if NAN in (ka, kb, kc):
        return q.nan
    if (ka == INF and kb == FINITE and vb == 0) or (kb == INF and ka == FINITE and va == 0):
        return q.nan                                 # inf * 0 is invalid whatever c is
    p_inf = INF in (ka, kb)
    if p_inf and kc == INF and sp != sc:
        return q.nan
    if p_inf:
        return _inf(q, sp)
    if kc == INF:
        return _inf(q, sc)
    prod = va * vb
    total = (-prod if sp else prod) + (-vc if sc else vc)
    if total == 0:
        return _zero_sum_sign(sp, sc) << q.sign_shift
    return round_value(q, int(total < 0), abs(total), ftz)


def _convert_one(src, dst, a, ftz):
    kind, sign, v = decode(src, a, ftz)
    if kind == NAN:
        return dst.nan
    if kind == INF:
        return _inf(dst, sign)
    return round_value(dst, sign, v, ftz)


def exact(op: str, fmt, *bits, dst=None, ftz: bool = False):
    """The exact (unrounded) signed result of one operation on bit patterns as a Fraction, or
    None when it is NaN or Inf (``op``: add, sub, mul, fma, convert; a zero is returned as 0)."""
    q = _params(fmt)
    dec = [decode(q, b, ftz) for b in bits]
    if any(k != FINITE for k, _, _ in dec):
        return None
    v = [-x if s else x for _, s, x in dec]
    if op == "add":
        return v[0] + v[1]
    if op == "sub":
        return v[0] - v[1]
    if op == "mul":
        return v[0] * v[1]
    if op == "fma":
        return v[0] * v[1] + v[2]
    if op == "convert":
        return v[0]
    raise ValueError(f"op must be add, sub, mul, fma or convert, not {op!r}")


def _each(fn, *arrays):
    shape = np.shape(arrays[0])
    flat = [np.asarray(x, dtype=np.int64).ravel().tolist() for x in arrays]
    return np.array([fn(*vals) for vals in zip(*flat)], dtype=np.int64).reshape(shape)


def binary(op: str, fmt, a, b, ftz: bool = False, dst=None) -> np.ndarray:
    """``op`` in ``add``, ``sub``, ``mul`` elementwise on bit-pattern arrays; ``dst`` (``mul``
    only) rounds the exact product to another format (a widening multiply)."""
    q = _params(fmt)
    if op in ("add", "sub"):
        assert dst is None, "add and sub round to their own format"
        neg = int(op == "sub")
        return _each(lambda x, y: _add_one(q, x, y, ftz, neg), a, b)
    if op == "mul":
        out = q if dst is None else _params(dst)
        return _each(lambda x, y: _mul_one(q, x, y, ftz, out), a, b)
    raise ValueError(f"op must be add, sub or mul, not {op!r}")


def fma(fmt, a, b, c, ftz: bool = False) -> np.ndarray:
    """Fused ``a * b + c``, rounded once."""
    q = _params(fmt)
    return _each(lambda x, y, z: _fma_one(q, x, y, z, ftz), a, b, c)


def convert(src, dst, a, ftz: bool = False) -> np.ndarray:
    """Bit patterns of ``dst`` nearest (ties to even) to the ``src`` patterns ``a``."""
    s, d = _params(src), _params(dst)
    return _each(lambda x: _convert_one(s, d, x, ftz), a)


def compare(fmt, a, b, ftz: bool = False):
    """Quiet comparisons: ``(lt, eq)`` boolean arrays, both False when either is NaN
    (``-0 == +0``)."""
    q = _params(fmt)

    def one(x, y):
        kx, sx, vx = decode(q, x, ftz)
        ky, sy, vy = decode(q, y, ftz)
        if NAN in (kx, ky):
            return 0
        big = Fraction(2) ** (q.emax + 2)          # beyond every finite value
        fx = (big if kx == INF else vx) * (-1 if sx else 1)
        fy = (big if ky == INF else vy) * (-1 if sy else 1)
        return 1 if fx < fy else 2 if fx == fy else 0
    r = _each(one, a, b)
    return r == 1, r == 2


def flush(fmt, x) -> np.ndarray:
    """Subnormal bit patterns replaced by a zero of the same sign."""
    q = _params(fmt)
    x = np.asarray(x, dtype=np.int64)
    e = (x >> q.f_bits) & q.e_ones
    f = x & ((1 << q.f_bits) - 1)
    return np.where((e == 0) & (f != 0), x & (1 << q.sign_shift), x)
