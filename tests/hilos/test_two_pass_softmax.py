"""two_pass_softmax (HILOS Alg. 1, Fig. 7b-c): the bench's golden outputs against float64
softmax, RTL vs golden (bit-exact, with and without stalls), the cycle model vs RTL cycle
counts, the activity model vs the RTL's probe counts, steady-state rates and pass overlap from
cycle stamps, the checker, the manifest and config errors.

The default run builds one small design (U = 4 lanes, G = 5 queries, 8 beats a row block) and
elaborates it once, with the activity probes: every simulation reuses the same Verilog.
"""
import numpy as np
import pytest
from conftest import require_sim

from pimforge import api
from pimforge.base.errors import ConfigError
from pimforge.base.formats import FP16, FP32
from pimforge.base.numerics import bits_float, float_bits
from pimforge.hw.core.elaborate import elaborate
from pimforge.hw.hilos.two_pass_softmax_timing import (
    softmax_activity, softmax_cycles, softmax_job_beats, softmax_schedule
)
from pimforge.registry import get_unit
from pimforge.sim.benches.hilos.two_pass_softmax import (
    SoftmaxJob, default_jobs, random_scores, softmax_beats, softmax_job
)
from pimforge.sim.golden.hilos import two_pass_softmax as h_sm
from pimforge.sim.harness import runner
from pimforge.sim.harness.job import Job

from activity_checks import assert_actions

UNIT = get_unit("two_pass_softmax")
def bits_of(x):
    return float_bits(FP32, np.asarray(x, dtype=np.float64))


SMALL = {"beat_elems": 32, "head_dim": 64, "block": 32, "d_group": 5, "op_depth": 2}


# ---------------------------------------------------------------------------- golden (no sim)
@pytest.mark.parametrize("kind", ["normal", "large", "equal", "negative", "positive"])
def test_bench_expectations_against_float64_softmax(kind):
    """The bench's expected y (the golden model) is softmax in float64 over the unmasked
    positions to fp16 accuracy (relative 1e-3, plus fp16's smallest subnormal), 0 where masked.
    The segments end in short blocks, so all-negative and all-large scores fail a max tree
    padded with anything but -inf."""
    cfg = UNIT.config(None, SMALL)
    rng = np.random.default_rng(5)
    n, segments = 116, [100, 16]
    s = random_scores(cfg, rng, n, kind)
    mask = rng.random(n) < 0.3
    for row in s:
        y = bits_float(FP16, h_sm.two_pass_softmax(row, cfg.block, mask, FP32, cfg.mask_value,
                                                    segments)["y"])
        x = bits_float(FP32, row)[~mask]
        ref = np.exp(x - x.max())
        ref /= ref.sum()
        assert np.all(y[mask] == 0)
        assert np.all(np.abs(y[~mask] - ref) <= 1e-3 * ref + 6e-8)


def test_golden_partly_filled_beat_of_negative_scores_is_one_hot():
    """Five scores in [-700, -500], far apart: y is one-hot at the maximum (a padding of 0 in
    the max tree would give exp(600) = inf in Z and NaN in y)."""
    cfg = UNIT.config(None, SMALL)
    x = np.array([-600.0, -512.5, -700.0, -555.0, -650.0])
    y = bits_float(FP16, h_sm.two_pass_softmax(bits_of(x), cfg.block)["y"])
    assert y.tolist() == [0.0, 1.0, 0.0, 0.0, 0.0]


def test_golden_masked_positions_score_the_mask_value():
    """Alg. 1 line 3: a masked position scores mask_value in pass 1 (its y is 0).  With the real
    score 1 below it, the masked position is the maximum: y = e^-1 / (1 + e^-1) in float64."""
    cfg = UNIT.config(None, SMALL)
    x = bits_of([cfg.mask_value - 1.0, 5.0])
    y = bits_float(FP16, h_sm.two_pass_softmax(x, cfg.block, [False, True])["y"])
    assert y[1] == 0
    assert abs(y[0] - np.exp(-1) / (1 + np.exp(-1))) <= 1e-3 * y[0]


def test_bench_beats_follow_the_row_block_order():
    """Jobs have G x block/U beats per block, padding only in a segment's last block."""
    cfg = UNIT.config(None, SMALL)
    s = random_scores(cfg, np.random.default_rng(1), 116)
    sb, yb = softmax_beats(cfg, s, None, [100, 16])
    assert len(sb["data"]) == len(yb["data"]) == softmax_job_beats(cfg, (100, 16)) == 5 * 5 * 8
    assert sb["last"] == [0] * (len(sb["last"]) - 1) + [1]
    full = (1 << cfg.lanes) - 1
    # block 3 of segment 0 holds positions 96..99: one real beat, seven padded, per query
    assert sb["keep"][3 * 40:3 * 40 + 8] == [full] + [0] * 7


# ---------------------------------------------------------------------------- RTL
@pytest.fixture(scope="module")
def design():
    """The small config, elaborated once (with the activity probes, as the benches build it)
    for every simulation of this module."""
    require_sim("verilator")
    cfg = UNIT.config(None, SMALL)
    verilog, manifest, comp = elaborate(UNIT, cfg, probes=True)
    return cfg, verilog, manifest, comp


def _sim(design, job):
    cfg, verilog, manifest, comp = design
    return runner.run(verilog, comp.top, manifest, job, sim="verilator", seed=1,
                      label="two_pass_softmax small")


@pytest.fixture(scope="module")
def bench_run(design):
    """The default bench: every job kind back to back, no stalls, random stalls, slow output."""
    cfg = design[0]
    res = _sim(design, softmax_job(cfg, np.random.default_rng(1), seed=1))
    return cfg, res


def test_rtl_matches_golden_with_and_without_stalls(bench_run):
    cfg, res = bench_run
    assert [p.name for p in res["phases"]] == ["no stalls", "random stalls p=0.3",
                                               "output 1 in 3"]
    assert res["passed"], "\n".join(e for p in res["phases"] for e in p.errors)
    n = sum(softmax_job_beats(cfg, j.segments) for j in default_jobs(cfg))
    for p in res["phases"]:
        assert len(p.received["o"]) == len(p.in_stamps["i"]) == len(p.in_stamps["i_s"]) == n


def test_rtl_cycle_model_is_exact(bench_run):
    """Every job's first and last i, i_s and o transfer of the no-stall phase, as predicted
    (including the job whose last i beat waits for the stats FIFO)."""
    cfg, res = bench_run
    ph = res["phases"][0]
    jobs = default_jobs(cfg)
    sched = softmax_schedule(cfg, [j.segments for j in jobs])
    a = 0
    for j, s in zip(jobs, sched):
        b = a + softmax_job_beats(cfg, j.segments) - 1
        for port, stamps in (("i", ph.in_stamps["i"]), ("i_s", ph.in_stamps["i_s"]),
                             ("o", ph.out_stamps["o"])):
            assert (stamps[a], stamps[b]) == s[port], f"job {j}, stream {port}"
        a = b + 1
    assert ph.cycles == sched[-1]["o"][1] + 1
    assert any(s["i"][1] - s["i"][0] + 1 > softmax_job_beats(cfg, j.segments)
               for j, s in zip(jobs, sched)), "the bench never fills the stats FIFO"


@pytest.fixture(scope="module")
def steady_run(design):
    """Four equal jobs of four blocks (pass 1 never waits for the stats FIFO), then a lone job."""
    cfg = design[0]
    b = cfg.block
    equal = [SoftmaxJob((4 * b,), "normal", "random")] * 4
    lone = [SoftmaxJob((3 * b + 5,), "large")]
    p1 = softmax_job(cfg, np.random.default_rng(3), jobs=equal, stalls=False).phases[0]
    p2 = softmax_job(cfg, np.random.default_rng(4), jobs=lone, stalls=False).phases[0]
    p1.name, p2.name = "equal jobs", "one job"
    res = _sim(design, Job([p1, p2]))
    assert res["passed"], "\n".join(e for p in res["phases"] for e in p.errors)
    return cfg, equal, lone, res


def test_rtl_one_beat_per_cycle_and_passes_overlap(steady_run, design):
    cfg, equal, _, res = steady_run
    ph = res["phases"][0]
    nb = softmax_job_beats(cfg, equal[0].segments)
    n = nb * len(equal)
    ii, si, oo = ph.in_stamps["i"], ph.in_stamps["i_s"], ph.out_stamps["o"]
    # pass 1: one beat per cycle from the first to the last, the block buffer never throttles
    assert ii == list(range(n))
    # pass 2: after the first job's statistics, one i_s beat and one o beat per cycle
    assert si == list(range(si[0], si[0] + n))
    assert oo == list(range(oo[0], oo[0] + n))
    assert oo[0] - si[0] == design[3].timing["normalize"] + 1
    # pass 1 of job h+1 runs while pass 2 of job h runs
    for h in range(len(equal) - 1):
        s_job = si[h * nb:(h + 1) * nb]
        i_next = ii[(h + 1) * nb:(h + 2) * nb]
        assert i_next[0] < s_job[-1] and s_job[0] < i_next[-1]
    # pass 2 of the first job starts as soon as its statistics are in the FIFO
    assert si[0] == ii[nb - 1] + design[3].timing["stats"] + 1
    sched = softmax_schedule(cfg, [j.segments for j in equal])
    assert ph.cycles == sched[-1]["o"][1] + 1


def test_rtl_registered_cycle_model_and_latency(steady_run, design):
    """The registered model (one job of n tokens) and the component's ``latency`` property
    against the lone job's cycle stamps."""
    cfg, _, lone, res = steady_run
    ph = res["phases"][1]
    n = lone[0].n
    assert ph.cycles == softmax_cycles(cfg, n) == UNIT.cycle_model(cfg, n)
    assert ph.out_stamps["o"][0] - ph.in_stamps["i"][-1] == design[3].latency


def test_rtl_activity_model_is_exact(bench_run, steady_run):
    """The probes' counts equal :func:`softmax_activity` in every phase, the stall phases too:
    every beat of either pass makes the same operations, every row block one merge, whenever
    they happen.  The lone job is the cycle model's job: the unit's own ``activity`` predicts
    it."""
    cfg, res = bench_run
    jobs = [j.segments for j in default_jobs(cfg)]
    for ph in res["phases"]:
        assert_actions(ph, softmax_activity(cfg, jobs))
    _, equal, lone, res = steady_run
    assert_actions(res["phases"][0], softmax_activity(cfg, [j.segments for j in equal]))
    assert_actions(res["phases"][1], UNIT.activity(cfg, lone[0].n))


def test_checker_catches_a_one_bit_error(design):
    cfg = design[0]
    job = softmax_job(cfg, np.random.default_rng(1), jobs=[SoftmaxJob((5,))], stalls=False)
    job.phases[0].expected["o"]["data"][1] ^= 1 << 21
    res = _sim(design, job)
    assert not res["passed"]
    errs = res["phases"][0].errors
    assert len(errs) == 1 and "transfer #1" in errs[0]


def test_manifest(design):
    cfg, _, man, comp = design
    assert set(man["streams"]) == {"i", "i_s", "o"}
    assert man["streams"]["o"]["direction"] == "out"
    for port, fmt in (("i", "fp32x4"), ("i_s", "fp32x4"), ("o", "fp16x4")):
        fields = {f["name"]: f for f in man["streams"][port]["fields"]}
        assert set(fields) == {"data", "keep", "mask", "last"}
        assert fields["data"]["format"] == fmt
        assert fields["keep"]["width"] == fields["mask"]["width"] == 4
    assert man["lanes"] == 4 and man["block_beats"] == 8 and man["stats_fifo_jobs"] == 2
    assert man["throughput"] == 1.0 and man["latency"] == comp.latency
    assert set(man["timing"]) >= {"stats", "normalize", "max_tree", "sum_tree", "merge"}


def test_presets():
    for name, g, lanes in (("hilos_dgroup1", 1, 1), ("hilos_dgroup4", 4, 1),
                           ("hilos_dgroup5", 5, 2)):
        cfg = UNIT.preset_config(name)
        assert (cfg.d_group, cfg.lanes, cfg.block) == (g, lanes, 128)


@pytest.mark.parametrize("overrides, field", [
    ({"block": 48}, "block"),
    ({"beat_elems": 12}, "beat_elems"),
    ({"d_group": 9}, "d_group"),
    ({"head_dim": 96}, "head_dim"),
    ({"score_fmt": "bf16"}, "score_fmt"),
    ({"mask_value": 1.0}, "mask_value"),
    ({"op_depth": 17}, "op_depth"),
])
def test_bad_config_names_the_field(overrides, field):
    with pytest.raises(ConfigError) as e:
        UNIT.config(None, overrides)
    assert e.value.field == field and "two_pass_softmax" in str(e.value)


# ---------------------------------------------------------------------------- slow sweeps
def _full_run(cfg, seed):
    require_sim("verilator")
    res = api.run_bench("two_pass_softmax", cfg, job=softmax_job(cfg, np.random.default_rng(seed),
                                                                  seed=seed))
    assert res.passed, f"RTL does not match the golden model:\n{res.summary()}\nlog: {res.log}"
    jobs = [j.segments for j in default_jobs(cfg)]
    sched = softmax_schedule(cfg, jobs)
    assert res.phases[0].cycles == sched[-1]["o"][1] + 1
    for ph in res.phases:
        assert_actions(ph, softmax_activity(cfg, jobs))
    return res


@pytest.mark.slow
def test_rtl_fp16_scores():
    """Scores stored in fp16 (the paper's format): the conversion to fp32 in both passes."""
    _full_run(UNIT.config(None, {**SMALL, "score_fmt": "fp16"}), seed=2)


@pytest.mark.slow
@pytest.mark.parametrize("preset", ["hilos_dgroup5", "hilos_dgroup1"])
def test_rtl_presets(preset):
    _full_run(UNIT.preset_config(preset), seed=3)


@pytest.mark.slow
def test_rtl_deepest_pipeline():
    """op_depth 16 (exp and recip 17): every latency the cycle model derives grows, and the
    stats merge's input interval (G x block_beats) still exceeds its loop."""
    _full_run(UNIT.config(None, {**SMALL, "op_depth": 16}), seed=4)
