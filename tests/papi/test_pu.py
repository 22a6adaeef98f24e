"""papi_pu (PAPI §6): the golden model against float64, RTL against golden (bit-exact, with the
HBM3 bank model, with and without random stalls) for 1P2B and a deep config (4P1B in the long
run), the cycle model against
the RTL's cycle counts, the contract ``pu_gemv_cycles`` (speed, bandwidth- and compute-bound
regimes, the crossover against an analytic one computed here from the paper's numbers), and
config errors.
"""
import math
import time

import dataclasses

import numpy as np
import pytest
from activity_checks import assert_actions
from conftest import require_sim

from pimforge import api
from pimforge.base.errors import ConfigError
from pimforge.base.formats import FP16, FP32
from pimforge.base.numerics import bits_float, float_bits
from pimforge.hw.papi.config import PapiPuConfig, pu_preset
from pimforge.hw.papi.perf import PU_CLOCK_MHZ, pu_gemv_activity, pu_gemv_cycles
from pimforge.hw.catalog import HW_UNITS
from pimforge.hw.papi.pu_timing import pu_activity, pu_cycles, pu_run
from pimforge.sim.benches.papi.pu import make_data, pu_job, pu_jobs_back_to_back
from pimforge.sim.golden.papi.pu import pu_gemv

# "deep": 16 partials at op_depth 16 (the deepest the config allows).  One vector group (reuse
# = fpus) and one bank, so a partial is revisited every 16 cycles: the sum landing in the
# revisit's cycle comes through the write-port forwarding; 32 beats a row revisit each twice.
CFGS = {"4P1B": PapiPuConfig(), "1P2B": pu_preset("small_1p2b"),
        "deep": PapiPuConfig(max_reuse=4, max_beats=32, partials=16, op_depth=16)}


# 4P1B (the default config, four FPUs sharing one bank) is the long run's (the suite's time
# budget, 25 s): 1P2B has the bank interleave, "deep" the forwarding and the deepest operators,
# and 4P1B's extra FPUs are copies of the same lane logic.
_RTL_NAMES = [pytest.param("4P1B", marks=pytest.mark.slow), "1P2B", "deep"]


@pytest.fixture(scope="module", params=_RTL_NAMES)
def rtl_run(request):
    require_sim("verilator")
    cfg = CFGS[request.param]
    # "deep" rows have 128 products: with 5% special values nearly every output would be NaN
    # or Inf, which hides a lost partial sum (a bench without the forwarding passed); finite
    # data shows it (the same mutant fails on it)
    job = pu_job(cfg, np.random.default_rng(3), extreme=request.param != "deep")
    res = api.run_bench("papi_pu", cfg, job=job)
    assert res.passed, f"papi_pu {request.param} RTL does not match the golden model:\n" \
                       f"{res.summary()}"
    return cfg, res


# ------------------------------------------------------------------ golden against float64
@pytest.mark.parametrize("acc,partials", [("fp16", 4), ("fp32", 4), ("fp16", 16)])
def test_golden_against_float64(acc, partials):
    """Relative to sum |w x|: fp16 accumulation over 1024 terms loses a few units of 2^-11 per
    level of the tree and the partial chains; 2^-5 bounds it (fp32: 2^-10, the final rounding).
    More partials make the chains shorter and the finish tree deeper: the same bound holds."""
    cfg = PapiPuConfig(lanes=16, acc=acc, partials=partials)
    rng = np.random.default_rng(7)
    w, x = make_data(rng, cfg, rows=16, reuse=5, beats=64)
    y = bits_float(FP16, pu_gemv(cfg, w, x)).astype(np.float64)
    wf, xf = bits_float(FP16, w).astype(np.float64), bits_float(FP16, x).astype(np.float64)
    ref, scale = wf @ xf.T, np.abs(wf) @ np.abs(xf).T
    tol = 2.0 ** -5 if acc == "fp16" else 2.0 ** -10
    assert np.all(np.abs(y - ref) <= tol * scale)


def test_golden_specials():
    cfg = PapiPuConfig()
    w = np.zeros((1, 4), np.int64)
    x = np.zeros((2, 4), np.int64)
    w[0, 0], x[0, 0], x[1, 0] = 0x7C00, 0x3C00, 0x0000       # Inf * 1, Inf * 0
    y = pu_gemv(cfg, w, x)
    assert y[0, 0] == 0x7C00 and y[0, 1] == 0x7E00


def _fp16_partials_sum(values, q):
    """float64 sums rounded to fp16 after every add: beat k into partial k mod q, then the
    pairwise tree of the q partials, adjacent pairs first."""
    parts = [np.float16(0.0)] * q
    for k, val in enumerate(values):
        parts[k % q] = np.float16(np.float64(parts[k % q]) + val)
    while len(parts) > 1:
        parts = [np.float16(np.float64(parts[i]) + np.float64(parts[i + 1]))
                 for i in range(0, len(parts), 2)]
    return parts[0]


@pytest.mark.parametrize("partials,seed", [(4, 1), (8, 7), (16, 3)])
def test_golden_partials_order(partials, seed):
    """Beat k adds into partial k mod Q, then a pairwise tree of the Q partials.  One value per
    beat (lanes 1..3 zero, so each beat's tree is exact) from a set whose fp16 sums depend on
    the order; the seed is one where Q's order gives a result no other Q (1..16) gives."""
    cfg = PapiPuConfig(partials=partials, max_beats=64)
    v = np.random.default_rng(seed).choice(
        [1.0, -1.0, 2.0 ** -11, 3 * 2.0 ** -12, -(2.0 ** -10), 0.5], size=3 * partials + 1)
    ref = {q: _fp16_partials_sum(v, q) for q in (1, 2, 4, 8, 16)}
    assert [q for q in ref if ref[q] == ref[partials]] == [partials]
    w = np.zeros((1, 4 * len(v)))
    w[0, ::4] = v
    x = np.zeros((1, 4 * len(v)))
    x[0, ::4] = 1.0
    y = pu_gemv(cfg, float_bits(FP16, w), float_bits(FP16, x))
    assert bits_float(FP16, y)[0, 0] == ref[partials]


# ------------------------------------------------------------------ RTL
def test_rtl_bit_exact(rtl_run):
    cfg, res = rtl_run
    assert [p.name for p in res.phases] == ["no stalls", "random stalls p=0.3"]
    n = 3 * cfg.banks * cfg.max_groups
    assert all(len(p.received["o"]) == n for p in res.phases)


def test_cycle_model_against_rtl(rtl_run):
    cfg, res = rtl_run
    ph = res.phases[0]
    start = ph.in_stamps["i_x"][-1] + 1
    assert ph.out_stamps["o"][-1] - start + 1 == pu_cycles(cfg, 3, cfg.max_reuse)


def test_activity_model_against_rtl(rtl_run):
    """The probes' action counts equal :func:`pu_activity` in both phases: every count follows
    from the issue cycles and the finishes, which stalls only move in time."""
    cfg, res = rtl_run
    for ph in res.phases:
        assert_actions(ph, pu_activity(cfg, 3, cfg.max_reuse), ph.name)


def test_unit_activity_against_rtl():
    """``HwUnit.activity(cfg, n)`` on the cycle model's job (n rows per bank, one vector,
    ``max_beats`` beats), with an fp32 accumulator: the wide multipliers and the output
    conversions (no stall phase: the counts do not depend on stalls, as above)."""
    require_sim("verilator")
    cfg = dataclasses.replace(CFGS["1P2B"], acc=FP32)
    res = api.run_bench("papi_pu", cfg,
                        job=pu_job(cfg, np.random.default_rng(5), rows=2, reuse=1, stalls=False))
    assert res.passed, res.summary()
    assert_actions(res.phases[0], HW_UNITS["papi_pu"].activity(cfg, 2))


@pytest.mark.parametrize("name", [pytest.param("4P1B", marks=pytest.mark.slow), "1P2B", "deep"])
def test_rtl_jobs_back_to_back(name):
    """Jobs of different shapes with no reset between them: job 1 fills every vector group
    (its output count wraps at banks x groups - 1 per row), job 2 has one vector and a
    different row count, job 3 the maximum again.  A counter that ended a job early or late,
    or kept a stale group count, would lose, repeat or shift outputs of the next job.  With
    four FPUs ("deep" in the default run), job 2's lanes past its one vector hold job 1's stale
    vectors, so only the +0 of a lane past ``reuse`` makes its output right."""
    require_sim("verilator")
    cfg = CFGS[name]
    shapes = [(3, cfg.max_reuse, 4), (2, 1, 2), (1, cfg.max_reuse, cfg.max_beats)]
    job = pu_jobs_back_to_back(cfg, np.random.default_rng(11), shapes)
    res = api.run_bench("papi_pu", cfg, job=job)
    assert res.passed, f"papi_pu {name} back to back:\n{res.summary()}"
    n = sum(rows * cfg.banks * cfg.groups(reuse) for rows, reuse, _ in shapes)
    assert all(len(p.received["o"]) == n for p in res.phases)
    # the jobs' actions add up, stale state or not
    total = {}
    for shape in shapes:
        for key, count in pu_activity(cfg, *shape).items():
            total[key] = total.get(key, 0) + count
    for ph in res.phases:
        assert_actions(ph, total, ph.name)


# ------------------------------------------------------------------ the contract
def test_contract_fast_and_exact():
    for fpus, banks in ((4, 1), (1, 1), (1, 2)):
        t = time.perf_counter()
        pu_gemv_cycles(16384, 16384, 1024, fpus=fpus, banks=banks)
        pu_gemv_cycles(16384, 16384, 1, fpus=fpus, banks=banks)
        assert (time.perf_counter() - t) / 2 < 1e-3 * 5    # < 1 ms typical; 5x for a busy CI
    for beats, groups, wbuf in ((333, 1, 32), (500, 3, 8), (97, 2, 2), (1000, 1, 4)):
        for banks in (1, 2):
            assert pu_run(beats, banks, groups, wbuf, skip=True) == \
                pu_run(beats, banks, groups, wbuf, skip=False)


def test_contract_is_the_unit_cycle_model():
    cfg = PapiPuConfig()
    assert pu_gemv_cycles(12, 16, 7, fpus=4, banks=1, cfg=cfg) == pu_cycles(cfg, 12, 7, 4)
    assert pu_gemv_activity(12, 16, 7, fpus=4, banks=1, cfg=cfg) == pu_activity(cfg, 12, 7, 4)
    # the paper slice by default: 1P2B, rows over both banks, 16-lane column reads
    attn = pu_preset("attn_pim")
    assert pu_gemv_activity(10, 64, 3, fpus=1, banks=2) == pu_activity(attn, 5, 3, 4)


# Analytic crossover, from the paper's numbers only: a bank moves 32 B per 32 B / 20.8 GB/s
# (5.2 Gb/s x 32 pins), a 1 KB page of 32 columns then pays tRTP + tRP + tRCD (5 + 14 + 14 ns).
# An FPU takes 16 fp16 (32 B) x fpus vectors per 1 / 666 MHz.  Compute-bound once
# ceil(reuse / fpus) x banks FPU cycles per column >= the bank's time per column.
def _analytic_crossover(fpus, banks):
    col_ns = 32 / 20.8
    per_col_ns = (32 * col_ns + 5 + 14 + 14) / 32
    fpu_ns = 1e9 / 666e6
    r = fpus * per_col_ns / (banks * fpu_ns)
    return fpus * math.ceil(r / fpus)      # G is whole: the first reuse at a whole G >= r / fpus


@pytest.mark.parametrize("fpus,banks", [(4, 1), (1, 1), (1, 2)])
def test_crossover(fpus, banks):
    """Cycles per MAC fall with reuse while bandwidth-bound and reach their floor (1 / (fpus x
    16 lanes) per FPU cycle) when compute-bound; the first reuse at the floor is the crossover."""
    rows, cols = 1024, 8192
    per_mac = {r: pu_gemv_cycles(rows, cols, r, fpus=fpus, banks=banks) / (rows * cols * r)
               for r in range(1, 33)}
    floor = 1 / (fpus * 16)
    measured = min(r for r, c in per_mac.items() if c <= floor * 1.01)
    assert measured == max(1, _analytic_crossover(fpus, banks))
    assert all(c >= floor * 0.999 for c in per_mac.values())
    if measured > 1:   # bandwidth-bound at reuse 1: time flat in reuse
        c1 = pu_gemv_cycles(rows, cols, 1, fpus=fpus, banks=banks)
        assert pu_gemv_cycles(rows, cols, fpus, fpus=fpus, banks=banks) == c1
    assert PU_CLOCK_MHZ == 666


# ------------------------------------------------------------------ configs
@pytest.mark.parametrize("field,value,allowed", [
    ("fpus", 3, "1, 2, 4, 8"), ("banks", 4, "1, 2"), ("lanes", 12, "2, 4, 8, 16, 32"),
    ("acc", "bf16", "fp16, fp32"), ("max_reuse", 0, "1..1024"), ("wbuf", 3, "2, 4"),
    ("partials", 5, "4, 8, 16"), ("op_depth", 5, r"<= partials = 4"),
    ("op_depth", 17, "1..16")])
def test_config_errors(field, value, allowed):
    with pytest.raises(ConfigError, match=f"field '{field}'.*{allowed}"):
        PapiPuConfig(**{field: value})


def test_config_buffer_limit():
    with pytest.raises(ConfigError, match="field 'max_beats'.*65536"):
        PapiPuConfig(fpus=1, max_reuse=1024, max_beats=1024)


def test_presets_exact_ratio():
    assert [pu_preset(n).pus_per_bank for n in ("fc_pim", "attn_pim", "attacc")] == \
        [4, 0.5, 1]
    assert pu_preset("attn_pim").layout == "1P2B"
