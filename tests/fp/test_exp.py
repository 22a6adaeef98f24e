"""``fp_exp``: golden accuracy against float64 maths (fp16 exhaustive, fp32 on 1,000,000 samples
with the range edges, each within its measured bound), the pinned count of fp16 inputs not
correctly rounded, IEEE special values, FTZ, RTL vs golden, as for every special-function unit
(tests/fp_checks.py), and the activity model against the RTL's probes; its tables are checked in
tests/fp/test_func_tables.py."""
from fp_checks import SpecialFunctionChecks


class TestExp(SpecialFunctionChecks):
    FUNC = "exp"
