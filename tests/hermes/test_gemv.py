"""hermes_gemv (Hermes §IV-A): the golden model against float64 in all four modes, RTL against
golden (bit-exact, with the DIMM's timing, with and without random stalls on every stream), the
cycle model against RTL cycle counts, and the engine's rates from the exact cycle model:
bandwidth at batch 1, multiplier utilization at batch 16, the sparse scaling.

The default run builds one small engine, the one ``run hermes-gemv --backend rtl`` uses (8
multipliers of 4 cycles: 2 word products per cycle, one word a beat, 2 vectors a cycle, batch
up to 4, op_depth 2).
"""
import dataclasses

import numpy as np
import pytest
from activity_checks import assert_actions
from conftest import require_sim

from pimforge import api
from pimforge.base.errors import ConfigError
from pimforge.base.formats import FP16, FP32
from pimforge.base.numerics import bits_float
from pimforge.hw.hermes.config import DDR4_3200, PAPER_GEMV, HermesGemvConfig, gemv_preset
from pimforge.hw.catalog import HW_UNITS
from pimforge.hw.hermes.gemv_timing import GemvJob, gemv_activity, gemv_schedule
from pimforge.hw.hermes.perf import gemv_estimate
from pimforge.sim.benches.hermes.gemv import (
    GemvSpec, default_specs, expected_y, gemv_job, make_data, timing_job
)
from pimforge.sim.golden.hermes.gemv import products

from pimforge.software.hermes.gemv import RTL_ENGINE

SMALL = RTL_ENGINE   # the rtl backend's engine: one Verilator build for both
PAPER = gemv_preset("hermes")


@pytest.fixture(scope="module")
def small_run():
    require_sim("verilator")
    res = api.run_bench("hermes_gemv", SMALL, job=gemv_job(SMALL, np.random.default_rng(1)))
    assert res.passed, f"hermes_gemv RTL does not match the golden model:\n{res.summary()}"
    return res


# ------------------------------------------------------------------ golden against float64
def _float64(data):
    w = bits_float(FP16, data.neurons[data.active]).astype(np.float64)
    x = bits_float(FP16, data.x).astype(np.float64)
    if data.mode == "rows":
        y = (w @ x.T)                                  # (n, b)
        if data.p is not None:
            y = y + bits_float(FP16, data.p[:, data.active]).astype(np.float64).T
        return y
    y = x[:, data.active] @ w                          # (b, d_out)
    if data.p is not None:
        y = y + bits_float(FP16, data.p).astype(np.float64)
    return y


ACCURACY = [GemvSpec("rows", 1, 8192, 24), GemvSpec("rows", 16, 8192, 8, merge=True),
            GemvSpec("rows", 4, 8192, 64, active=6), GemvSpec("rows", 2, 4096, 32, active=0),
            GemvSpec("cols", 1, 128, 8192, active=820), GemvSpec("cols", 16, 64, 2048),
            GemvSpec("cols", 2, 64, 8192, active=8192, merge=True),
            GemvSpec("cols", 3, 64, 100, active=0, merge=True)]


@pytest.mark.parametrize("spec", ACCURACY, ids=lambda s: f"{s.mode}-b{s.batch}-"
                         f"{s.length}x{s.total}-a{s.active}-m{int(s.merge)}")
def test_golden_against_float64(spec):
    """fp32 accumulation: ||y - y_ref||_inf / ||y_ref||_inf <= 1e-3 for d_in up to 8192, dense,
    batched, row- and column-sparse, empty and full lists (the issue's bound; the final fp16
    rounding alone is 2^-11 ~ 4.9e-4 of an element)."""
    cfg = HermesGemvConfig(**dict(PAPER_GEMV, buffer_bytes=16 * 8192 * 4))
    data = make_data(np.random.default_rng(3), spec)
    y = bits_float(FP16, expected_y(cfg, data)).astype(np.float64)
    ref = _float64(data)
    if spec.mode == "cols":
        ref = ref.reshape(y.shape)
    if ref.size == 0 or not np.abs(ref).max():
        assert np.array_equal(y, ref) or spec.active == 0
        if spec.merge:   # empty list: y is the merge partial, exactly
            assert np.array_equal(y, bits_float(FP16, data.p).astype(np.float64))
        return
    err = np.abs(y - ref).max() / np.abs(ref).max()
    assert err <= 1e-3, err


def test_fp32_products_are_exact():
    """fp16 x fp16 in fp32 is exact: the golden products equal the float64 products."""
    rng = np.random.default_rng(4)
    a = rng.integers(0, 0x7C00, 5000) | (rng.integers(0, 2, 5000) << 15)
    b = rng.integers(0, 0x7C00, 5000) | (rng.integers(0, 2, 5000) << 15)
    got = bits_float(FP32, products(FP32, a, b)).astype(np.float64)
    want = bits_float(FP16, a).astype(np.float64) * bits_float(FP16, b).astype(np.float64)
    assert np.array_equal(got, want)


# ------------------------------------------------------------------ RTL
def test_rtl_matches_golden_with_and_without_stalls(small_run):
    assert [p.name for p in small_run.phases] == ["no stalls", "random stalls p=0.3"]
    n_out = sum(len(ph.received["o"]) for ph in small_run.phases)
    assert n_out == 2 * len(small_run.phases[0].received["o"]) > 50


def _check_cycles(cfg, res, specs, seed):
    """Every command, weight-beat transfer and output beat of the no-stall phase (with the
    DIMM's delivery) at the cycle the model predicts."""
    rng = np.random.default_rng(seed)
    jobs = [timing_job(cfg, make_data(rng, s)) for s in specs]
    sched = gemv_schedule(cfg, jobs)
    ph = res.phases[0]
    assert ph.in_stamps["i_cmd"] == [s["cmd"] for s in sched]
    w = [t + cfg.groups(j.batch) - 1 for j, s in zip(jobs, sched) for t in s["issues"]]
    assert ph.in_stamps["i_w"] == w
    assert ph.out_stamps["o"] == [t for s in sched for t in s["outputs"]]
    assert ph.cycles == sched[-1]["outputs"][-1] + 1


def test_cycle_model_is_exact(small_run):
    _check_cycles(SMALL, small_run, default_specs(SMALL), 1)


def _jobs_activity(cfg, specs, seed):
    total = {}
    rng = np.random.default_rng(seed)
    for spec in specs:
        for key, n in gemv_activity(cfg, timing_job(cfg, make_data(rng, spec))).items():
            total[key] = total.get(key, 0) + n
    return total


def test_activity_model_against_rtl(small_run):
    """The probes' action counts equal the sum of :func:`gemv_activity` over the bench's jobs
    (both modes, merges, sparse and empty lists), in both phases: the counts follow from the
    issue cycles and the output beats, which stalls only move in time."""
    want = _jobs_activity(SMALL, default_specs(SMALL), 1)
    for ph in small_run.phases:
        assert_actions(ph, want, ph.name)


def test_unit_activity_against_rtl():
    """``HwUnit.activity(cfg, n)`` on the cycle model's job: n dense rows of
    ``min(4, max_beats)`` beats, batch 1 (32 elements a row, as the DIMM's bursts are)."""
    require_sim("verilator")
    spec = GemvSpec("rows", 1, 32, 5)
    data = make_data(np.random.default_rng(4), spec)
    job = dataclasses.replace(timing_job(SMALL, data), arrivals=None)
    assert job == GemvJob("rows", 1, 5, min(4, SMALL.max_beats))
    res = api.run_bench("hermes_gemv", SMALL, job=gemv_job(SMALL, np.random.default_rng(4),
                                                           specs=[spec], stalls=False))
    assert res.passed, res.summary()
    assert_actions(res.phases[0], HW_UNITS["hermes_gemv"].activity(SMALL, 5))


# 16 row-mode partials at op_depth 16, the deepest the config allows.  Batches of at most
# V = 2 vectors (G = 1) revisit a partial every 16 issue cycles, so the sums landing in the
# revisit's read or add cycle come through the accumulator bank's forwarding; rows of 512
# elements (64 beats) revisit each partial three times.  Finite data: with specials most rows
# would be NaN or Inf, which hides a lost partial.
DEEP = HermesGemvConfig(partials=16, op_depth=16)
DEEP_SPECS = [GemvSpec("rows", 1, 512, 6), GemvSpec("rows", 2, 512, 5, merge=True),
              GemvSpec("rows", 4, 256, 4, active=3), GemvSpec("cols", 2, 64, 9, merge=True)]


@pytest.mark.slow
def test_deep_partials_rtl_and_cycles():
    require_sim("verilator")
    res = api.run_bench("hermes_gemv", DEEP,
                        job=gemv_job(DEEP, np.random.default_rng(2), specs=DEEP_SPECS))
    assert res.passed, f"hermes_gemv at 16 partials, op_depth 16:\n{res.summary()}"
    _check_cycles(DEEP, res, DEEP_SPECS, 2)


# ------------------------------------------------------------------ rates (exact cycle model)
def _run(cfg, mode, batch, length, total, active=None):
    data = make_data(np.random.default_rng(5), GemvSpec(mode, batch, length, total, active))
    job = timing_job(cfg, data)
    s = gemv_schedule(cfg, [job])[0]
    return s["outputs"][-1] + 1 - s["cmd"], job


def test_dense_batch1_is_bandwidth_bound():
    """Dense, batch 1, d_in 4096: at least 0.95 of the DIMM's peak (102.4 B per 1 GHz cycle)."""
    cycles, job = _run(PAPER, "rows", 1, 4096, 256)
    util = 256 * 4096 * 2 / (cycles * DDR4_3200.peak_bytes_per_cycle())
    assert util >= 0.95, util


@pytest.mark.parametrize("mode", ["rows", "cols"])
def test_batch16_saturates_the_multipliers(mode):
    """Batch 16: at least 0.95 of the multipliers' peak (word products per cycle)."""
    length, total = (2048, 128) if mode == "rows" else (2048, 128)
    cycles, job = _run(PAPER, mode, 16, length, total)
    words = total * length // 8 * 16
    util = words / (cycles * PAPER.word_products)
    assert util >= 0.95, util


def test_64_multipliers_saturate_the_dimm_and_32_do_not():
    """Fig. 16 at batch 1: 64 multipliers reach the DIMM's bandwidth, 32 cannot (4 < 6.4 words
    per cycle)."""
    rates = {}
    for m in (32, 64, 256):
        cfg = gemv_preset(f"hermes_m{m}") if m != 256 else PAPER
        cycles, _ = _run(cfg, "rows", 1, 4096, 128)
        rates[m] = 128 * 4096 * 2 / cycles / DDR4_3200.peak_bytes_per_cycle()
    assert rates[64] >= 0.95 and rates[256] >= 0.95
    assert rates[32] < 0.65


def test_sparse_cycles_scale_with_the_active_count():
    """Row-sparse jobs of d_in 4096: cycles are linear in the active count (least-squares fit,
    r^2 > 0.999) and each active row costs within 10% of the dense rate per row."""
    counts = [32, 64, 128, 256, 512]
    cycles = [_run(PAPER, "rows", 1, 4096, 2048, active=c)[0] for c in counts]
    slope, icpt = np.polyfit(counts, cycles, 1)
    pred = np.polyval([slope, icpt], counts)
    r2 = 1 - np.sum((cycles - pred) ** 2) / np.sum((cycles - np.mean(cycles)) ** 2)
    dense, _ = _run(PAPER, "rows", 1, 4096, 512)
    assert r2 > 0.999, r2
    assert slope <= 1.10 * dense / 512, (slope, dense / 512)


@pytest.mark.parametrize("mode,batch,active", [("rows", 1, None), ("rows", 16, None),
                                               ("rows", 1, 100), ("cols", 4, 300),
                                               ("cols", 16, None)])
def test_closed_form_estimate_tracks_the_cycle_model(mode, batch, active):
    """The system model's O(1) estimate stays within 5% of the exact model."""
    cycles, _ = _run(PAPER, mode, batch, 2048, 512, active)
    est = gemv_estimate(PAPER, mode, *((2048, 512) if mode == "rows" else (512, 2048)), batch,
                        active)
    assert abs(est - cycles) / cycles < 0.05, (est, cycles)


# ------------------------------------------------------------------ config and manifest
def test_config_errors():
    with pytest.raises(ConfigError, match="serial_cycles"):
        HermesGemvConfig(multipliers=8, serial_cycles=16)
    with pytest.raises(ConfigError, match="beat_words"):
        HermesGemvConfig(multipliers=16, serial_cycles=8, beat_words=4)
    with pytest.raises(ConfigError, match="buffer_bytes"):
        HermesGemvConfig(**dict(PAPER_GEMV, buffer_bytes=256))
    with pytest.raises(ConfigError, match=r"field 'op_depth'.*<= partials = 8"):
        HermesGemvConfig(partials=8, op_depth=9)
    with pytest.raises(ConfigError, match=r"field 'partials'.*4, 8, 16"):
        HermesGemvConfig(partials=6)


def test_paper_preset_rates():
    """Table II with serial_cycles 8: 32 word products per cycle, 512 GFLOPS at 1 GHz."""
    assert PAPER.word_products == 32 and PAPER.vec_lanes == 4
    assert PAPER.peak_gflops == 2 * 8 * 256 / 8
