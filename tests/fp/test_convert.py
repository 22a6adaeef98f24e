"""fp_convert: golden model vs Berkeley SoftFloat (16-bit sources exhaustively), custom eXmY
formats vs an exact rational reference, RTL vs golden, cycle contract."""
from fractions import Fraction

import numpy as np
import pytest
from conftest import assert_matches_reference
from fp_checks import N_SOFTFLOAT_RANDOM, rtl_bench_and_cycles

from pimforge.base.formats import FORMATS, parse_format
from pimforge.hw.fp.config import FpConvertConfig
from pimforge.sim.benches.fp.common import corner_tuples, random_operands
from pimforge.sim.golden.fp.convert import fp_convert
from pimforge.sim.reference import softfloat as ref

PAIRS = [("fp16", "bf16"), ("fp16", "fp32"), ("bf16", "fp16"), ("bf16", "fp32"),
         ("fp32", "fp16"), ("fp32", "bf16")]


def _sources(fmt, seed, n_random):
    """Every bit pattern of a format up to 16 bits wide; otherwise corners plus random values."""
    if fmt.width <= 16:
        return np.arange(1 << fmt.width, dtype=np.int64)
    (corners,) = corner_tuples(fmt, 1)
    (rand,) = random_operands(fmt, np.random.default_rng(seed), n_random, 1)
    return np.concatenate([corners, rand])


@pytest.mark.softfloat
@pytest.mark.parametrize("src_name,dst_name", PAIRS)
def test_golden_vs_softfloat(src_name, dst_name):
    src, dst = FORMATS[src_name], FORMATS[dst_name]
    a = _sources(src, 31, N_SOFTFLOAT_RANDOM)
    got = fp_convert(FpConvertConfig(src=src, dst=dst), a)
    assert_matches_reference(dst, got, ref.convert(src, dst, a), [a], f"{src_name}->{dst_name}")


@pytest.mark.softfloat
@pytest.mark.parametrize("src_name,dst_name", PAIRS)
def test_golden_ftz_vs_flushed_softfloat(src_name, dst_name):
    src, dst = FORMATS[src_name], FORMATS[dst_name]
    a = _sources(src, 32, 200_000)
    got = fp_convert(FpConvertConfig(src=src, dst=dst, ftz=True), a)
    want = ref.flush_subnormals(dst, ref.convert(src, dst, ref.flush_subnormals(src, a)))
    assert_matches_reference(dst, got, want, [a], f"ftz {src_name}->{dst_name}")


# -- custom formats: SoftFloat has none, so the reference rounds exact rationals --------------

def _exact(fmt, bits):
    """(kind, sign, value) of one bit pattern; kind is "nan", "inf" or "finite"."""
    sign = (bits >> (fmt.width - 1)) & 1
    e = (bits >> fmt.frac_bits) & fmt.exp_all_ones
    f = bits & ((1 << fmt.frac_bits) - 1)
    if e == fmt.exp_all_ones:
        return ("nan" if f else "inf"), sign, None
    if e == 0:
        return "finite", sign, Fraction(f) * Fraction(2) ** (fmt.emin - fmt.frac_bits)
    return "finite", sign, Fraction(f | (1 << fmt.frac_bits)) * Fraction(2) ** (e - fmt.bias - fmt.frac_bits)


def _round_exact(fmt, sign, value):
    """Bit pattern of the non-negative rational ``value`` rounded to nearest even in ``fmt``."""
    if value == 0:
        return sign << (fmt.width - 1)
    e = value.numerator.bit_length() - value.denominator.bit_length()
    if Fraction(2) ** e > value:
        e -= 1                                    # now 2**e <= value < 2**(e+1)
    e = max(e, fmt.emin)                          # subnormals share emin's quantum
    q = value / Fraction(2) ** (e - fmt.frac_bits)
    n, rem = divmod(q.numerator, q.denominator)
    twice = 2 * rem
    if twice > q.denominator or (twice == q.denominator and n & 1):
        n += 1
    if n == 1 << fmt.precision:                   # rounding carried into the next binade
        n, e = n >> 1, e + 1
    if e > fmt.emax:
        return (sign << (fmt.width - 1)) | fmt.inf
    if n < 1 << fmt.frac_bits:                    # subnormal (only possible at emin)
        return (sign << (fmt.width - 1)) | n
    return (sign << (fmt.width - 1)) | ((e + fmt.bias) << fmt.frac_bits) | (n - (1 << fmt.frac_bits))


def exact_convert(src, dst, a):
    out = []
    for x in np.asarray(a).tolist():
        kind, sign, value = _exact(src, x)
        if kind == "nan":
            out.append(dst.canonical_nan)
        elif kind == "inf":
            out.append((sign << (dst.width - 1)) | dst.inf)
        else:
            out.append(_round_exact(dst, sign, value))
    return np.array(out, dtype=np.int64)


@pytest.mark.parametrize("src_name,dst_name", [
    ("fp16", "e4m3"), ("bf16", "e5m2"), ("e4m3", "fp16"), ("e5m2", "bf16"), ("e4m3", "e5m2"),
    ("e5m2", "e4m3"), ("e2m1", "e3m4"), ("e6m9", "e2m1"), ("fp32", "e5m2"), ("fp32", "e10m40"),
])
def test_golden_custom_formats_vs_exact(src_name, dst_name):
    src, dst = parse_format(src_name), parse_format(dst_name)
    a = _sources(src, 33, 50_000)
    got = fp_convert(FpConvertConfig(src=src, dst=dst), a)
    assert_matches_reference(dst, got, exact_convert(src, dst, a), [a], f"{src_name}->{dst_name}")


@pytest.mark.softfloat
def test_exact_reference_agrees_with_softfloat():
    """The rational reference itself, checked once against SoftFloat (fp32 -> fp16)."""
    a = _sources(FORMATS["fp32"], 34, 20_000)
    assert_matches_reference(FORMATS["fp16"], exact_convert(FORMATS["fp32"], FORMATS["fp16"], a),
                             ref.convert(FORMATS["fp32"], FORMATS["fp16"], a), [a], "exact fp32->fp16")


# Each pair is its own design anyway, so a few of them also cover other pipeline depths.  The
# default run keeps the units' conversions (fp16 -> fp32 and back) and a widening from bf16 at
# depth 2; the other three pairs and FTZ are the long run's (the suite's time budget: about 8 s
# each; every pair's golden model is checked against SoftFloat in the default run).
_SLOW = pytest.mark.slow


@pytest.mark.parametrize("src_name,dst_name,depth", [
    pytest.param("fp16", "bf16", 1, marks=_SLOW), ("fp16", "fp32", 0),
    pytest.param("bf16", "fp16", 1, marks=_SLOW), ("bf16", "fp32", 2),
    ("fp32", "fp16", 1), pytest.param("fp32", "bf16", 1, marks=_SLOW),
])
def test_rtl(src_name, dst_name, depth):
    rtl_bench_and_cycles("fp_convert", FpConvertConfig(src=FORMATS[src_name], dst=FORMATS[dst_name],
                                                       pipeline_depth=depth))


@pytest.mark.slow
def test_rtl_ftz():
    rtl_bench_and_cycles("fp_convert", FpConvertConfig(src=FORMATS["fp32"], dst=FORMATS["fp16"], ftz=True),
                         n_random=4000)
