"""``fp_recip``: golden accuracy against float64 maths (fp16 exhaustive, fp32 on 1,000,000 samples
with the range edges, each within its measured bound), the pinned count of fp16 inputs not
correctly rounded, IEEE special values, FTZ, RTL vs golden, as for every special-function unit
(tests/fp_checks.py), and the activity model against the RTL's probes; its tables are checked in
tests/fp/test_func_tables.py."""
import pytest
from fp_checks import SpecialFunctionChecks, rtl_bench_and_cycles

from pimforge.base.formats import FP16
from pimforge.hw.fp.config import FpFuncConfig


class TestRecip(SpecialFunctionChecks):
    FUNC = "recip"

    @pytest.mark.slow   # 65,536 inputs, 15 s; FTZ's golden model is checked in the default run
    def test_rtl_ftz(self):
        cfg = FpFuncConfig(fmt=FP16, ftz=True)
        rtl_bench_and_cycles("fp_recip", cfg, n_random=1 << 16)
