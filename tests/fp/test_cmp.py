"""fp_cmp: golden model vs Berkeley SoftFloat quiet comparisons, RTL vs golden, cycle contract.

SoftFloat has no IEEE 754-2019 maximum/minimum, so their reference is built here from SoftFloat's
``less`` plus the NaN and signed-zero rules, written independently of the golden model.
"""
import numpy as np
import pytest
from conftest import assert_matches_reference, is_nan
from fp_checks import N_SOFTFLOAT_RANDOM, rtl_bench_and_cycles

from pimforge.base.formats import FORMATS
from pimforge.hw.fp.config import FpConfig
from pimforge.sim.benches.fp.common import corner_tuples, random_operands
from pimforge.sim.golden.fp.cmp import fp_cmp
from pimforge.sim.reference import softfloat as ref



FIELDS = ("less", "equal", "greater", "unordered", "max", "min")


def _operand_pairs(fmt, seed, n_random):
    """Corner pairs plus random pairs, as fp_checks.golden_vs_reference draws them."""
    rand = random_operands(fmt, np.random.default_rng(seed), n_random, 2)
    return [np.concatenate([c, r]) for c, r in zip(corner_tuples(fmt, 2), rand)]


def reference_cmp(fmt, a, b) -> dict:
    """All six outputs from SoftFloat's quiet lt/eq and the IEEE 754-2019 max/min rules."""
    lt, eq = ref.compare(fmt, a, b)
    gt, _ = ref.compare(fmt, b, a)
    nan = is_nan(fmt, a) | is_nan(fmt, b)
    a_neg = (a & fmt.sign_bit) != 0
    # Ordered and neither lt nor gt: the values are equal, so the bit patterns are equal too
    # unless the pair is {+0, -0}, where maximum takes +0 and minimum takes -0.
    eq_max = np.where(a_neg, b, a)
    eq_min = np.where(a_neg, a, b)
    return {
        "less": lt.astype(np.int64), "equal": eq.astype(np.int64), "greater": gt.astype(np.int64),
        "unordered": (~(lt | eq | gt)).astype(np.int64),
        "max": np.where(nan, fmt.canonical_nan, np.where(lt, b, np.where(gt, a, eq_max))),
        "min": np.where(nan, fmt.canonical_nan, np.where(lt, a, np.where(gt, b, eq_min))),
    }


def _check(fmt, ftz, seed, n_random, label):
    a, b = _operand_pairs(fmt, seed, n_random)
    got = fp_cmp(FpConfig(fmt=fmt, ftz=ftz), a, b)
    if ftz:
        want = reference_cmp(fmt, ref.flush_subnormals(fmt, a), ref.flush_subnormals(fmt, b))
    else:
        want = reference_cmp(fmt, a, b)
    for name in FIELDS:
        assert_matches_reference(fmt, got[name], want[name], [a, b], f"{label} {name}")


@pytest.mark.softfloat
@pytest.mark.parametrize("fmt_name", ["fp16", "bf16", "fp32"])
def test_golden_vs_softfloat(fmt_name):
    _check(FORMATS[fmt_name], False, 21, N_SOFTFLOAT_RANDOM, f"cmp {fmt_name}")


@pytest.mark.softfloat
@pytest.mark.parametrize("fmt_name", ["fp16", "bf16", "fp32"])
def test_golden_ftz_vs_flushed_softfloat(fmt_name):
    _check(FORMATS[fmt_name], True, 22, 200_000, f"cmp ftz {fmt_name}")


def test_golden_signed_zero_and_nan_rules():
    """The rules spelled out on a few fp16 pairs: (+0, -0), (NaN, 1), (-Inf, subnormal)."""
    a = np.array([0x0000, 0x8000, 0x7C01, 0xFC00])
    b = np.array([0x8000, 0x0000, 0x3C00, 0x0001])
    got = fp_cmp(FpConfig(), a, b)
    assert got["equal"].tolist() == [1, 1, 0, 0] and got["less"].tolist() == [0, 0, 0, 1]
    assert got["unordered"].tolist() == [0, 0, 1, 0] and got["greater"].tolist() == [0, 0, 0, 0]
    assert got["max"].tolist() == [0x0000, 0x0000, 0x7E00, 0x0001]
    assert got["min"].tolist() == [0x8000, 0x8000, 0x7E00, 0xFC00]
    ftz = fp_cmp(FpConfig(ftz=True), np.array([0x0001, 0x8001]), np.array([0x8000, 0x0000]))
    assert ftz["equal"].tolist() == [1, 1] and ftz["max"].tolist() == [0x0000, 0x0000]
    assert ftz["min"].tolist() == [0x8000, 0x8000]


# Each format at a different depth: fp16 at the preset's 1, bf16 at FpConfig's default 2, fp32
# combinational.  bf16 and FTZ on the RTL are the long run's (the suite's time budget): the same
# generator at another width or with the flush, and both golden models are checked against
# SoftFloat in the default run.
@pytest.mark.parametrize("fmt_name,depth", [("fp16", 1), pytest.param("bf16", 2, marks=pytest.mark.slow),
                                            ("fp32", 0)])
def testrtl_bench_and_cycles(fmt_name, depth):
    rtl_bench_and_cycles("fp_cmp", FpConfig(fmt=FORMATS[fmt_name], pipeline_depth=depth))


@pytest.mark.slow
def test_rtl_ftz():
    rtl_bench_and_cycles("fp_cmp", FpConfig(pipeline_depth=1, ftz=True), n_random=4000)
