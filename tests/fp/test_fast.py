"""The float fast paths (:mod:`pimforge.sim.golden.fp.fast`) against the golden functions, bit for
bit, on every finite operand set the float benches draw (corners, random, near-cancellations, the
FMA's sticky corners), and on fp32 fma ties whose float64 sum lands on a target midpoint while
the exact sum does not.  The golden functions are checked against SoftFloat by their own tests,
so the equality carries over."""
import numpy as np
import pytest

from pimforge.base.formats import FORMATS, FP16, FP32
from pimforge.hw.fp.config import FpConfig
from pimforge.sim.benches.fp.common import corner_tuples, random_operands
from pimforge.sim.benches.fp.fma import fma_operands, product_sticky_corners, sticky_corners
from pimforge.sim.golden.fp import fast
from pimforge.sim.golden.fp.add import fp_add
from pimforge.sim.golden.fp.exp import fp_exp
from pimforge.sim.golden.fp.fma import fp_fma
from pimforge.sim.golden.fp.log import fp_log
from pimforge.sim.golden.fp.mul import fp_mul
from pimforge.sim.golden.fp.recip import fp_recip

FMTS = ["fp16", "fp32"]
N = 200_000


def _finite(fmt, ops):
    """Keep the operand sets whose operands are all finite."""
    keep = np.ones(len(ops[0]), bool)
    for o in ops:
        keep &= (np.asarray(o) & (fmt.sign_bit - 1)) < fmt.inf
    return [np.asarray(o)[keep] for o in ops]


def _operands(fmt, arity, seed):
    rng = np.random.default_rng(seed)
    ops = [np.concatenate(x) for x in zip(corner_tuples(fmt, arity),
                                          random_operands(fmt, rng, N, arity))]
    return _finite(fmt, ops)


def _check(fmt, got, want, ops, label):
    got = fast.to_bits(fmt, got)
    # the golden NaN is canonical; a finite operand set may still give NaN (Inf - Inf after an
    # overflow is impossible here, 0 * Inf too): compare NaN as a class, everything else exactly
    nan_g = (got & (fmt.sign_bit - 1)) > fmt.inf
    nan_w = (want & (fmt.sign_bit - 1)) > fmt.inf
    bad = np.flatnonzero((got != want) & ~(nan_g & nan_w))
    assert not len(bad), (f"{label}: {len(bad)} mismatches, first operands "
                          f"{[hex(int(o[bad[0]])) for o in ops]}: fast {hex(int(got[bad[0]]))},"
                          f" golden {hex(int(want[bad[0]]))}")


@pytest.mark.parametrize("fmt_name", FMTS)
@pytest.mark.parametrize("op", ["add", "sub", "mul"])
def test_add_mul(fmt_name, op):
    fmt = FORMATS[fmt_name]
    a, b = _operands(fmt, 2, seed=5)
    fa, fb = fast.to_float(fmt, a), fast.to_float(fmt, b)
    cfg = FpConfig(fmt=fmt)
    with np.errstate(all="ignore"):
        if op == "mul":
            got, want = fast.mul(fmt, fa, fb), fp_mul(cfg, a, b)
        else:
            sign = -1 if op == "sub" else 1
            got = fast.add(fmt, fa, np.asarray(fb * sign, fb.dtype))
            want = fp_add(cfg, a, b, subtract=op == "sub")
    _check(fmt, got, want, [a, b], f"{op} {fmt_name}")


@pytest.mark.parametrize("fmt_name", FMTS)
def test_fma(fmt_name):
    fmt = FORMATS[fmt_name]
    rng = np.random.default_rng(11)
    cfg = FpConfig(fmt=fmt)
    sets = [_operands(fmt, 3, seed=7), fma_operands(fmt, rng, N), sticky_corners(fmt),
            product_sticky_corners(fmt)]
    for ops in sets:
        a, b, c = _finite(fmt, [np.asarray(o, np.int64) for o in ops])
        with np.errstate(all="ignore"):
            got = fast.fma(fmt, *(fast.to_float(fmt, x) for x in (a, b, c)))
        _check(fmt, got, fp_fma(cfg, a, b, c), [a, b, c], f"fma {fmt_name}")


def test_fma_tie_correction():
    """fp32: the product ``(1 + k 2^-23) * 1.5`` (k odd) is a tie of fp32 and the addend
    ``+-2^-80`` lies below float64's resolution there, so the float64 sum is the tie itself and
    only the TwoSum error tells which way the exact sum rounds; without the correction half the
    sets round to even the wrong way.  (In fp16 the float64 sum of a product and an addend
    cannot both be a tie and inexact: the spans are too short.)"""
    t = np.float32
    k = 2 * np.arange(1, 2001) + 1
    a = (1 + k * 2.0**-23).astype(t)
    b = np.full(len(k), 1.5, t)
    c = (np.where(k % 4 == 1, 1.0, -1.0) * 2.0**-80).astype(t)
    ops = [fast.to_bits(FP32, x) for x in (a, b, c)]
    _check(FP32, fast.fma(FP32, a, b, c), fp_fma(FpConfig(fmt=FP32), *ops), ops, "fma ties")


@pytest.mark.parametrize("name, golden", [("exp", fp_exp), ("log", fp_log), ("recip", fp_recip)])
def test_special_functions(name, golden):
    """fp16 by the table (every input), fp32 through the golden function (sampled)."""
    bits = np.arange(1 << 16, dtype=np.int64)
    got = getattr(fast, name)(FP16, fast.to_float(FP16, bits))
    _check(FP16, got, golden(FpConfig(fmt=FP16), bits), [bits], f"{name} fp16")
    x = np.random.default_rng(1).integers(0, 1 << 32, size=20_000, dtype=np.int64)
    got = getattr(fast, name)(FP32, fast.to_float(FP32, x))
    _check(FP32, got, golden(FpConfig(fmt=FP32), x), [x], f"{name} fp32")


def test_finite():
    assert fast.finite(np.ones(3, np.float16), np.zeros(2, np.float32))
    assert not fast.finite(np.array([1, np.inf], np.float32))
    assert not fast.finite(np.ones(2), np.array([np.nan], np.float16))
