"""``fp_exp``: golden accuracy against float64 maths (fp16 exhaustive within 1 ulp, fp32 on
1,000,000 samples with the range edges within 4 ulp), IEEE special values, FTZ, RTL vs golden,
as for every special-function unit (tests/fp_checks.py)."""
from fp_checks import SpecialFunctionChecks


class TestExp(SpecialFunctionChecks):
    FUNC = "exp"
