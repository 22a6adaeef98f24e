"""Golden models and RTL against the exact rational reference, on every supported Python.

SoftFloat (softfloatpy) has no release for Python 3.10, and its tests skip there; without
another independent reference, a rounding bug made the same way in the golden model and the RTL
(ties-to-even turned into ties-away in both) would pass every RTL-against-golden bench.
:mod:`pimforge.sim.reference.rational` rounds exact ``Fraction`` results by IEEE 754's rules and
uses neither SoftFloat nor any code under test, so these tests hold on every Python.

The operand sets are corners, random sets (uniform and nearby exponents) and, from
:mod:`pimforge.sim.reference.ties`, sets whose exact result is a tie (half with an even lower
neighbour, half odd; subnormal ties for products, fused sums and narrowing conversions): random
operands alone almost never hit a tie (``tests/fp_rational_checks.py`` draws the sample).
``tests/fp/test_rational_vs_softfloat.py`` checks the reference itself against SoftFloat where
softfloatpy is installed.
"""
import subprocess
import sys

import numpy as np
import pytest
from conftest import assert_matches_reference, is_nan, require_sim
from fp_rational_checks import (CONVERT_PAIRS, FMTS, N_RANDOM, N_TIES, OPS, golden, reference,
                                sample)

from pimforge import api
from pimforge.base.formats import FORMATS
from pimforge.hw.fp.config import FpConfig, FpConvertConfig
from pimforge.sim.golden.fp.cmp import fp_cmp
from pimforge.sim.golden.fp.convert import fp_convert
from pimforge.sim.harness.job import Job, Phase
from pimforge.sim.reference import rational as rat
from pimforge.sim.reference.ties import count_ties


# --- the sample ------------------------------------------------------------------------------

@pytest.mark.parametrize("fmt_name", FMTS)
@pytest.mark.parametrize("op", OPS)
def test_sample_holds_ties(op, fmt_name):
    """Ties of both parities (ties-to-even rounds one kind down, the other up), subnormal ones
    where the operation can make them (a sum of two floats below the smallest normal is exact)."""
    fmt = FORMATS[fmt_name]
    c = count_ties(op, fmt, sample(op, fmt, seed=1))
    assert c["ties"] >= 0.9 * N_TIES and min(c["even"], c["odd"]) >= 0.3 * N_TIES, c
    if op in ("mul", "fma"):
        assert c["subnormal"] >= 0.1 * N_TIES, c


@pytest.mark.parametrize("src_name,dst_name", [p for p in CONVERT_PAIRS if p[1] != "fp32"])
def test_convert_sample_holds_ties(src_name, dst_name):
    src, dst = FORMATS[src_name], FORMATS[dst_name]
    c = count_ties("convert", src, sample("convert", src, 1, dst=dst), dst=dst)
    assert c["ties"] >= 0.9 * N_TIES and min(c["even"], c["odd"]) >= 0.3 * N_TIES, c


def test_reference_is_independent():
    """The reference and the tie generator load no SoftFloat, no RTL and no golden model."""
    code = ("import sys; import pimforge.sim.reference.rational, pimforge.sim.reference.ties; "
            "bad = [m for m in sys.modules if m.startswith(('softfloatpy', 'pimforge.hw', "
            "'pimforge.sim.golden', 'pimforge.sim.reference.softfloat', 'amaranth'))]; "
            "print(bad); sys.exit(1 if bad else 0)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


# --- golden models ---------------------------------------------------------------------------

@pytest.mark.parametrize("fmt_name", FMTS)
@pytest.mark.parametrize("op", OPS)
def test_golden_vs_rational(op, fmt_name):
    fmt = FORMATS[fmt_name]
    ops = sample(op, fmt, seed=2)
    assert_matches_reference(fmt, golden(op, FpConfig(fmt=fmt), ops), reference(op, fmt, ops),
                             ops, f"golden {op} {fmt_name} vs rational")


@pytest.mark.parametrize("fmt_name", FMTS)
@pytest.mark.parametrize("op", OPS)
def test_golden_ftz_vs_rational(op, fmt_name):
    fmt = FORMATS[fmt_name]
    ops = sample(op, fmt, seed=3, n_random=N_RANDOM // 2, n_ties=N_TIES // 2)
    assert_matches_reference(fmt, golden(op, FpConfig(fmt=fmt, ftz=True), ops),
                             reference(op, fmt, ops, ftz=True), ops,
                             f"golden {op} ftz {fmt_name} vs rational")


@pytest.mark.parametrize("ftz", [False, True])
@pytest.mark.parametrize("src_name,dst_name", CONVERT_PAIRS)
def test_golden_convert_vs_rational(src_name, dst_name, ftz):
    src, dst = FORMATS[src_name], FORMATS[dst_name]
    (a,) = sample("convert", src, seed=4, dst=dst)
    got = fp_convert(FpConvertConfig(src=src, dst=dst, ftz=ftz), a)
    assert_matches_reference(dst, got, rat.convert(src, dst, a, ftz=ftz), [a],
                             f"golden {src_name}->{dst_name} ftz={ftz} vs rational")


@pytest.mark.parametrize("fmt_name", FMTS)
def test_golden_cmp_vs_rational(fmt_name):
    fmt = FORMATS[fmt_name]
    a, b = sample("add", fmt, seed=5, n_ties=0)
    got = fp_cmp(FpConfig(fmt=fmt), a, b)
    lt, eq = rat.compare(fmt, a, b)
    gt, _ = rat.compare(fmt, b, a)
    unordered = is_nan(fmt, a) | is_nan(fmt, b)
    for name, want in (("less", lt), ("equal", eq), ("greater", gt), ("unordered", unordered)):
        assert_matches_reference(fmt, got[name], want.astype(np.int64), [a, b],
                                 f"golden cmp {fmt_name} {name} vs rational")


# --- RTL -------------------------------------------------------------------------------------
# The RTL on the same kind of sample, with the expected outputs taken from the rational
# reference instead of the golden model, so that a rounding bug shared by both is caught here.
# The configs are those of the RTL tests in test_add.py etc., whose Verilator builds are reused.

# One format per unit in the default run (each run costs a couple of seconds); the rounding
# stages are one generator for every format and unit, and the golden models of all three
# formats are checked above.
_SLOW = pytest.mark.slow
RTL_CASES = [("fp_add", "add", "fp16"), pytest.param("fp_add", "add", "fp32", marks=_SLOW),
             pytest.param("fp_sub", "sub", "fp16", marks=_SLOW),
             pytest.param("fp_mul", "mul", "fp16", marks=_SLOW), ("fp_mul", "mul", "fp32"),
             ("fp_fma", "fma", "fp16"), pytest.param("fp_fma", "fma", "fp32", marks=_SLOW)]
N_RTL_RANDOM, N_RTL_TIES = 1500, 1000


def _rtl_vs_rational(unit, cfg, fields, ops, want):
    require_sim("verilator")
    job = Job(phases=[Phase("rational reference", inputs={"i": dict(zip(fields, ops))},
                            expected={"o": {"r": want}})])
    res = api.run_bench(unit, cfg, job=job)
    assert res.passed, f"{unit} RTL does not match the rational reference:\n{res.summary()}"


@pytest.mark.parametrize("unit,op,fmt_name", RTL_CASES)
def test_rtl_vs_rational(unit, op, fmt_name):
    fmt = FORMATS[fmt_name]
    ops = sample(op, fmt, seed=6, n_random=N_RTL_RANDOM, n_ties=N_RTL_TIES)
    want = reference(op, fmt, ops)
    _rtl_vs_rational(unit, FpConfig(fmt=fmt), ["a", "b", "c"][:len(ops)], ops, want)


def test_rtl_convert_vs_rational():
    src, dst = FORMATS["fp32"], FORMATS["fp16"]
    (a,) = sample("convert", src, seed=7, n_random=N_RTL_RANDOM, n_ties=N_RTL_TIES, dst=dst)
    _rtl_vs_rational("fp_convert", FpConvertConfig(src=src, dst=dst, pipeline_depth=1), ["a"],
                     [a], rat.convert(src, dst, a))
