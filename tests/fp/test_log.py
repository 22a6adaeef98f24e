"""``fp_log``: golden accuracy against float64 maths (fp16 exhaustive, fp32 on 1,000,000 samples
with the range edges, each within its measured bound), the pinned count of fp16 inputs not
correctly rounded, IEEE special values, FTZ, RTL vs golden, as for every special-function unit
(tests/fp_checks.py), and the activity model against the RTL's probes; its tables are checked in
tests/fp/test_func_tables.py."""
import pytest
from fp_checks import SpecialFunctionChecks, rtl_bench_and_cycles

from pimforge.base.formats import FP32
from pimforge.hw.fp.config import FpFuncConfig


class TestLog(SpecialFunctionChecks):
    FUNC = "log"

    # Long run (16 s): fp_log at other depths stays in the default run inside the units that
    # use it, bit-exact in RTL (pam_ru's final configs at op_depth 2 and 3), and at its own
    # default depth in test_rtl.
    @pytest.mark.slow
    def test_rtl_pipeline_depth(self):
        """Registers at other stage boundaries (depth 1) keep the data aligned."""
        cfg = FpFuncConfig(fmt=FP32, pipeline_depth=1)
        rtl_bench_and_cycles("fp_log", cfg, n_random=4000)
