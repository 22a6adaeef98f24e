"""``fp_recip``: golden accuracy against float64 maths (fp16 exhaustive, fp32 on 1,000,000 samples
with the range edges, each within its measured bound), the pinned count of fp16 inputs not
correctly rounded, IEEE special values, FTZ, RTL vs golden, as for every special-function unit
(tests/fp_checks.py), and the activity model against the RTL's probes; its tables are checked in
tests/fp/test_func_tables.py."""
import fp_checks
import pytest
from activity_checks import assert_actions
from fp_checks import SpecialFunctionChecks, rtl_bench_and_cycles

from pimforge.base.formats import FP16
from pimforge.hw.fp.config import FpFuncConfig
from pimforge.registry import get_unit


def _activity_matches(unit, cfg, res):
    """Every phase (the no-stall one is the cycle model's job of ``n`` operations): one
    operation per input transfer, so the stall phase's counts are as exact; the tables are read
    combinationally and count nothing (:func:`pimforge.hw.fp.core.streaming_activity`)."""
    for ph in res.phases:
        model = get_unit(unit).activity(cfg, len(ph.in_stamps["i"]))
        assert_actions(ph, model, f"{unit} {ph.name}")


class TestRecip(SpecialFunctionChecks):
    FUNC = "recip"

    @pytest.mark.parametrize("fmt_name", ["fp16", "fp32"])
    def test_rtl(self, fmt_name, monkeypatch):
        """The shared RTL check, then the activity model on the same run (kept from the shared
        check rather than simulated again)."""
        runs = []

        def kept(unit, cfg, **kw):
            runs.append((unit, cfg, rtl_bench_and_cycles(unit, cfg, **kw)))
            return runs[-1][2]
        monkeypatch.setattr(fp_checks, "rtl_bench_and_cycles", kept)
        super().test_rtl(fmt_name)
        (run,) = runs
        _activity_matches(*run)

    @pytest.mark.slow   # 65,536 inputs, 15 s; FTZ's golden model is checked in the default run
    def test_rtl_ftz(self):
        cfg = FpFuncConfig(fmt=FP16, ftz=True)
        _activity_matches("fp_recip", cfg, rtl_bench_and_cycles("fp_recip", cfg, n_random=1 << 16))
