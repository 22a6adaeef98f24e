"""fp_mul: golden model vs Berkeley SoftFloat, RTL vs golden, cycle contract."""
import pytest
from fp_checks import golden_vs_reference, rtl_bench_and_cycles

from pimforge.base.formats import FORMATS
from pimforge.hw.fp.config import FpConfig
from pimforge.sim.golden.fp.mul import fp_mul
from pimforge.sim.reference import softfloat as ref



@pytest.mark.softfloat
@pytest.mark.parametrize("fmt_name", ["fp16", "bf16", "fp32"])
def test_golden_vs_softfloat(fmt_name):
    fmt = FORMATS[fmt_name]
    cfg = FpConfig(fmt=fmt)
    golden_vs_reference(fmt, lambda a, b: fp_mul(cfg, a, b),
                        lambda a, b: ref.binary("mul", fmt, a, b), 2, seed=21,
                        label=f"mul {fmt_name}")


@pytest.mark.softfloat
@pytest.mark.parametrize("fmt_name", ["fp16", "bf16", "fp32"])
def test_golden_ftz_vs_flushed_softfloat(fmt_name):
    fmt = FORMATS[fmt_name]
    cfg = FpConfig(fmt=fmt, ftz=True)
    golden_vs_reference(fmt, lambda a, b: fp_mul(cfg, a, b),
                        lambda a, b: ref.binary("mul", fmt, a, b), 2, seed=22, n_random=200_000,
                        ftz=True, label=f"mul ftz {fmt_name}")


# bf16 on the RTL is the long run's (the default run's time budget): no unit computes in bf16, the
# datapath is the same generator at another width, and bf16's golden model is checked against
# SoftFloat in the default run.  fp_convert keeps one bf16 RTL case (bf16 -> fp32).
@pytest.mark.parametrize("fmt_name", ["fp16", pytest.param("bf16", marks=pytest.mark.slow),
                                      "fp32"])
def test_rtl_mul(fmt_name):
    rtl_bench_and_cycles("fp_mul", FpConfig(fmt=FORMATS[fmt_name]))


def test_rtl_ftz_combinational():
    # One design covers both FTZ and the depth-0 (combinational) pipeline.
    rtl_bench_and_cycles("fp_mul", FpConfig(ftz=True, pipeline_depth=0), n_random=4000)
