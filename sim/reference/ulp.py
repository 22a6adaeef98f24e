"""ULP error of float results against a float64 reference.

``err = |result - ref| / ulp(ref)`` with ``ulp(ref) = 2**(max(floor(log2|ref|), emin) - frac_bits)``
in the target format.  Infinities, zeros (sign included) and NaNs must match exactly (error 0,
otherwise Inf); a result of Inf with the reference's sign counts as exact when the reference is
beyond the largest finite value.
"""
import numpy as np

__all__ = ["bits_to_float", "ulp_errors", "max_ulp", "is_nan_bits", "FLOAT64_REFERENCE",
           "reference_values"]

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
