"""Fast paths of the float library's golden functions, bit-exact with them on finite values.

The golden functions (:func:`~pimforge.sim.golden.fp.add.fp_add` and the rest) emulate every
operator on integer bit patterns, which a whole LLM cannot afford.  NumPy's own float arithmetic
gives the same bits wherever IEEE 754 says it must:

* **fp32 add and mul** are NumPy's float32 operations, IEEE round-to-nearest-even.
* **fp16 add and mul**: NumPy computes a float16 operation in float32 and rounds the result to
  float16.  Rounding twice is innocuous for +, -, x when the wider format has at least
  ``2p + 2`` significand bits (24 >= 2 * 11 + 2), so the result is the correctly rounded one.
* **fma** (fp16 and fp32): the product of two fp16 or fp32 values is exact in float64 (22 or 48
  bits), and TwoSum gives the float64 sum ``s`` of product and addend with its exact error ``e``.
  Rounding ``s`` to the target is then correct unless ``s`` is a tie of the target format and
  ``e`` is non-zero (the exact sum is off the tie, to ``e``'s side): then the result is the
  rounding of ``s``'s float64 neighbour on ``e``'s side.  No other target boundary lies within a
  float64 step of a tie, because every target midpoint is itself a float64 number.
* **exp, log, recip** are the units' own approximations, not correctly rounded, so there is no
  IEEE shortcut: fp16 reads a table of the golden function over all 65,536 inputs (built once per
  process), any other format calls the golden function on the bit patterns.

Signed zeros follow IEEE in both (``+0 + -0 = +0`` under round-to-nearest).  NaN payloads do not:
the units return their canonical NaN, NumPy propagates payloads, so a caller checks
:func:`finite` and uses the golden functions when a value is not finite.  Tests:
``tests/fp/test_fast.py`` against the golden functions.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from pimforge.base.formats import FP16, FP32
from pimforge.sim.golden.fp.exp import fp_exp
from pimforge.sim.golden.fp.log import fp_log
from pimforge.sim.golden.fp.recip import fp_recip

__all__ = ["DTYPES", "OpCfg", "dtype", "to_float", "to_bits", "finite", "add", "mul", "fma",
           "exp", "log", "recip"]

DTYPES = {16: np.float16, 32: np.float32}
_UINT = {16: np.uint16, 32: np.uint32}
_FUNCS = {"exp": fp_exp, "log": fp_log, "recip": fp_recip}


class OpCfg:
    """The config the golden functions read: a format, no flush to zero."""

    def __init__(self, fmt):
        self.fmt, self.ftz = fmt, False


def dtype(fmt):
    """The NumPy dtype of fp16 or fp32."""
    if fmt not in (FP16, FP32):
        raise ValueError(f"no NumPy fast path for {fmt}")
    return DTYPES[fmt.width]


def to_float(fmt, bits) -> np.ndarray:
    """Bit patterns (any integer array) of ``fmt`` as a float16/float32 array."""
    return np.asarray(bits).astype(_UINT[fmt.width]).view(dtype(fmt))


def to_bits(fmt, x) -> np.ndarray:
    """A float16/float32 array as int64 bit patterns (the golden models' representation)."""
    return np.asarray(x, dtype=dtype(fmt)).view(_UINT[fmt.width]).astype(np.int64)


def finite(*arrays) -> bool:
    """True when every value of every array is finite (the fast paths then match the golden)."""
    return all(bool(np.isfinite(np.asarray(a)).all()) for a in arrays)


def add(fmt, a, b) -> np.ndarray:
    """``a + b`` rounded to ``fmt`` (float arrays of ``fmt``'s dtype)."""
    t = dtype(fmt)
    return np.add(np.asarray(a, t), np.asarray(b, t), dtype=t)


def mul(fmt, a, b) -> np.ndarray:
    """``a * b`` rounded to ``fmt``."""
    t = dtype(fmt)
    return np.multiply(np.asarray(a, t), np.asarray(b, t), dtype=t)


def fma(fmt, a, b, c) -> np.ndarray:
    """``a * b + c`` rounded once to ``fmt`` (module docstring: TwoSum and the tie correction)."""
    t = dtype(fmt)
    p = np.asarray(a, t).astype(np.float64) * np.asarray(b, t).astype(np.float64)
    c = np.asarray(c, t).astype(np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        s = p + c
        bb = s - p
        e = (p - (s - bb)) + (c - bb)
        r = s.astype(t)
        off = e != 0
        if off.any():
            # s is a tie of the target (a rounding boundary, overflow's included) exactly when
            # its two float64 neighbours round apart; the exact sum is then on e's side of it
            up = np.nextafter(s, np.inf).astype(t)
            down = np.nextafter(s, -np.inf).astype(t)
            tie = off & (up != down)
            r = np.where(tie, np.where(e > 0, up, down), r)
    return r


@lru_cache(maxsize=None)
def _table(name: str) -> np.ndarray:
    """The golden ``name`` over every fp16 bit pattern, as float16 (the table's index is the
    input's pattern)."""
    bits = np.arange(1 << 16, dtype=np.int64)
    return to_float(FP16, _FUNCS[name](OpCfg(FP16), bits))


def _func(name: str, fmt, x) -> np.ndarray:
    x = np.asarray(x, dtype(fmt))
    if fmt is FP16 or fmt == FP16:
        return _table(name)[x.view(np.uint16)]
    return to_float(fmt, _FUNCS[name](OpCfg(fmt), to_bits(fmt, x)))


def exp(fmt, x) -> np.ndarray:
    """The unit's ``exp`` (:func:`~pimforge.sim.golden.fp.exp.fp_exp`) of a float array."""
    return _func("exp", fmt, x)


def log(fmt, x) -> np.ndarray:
    """The unit's ``log`` (:func:`~pimforge.sim.golden.fp.log.fp_log`) of a float array."""
    return _func("log", fmt, x)


def recip(fmt, x) -> np.ndarray:
    """The unit's reciprocal (:func:`~pimforge.sim.golden.fp.recip.fp_recip`) of a float array."""
    return _func("recip", fmt, x)
