"""Checks shared by the float-unit tests: golden vs SoftFloat, RTL vs golden, cycle behaviour."""
import os
from decimal import Context, Decimal
from fractions import Fraction

import numpy as np
import pytest
from activity_checks import assert_actions
from conftest import assert_matches_reference, require_sim

from pimforge import api
from pimforge.base.formats import FORMATS, FP16, FP32
from pimforge.hw.fp.config import FpFuncConfig
from pimforge.registry import get_unit
from pimforge.sim.benches.fp.common import corner_tuples, random_operands
from pimforge.sim.benches.fp.func_common import edge_values, func_operands
from pimforge.sim.golden.fp import exp as g_exp
from pimforge.sim.golden.fp import log as g_log
from pimforge.sim.golden.fp import recip as g_recip
from pimforge.sim.reference.softfloat import flush_subnormals
from pimforge.sim.reference.ulp import (bits_to_float, correctly_rounded, is_nan_bits,
                                        reference_values, ulp_errors)

_LONG = os.environ.get("PIMFORGE_LONG", "") not in ("", "0")
# Random operand sets per operation and format.  The default run keeps `make test` within its
# time budget on two cores; the long run checks four times as many against SoftFloat and 50
# times as many on the RTL.  Both runs check every corner tuple first.
# PIMFORGE_SOFTFLOAT_RANDOM=N and PIMFORGE_RTL_RANDOM=N set them directly.
# Golden model vs SoftFloat: 250,000 by default, 1,000,000 long.
N_SOFTFLOAT_RANDOM = int(os.environ.get("PIMFORGE_SOFTFLOAT_RANDOM",
                                        1_000_000 if _LONG else 250_000))
# RTL vs golden: 10,000 by default, then the same again under random
# stalls; 500,000 long (each unit's builds are reused).
N_RTL_RANDOM = int(os.environ.get("PIMFORGE_RTL_RANDOM", 500_000 if _LONG else 10_000))


def golden_vs_reference(fmt, golden, reference, arity, seed, n_random=N_SOFTFLOAT_RANDOM, ftz=False,
                        label=""):
    """Corner tuples plus ``n_random`` random tuples: golden must equal the reference bit for bit.

    With ``ftz`` the reference is SoftFloat on flushed inputs with the result flushed afterwards.
    Returns the number of mismatches (always 0, or the assertion fires).
    """
    ops = [np.concatenate([c, r]) for c, r in
           zip(corner_tuples(fmt, arity), random_operands(fmt, np.random.default_rng(seed), n_random, arity))]
    got = golden(*ops)
    ref_ops = [flush_subnormals(fmt, o) for o in ops] if ftz else ops
    ref = reference(*ref_ops)
    if ftz:
        ref = flush_subnormals(fmt, ref)
    return assert_matches_reference(fmt, got, ref, ops, label)


def rtl_bench_and_cycles(unit, cfg, seed=1, n_random=N_RTL_RANDOM):
    """Run the unit's bench (corners + random, then with random stalls) and assert the cycle
    contract: N back-to-back ops finish within N + latency + 2 cycles, the measured latency
    equals the manifest's, and the unit's cycle model predicts the measured cycle count exactly;
    its activity model predicts the probes' counts exactly in every phase."""
    require_sim("verilator")
    res = api.run_bench(unit, cfg, seed=seed, n_random=n_random)
    assert res.passed, f"{unit} RTL does not match the golden model:\n{res.summary()}\nlog: {res.log}"
    nostall = res.phases[0]
    n = len(nostall.in_stamps["i"])
    assert n >= n_random
    latency = res.manifest["latency"]
    measured = nostall.out_stamps["o"][0] - nostall.in_stamps["i"][0]
    assert measured == latency, f"measured latency {measured} != manifest latency {latency}"
    assert nostall.cycles <= n + latency + 2, f"{n} ops took {nostall.cycles} cycles"
    # every cycle after the pipeline fills moves one operation
    assert nostall.in_stamps["i"] == list(range(n)), "input stream stalled with no back-pressure"
    predicted = get_unit(unit).cycle_model(cfg, n)
    assert predicted == nostall.cycles, f"cycle model {predicted} != RTL {nostall.cycles} cycles"
    # the activity model against the probes in every phase: one operation per input transfer,
    # so the stall phases' counts are as exact as the no-stall phase's (the cycle model's job)
    for ph in res.phases:
        assert_actions(ph, get_unit(unit).activity(cfg, len(ph.in_stamps["i"])),
                       f"{unit} {ph.name}")
    return res


# ---------------------------------------------------------------- special functions
# fp_exp, fp_log and fp_recip share these checks; tests/fp/test_exp.py etc. run them per unit.

GOLDEN = {"exp": g_exp.fp_exp, "log": g_log.fp_log, "recip": g_recip.fp_recip}
# Largest error against float64 maths, in ulps, per (function, format); the RTL tests use the
# same bounds (fp16: the same inputs; fp32: a smaller sample).  fp16: the maximum over all
# 65,536 inputs rounded up at the fourth decimal; nothing is sampled, and the float64 reference
# is good to about 1e-12 ulp, so the margin is only the rounding up.  fp32: the maximum over the
# fixed sample of check_func_fp32_sampled rounded up at the third decimal; the extra slack (at
# most 2**-33 relative, a few LSBs of the tables' 2**-34..2**-36 kernels) keeps the bound from
# sitting on one sample's error when the sampler's mix is retuned.
FUNC_MAX_ULP = {
    ("exp", "fp16"): 0.5150, ("log", "fp16"): 0.5002, ("recip", "fp16"): 0.5003,
    ("exp", "fp32"): 0.5090, ("log", "fp32"): 0.5155, ("recip", "fp32"): 0.5055,
}
# fp16 inputs, of all 65,536, whose result differs from the correctly rounded value (bit
# patterns; NaNs canonical), per function: the kernels are sized for an fp16 result, so a few
# inputs near a rounding boundary round the other way.  The counts were measured against a
# 60-digit decimal evaluation of every input (test_fp16_reference_is_decimal_exact in the long
# run recomputes that reference); the test counts against sim.reference.ulp.correctly_rounded,
# which agrees with it on every fp16 input.  Any change of a table, constant or rounding step
# moves them: change them only with a measured reason.
FUNC_FP16_MISROUNDED = {"exp": 183, "log": 3, "recip": 56}
N_FUNC_GOLDEN_FP32 = 1_000_000


def _reference(func, fmt, x):
    return reference_values(func, fmt, x)


def _check_ulp(func, fmt, x, got, limit, label):
    err = ulp_errors(fmt, got, _reference(func, fmt, x))
    k = int(np.argmax(err))
    nan_out = is_nan_bits(fmt, got)
    assert np.all(got[nan_out] == fmt.canonical_nan), f"{label}: non-canonical NaN"
    assert err[k] <= limit, (f"{label}: {err[k]:.4f} ulp at input {int(x[k]):#x} "
                             f"({bits_to_float(fmt, x[k:k + 1])[0]!r}) -> {int(got[k]):#x}")
    print(f"\n{label}: max {err[k]:.4f} ulp over {len(x)} inputs "
          f"({np.count_nonzero(err > 0.5)} not correctly rounded)")
    return err[k]


def _check_fp16_misrounded(func, x, got, label):
    """The number of fp16 results that differ from the correctly rounded ones is the pinned one."""
    want = correctly_rounded(func, FP16, x)
    bad = np.nonzero(got != want)[0]
    expected = FUNC_FP16_MISROUNDED[func]
    worst = ", ".join(f"{int(x[k]):#06x} -> {int(got[k]):#06x} (not {int(want[k]):#06x})"
                      for k in bad[:4])
    assert len(bad) == expected, (f"{label}: {len(bad)} inputs not correctly rounded, expected "
                                  f"{expected}; first: {worst}")


def check_func_fp16_exhaustive(func):
    """fp16 golden model on all 65,536 inputs: within FUNC_MAX_ULP of float64 maths."""
    x = np.arange(1 << 16, dtype=np.int64)
    got = GOLDEN[func](FpFuncConfig(fmt=FP16), x)
    _check_ulp(func, FP16, x, got, FUNC_MAX_ULP[(func, "fp16")], f"{func} fp16 (all inputs)")


def check_func_fp16_misrounded(func):
    """fp16 golden model on all 65,536 inputs: exactly FUNC_FP16_MISROUNDED not correctly
    rounded."""
    x = np.arange(1 << 16, dtype=np.int64)
    got = GOLDEN[func](FpFuncConfig(fmt=FP16), x)
    _check_fp16_misrounded(func, x, got, f"{func} fp16 (all inputs)")


def check_func_fp32_sampled(func):
    """fp32 golden model on 1,000,000 samples (range edges included) within FUNC_MAX_ULP."""
    x = func_operands(FP32, np.random.default_rng(21), N_FUNC_GOLDEN_FP32)
    assert len(x) == N_FUNC_GOLDEN_FP32 and np.isin(edge_values(FP32), x).all()
    got = GOLDEN[func](FpFuncConfig(fmt=FP32), x)
    _check_ulp(func, FP32, x, got, FUNC_MAX_ULP[(func, "fp32")], f"{func} fp32 (sampled)")


def _decimal_rounded_fp16(func):
    """``(inputs, results)``: the correctly rounded fp16 result of every input with a finite
    nonzero true value, from 60-digit decimal maths alone (no float64 function values): the
    nearest of three neighbouring fp16 values to the decimal value, by exact rational distance,
    ties to even (none occur)."""
    top = FP16.inf  # read as 2**16: the overflow boundary lies halfway between it and max finite
    mags = [Fraction(float(v)) for v in bits_to_float(FP16, np.arange(top))] + [Fraction(1 << 16)]
    ctx = Context(prec=60)
    inputs, results = [], []
    for b, v in enumerate(bits_to_float(FP16, np.arange(1 << 16))):
        if not np.isfinite(v) or v == 0 or (func == "log" and (v < 0 or v == 1)):
            continue
        q = Fraction(float(v))
        if func == "recip":
            t = 1 / q
        else:
            d = ctx.divide(Decimal(q.numerator), Decimal(q.denominator))
            t = Fraction(ctx.exp(d) if func == "exp" else ctx.ln(d))
        sign, t = (FP16.sign_bit if t < 0 else 0), abs(t)
        guess = int(np.float16(float(t)).view(np.uint16)) if t < mags[top - 1] else top
        m = min((c for c in (guess - 1, guess, guess + 1) if 0 <= c <= top),
                key=lambda c: (abs(mags[c] - t), c & 1))
        inputs.append(b)
        results.append(sign | m)
    return np.array(inputs, dtype=np.int64), np.array(results, dtype=np.int64)


def check_func_fp16_reference_is_decimal_exact(func):
    """correctly_rounded (float64 with a decimal fallback near rounding boundaries) equals a
    60-digit decimal evaluation on every fp16 input with a finite nonzero value."""
    x, want = _decimal_rounded_fp16(func)
    got = correctly_rounded(func, FP16, x)
    bad = np.nonzero(got != want)[0]
    k = bad[0] if len(bad) else 0
    assert not len(bad), (f"{func}: {len(bad)} fp16 inputs differ from the decimal reference; "
                          f"first {int(x[k]):#06x} -> {int(got[k]):#06x} (not {int(want[k]):#06x})")


def _b(fmt, value) -> int:
    """Bit pattern of a float value exactly representable in ``fmt``."""
    dt, it = (np.float16, np.uint16) if fmt is FP16 else (np.float32, np.uint32)
    return int(np.array([value], dtype=dt).view(it)[0])


def _specials(fmt):
    nan, inf, mx = fmt.canonical_nan, fmt.inf, fmt.max_finite
    neg = fmt.sign_bit
    return {
        "exp": [(nan, nan), (nan | neg | 1, nan), (inf, inf), (inf | neg, 0), (0, fmt.one),
                (neg, fmt.one), (1, fmt.one), (1 | neg, fmt.one), (mx, inf), (mx | neg, 0),
                (_b(fmt, 1000.0 if fmt is FP32 else 12.0), inf),
                (_b(fmt, -200.0 if fmt is FP32 else -20.0), 0)],
        "log": [(nan, nan), (inf | neg, nan), (fmt.one | neg, nan), (1 | neg, nan), (0, inf | neg),
                (neg, inf | neg), (inf, inf), (fmt.one, 0), (_b(fmt, 2.0), _b(fmt, np.log(2.0)))],
        "recip": [(nan, nan), (0, inf), (neg, inf | neg), (inf, 0), (inf | neg, neg),
                  (fmt.one, fmt.one), (_b(fmt, -4.0), _b(fmt, -0.25)), (_b(fmt, 0.5), _b(fmt, 2.0)),
                  (1, inf), (mx, _b(fmt, 1.0 / fmt.to_float(mx))),
                  (mx | neg, _b(fmt, -1.0 / fmt.to_float(mx)))],
    }


def check_func_special_values(func, fmt_name):
    fmt = FORMATS[fmt_name]
    cases = _specials(fmt)[func]
    x = np.array([c[0] for c in cases], dtype=np.int64)
    want = np.array([c[1] for c in cases], dtype=np.int64)
    got = GOLDEN[func](FpFuncConfig(fmt=fmt), x)
    for a, g, w in zip(x, got, want):
        assert g == w, f"{func} {fmt_name}({int(a):#x}) = {int(g):#x}, expected {int(w):#x}"


def check_func_ftz(func, fmt_name):
    """FTZ equals the IEEE model on flushed inputs with subnormal results flushed afterwards."""
    fmt = FORMATS[fmt_name]
    if fmt is FP16:
        x = np.arange(1 << 16, dtype=np.int64)
    else:
        x = func_operands(fmt, np.random.default_rng(22), 200_000)
    got = GOLDEN[func](FpFuncConfig(fmt=fmt, ftz=True), x)
    want = flush_subnormals(fmt, GOLDEN[func](FpFuncConfig(fmt=fmt), flush_subnormals(fmt, x)))
    bad = np.nonzero(got != want)[0]
    assert not len(bad), f"{len(bad)} mismatches; first input {int(x[bad[0]]):#x}"
    sub_in = ((x >> fmt.frac_bits) & fmt.exp_all_ones) == 0
    frac_out = got & ((1 << fmt.frac_bits) - 1)
    sub_out = (((got >> fmt.frac_bits) & fmt.exp_all_ones) == 0) & (frac_out != 0)
    assert not sub_out.any() and sub_in.any()


def check_func_fp16_bench_is_exhaustive(func):
    u = get_unit(f"fp_{func}")
    cfg = u.config("fp16")
    job = u.bench(cfg, np.random.default_rng(1), n_random=1 << 16, seed=1)
    sent = job.phases[0].inputs["i"]["a"]
    assert np.array_equal(np.unique(sent), np.arange(1 << 16))
    assert u.config("fp32").fmt is FP32 and u.cycle_model(cfg, 10) == 10 + cfg.pipeline_depth


def check_func_rtl(func, fmt_name):
    """fp16: every input pattern; fp32: corners, range edges and 20,000 samples."""
    fmt = FORMATS[fmt_name]
    cfg = FpFuncConfig(fmt=fmt)
    n_random = (1 << 16) if fmt_name == "fp16" else 20_000
    res = rtl_bench_and_cycles(f"fp_{func}", cfg, n_random=n_random)
    # the RTL's own outputs (bit-exact with the golden model) against float64 math
    job = get_unit(f"fp_{func}").bench(cfg, np.random.default_rng(1), n_random=n_random, seed=1)
    x = np.asarray(job.phases[0].inputs["i"]["a"], dtype=np.int64)
    got = np.asarray(res.phases[0].received["o"], dtype=np.int64)
    assert len(got) == len(x)
    _check_ulp(func, fmt, x, got, FUNC_MAX_ULP[(func, fmt_name)], f"{func} {fmt_name} RTL")
    if fmt_name == "fp16":
        _check_fp16_misrounded(func, x, got, f"{func} fp16 RTL")
    return res


class SpecialFunctionChecks:
    """The tests of one special-function unit; ``tests/fp/test_<func>.py`` subclasses this as
    ``Test<Func>`` with ``FUNC`` set (pytest collects the subclass, not this base)."""

    FUNC = ""

    def test_golden_fp16_exhaustive(self):
        check_func_fp16_exhaustive(self.FUNC)

    def test_golden_fp16_misrounded(self):
        check_func_fp16_misrounded(self.FUNC)

    # Long run (about 4 s per function): 65,536 decimal evaluations.  The default run relies on
    # the argument in sim/reference/ulp.py that float64 decides every input outside the window.
    @pytest.mark.slow
    def test_fp16_reference_is_decimal_exact(self):
        check_func_fp16_reference_is_decimal_exact(self.FUNC)

    def test_golden_fp32_sampled(self):
        check_func_fp32_sampled(self.FUNC)

    @pytest.mark.parametrize("fmt_name", ["fp16", "fp32"])
    def test_golden_special_values(self, fmt_name):
        check_func_special_values(self.FUNC, fmt_name)

    @pytest.mark.parametrize("fmt_name", ["fp16", "fp32"])
    def test_golden_ftz(self, fmt_name):
        check_func_ftz(self.FUNC, fmt_name)

    def test_fp16_bench_is_exhaustive(self):
        check_func_fp16_bench_is_exhaustive(self.FUNC)

    @pytest.mark.parametrize("fmt_name", ["fp16", "fp32"])
    def test_rtl(self, fmt_name):
        """fp16: every input pattern; fp32: corners, range edges and 20,000 samples."""
        check_func_rtl(self.FUNC, fmt_name)
