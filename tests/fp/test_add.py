"""fp_add / fp_sub: golden model vs Berkeley SoftFloat, RTL vs golden, cycle contract."""
import pytest
from activity_checks import assert_actions
from fp_checks import golden_vs_reference, rtl_bench_and_cycles
from fp_stall_checks import rtl_stall_phase_alone

from pimforge.base.formats import FORMATS
from pimforge.hw.fp.config import FpConfig
from pimforge.registry import get_unit
from pimforge.sim.golden.fp.add import fp_add
from pimforge.sim.reference import softfloat as ref



@pytest.mark.softfloat
@pytest.mark.parametrize("fmt_name", ["fp16", "bf16", "fp32"])
@pytest.mark.parametrize("op", ["add", "sub"])
def test_golden_vs_softfloat(fmt_name, op):
    fmt = FORMATS[fmt_name]
    cfg = FpConfig(fmt=fmt)
    golden_vs_reference(fmt, lambda a, b: fp_add(cfg, a, b, op == "sub"),
                        lambda a, b: ref.binary(op, fmt, a, b), 2, seed=11, label=f"{op} {fmt_name}")


@pytest.mark.softfloat
@pytest.mark.parametrize("fmt_name", ["fp16", "bf16", "fp32"])
def test_golden_ftz_vs_flushed_softfloat(fmt_name):
    fmt = FORMATS[fmt_name]
    cfg = FpConfig(fmt=fmt, ftz=True)
    golden_vs_reference(fmt, lambda a, b: fp_add(cfg, a, b), lambda a, b: ref.binary("add", fmt, a, b),
                        2, seed=12, n_random=200_000, ftz=True, label=f"add ftz {fmt_name}")


# bf16 on the RTL is the long run's (the default run's time budget): no unit computes in bf16, the
# datapath is the same generator at another width, and bf16's golden model is checked against
# SoftFloat in the default run.  fp_convert keeps one bf16 RTL case (bf16 -> fp32).
@pytest.mark.parametrize("fmt_name", ["fp16", pytest.param("bf16", marks=pytest.mark.slow),
                                      "fp32"])
def test_rtl_add(fmt_name):
    rtl_bench_and_cycles("fp_add", FpConfig(fmt=FORMATS[fmt_name]))


# fp_sub is fp_add with the second operand's sign flipped: fp16 in the default run, fp32 (the
# same generator wider, checked by test_rtl_add) in the long run.  Depths 0 and 4 likewise: the
# default run keeps the default depth, the deepest (16) and fp_mul's combinational design.
@pytest.mark.parametrize("fmt_name", ["fp16", pytest.param("fp32", marks=pytest.mark.slow)])
def test_rtl_sub(fmt_name):
    rtl_bench_and_cycles("fp_sub", FpConfig(fmt=FORMATS[fmt_name]))


@pytest.mark.parametrize("depth", [pytest.param(0, marks=pytest.mark.slow),
                                   pytest.param(4, marks=pytest.mark.slow),
                                   16])   # 16: a register between compare and swap
def test_rtl_pipeline_depths(depth):
    rtl_bench_and_cycles("fp_add", FpConfig(pipeline_depth=depth), n_random=4000)


def test_rtl_ftz():
    rtl_bench_and_cycles("fp_add", FpConfig(ftz=True), n_random=4000)


# The stall phase on its own, so that a bug it misses is not hidden by the no-stall phase's
# catch (`-k stall`).  Its operands come from every stratum: a dropped alignment sticky needs
# shifts of more than three places, which nearby-exponent pairs never make.
@pytest.mark.parametrize("fmt_name", ["fp16", "fp32"])
def test_rtl_stall_phase_alone(fmt_name):
    cfg = FpConfig(fmt=FORMATS[fmt_name])
    res = rtl_stall_phase_alone("fp_add", cfg)
    (ph,) = res.phases
    assert_actions(ph, get_unit("fp_add").activity(cfg, len(ph.in_stamps["i"])))
