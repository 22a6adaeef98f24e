"""``fp_exp``: golden accuracy against float64 maths (fp16 exhaustive within 1 ulp, fp32 on
1,000,000 samples with the range edges within 4 ulp), IEEE special values, FTZ, RTL vs golden.
The checks are shared with the other special-function units (tests/fp_checks.py)."""
import pytest

from fp_checks import (check_func_fp16_bench_is_exhaustive, check_func_fp16_exhaustive,
                       check_func_fp32_sampled, check_func_ftz, check_func_rtl,
                       check_func_special_values)

FUNC = "exp"
FORMATS = ["fp16", "fp32"]


def test_golden_fp16_exhaustive():
    check_func_fp16_exhaustive(FUNC)


def test_golden_fp32_sampled():
    check_func_fp32_sampled(FUNC)


@pytest.mark.parametrize("fmt_name", FORMATS)
def test_golden_special_values(fmt_name):
    check_func_special_values(FUNC, fmt_name)


@pytest.mark.parametrize("fmt_name", FORMATS)
def test_golden_ftz(fmt_name):
    check_func_ftz(FUNC, fmt_name)


def test_fp16_bench_is_exhaustive():
    check_func_fp16_bench_is_exhaustive(FUNC)


@pytest.mark.parametrize("fmt_name", FORMATS)
def test_rtl(fmt_name):
    """fp16: every input pattern; fp32: corners, range edges and 20,000 samples."""
    check_func_rtl(FUNC, fmt_name)
