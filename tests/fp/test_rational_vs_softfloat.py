"""The exact rational reference against Berkeley SoftFloat, where softfloatpy is installed.

``tests/fp/test_rational.py`` holds the golden models and the RTL to
:mod:`pimforge.sim.reference.rational` on every Python; here the reference itself is checked on
the same kind of sample (corners, random sets, ties of both parities, subnormal ties), with and
without FTZ (SoftFloat on flushed inputs, its result flushed, as the FTZ tests define it).
"""
import numpy as np
import pytest
from conftest import assert_matches_reference
from fp_rational_checks import CONVERT_PAIRS, FMTS, OPS, reference, sample

from pimforge.base.formats import FORMATS
from pimforge.sim.reference import rational as rat
from pimforge.sim.reference import softfloat as ref

pytestmark = pytest.mark.softfloat


def _softfloat(op, fmt, ops):
    return ref.fma(fmt, *ops) if op == "fma" else ref.binary(op, fmt, *ops)


@pytest.mark.parametrize("fmt_name", FMTS)
@pytest.mark.parametrize("op", OPS)
def test_rational_vs_softfloat(op, fmt_name):
    fmt = FORMATS[fmt_name]
    ops = sample(op, fmt, seed=12)
    assert_matches_reference(fmt, reference(op, fmt, ops), _softfloat(op, fmt, ops), ops,
                             f"rational {op} {fmt_name}")


@pytest.mark.parametrize("fmt_name", FMTS)
@pytest.mark.parametrize("op", OPS)
def test_rational_ftz_vs_flushed_softfloat(op, fmt_name):
    fmt = FORMATS[fmt_name]
    ops = sample(op, fmt, seed=13, n_random=1500, n_ties=750)
    want = ref.flush_subnormals(fmt, _softfloat(op, fmt, [ref.flush_subnormals(fmt, o) for o in ops]))
    assert_matches_reference(fmt, reference(op, fmt, ops, ftz=True), want, ops,
                             f"rational {op} ftz {fmt_name}")


@pytest.mark.parametrize("src_name,dst_name", CONVERT_PAIRS)
def test_rational_convert_vs_softfloat(src_name, dst_name):
    src, dst = FORMATS[src_name], FORMATS[dst_name]
    (a,) = sample("convert", src, seed=14, dst=dst)
    assert_matches_reference(dst, rat.convert(src, dst, a), ref.convert(src, dst, a), [a],
                             f"rational {src_name}->{dst_name}")
    want = ref.flush_subnormals(dst, ref.convert(src, dst, ref.flush_subnormals(src, a)))
    assert_matches_reference(dst, rat.convert(src, dst, a, ftz=True), want, [a],
                             f"rational ftz {src_name}->{dst_name}")


@pytest.mark.parametrize("fmt_name", FMTS)
def test_rational_compare_vs_softfloat(fmt_name):
    fmt = FORMATS[fmt_name]
    a, b = sample("add", fmt, seed=15, n_ties=0)
    for got, want, name in zip(rat.compare(fmt, a, b), ref.compare(fmt, a, b), ("lt", "eq")):
        assert np.array_equal(got, want), f"rational compare {fmt_name} {name}"


def test_rational_mul_widening_vs_softfloat():
    """fp16 x fp16 rounded to fp32 (exact) and bf16 x bf16 to fp16 (rounded, ties included)."""
    for src, dst in ((FORMATS["fp16"], FORMATS["fp32"]), (FORMATS["bf16"], FORMATS["fp16"])):
        a, b = sample("mul", src, seed=16)
        wa, wb = ref.convert(src, FORMATS["fp32"], a), ref.convert(src, FORMATS["fp32"], b)
        prod = ref.binary("mul", FORMATS["fp32"], wa, wb)   # exact: 16 significand bits at most
        want = prod if dst is FORMATS["fp32"] else ref.convert(FORMATS["fp32"], dst, prod)
        assert_matches_reference(dst, rat.binary("mul", src, a, b, dst=dst), want, (a, b),
                                 f"rational mul {src}->{dst}")
