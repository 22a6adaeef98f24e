"""ULP error of float results against a float64 reference, and correctly rounded results.

``err = |result - ref| / ulp(ref)`` with ``ulp(ref) = 2**(max(floor(log2|ref|), emin) - frac_bits)``
in the target format.  Infinities, zeros (sign included) and NaNs must match exactly (error 0,
otherwise Inf); a result of Inf with the reference's sign counts as exact when the reference is
beyond the largest finite value.

:func:`correctly_rounded` gives the bit pattern of the true function value rounded to nearest
even: float64 maths decides it except within a narrow window around a rounding boundary, where
60-digit :mod:`decimal` arithmetic (exact :class:`~fractions.Fraction` for the reciprocal)
decides instead.
"""
from decimal import Decimal, localcontext
from fractions import Fraction

import numpy as np

__all__ = ["bits_to_float", "ulp_errors", "max_ulp", "is_nan_bits", "FLOAT64_REFERENCE",
           "reference_values", "correctly_rounded", "BOUNDARY_WINDOW"]

# The true functions, in float64, that the special-function units are measured against.
FLOAT64_REFERENCE = {"exp": np.exp, "log": np.log, "recip": lambda x: 1.0 / x}


def reference_values(func: str, fmt, x) -> np.ndarray:
    """float64 value of ``func`` at the (exactly converted) inputs ``x`` (bit patterns)."""
    with np.errstate(all="ignore"):
        return FLOAT64_REFERENCE[func](bits_to_float(fmt, x))


def is_nan_bits(fmt, x) -> np.ndarray:
    x = np.asarray(x, dtype=np.int64)
    e = (x >> fmt.frac_bits) & fmt.exp_all_ones
    return (e == fmt.exp_all_ones) & ((x & ((1 << fmt.frac_bits) - 1)) != 0)


def bits_to_float(fmt, x) -> np.ndarray:
    """Exact float64 values of an array of bit patterns."""
    x = np.asarray(x, dtype=np.int64)
    sign = np.where((x >> (fmt.width - 1)) & 1, -1.0, 1.0)
    e = (x >> fmt.frac_bits) & fmt.exp_all_ones
    f = x & ((1 << fmt.frac_bits) - 1)
    sig = np.where(e == 0, f, f | (1 << fmt.frac_bits)).astype(np.float64)
    scale = np.where(e == 0, fmt.emin, e - fmt.bias) - fmt.frac_bits
    val = sign * np.ldexp(sig, scale.astype(np.int64))
    val = np.where(e == fmt.exp_all_ones, np.where(f != 0, np.nan, sign * np.inf), val)
    return val


def ulp_errors(fmt, result_bits, ref) -> np.ndarray:
    """Per-element ULP error (see the module doc)."""
    res = bits_to_float(fmt, result_bits)
    ref = np.asarray(ref, dtype=np.float64)
    max_finite = fmt.to_float(fmt.max_finite)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        mag = np.abs(ref)
        _, ex = np.frexp(np.where(np.isfinite(mag) & (mag > 0), mag, 1.0))
        ulp = np.ldexp(1.0, np.maximum(ex - 1, fmt.emin) - fmt.frac_bits)
        err = np.abs(res - ref) / ulp
    nan_ref, nan_res = np.isnan(ref), np.isnan(res)
    err = np.where(nan_ref | nan_res, np.where(nan_ref & nan_res, 0.0, np.inf), err)
    # exact classes: infinite or zero references, and infinite or zero results, must match bitwise
    exact_ref = np.isinf(ref) | (ref == 0)
    same = (res == ref) & (np.signbit(res) == np.signbit(ref))
    err = np.where(exact_ref & ~nan_ref, np.where(same, 0.0, np.inf), err)
    overflow_ok = np.isinf(res) & np.isfinite(ref) & (mag > max_finite) & (np.sign(res) == np.sign(ref))
    err = np.where(overflow_ok, 0.0, err)
    # an Inf result for a representable reference is an infinite error
    err = np.where(np.isinf(res) & np.isfinite(ref) & ~overflow_ok, np.inf, err)
    return err


def max_ulp(fmt, result_bits, ref) -> tuple:
    """``(max error, index of the worst element)``."""
    err = ulp_errors(fmt, result_bits, ref)
    k = int(np.argmax(err))
    return float(err[k]), k


# A float64 reference closer than this (relative) to a rounding boundary of the target format is
# re-decided in high precision.  NumPy's float64 exp, log and division are within a few float64
# ulps (2**-52 relative) of the true value, far inside the window, so outside it the float64
# value and the true value lie on the same side of every boundary and round alike.  The window
# is wide enough for any libm and narrow enough that few inputs need the slow path (about
# 2**-29 of fp16 inputs and 2**-16 of fp32 ones).
BOUNDARY_WINDOW = 2.0 ** -40
# Decimal digits of the slow path: exp and ln are correctly rounded to this many digits, and no
# fp16 or fp32 input puts its function value that close to a boundary (no exact ties exist:
# exp(x) and log(x) are transcendental for rational x other than 0 and 1, and 1/x is a midpoint
# only if x's significand is a power of two, when 1/x is representable).
_DIGITS = 60


def _magnitude_value(fmt, mag) -> np.ndarray:
    """float64 value of a magnitude bit pattern, the all-ones exponent read as ``2**(emax+1)``
    (the overflow boundary lies halfway between it and the largest finite value)."""
    e = mag >> fmt.frac_bits
    f = mag & ((1 << fmt.frac_bits) - 1)
    sig = np.where(e == 0, f, f | (1 << fmt.frac_bits)).astype(np.float64)
    return np.ldexp(sig, (np.maximum(e, 1) - fmt.bias - fmt.frac_bits).astype(np.int64))


def _exact_value(func: str, x: float) -> Fraction:
    """``func(x)`` to ``_DIGITS`` digits (exactly for the reciprocal)."""
    q = Fraction(x)
    if func == "recip":
        return 1 / q
    with localcontext() as ctx:
        ctx.prec = _DIGITS
        d = Decimal(q.numerator) / Decimal(q.denominator)
        return Fraction(d.exp() if func == "exp" else d.ln())


def correctly_rounded(func: str, fmt, x) -> np.ndarray:
    """Bit patterns of ``func`` (``"exp"``, ``"log"`` or ``"recip"``) at the inputs ``x`` (bit
    patterns of ``fmt``, fp16 or fp32), rounded to nearest even; NaN results are the canonical
    NaN.  Special values follow IEEE 754 (``log(-0) = -Inf``, ``1/-0 = -Inf``)."""
    x = np.asarray(x, dtype=np.int64)
    xf = bits_to_float(fmt, x)
    ref = reference_values(func, fmt, x)
    ftype, itype = (np.float16, np.uint16) if fmt.width == 16 else (np.float32, np.uint32)
    with np.errstate(over="ignore"):
        out = ref.astype(ftype).view(itype).astype(np.int64)
    sign = out & fmt.sign_bit
    mag = out & ~fmt.sign_bit
    finite = np.isfinite(ref) & (ref != 0)
    val = _magnitude_value(fmt, mag)
    lower = (val + _magnitude_value(fmt, np.maximum(mag - 1, 0))) / 2
    upper = (val + _magnitude_value(fmt, mag + 1)) / 2
    a = np.abs(ref)
    near_lo = finite & (mag > 0) & (np.abs(a - lower) < BOUNDARY_WINDOW * a)
    near_hi = finite & (mag < fmt.inf) & (np.abs(a - upper) < BOUNDARY_WINDOW * a)
    for k in np.nonzero(near_lo | near_hi)[0]:
        true = abs(_exact_value(func, float(xf[k])))
        m = int(mag[k])
        if near_lo[k] and true < Fraction(float(lower[k])):
            m -= 1
        elif near_hi[k] and true > Fraction(float(upper[k])):
            m += 1
        out[k] = int(sign[k]) | m
    return np.where(np.isnan(ref), fmt.canonical_nan, out)
