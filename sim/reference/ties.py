"""Operand sets whose exact results lie halfway between two neighbours of the format (ties).

Random bit patterns almost never give a tie (about one pair in ``2**p`` for a product), so a
reference comparison on random operands cannot tell ties-to-even from ties-away.  These
generators build ties from the exact value down: a tie ``t = T * 2**(k - 1)``, ``T`` odd,
``2**(k - 1)`` half the quantum at ``t``, is split into operands that the format holds exactly
(``encode_exact``).  Half the ties have an even lower neighbour and half an odd one, so both
directions of ties-to-even are exercised; subnormal ties (products, fused sums, narrowing
conversions) and the tie just above the largest finite value (which rounds to Inf) are included.

Only :mod:`fractions`, NumPy and :mod:`pimforge.sim.reference.rational` are used: no RTL, no
golden model, no SoftFloat.
"""
from __future__ import annotations

from fractions import Fraction

import numpy as np

from pimforge.sim.reference.rational import Params, encode_exact, exact, is_tie

__all__ = ["tie_operands", "count_ties"]


def _odd(rng, bits: int) -> int:
    """A random odd integer of exactly ``bits`` bits."""
    if bits <= 2:
        return 1 if bits <= 1 else 3
    return (1 << (bits - 1)) | (int(rng.integers(0, 1 << (bits - 2))) << 1) | 1


def _value(m: int, k: int) -> Fraction:
    return Fraction(m << k) if k >= 0 else Fraction(m, 1 << -k)


def _bits(q, v: Fraction):
    return encode_exact(q, v)


def _add_tie(q, rng):
    """(a, b) with a + b an exact normal tie (or the overflow tie)."""
    if rng.random() < 0.02:
        E, T = q.emax, (1 << (q.p + 1)) - 1          # max finite + half an ulp: rounds to Inf
    else:
        E = int(rng.integers(q.emin, q.emax + 1))
        T = _odd(rng, q.p + 1)
    lo = E - q.p                                    # exponent of T's LSB (half the quantum)
    j = int(rng.integers(1, q.p + 1))               # cut: a keeps T's bits from lo + j up
    R = T & ((1 << j) - 1)
    if rng.random() < 0.5:
        a, b = _value(T - R, lo), _value(R, lo)     # same signs
    else:
        a, b = _value(T - R + (1 << j), lo), -_value((1 << j) - R, lo)   # a cancellation
    if rng.random() < 0.5:
        a, b = -a, -b
    if rng.random() < 0.5:
        a, b = b, a
    return a, b


def _split_product(q, rng, ma: int, mb: int, s: int):
    """(a, b) = (ma * 2**sa, mb * 2**sb) with sa + sb = s, both held exactly, or None."""
    la, lb = ma.bit_length(), mb.bit_length()
    lo = max(q.qmin, s - (q.emax - lb + 1))
    hi = min(q.emax - la + 1, s - q.qmin)
    if lo > hi:
        return None
    sa = int(rng.integers(lo, hi + 1))
    return _value(ma, sa), _value(mb, s - sa)


def _mul_tie(q, rng, subnormal: bool):
    """(a, b) whose exact product is a tie: odd significands whose product has ``p + 1`` bits
    (normal), or at most ``p`` bits at half the subnormal quantum."""
    for _ in range(50):
        la = int(rng.integers(1, q.p + 1))
        lb = (int(rng.integers(1, q.p + 2 - la)) if subnormal else q.p + 2 - la)
        if not 1 <= lb <= q.p:
            continue
        ma, mb = _odd(rng, la), _odd(rng, lb)
        P = ma * mb
        if subnormal:
            if P.bit_length() > q.p:
                continue
            s = q.qmin - 1
        else:
            if P.bit_length() != q.p + 1:
                continue
            s = int(rng.integers(q.emin, q.emax + 1)) - q.p
        pair = _split_product(q, rng, ma, mb, s)
        if pair is not None:
            sign = int(rng.integers(0, 2))
            return (-pair[0] if sign else pair[0]), pair[1]
    return None


def _fma_tie(q, rng):
    """(a, b, c) whose exact ``a * b + c`` is a tie: a tie product plus a ``c`` on a coarser
    grid (zero, small, or subnormal-range), or a short odd product under a ``c`` whose quantum
    is twice the product's LSB."""
    kind = rng.random()
    if kind < 0.6:
        sub = kind < 0.2
        pair = _mul_tie(q, rng, sub)
        if pair is None:
            return None
        a, b = pair
        k = _quantum_exp(q, abs(a * b))             # c on this grid keeps the sum a tie
        if rng.random() < 0.2:
            c = Fraction(0)
        else:
            mc = int(rng.integers(1, 1 << max(1, q.p // 3)))
            c = _value(mc, k + (0 if sub else int(rng.integers(0, q.p // 2 + 1))))
            c = -c if rng.random() < 0.5 else c
        return a, b, c
    # c dominant: c = C * 2**(s + 1) with p bits, the product P * 2**s with P odd and short
    la = int(rng.integers(1, max(2, q.p // 4) + 1))
    lb = int(rng.integers(1, max(2, q.p // 4) + 1))
    ma, mb = _odd(rng, la), _odd(rng, lb)
    Ec = int(rng.integers(q.emin, q.emax + 1))
    s = Ec - q.f_bits - 1
    pair = _split_product(q, rng, ma, mb, s)
    if pair is None:
        return None
    C = (1 << q.f_bits) | int(rng.integers(0, 1 << q.f_bits))
    c = _value(C, s + 1)
    sign = int(rng.integers(0, 4))
    a = -pair[0] if sign & 1 else pair[0]
    return a, pair[1], (-c if sign & 2 else c)


def _convert_tie(s_q, d_q, rng):
    """A ``src`` value halfway between two ``dst`` neighbours (normal or subnormal in dst)."""
    feasible = []
    for E in range(d_q.qmin - 1, d_q.emax + 1):
        need = d_q.p + 1 if E >= d_q.emin else E - (d_q.qmin - 1) + 1
        low = E - need + 1
        if need <= s_q.p and s_q.qmin <= low and E <= s_q.emax:
            feasible.append((E, need))
    if not feasible:
        return None
    if rng.random() < 0.02 and feasible[-1][0] == d_q.emax and feasible[-1][1] == d_q.p + 1:
        T, E, need = (1 << (d_q.p + 1)) - 1, d_q.emax, d_q.p + 1   # rounds to Inf
    else:
        E, need = feasible[int(rng.integers(0, len(feasible)))]
        T = _odd(rng, need)
    v = _value(T, E - need + 1)
    return -v if rng.random() < 0.5 else v


def tie_operands(op: str, fmt, rng, n: int, dst=None) -> list:
    """About ``n`` operand sets (bit-pattern arrays, one per operand) for ``op`` (``add``,
    ``sub``, ``mul``, ``fma`` or ``convert`` to ``dst``) whose exact results are ties; a few
    constructions may land off a tie (a sum that leaves its binade), which :func:`count_ties`
    tells apart."""
    q = Params(fmt)
    d_q = Params(dst) if dst is not None else None
    out = []
    tries = 0
    while len(out) < n and tries < 20 * n:
        tries += 1
        if op in ("add", "sub"):
            vals = _add_tie(q, rng)
            if op == "sub":
                vals = (vals[0], -vals[1])
        elif op == "mul":
            vals = _mul_tie(q, rng, rng.random() < 0.25)
        elif op == "fma":
            vals = _fma_tie(q, rng)
        elif op == "convert":
            v = _convert_tie(q, d_q, rng)
            vals = None if v is None else (v,)
        else:
            raise ValueError(f"op must be add, sub, mul, fma or convert, not {op!r}")
        if vals is None:
            continue
        bits = [_bits(q, v) for v in vals]
        if any(b is None for b in bits):
            continue
        out.append(bits)
    arity = 1 if op == "convert" else 3 if op == "fma" else 2
    return [np.array([t[k] for t in out], dtype=np.int64) for k in range(arity)]


def count_ties(op: str, fmt, operands, dst=None) -> dict:
    """How many operand sets have an exact result that is a tie in the target format, split by
    the parity of the lower neighbour (``even``: ties-to-even rounds down; ``odd``: up), and how
    many of those are below the smallest normal (``subnormal``)."""
    out_fmt = dst if dst is not None else fmt
    q = Params(out_fmt)
    counts = {"ties": 0, "even": 0, "odd": 0, "subnormal": 0}
    flat = [np.asarray(o, dtype=np.int64).tolist() for o in operands]
    for vals in zip(*flat):
        v = exact(op, fmt, *vals, dst=dst)
        if v is None or v == 0 or not is_tie(out_fmt, v):
            continue
        counts["ties"] += 1
        mag = abs(v)
        half = _half_quantum(q, mag)
        lower = (mag - half) / (2 * half)             # the lower neighbour in quanta: an integer
        counts["odd" if lower.numerator & 1 else "even"] += 1
        counts["subnormal"] += mag < _value(1, q.emin)
    return counts


def _quantum_exp(q, mag: Fraction) -> int:
    """Exponent of the quantum (the spacing of the format's values) at the magnitude ``mag``."""
    e = mag.numerator.bit_length() - mag.denominator.bit_length()
    if _value(1, e) > mag:
        e -= 1
    elif _value(1, e + 1) <= mag:
        e += 1
    return max(e, q.emin) - q.f_bits


def _half_quantum(q, mag: Fraction) -> Fraction:
    return _value(1, _quantum_exp(q, mag) - 1)
