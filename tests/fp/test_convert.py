"""fp_convert: golden model vs Berkeley SoftFloat (16-bit sources exhaustively), custom eXmY
formats vs an exact rational reference, RTL vs golden, cycle contract."""
import numpy as np
import pytest
from conftest import assert_matches_reference
from fp_checks import N_SOFTFLOAT_RANDOM, rtl_bench_and_cycles

from pimforge.base.formats import FORMATS, parse_format
from pimforge.hw.fp.config import FpConvertConfig
from pimforge.sim.benches.fp.common import corner_tuples, random_operands
from pimforge.sim.golden.fp.convert import fp_convert
from pimforge.sim.reference import rational as rat
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
# (sim/reference/rational.py, checked against SoftFloat in tests/fp/test_rational_vs_softfloat.py)

@pytest.mark.parametrize("src_name,dst_name", [
    ("fp16", "e4m3"), ("bf16", "e5m2"), ("e4m3", "fp16"), ("e5m2", "bf16"), ("e4m3", "e5m2"),
    ("e5m2", "e4m3"), ("e2m1", "e3m4"), ("e6m9", "e2m1"), ("fp32", "e5m2"), ("fp32", "e10m40"),
])
def test_golden_custom_formats_vs_exact(src_name, dst_name):
    src, dst = parse_format(src_name), parse_format(dst_name)
    a = _sources(src, 33, 50_000)
    got = fp_convert(FpConvertConfig(src=src, dst=dst), a)
    assert_matches_reference(dst, got, rat.convert(src, dst, a), [a], f"{src_name}->{dst_name}")


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
def testrtl_bench_and_cycles(src_name, dst_name, depth):
    rtl_bench_and_cycles("fp_convert", FpConvertConfig(src=FORMATS[src_name], dst=FORMATS[dst_name],
                                                       pipeline_depth=depth))


@pytest.mark.slow
def test_rtl_ftz():
    rtl_bench_and_cycles("fp_convert", FpConvertConfig(src=FORMATS["fp32"], dst=FORMATS["fp16"], ftz=True),
                         n_random=4000)
