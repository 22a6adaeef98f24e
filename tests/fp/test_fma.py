"""fp_fma: golden model vs Berkeley SoftFloat (including near-cancellations), RTL vs golden,
cycle contract."""
from fractions import Fraction

import numpy as np
import pytest
from conftest import assert_matches_reference
from fp_checks import N_SOFTFLOAT_RANDOM, golden_vs_reference, rtl_bench_and_cycles

from pimforge.base.formats import FORMATS
from pimforge.hw.fp.config import FpConfig
from pimforge.hw.fp.fma import GUARD
from pimforge.sim.benches.fp.fma import fma_operands, product_sticky_corners, sticky_corners
from pimforge.sim.golden.fp.fma import fp_fma
from pimforge.sim.reference import rational as rat
from pimforge.sim.reference import softfloat as ref



@pytest.mark.softfloat
@pytest.mark.parametrize("fmt_name", ["fp16", "bf16", "fp32"])
def test_golden_vs_softfloat(fmt_name):
    fmt = FORMATS[fmt_name]
    cfg = FpConfig(fmt=fmt)
    golden_vs_reference(fmt, lambda a, b, c: fp_fma(cfg, a, b, c),
                        lambda a, b, c: ref.fma(fmt, a, b, c), 3, seed=31, label=f"fma {fmt_name}")


@pytest.mark.softfloat
@pytest.mark.parametrize("fmt_name", ["fp16", "bf16", "fp32"])
def test_golden_near_cancellation_vs_softfloat(fmt_name):
    """The bench's FMA stimulus: c close to -a*b (massive cancellation, exact zeros), c near the
    product's exponent, products over the whole exponent range."""
    fmt = FORMATS[fmt_name]
    ops = fma_operands(fmt, np.random.default_rng(32), N_SOFTFLOAT_RANDOM)
    got = fp_fma(FpConfig(fmt=fmt), *ops)
    assert_matches_reference(fmt, got, ref.fma(fmt, *ops), ops, f"fma near-cancellation {fmt_name}")


def test_fused_single_rounding():
    """a*b + c where rounding the product first would change the result (fp16)."""
    fmt = FORMATS["fp16"]
    x = 0x3C01                      # 1 + 2**-10
    # x*x = 1 + 2**-9 + 2**-20: rounding first loses 2**-20; fused keeps it.
    got = fp_fma(FpConfig(fmt=fmt), [x], [x], [0xBC02])   # - (1 + 2**-9)
    assert int(got[0]) == 0x0010                          # 2**-20, a subnormal


def _dropped_below_window(fmt, a, b, c):
    """``a * b + c`` rounded by the rational reference after ``c``'s bits below the RTL's sum
    window are cut off (toward zero), as a datapath without the alignment's sticky computes it.
    The window ends ``GUARD`` bits below the product's LSB, ``2**(ea + eb - 2(p - 1))``."""
    def exp(x):
        e = (int(x) >> fmt.frac_bits) & fmt.exp_all_ones
        return fmt.emin if e == 0 else e - fmt.bias
    _, sa, va = rat.decode(fmt, a)
    _, sb, vb = rat.decode(fmt, b)
    _, sc, vc = rat.decode(fmt, c)
    lsb = Fraction(2) ** (exp(a) + exp(b) - 2 * (fmt.precision - 1) - GUARD)
    kept = (vc // lsb) * lsb
    total = (-1) ** (sa ^ sb) * va * vb + (-1) ** sc * kept
    return rat.round_value(fmt, int(total < 0), abs(total))


@pytest.mark.parametrize("fmt_name", ["fp16", "bf16", "fp32"])
def test_sticky_corners_decided_below_the_window(fmt_name):
    """The bench's sticky corners, by the exact rational reference: for every product among them
    some ``c`` rounds otherwise once its bits below the sum window are dropped (a tie product's
    ``c`` of one sign only: the other sign rounds to the even neighbour anyway).  So
    ``test_rtl_fma``, which replays the corners in both phases, fails a datapath that loses the
    alignment's sticky.  The golden model gets them right."""
    fmt = FORMATS[fmt_name]
    a, b, c = sticky_corners(fmt)
    want = rat.fma(fmt, a, b, c)
    cut = np.array([_dropped_below_window(fmt, *t) for t in zip(a, b, c)], dtype=np.int64)
    for x, y in sorted(set(zip(a.tolist(), b.tolist()))):
        rows = (a == x) & (b == y)
        assert np.any(want[rows] != cut[rows]), f"no c decides {x:#x} * {y:#x}"
    assert_matches_reference(fmt, fp_fma(FpConfig(fmt=fmt), a, b, c), want, [a, b, c],
                             f"fma sticky corners {fmt_name}")


@pytest.mark.parametrize("fmt_name", ["fp16", "bf16", "fp32"])
def test_product_sticky_corners_decided_by_low_product_bits(fmt_name):
    """The bench's corners where ``c`` is the larger operand: by the exact rational reference,
    each rounds otherwise once the product's bits more than ``p + 2`` below ``c``'s LSB are
    dropped (as a shift of the product without sticky does); the golden model, which shifts
    the product there, gets them right."""
    fmt = FORMATS[fmt_name]
    p = fmt.precision
    a, b, c = product_sticky_corners(fmt)
    want = rat.fma(fmt, a, b, c)
    for x, y, z, w in zip(a, b, c, want):
        (_, sa, va), (_, sb, vb), (_, sc, vc) = (rat.decode(fmt, v) for v in (x, y, z))
        e_c = ((int(z) >> fmt.frac_bits) & fmt.exp_all_ones) - fmt.bias
        unit = Fraction(2) ** (e_c - (p - 1) - (p + 3))
        prod = va * vb
        assert prod % unit != 0 and prod < Fraction(2) ** (e_c - p + 1), (hex(x), hex(y), hex(z))
        total = (-1) ** (sa ^ sb) * (prod // unit) * unit + (-1) ** sc * vc
        cut = rat.round_value(fmt, int(total < 0), abs(total))
        assert w != cut, (hex(x), hex(y), hex(z))
    assert_matches_reference(fmt, fp_fma(FpConfig(fmt=fmt), a, b, c), want, [a, b, c],
                             f"fma product sticky corners {fmt_name}")


@pytest.mark.softfloat
@pytest.mark.parametrize("fmt_name", ["fp16", "bf16", "fp32"])
def test_golden_ftz_vs_flushed_softfloat(fmt_name):
    fmt = FORMATS[fmt_name]
    cfg = FpConfig(fmt=fmt, ftz=True)
    golden_vs_reference(fmt, lambda a, b, c: fp_fma(cfg, a, b, c),
                        lambda a, b, c: ref.fma(fmt, a, b, c), 3, seed=33, n_random=200_000,
                        ftz=True, label=f"fma ftz {fmt_name}")


# bf16 on the RTL is the long run's (the default run's time budget): no unit computes in bf16, the
# datapath is the same generator at another width, and bf16's golden model is checked against
# SoftFloat in the default run.  fp_convert keeps one bf16 RTL case (bf16 -> fp32).
@pytest.mark.parametrize("fmt_name", ["fp16", pytest.param("bf16", marks=pytest.mark.slow),
                                      "fp32"])
def test_rtl_fma(fmt_name):
    rtl_bench_and_cycles("fp_fma", FpConfig(fmt=FORMATS[fmt_name]))


def test_rtl_ftz_deep():
    # One design covers both FTZ and a register after every datapath stage.
    rtl_bench_and_cycles("fp_fma", FpConfig(ftz=True, pipeline_depth=4), n_random=4000)
