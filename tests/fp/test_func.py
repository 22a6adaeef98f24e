"""fp_exp / fp_log / fp_recip: golden accuracy in ULP against float64 math (fp16 exhaustive, fp32
on 1,000,000 samples with the range edges), IEEE special values, FTZ, RTL vs golden."""
import numpy as np
import pytest

from fp_checks import rtl_bench_and_cycles
from pimforge.hw.fp.config import FpFuncConfig
from pimforge.base.formats import FORMATS, FP16, FP32
from pimforge.sim.benches.fp.func_common import edge_values, func_operands
from pimforge.sim.golden.fp import exp as g_exp
from pimforge.sim.golden.fp import log as g_log
from pimforge.sim.golden.fp import recip as g_recip
from pimforge.sim.reference.softfloat import flush_subnormals
from pimforge.sim.reference.ulp import bits_to_float, is_nan_bits, reference_values, ulp_errors

FUNCS = ["exp", "log", "recip"]
GOLDEN = {"exp": g_exp.fp_exp, "log": g_log.fp_log, "recip": g_recip.fp_recip}
MAX_ULP = {"fp16": 1.0, "fp32": 4.0}
N_GOLDEN_FP32 = 1_000_000


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


@pytest.mark.parametrize("func", FUNCS)
def test_golden_fp16_exhaustive(func):
    x = np.arange(1 << 16, dtype=np.int64)
    got = GOLDEN[func](FpFuncConfig(fmt=FP16), x)
    _check_ulp(func, FP16, x, got, MAX_ULP["fp16"], f"{func} fp16 (all inputs)")


@pytest.mark.parametrize("func", FUNCS)
def test_golden_fp32_sampled(func):
    x = func_operands(FP32, np.random.default_rng(21), N_GOLDEN_FP32)
    assert len(x) == N_GOLDEN_FP32 and np.isin(edge_values(FP32), x).all()
    got = GOLDEN[func](FpFuncConfig(fmt=FP32), x)
    _check_ulp(func, FP32, x, got, MAX_ULP["fp32"], f"{func} fp32 (sampled)")


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


@pytest.mark.parametrize("fmt_name", ["fp16", "fp32"])
@pytest.mark.parametrize("func", FUNCS)
def test_golden_special_values(func, fmt_name):
    fmt = FORMATS[fmt_name]
    cases = _specials(fmt)[func]
    x = np.array([c[0] for c in cases], dtype=np.int64)
    want = np.array([c[1] for c in cases], dtype=np.int64)
    got = GOLDEN[func](FpFuncConfig(fmt=fmt), x)
    for a, g, w in zip(x, got, want):
        assert g == w, f"{func} {fmt_name}({int(a):#x}) = {int(g):#x}, expected {int(w):#x}"


@pytest.mark.parametrize("fmt_name", ["fp16", "fp32"])
@pytest.mark.parametrize("func", FUNCS)
def test_golden_ftz(func, fmt_name):
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


def test_fp16_bench_is_exhaustive():
    from pimforge.registry import get_unit
    for name in ("fp_exp", "fp_log", "fp_recip"):
        u = get_unit(name)
        cfg = u.config("fp16")
        job = u.bench(cfg, np.random.default_rng(1), n_random=1 << 16, seed=1)
        sent = job.phases[0].inputs["i"]["a"]
        assert np.array_equal(np.unique(sent), np.arange(1 << 16))
        assert u.config("fp32").fmt is FP32 and u.cycle_model(cfg, 10) == 10 + cfg.pipeline_depth


@pytest.mark.parametrize("fmt_name", ["fp16", "fp32"])
@pytest.mark.parametrize("func", FUNCS)
def test_rtl(func, fmt_name):
    """fp16: every input pattern; fp32: corners, range edges and 20,000 samples."""
    from pimforge.registry import get_unit
    fmt = FORMATS[fmt_name]
    cfg = FpFuncConfig(fmt=fmt)
    n_random = (1 << 16) if fmt_name == "fp16" else 20_000
    res = rtl_bench_and_cycles(f"fp_{func}", cfg, n_random=n_random)
    # the RTL's own outputs (bit-exact with the golden model) against float64 math
    job = get_unit(f"fp_{func}").bench(cfg, np.random.default_rng(1), n_random=n_random, seed=1)
    x = np.asarray(job.phases[0].inputs["i"]["a"], dtype=np.int64)
    got = np.asarray(res.phases[0].received["o"], dtype=np.int64)
    assert len(got) == len(x)
    _check_ulp(func, fmt, x, got, MAX_ULP[fmt_name], f"{func} {fmt_name} RTL")


def test_rtl_ftz():
    rtl_bench_and_cycles("fp_recip", FpFuncConfig(fmt=FP16, ftz=True), n_random=1 << 16)


def test_rtl_pipeline_depth():
    """Registers at other stage boundaries (depth 1) keep the data aligned."""
    rtl_bench_and_cycles("fp_log", FpFuncConfig(fmt=FP32, pipeline_depth=1), n_random=4000)
