"""hilos_attention: the RTL top (bit-exact with the DRAM model, stalls, kernel cycles against
the bound, cycle model, activity model vs the probe counts), its presets, manifest and config
checks.  The ``pimforge run hilos-attention`` flow built on it is tested in
tests/software/test_hilos_attention.py."""
import numpy as np
import pytest
from conftest import require_sim

from pimforge import api
from pimforge.base.errors import ConfigError
from pimforge.hw.hilos.attention_timing import (
    attention_cycles, bound_parts, kernel_activity, kernel_bound, kernel_schedule
)
from pimforge.sim.benches.hilos.attention import DEFAULT_JOBS, attention_phase, random_job
from pimforge.sim.harness.job import Job

from activity_checks import assert_actions

# ---------------------------------------------------------------------------------------------
# the RTL top: one small config in the default run (8-element beats, d = 64, block 32, d_group 2)

SMALL = {"beat_elems": 8, "head_dim": 64, "block": 32, "d_group": 2}


def _cfg(**kw):
    return api.config("hilos_attention", overrides={**SMALL, **kw})


def _run(cfg, job):
    require_sim("verilator")
    res = api.run_bench("hilos_attention", cfg, job=job)
    assert res.passed, f"hilos_attention RTL does not match the golden model:\n{res.summary()}" \
                       f"\nlog: {res.log}"
    return res


@pytest.fixture(scope="module")
def small_run():
    """Default jobs (n = 1, masks, precomputed scores) without and with random stalls on every
    stream, DRAM latency 20 cycles."""
    cfg = _cfg()
    return cfg, _run(cfg, api.get_unit("hilos_attention").bench(cfg, np.random.default_rng(1)))


def test_rtl_matches_golden_with_and_without_stalls(small_run):
    cfg, res = small_run
    assert [p.name for p in res.phases] == ["no stalls", "random stalls p=0.3"]
    per_job = cfg.d_group * cfg.row_beats
    assert len(res.phases[0].received["o"]) == len(DEFAULT_JOBS) * per_job


def test_rtl_reads_scores_only_after_writing_them(small_run):
    """The DRAM model's read-after-write rule held: every score beat was read back after the
    kernel had written it (the harness enforces it; this checks the stamps)."""
    _, res = small_run
    for ph in res.phases:
        w, r = ph.out_stamps["o_s"], ph.in_stamps["i_s"]
        assert len(w) == len(r) and all(b > a + 20 for a, b in zip(w, r))


def test_cycle_model_within_2_percent_of_default_bench(small_run):
    cfg, res = small_run
    jobs = [(n_k, n_k + c) for n_k, c, _ in DEFAULT_JOBS]
    model = kernel_schedule(cfg, jobs, latency=20)["cycles"]
    assert abs(model - res.phases[0].cycles) <= 0.02 * res.phases[0].cycles, \
        (model, res.phases[0].cycles)


@pytest.fixture(scope="module")
def kernel_run():
    """12 KV heads x 512 tokens back to back, DRAM at one beat per cycle per port."""
    cfg = _cfg()
    rng = np.random.default_rng(3)
    jobs = [random_job(cfg, rng, 512) for _ in range(12)]
    return cfg, _run(cfg, Job([attention_phase(cfg, jobs)])), [(512, 512)] * 12


def test_kernel_within_1_10_of_the_bound(kernel_run):
    """QK^T of job h+1 overlaps pass 2 and S.V of job h, so the kernel takes about (J + 1) / J
    times max(QK^T beats, S.V beats, softmax pass cycles); J = 12 here."""
    cfg, res, shape = kernel_run
    ph = res.phases[0]
    bound = kernel_bound(cfg, shape)
    parts = bound_parts(cfg, shape)
    assert bound == parts["qk_beats"] == 12 * 512 * cfg.row_beats
    assert ph.cycles <= 1.10 * bound, (ph.cycles, bound)


def test_kernel_consumes_k_and_v_at_one_beat_per_cycle(kernel_run):
    cfg, res, _ = kernel_run
    ph = res.phases[0]
    for s in ("i_k", "i_v"):
        st = ph.in_stamps[s]
        assert len(st) / (st[-1] + 1 - st[0]) >= 0.97, s


def test_kernel_cycle_model_within_2_percent(kernel_run):
    cfg, res, _ = kernel_run
    model = attention_cycles(cfg, 512, 12)
    assert abs(model - res.phases[0].cycles) <= 0.02 * res.phases[0].cycles


def test_rtl_activity_model_is_exact(small_run, kernel_run):
    """The probes' counts equal :func:`kernel_activity`, its units' models composed, with and
    without stalls (no unit's counts depend on them); the DRAM latency does not enter either.
    The 12-head kernel is the cycle model's job ``attention_cycles(cfg, 512, 12)``: 12 times the
    unit's own ``activity`` of one head."""
    cfg, res = small_run
    jobs = [(n_k, n_k + c) for n_k, c, _ in DEFAULT_JOBS]
    for ph in res.phases:
        assert_actions(ph, kernel_activity(cfg, jobs))
    cfg, res, _ = kernel_run
    one = api.get_unit("hilos_attention").activity(cfg, 512)
    assert_actions(res.phases[0], {k: 12 * v for k, v in one.items()})


def test_checker_catches_a_one_bit_error():
    cfg = _cfg()
    ph = attention_phase(cfg, [random_job(cfg, np.random.default_rng(2), 20)])
    ph.expected["o"]["data"][1] ^= 1 << 5
    require_sim("verilator")
    res = api.run_bench("hilos_attention", cfg, job=Job([ph]))
    assert not res.passed
    assert any("transfer #1" in e for e in res.phases[0].errors)



def test_presets_and_manifest():
    unit = api.get_unit("hilos_attention")
    assert list(unit.presets) == ["hilos_dgroup1", "hilos_dgroup4", "hilos_dgroup5"]
    for g in (1, 4, 5):
        cfg = unit.preset_config(f"hilos_dgroup{g}")
        assert (cfg.d_group, cfg.block, cfg.beat_elems) == (g, 128, 32)
    assert unit.preset_config("hilos_dgroup5").lanes == 2      # the paper's exp unroll of two
    man = api.elaborate("hilos_attention", _cfg())[1]
    assert set(man["streams"]) == {"i_q", "i_k", "i_pre", "o_s", "i_s", "i_v", "o"}
    assert man["mac_lanes"] == {"qk_gemv": 16, "sv_gemv": 16}


@pytest.mark.parametrize("overrides, field", [
    ({"block": 96}, "block"), ({"beat_elems": 64}, "beat_elems"), ({"d_group": 9}, "d_group"),
    ({"head_dim": 256}, "head_dim"), ({"score_fmt": "bf16"}, "score_fmt"),
    ({"block": 32, "beat_elems": 32}, "block"),
    # the small config's qk accumulators come back every block / beat_elems = 4 cycles
    ({"op_depth": 5}, "block"), ({"op_depth": 17}, "op_depth"),
])
def test_bad_config_names_the_field(overrides, field):
    with pytest.raises(ConfigError) as e:
        api.config("hilos_attention", overrides=overrides)
    assert e.value.field == field and "hilos_attention" in str(e.value)


@pytest.mark.slow
@pytest.mark.parametrize("preset", ["hilos_dgroup1", "hilos_dgroup4", "hilos_dgroup5"])
def test_rtl_presets(preset):
    """The paper's presets (d = 128, 512-bit beats, block 128): default jobs with stalls."""
    cfg = api.get_unit("hilos_attention").preset_config(preset)
    _run(cfg, api.get_unit("hilos_attention").bench(cfg, np.random.default_rng(1)))


@pytest.mark.slow
def test_rtl_deeper_pipeline():
    """op_depth 4: qk_gemv's token accumulators (block / beat_elems = 4) at their revisit limit
    inside the whole kernel, bit-exact with stalls."""
    cfg = _cfg(op_depth=4)
    _run(cfg, api.get_unit("hilos_attention").bench(cfg, np.random.default_rng(2)))
