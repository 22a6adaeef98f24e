"""sv_gemv (HILOS Fig. 7e): the bench's golden O against float64, RTL vs golden (bit-exact, with
and without stalls), the cycle model vs RTL cycle counts, the activity model vs the RTL's probe
counts, V throughput and MAC utilization, the checker, config errors and the manifest.

The default run builds one small config (E = 8, head_dim 64, block 32, d_group 3: 24 MAC lanes);
the presets and a config with one-beat score lanes x 2 (U = 2) and the minimum accumulator
revisit distance (head_dim / E = op_depth) run with PIMFORGE_LONG=1.
"""
import numpy as np
import pytest
from conftest import require_sim

from pimforge import api
from pimforge.base.errors import ConfigError
from pimforge.base.formats import FP16
from pimforge.base.numerics import bits_float
from pimforge.hw.hilos.config import SvGemvConfig
from pimforge.hw.hilos.sv_gemv_timing import sv_activity, sv_cycles, sv_schedule
from pimforge.registry import get_unit
from pimforge.sim.benches.hilos.beats import unpack_o
from pimforge.sim.benches.hilos.sv_gemv import (
    JobData, JobSpec, default_jobs, make_job_data, sv_expected, sv_job
)
from pimforge.sim.harness.job import Job

from activity_checks import assert_actions

UNIT = get_unit("sv_gemv")
SMALL = SvGemvConfig(beat_elems=8, head_dim=64, block=32, d_group=3, op_depth=2)
LONG_N = 4096


def _run(cfg, job):
    require_sim("verilator")
    res = api.run_bench("sv_gemv", cfg, job=job)
    assert res.passed, f"sv_gemv RTL does not match the golden model:\n{res.summary()}\n" \
                       f"log: {res.log}"
    return res


def _check_activity(cfg, res):
    """Every phase of :func:`_full_job` against :func:`sv_activity`."""
    jobs = [j.job for j in default_jobs(cfg)]
    for ph, want in zip(res.phases, (jobs, jobs, [LONG_N])):
        assert_actions(ph, sv_activity(cfg, want))


def _full_job(cfg, seed=1):
    """The default jobs without and with stalls, then one job of LONG_N positions (no stalls)."""
    job = sv_job(cfg, np.random.default_rng(seed), seed=seed)
    long = sv_job(cfg, np.random.default_rng(seed + 100), jobs=[JobSpec(LONG_N, mask="random")],
                  stalls=False).phases[0]
    long.name = f"no stalls, n={LONG_N}"
    return Job(job.phases + [long])


@pytest.fixture(scope="module")
def small_run():
    return SMALL, _run(SMALL, _full_job(SMALL))


# ------------------------------------------------------------------ golden and bench data
def test_bench_expectation_against_float64():
    """The bench's expected O (golden sv_output) against float64 sums over the unmasked rows:
    fp32 accumulation of n <= 3 block products keeps the error within n * 2^-24 of sum |y v|,
    plus the final fp16 rounding."""
    cfg = SMALL
    rng = np.random.default_rng(5)
    for spec in default_jobs(cfg):
        if spec.kind != "normal":
            continue
        data = make_job_data(cfg, rng, spec)
        o = bits_float(FP16, unpack_o(cfg, sv_expected(cfg, data)["data"]))
        keep = ~data.mask
        y = bits_float(FP16, data.y)[:, keep].astype(np.float64)
        v = bits_float(FP16, data.v16)[keep].astype(np.float64)
        ref = y @ v
        bound = spec.n * 2.0 ** -24 * (np.abs(y) @ np.abs(v)) + np.abs(ref) * 2.0 ** -11 + 2.0 ** -24
        assert np.all(np.abs(o - ref) <= bound), spec


def test_masked_rows_do_not_reach_o():
    """Masked positions carry nonzero y (some Inf and NaN) and V rows of Inf/NaN; the golden O
    equals the O of the unmasked rows alone (so the RTL, matching it, never let them through)."""
    cfg = SMALL
    data = make_job_data(cfg, np.random.default_rng(6), JobSpec(40, mask="random"))
    assert data.mask.any()
    assert np.isin(data.v16[data.mask], [0x7C00, 0x7E00, 0xFC00]).any()
    assert (data.y[:, data.mask] != 0).all()
    assert np.isin(data.y[:, data.mask], [0x7C00, 0x7E00]).any()
    keep = ~data.mask
    alone = JobData(data.y[:, keep], data.v16[keep], np.zeros(keep.sum(), dtype=bool), None)
    assert sv_expected(cfg, data)["data"] == sv_expected(cfg, alone)["data"]
    o = bits_float(FP16, unpack_o(cfg, sv_expected(cfg, data)["data"]))
    assert np.isfinite(o).all()


# ------------------------------------------------------------------ RTL against golden
def test_rtl_matches_golden_with_and_without_stalls(small_run):
    cfg, res = small_run
    assert [p.name for p in res.phases] == ["no stalls", "random stalls p=0.3",
                                            f"no stalls, n={LONG_N}"]
    beats = cfg.d_group * cfg.row_beats
    assert len(res.phases[0].received["o"]) == len(default_jobs(cfg)) * beats
    assert len(res.phases[1].received["o"]) == len(default_jobs(cfg)) * beats
    assert len(res.phases[2].received["o"]) == beats


def _check_schedule(cfg, ph, jobs):
    """Every job's first/last V beat and first/last output beat against the cycle model."""
    sched = sv_schedule(cfg, jobs)
    beats = cfg.d_group * cfg.row_beats
    outs, vs = ph.out_stamps["o"], ph.in_stamps["i_v"]
    a = 0
    got, want = [], []
    for h, (job, s) in enumerate(zip(jobs, sched)):
        n = job if isinstance(job, int) else job[0]
        got.append((vs[a], vs[a + n * cfg.row_beats - 1], outs[h * beats],
                    outs[(h + 1) * beats - 1]))
        want.append((s["v_first"], s["v_last"], s["first_out"], s["last_out"]))
        a += n * cfg.row_beats
    assert got == want
    assert ph.cycles == sched[-1]["last_out"] + 1
    return sched


def test_rtl_cycle_model_is_exact(small_run):
    """The no-stall phase runs the default jobs back to back (n = 1, partial and whole blocks,
    two segments, masks); the model predicts every job's V and output cycles exactly."""
    cfg, res = small_run
    _check_schedule(cfg, res.phases[0], [j.job for j in default_jobs(cfg)])


def test_rtl_latency_matches_manifest(small_run):
    """The first job (one position) finds the drain idle: its O leaves ``latency`` cycles after
    its last V beat."""
    cfg, res = small_run
    ph = res.phases[0]
    lat = api.elaborate("sv_gemv", cfg)[1]["latency"]
    assert ph.out_stamps["o"][0] - ph.in_stamps["i_v"][cfg.row_beats - 1] == lat


def test_rtl_v_rate_and_utilization_at_4096(small_run):
    """n = 4096 with i_p fed without stalls: V is taken one beat per cycle from the first V beat
    to the last (utilization = V beats / cycles from the first V beat to the last update issue,
    >= 0.95 required, 1.0 reached), and the cycle model is exact."""
    cfg, res = small_run
    ph = res.phases[2]
    vs = ph.in_stamps["i_v"]
    assert len(vs) == LONG_N * cfg.row_beats
    util = len(vs) / (vs[-1] - vs[0] + 1)
    assert util >= 0.95
    assert vs == list(range(vs[0], vs[0] + len(vs))), "V was not taken one beat per cycle"
    _check_schedule(cfg, ph, [LONG_N])
    assert ph.cycles == sv_cycles(cfg, LONG_N)


def test_rtl_activity_model_is_exact(small_run):
    """The probes' counts equal :func:`sv_activity` in every phase, the stall phase too: the
    unit multiplies and adds once per V beat and lane, writes the P buffer once per y beat and
    converts once per drained element, whenever those happen.  The n = 4096 phase is the cycle
    model's job, so the unit's own ``activity`` predicts it."""
    cfg, res = small_run
    _check_activity(cfg, res)
    assert_actions(res.phases[2], UNIT.activity(cfg, LONG_N))


def test_checker_catches_a_one_bit_error(small_run):
    cfg, _ = small_run
    job = sv_job(cfg, np.random.default_rng(3), jobs=[JobSpec(5)], stalls=False)
    job.phases[0].expected["o"]["data"][2] ^= 1 << 21
    require_sim("verilator")
    res = api.run_bench("sv_gemv", cfg, job=job)
    assert not res.passed
    assert any("transfer #2" in e for e in res.phases[0].errors)


# ------------------------------------------------------------------ configs and manifest
@pytest.mark.parametrize("overrides, field", [
    ({"head_dim": 64, "beat_elems": 32, "op_depth": 3}, "beat_elems"),
    ({"beat_elems": 12}, "beat_elems"),
    ({"block": 48}, "block"),
    ({"d_group": 9}, "d_group"),
    ({"d_group": 0}, "d_group"),
    ({"head_dim": 96}, "head_dim"),
    ({"op_depth": 17}, "op_depth"),
])
def test_bad_config_names_the_field(overrides, field):
    with pytest.raises(ConfigError) as e:
        UNIT.config(None, overrides)
    assert e.value.field == field and "sv_gemv" in str(e.value)


def test_presets():
    got = {name: (c.d_group, c.lanes, c.row_beats, c.block_beats)
           for name, c in ((n, UNIT.preset_config(n)) for n in UNIT.presets)}
    # d_group x 32 / 128 score elements per cycle, rounded up to a power of two
    assert got == {"hilos_dgroup1": (1, 1, 4, 128), "hilos_dgroup4": (4, 1, 4, 128),
                   "hilos_dgroup5": (5, 2, 4, 64)}


def test_manifest_streams_and_fields(small_run):
    cfg, _ = small_run
    man = api.elaborate("sv_gemv", cfg)[1]
    fields = {s: [(f["name"], f["format"]) for f in man["streams"][s]["fields"]]
              for s in man["streams"]}
    assert fields == {"i_p": [("data", "fp16x1"), ("keep", "uint"), ("mask", "uint"),
                              ("last", "bool")],
                      "i_v": [("data", "fp16x8"), ("last", "bool")],
                      "o": [("data", "fp16x8")]}
    assert [man["streams"][s]["direction"] for s in ("i_p", "i_v", "o")] == ["in", "in", "out"]
    assert man["throughput"] == 1.0
    assert man["mac_lanes"] == 24
    assert set(man["timing"]) >= {"mul", "add", "conv", "tail"}


def test_cycle_model_shapes():
    """Pure-function properties of the model: a long job is V-bound (one beat per cycle after
    the first block's y beats), and jobs of one position are bound by the O-bank credits."""
    cfg = SMALL
    n = 1024
    s = sv_schedule(cfg, [n])[0]
    assert s["v_first"] == cfg.d_group * cfg.block_beats
    assert s["v_last"] - s["v_first"] + 1 == n * cfg.row_beats
    tiny = sv_schedule(cfg, [1] * 6)
    gaps = [b["first_out"] - a["first_out"] for a, b in zip(tiny, tiny[1:])]
    assert min(gaps) >= cfg.d_group * cfg.row_beats    # the drain is the bottleneck


# ------------------------------------------------------------------ long sweeps
@pytest.mark.slow
@pytest.mark.parametrize("preset", ["hilos_dgroup5", "hilos_dgroup1", "hilos_dgroup4"])
def test_rtl_presets(preset):
    """A preset: bit-exact with and without stalls, the exact cycle model, and one beat per cycle
    for n = 4096."""
    cfg = UNIT.preset_config(preset)
    res = _run(cfg, _full_job(cfg, seed=2))
    _check_schedule(cfg, res.phases[0], [j.job for j in default_jobs(cfg)])
    vs = res.phases[2].in_stamps["i_v"]
    assert vs == list(range(vs[0], vs[0] + LONG_N * cfg.row_beats))
    _check_schedule(cfg, res.phases[2], [LONG_N])
    _check_activity(cfg, res)


@pytest.mark.slow
def test_rtl_two_score_lanes_and_tight_accumulator_loop():
    """U = 2 score lanes (d_group 3 x 32 > head_dim 64) and head_dim / E = op_depth = 2: each
    accumulator address comes back the cycle its previous update lands (forwarding)."""
    cfg = SvGemvConfig(beat_elems=32, head_dim=64, block=32, d_group=3, op_depth=2)
    assert cfg.lanes == 2 and cfg.row_beats == cfg.op_depth
    res = _run(cfg, _full_job(cfg, seed=3))
    _check_schedule(cfg, res.phases[0], [j.job for j in default_jobs(cfg)])
    _check_schedule(cfg, res.phases[2], [LONG_N])
    _check_activity(cfg, res)


@pytest.mark.slow
def test_rtl_deep_pipeline_at_the_accumulator_revisit_limit():
    """op_depth 8 with head_dim / E = 8: the O accumulators' revisit distance equals the adder's
    latency at a deep pipeline."""
    cfg = SvGemvConfig(beat_elems=8, head_dim=64, block=32, d_group=3, op_depth=8)
    assert cfg.row_beats == cfg.op_depth
    res = _run(cfg, _full_job(cfg, seed=4))
    _check_schedule(cfg, res.phases[0], [j.job for j in default_jobs(cfg)])
    _check_schedule(cfg, res.phases[2], [LONG_N])
    _check_activity(cfg, res)
