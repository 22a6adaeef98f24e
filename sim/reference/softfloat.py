"""Berkeley SoftFloat (softfloatpy) as the independent reference for single float operations.

fp16 and fp32 map onto SoftFloat's f16/f32 routines directly.  SoftFloat has no bf16 arithmetic,
so bf16 results are formed as: the f32 operation on the (exactly widened) operands, rounded *to
odd* in f32, then SoftFloat's ``f32_to_bf16`` (round to nearest even).  Rounding to odd with at
least two extra bits before the final rounding is innocuous (Boldo & Melquiond, "Emulation of FMA
and correctly rounded sums: proved algorithms using rounding to odd", IEEE TC 2008); f32 has 16
more significand bits than bf16 and the same exponent range, so this holds for subnormals too.
Round-to-odd is emulated as round-toward-zero with the LSB forced to 1 when SoftFloat raises
*inexact*.

``PIMFORGE_NO_SOFTFLOAT=1`` hides softfloatpy even where it is installed, to run the suite as
Python 3.10 runs it (the SoftFloat tests skip; :mod:`pimforge.sim.reference.rational` stays).
"""
from __future__ import annotations

import os

import numpy as np

from pimforge.base.formats import BF16, FP16, FP32, FloatFormat

_HIDDEN = os.environ.get("PIMFORGE_NO_SOFTFLOAT", "") not in ("", "0")
try:
    if _HIDDEN:
        raise ImportError("PIMFORGE_NO_SOFTFLOAT is set")
    import softfloatpy as sf
except ImportError:  # softfloatpy publishes no release for Python < 3.11
    sf = None

__all__ = ["binary", "fma", "compare", "convert", "supported", "flush_subnormals", "available",
           "UNAVAILABLE_REASON"]

UNAVAILABLE_REASON = ("PIMFORGE_NO_SOFTFLOAT is set" if _HIDDEN else
                      "softfloatpy (Berkeley SoftFloat) is not installed; it needs Python >= 3.11")


def available() -> bool:
    return sf is not None


def _require():
    if sf is None:
        raise RuntimeError(UNAVAILABLE_REASON)


_CLS = {FP16: sf.Float16, FP32: sf.Float32, BF16: sf.BFloat16} if sf is not None else {}
_PREFIX = {FP16: "f16", FP32: "f32"}


def supported(fmt: FloatFormat) -> bool:
    return fmt in _CLS


def flush_subnormals(fmt: FloatFormat, x) -> np.ndarray:
    """Replace subnormal bit patterns with a zero of the same sign (the FTZ reference)."""
    x = np.asarray(x, dtype=np.int64)
    e = (x >> fmt.frac_bits) & fmt.exp_all_ones
    f = x & ((1 << fmt.frac_bits) - 1)
    return np.where((e == 0) & (f != 0), x & fmt.sign_bit, x)


def _to(fmt, bits):
    return _CLS[fmt].from_bytes(int(bits).to_bytes(fmt.width // 8, "big"))


def _from(obj) -> int:
    return int.from_bytes(obj.to_bytes(), "big")


def _bf_to_f32(bits):
    return sf.bf16_to_f32(_to(BF16, bits))


def _odd_f32(fn, *args):
    """Run an f32 SoftFloat routine rounded to odd."""
    sf.set_rounding_mode(sf.RoundingMode.MIN_MAG)
    sf.set_exception_flags(0)
    r = fn(*args)
    inexact = sf.test_exception_flags(sf.ExceptionFlag.INEXACT)
    sf.set_rounding_mode(sf.RoundingMode.NEAR_EVEN)
    bits = _from(r)
    if inexact:
        bits |= 1
    return sf.Float32.from_bytes(bits.to_bytes(4, "big"))


def _run(fmt, name, *operands) -> np.ndarray:
    """Apply SoftFloat op ``name`` (add, sub, mul, mul_add) elementwise to bit arrays."""
    _require()
    sf.set_rounding_mode(sf.RoundingMode.NEAR_EVEN)
    ops = [np.asarray(o, dtype=np.int64).ravel().tolist() for o in operands]
    out = np.empty(len(ops[0]), dtype=np.int64)
    if fmt == BF16:
        fn = getattr(sf, f"f32_{name}")
        for k, vals in enumerate(zip(*ops)):
            r = _odd_f32(fn, *[_bf_to_f32(v) for v in vals])
            out[k] = _from(sf.f32_to_bf16(r))
    else:
        fn = getattr(sf, f"{_PREFIX[fmt]}_{name}")
        cls = _CLS[fmt]
        nbytes = fmt.width // 8
        fb = cls.from_bytes
        for k, vals in enumerate(zip(*ops)):
            r = fn(*[fb(v.to_bytes(nbytes, "big")) for v in vals])
            out[k] = int.from_bytes(r.to_bytes(), "big")
    return out.reshape(np.shape(operands[0]))


def binary(op: str, fmt: FloatFormat, a, b) -> np.ndarray:
    """``op`` in add, sub, mul."""
    return _run(fmt, op, a, b)


def fma(fmt: FloatFormat, a, b, c) -> np.ndarray:
    """Fused ``a * b + c`` with a single rounding."""
    return _run(fmt, "mul_add", a, b, c)


def compare(fmt: FloatFormat, a, b):
    """Quiet comparisons: returns (lt, eq) boolean arrays (both False when unordered)."""
    _require()
    a = np.asarray(a, dtype=np.int64).ravel().tolist()
    b = np.asarray(b, dtype=np.int64).ravel().tolist()
    lt = np.empty(len(a), dtype=bool)
    eq = np.empty(len(a), dtype=bool)
    for k, (x, y) in enumerate(zip(a, b)):
        if fmt == BF16:
            fx, fy = _bf_to_f32(x), _bf_to_f32(y)  # widening is exact, so order is kept
            lt[k], eq[k] = sf.f32_lt_quiet(fx, fy), sf.f32_eq(fx, fy)
        else:
            p = _PREFIX[fmt]
            fx, fy = _to(fmt, x), _to(fmt, y)
            lt[k], eq[k] = getattr(sf, f"{p}_lt_quiet")(fx, fy), getattr(sf, f"{p}_eq")(fx, fy)
    return lt, eq


def _convert_one(src, dst, x):
    if src == dst:
        return x
    if src == BF16:
        v = _bf_to_f32(x)                      # exact
        if dst == FP32:
            return _from(v)
        return _from(sf.f32_to_f16(v))         # single rounding: bf16 -> f32 was exact
    v = _to(src, x)
    if dst == BF16:
        if src == FP16:
            v = sf.f16_to_f32(v)               # exact widening
        return _from(sf.f32_to_bf16(v))
    return _from(getattr(sf, f"{_PREFIX[src]}_to_{_PREFIX[dst]}")(v))


def convert(src: FloatFormat, dst: FloatFormat, a) -> np.ndarray:
    _require()
    sf.set_rounding_mode(sf.RoundingMode.NEAR_EVEN)
    flat = np.asarray(a, dtype=np.int64).ravel().tolist()
    return np.array([_convert_one(src, dst, x) for x in flat], dtype=np.int64).reshape(np.shape(a))
