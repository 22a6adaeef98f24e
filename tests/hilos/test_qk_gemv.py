"""qk_gemv (HILOS Fig. 7d): golden scores vs float64, RTL vs golden (bit-exact, with and without
stalls, under output back-pressure), the cycle model vs RTL cycle stamps, the activity model vs
the RTL's probe counts, K rate and MAC utilization at 4096 tokens, the checker, config errors
and the manifest.

The default run uses one Verilator build (SMALL: 16 MAC lanes, 2 queries, fp16 scores, four
partial sums per token and op_depth 16 = 4 x block / beat_elems, so every partial sum comes back
the cycle its previous value lands, and the accumulator's forward select has its own register,
``forward_stage``); one partial sum is covered there by ``hilos_attention`` (which instantiates
this unit), and the presets and other configs are behind PIMFORGE_LONG."""
import re

import numpy as np
import pytest
from conftest import require_sim

from pimforge import api
from pimforge.base.errors import ConfigError
from pimforge.base.formats import FP16, FP32
from pimforge.base.numerics import bits_float
from pimforge.hw.hilos.config import HILOS_PRESETS
from pimforge.hw.hilos.qk_gemv_timing import qk_activity, qk_cycles, qk_schedule
from pimforge.registry import get_unit
from pimforge.sim.benches.hilos.qk_gemv import JobSpec, default_jobs, qk_inputs, qk_job, random_job
from pimforge.sim.golden.hilos import qk_gemv as h_qk
from pimforge.sim.harness.job import Job, Phase

from activity_checks import assert_actions

UNIT = get_unit("qk_gemv")
SMALL = {"beat_elems": 8, "head_dim": 64, "block": 32, "d_group": 2, "op_depth": 16,
         "partials": 4, "score_fmt": "fp16"}
SLOW_SINK = 12


def _run(cfg, job, expect_pass=True):
    require_sim("verilator")
    res = api.run_bench("qk_gemv", cfg, job=job)
    if expect_pass:
        assert res.passed, f"qk_gemv RTL does not match the golden model:\n{res.summary()}\n" \
                           f"log: {res.log}"
    return res


def _beats_per_job(cfg, n: int) -> int:
    return cfg.d_group * (cfg.block // cfg.lanes) * -(-n // cfg.block)


def _split(stamps, counts):
    out, a = [], 0
    for c in counts:
        out.append(stamps[a:a + c])
        a += c
    return out


def _check_schedule(cfg, phase, jobs):
    """Every job's first and last Q, K and score beats land on the cycles the model predicts."""
    ns = [j[0] for j in jobs]
    sched = qk_schedule(cfg, ns)
    outs = _split(phase.out_stamps["o"], [_beats_per_job(cfg, n) for n in ns])
    ks = _split(phase.in_stamps["i_k"], [n * cfg.row_beats for n in ns])
    qs = _split(phase.in_stamps["i_q"], [cfg.d_group * cfg.row_beats] * len(ns))
    got = [(q[0], k[0], k[-1], o[0], o[-1]) for q, k, o in zip(qs, ks, outs)]
    want = [(s["q_first"], s["k_first"], s["k_last"], s["first_out"], s["last_out"])
            for s in sched]
    assert got == want
    assert phase.cycles == sched[-1]["last_out"] + 1
    return sched


# ---------------------------------------------------------------------------------------------
# golden model against an independent reference

@pytest.mark.parametrize("kind", ["normal", "large"])
def test_golden_scores_against_float64(kind):
    """fp32 scores within the fp32 accumulation bound of float64 q.k x scale (head_dim 128)."""
    cfg = UNIT.config(None, {"d_group": 4})
    q16, k16, _ = random_job(cfg, np.random.default_rng(5), 300, "none", kind)
    s = bits_float(FP32, h_qk.group_scores(q16, k16, cfg.scale, FP32))
    q, k = bits_float(FP16, q16), bits_float(FP16, k16)
    ref = q @ k.T * cfg.scale
    bound = cfg.head_dim * 2.0 ** -23 * (np.abs(q) @ np.abs(k).T) * cfg.scale
    assert np.all(np.abs(s - ref) <= bound)


def _f32_reference(q16, k16, scale: float, partials: int) -> np.ndarray:
    """The scores' fp32 bits computed with NumPy float32 (IEEE, round to nearest even): an fp16 x
    fp16 product is exact in float32, so ``fma(q, k, acc)`` is ``q * k + acc`` there.  Dim i goes
    into partial i mod Q, the partials are summed pairwise, adjacent pairs first."""
    q = bits_float(FP16, q16).astype(np.float32)
    k = bits_float(FP16, k16).astype(np.float32)
    acc = np.zeros((partials, len(q), len(k)), dtype=np.float32)
    for i in range(q.shape[1]):
        acc[i % partials] = q[:, i:i + 1] * k[:, i] + acc[i % partials]
    while len(acc) > 1:
        acc = acc[0::2] + acc[1::2]
    return (acc[0] * np.float32(scale)).view(np.int32).astype(np.int64) & 0xFFFFFFFF


@pytest.mark.parametrize("partials", [1, 2, 4, 8])
def test_golden_partial_sums_against_float32_arithmetic(partials):
    """The golden model's summation order (partial i mod Q, then the pairwise tree, then the
    scale) against NumPy's float32 arithmetic, bit for bit; and the order matters: with these
    inputs, every other Q gives different bits somewhere."""
    cfg = UNIT.config(None, {"d_group": 3})
    q16, k16, _ = random_job(cfg, np.random.default_rng(11), 200, "none", "normal")
    got = h_qk.group_scores(q16, k16, cfg.scale, FP32, partials=partials)
    np.testing.assert_array_equal(got, _f32_reference(q16, k16, cfg.scale, partials))
    for other in {1, 2, 4, 8} - {partials}:
        assert np.any(got != _f32_reference(q16, k16, cfg.scale, other))


# ---------------------------------------------------------------------------------------------
# RTL: one build of the SMALL config

@pytest.fixture(scope="module")
def small_run():
    """SMALL: the default jobs back to back, no stalls, random stalls p=0.3 on every stream, then
    ``o`` ready one cycle in 12 (the score buffer fills and holds the MAC array and K back)."""
    cfg = UNIT.config(None, SMALL)
    job = qk_job(cfg, np.random.default_rng(1), seed=1, slow_sink=SLOW_SINK)
    return cfg, _run(cfg, job)


def test_rtl_matches_golden_with_and_without_stalls(small_run):
    cfg, res = small_run
    assert [p.name for p in res.phases] == ["no stalls", "random stalls p=0.3",
                                            f"o ready 1 in {SLOW_SINK}"]
    total = sum(_beats_per_job(cfg, j[0]) for j in default_jobs(cfg))
    assert all(len(p.received["o"]) == total for p in res.phases)
    # the back-pressure phase was output-bound, and the output held K back (the K-Buf, MAC
    # array and score buffer filled up behind the drain)
    slow = res.phases[2]
    outs = slow.out_stamps["o"]
    assert outs[-1] - outs[0] >= (len(outs) - 1) * SLOW_SINK
    k_free_run = res.phases[0].in_stamps["i_k"][-1]
    assert slow.in_stamps["i_k"][-1] > k_free_run + 4 * cfg.block * cfg.row_beats


def test_rtl_cycle_model_is_exact(small_run):
    """Seven jobs back to back (1 token, partial tiles, whole tiles): the model predicts each
    job's first/last Q, K and score beat to the cycle."""
    cfg, res = small_run
    _check_schedule(cfg, res.phases[0], default_jobs(cfg))


def test_rtl_next_job_q_is_accepted_before_scores_drain(small_run):
    """Job h+1's Q goes in before job h's first score leaves (two Q banks)."""
    cfg, res = small_run
    ph = res.phases[0]
    ns = [j[0] for j in default_jobs(cfg)]
    qs = _split(ph.in_stamps["i_q"], [cfg.d_group * cfg.row_beats] * len(ns))
    outs = _split(ph.out_stamps["o"], [_beats_per_job(cfg, n) for n in ns])
    for h_ in range(len(ns) - 1):
        assert qs[h_ + 1][-1] < outs[h_][0]


def test_rtl_k_rate_and_mac_utilization_at_4096_tokens_and_checker():
    """One job of 4096 tokens (128 tiles) with no stalls: every K beat is accepted on consecutive
    cycles (no bubble at all, not even at tile boundaries); the cycle model is exact; MAC
    utilization (K beats of real tokens / cycles from the first K beat to the last MAC issue) is
    >= 0.95 measured up to the last *score* beat, which bounds the last MAC issue from above.
    A second phase flips one bit of one expected score: the checker must report it."""
    cfg = UNIT.config(None, SMALL)
    n = 4096
    jobs = [JobSpec(n, "random")]
    inputs, expected = qk_inputs(cfg, np.random.default_rng(7), jobs)
    bad_in, bad_exp = qk_inputs(cfg, np.random.default_rng(8), [JobSpec(5)])
    bad_exp["o"]["data"][1] ^= 1 << 3
    job = Job([Phase("n=4096", inputs, expected), Phase("one-bit error", bad_in, bad_exp)])
    res = _run(cfg, job, expect_pass=False)
    ph, bad = res.phases
    assert not ph.errors, res.summary()
    ks = ph.in_stamps["i_k"]
    busy = n * cfg.row_beats
    assert len(ks) == busy
    assert ks == list(range(ks[0], ks[0] + busy)), "qk_gemv stalled its K input"
    sched = _check_schedule(cfg, ph, jobs)
    assert ph.cycles == qk_cycles(cfg, n)
    assert busy / (ph.out_stamps["o"][-1] + 1 - ks[0]) >= 0.95
    # with the model exact, its last MAC issue gives the utilization as defined: 128 tiles of
    # 256 cycles, and one tile (the first load) without compute
    util = busy / (sched[0]["last_issue"] + 1 - ks[0])
    assert util >= 0.99
    assert bad.errors and any("transfer #1" in e for e in bad.errors)
    assert len(bad.errors) == 1
    # the run is the cycle model's job, so the unit's own activity model predicts its counts
    assert_actions(ph, UNIT.activity(cfg, n))


def _check_activity(cfg, res):
    """Every phase of a :func:`qk_job` run against :func:`qk_activity`."""
    ns = [j[0] for j in default_jobs(cfg)]
    for ph in res.phases:
        assert_actions(ph, qk_activity(cfg, ns))


def test_rtl_activity_model_is_exact(small_run):
    """The probes' counts equal :func:`qk_activity` in every phase, the stall phases too: every
    tile computes the same issues and drains the same beats whatever the stalls, and the
    memories read only for an issue or a drain beat."""
    _check_activity(*small_run)


# ---------------------------------------------------------------------------------------------
# configs and manifest (no simulation)

def test_manifest_streams_and_fields():
    cfg = UNIT.config(None, SMALL)
    man = api.elaborate("qk_gemv", cfg)[1]
    assert set(man["streams"]) == {"i_q", "i_k", "o"}
    fields = {s: {f["name"]: (f["width"], f["format"]) for f in man["streams"][s]["fields"]}
              for s in man["streams"]}
    assert fields["i_q"] == {"data": (128, "fp16x8")}
    assert fields["i_k"] == {"data": (128, "fp16x8"), "mask": (1, "bool"), "last": (1, "bool")}
    # U = next_pow2(ceil(2 x 8 / 64)) = 1 score a beat, in fp16
    assert fields["o"] == {"data": (16, "fp16x1"), "keep": (1, "uint"), "mask": (1, "uint"),
                           "last": (1, "bool")}
    assert man["streams"]["o"]["direction"] == "out"
    assert man["mac_lanes"] == 16
    assert man["k_buf_bits"] == 2 * 32 * 64 * 16
    assert man["throughput"] == 1.0
    # a tile's last K beat to its first score: at least the tile's 32 x 8 MAC cycles
    assert man["latency"] > 256 and man["timing"]["tile"] == 256


@pytest.mark.parametrize("op_depth, partials, registered", [(16, 4, True), (10, 4, True),
                                                           (8, 2, False)])
def test_multiplier_operands_registered_after_the_unskew_when_deep(op_depth, partials, registered):
    """ECP5 at 4 partials and op_depth 16 (100.0 MHz, seed 2) was held by the K^T view's select
    through the unskew into a multiplier's first stage.  The unskew and Q-word select are the
    multipliers' pre stage: from op_depth 10 the first multiplier register holds the operands
    (one per lane and operand); the RTL run above checks that the latency did not move."""
    cfg = UNIT.config(None, {**SMALL, "op_depth": op_depth, "partials": partials})
    v = api.elaborate("qk_gemv", cfg)[0]
    lanes = cfg.d_group * cfg.beat_elems
    for operand in "ab":
        regs = re.findall(rf"reg \[15:0\] qk\d+_\d+_p0_{operand}\b", v)
        assert len(regs) == (lanes if registered else 0)


def test_presets():
    assert UNIT.presets is HILOS_PRESETS
    for name, g in (("hilos_dgroup1", 1), ("hilos_dgroup4", 4), ("hilos_dgroup5", 5)):
        cfg = UNIT.preset_config(name)
        assert (cfg.d_group, cfg.block, cfg.beat_elems, cfg.head_dim) == (g, 128, 32, 128)
    assert UNIT.preset_config("hilos_dgroup5").lanes == 2


@pytest.mark.parametrize("overrides, field", [
    ({"block": 16}, "block"),
    ({"beat_elems": 64}, "beat_elems"),
    ({"d_group": 9}, "d_group"),
    ({"d_group": 0}, "d_group"),
    ({"head_dim": 96}, "head_dim"),
    ({"score_fmt": "bf16"}, "score_fmt"),
    ({"op_depth": 17}, "op_depth"),
    # block / beat_elems = 1 accumulator per lane, revisited every cycle: the adder takes 2
    ({"block": 32, "beat_elems": 32, "op_depth": 2}, "block"),
    # two partial sums come back every 2 x 32 / 8 = 8 cycles: an adder of 9 is too deep
    ({"block": 32, "beat_elems": 8, "head_dim": 64, "partials": 2, "op_depth": 9}, "block"),
    ({"partials": 3}, "partials"),
    ({"partials": 16}, "partials"),
])
def test_bad_config_names_the_field(overrides, field):
    with pytest.raises(ConfigError) as e:
        UNIT.config(None, overrides)
    assert e.value.field == field and "qk_gemv" in str(e.value)


# ---------------------------------------------------------------------------------------------
# long runs: presets and a second config

@pytest.mark.slow
@pytest.mark.parametrize("preset", sorted(HILOS_PRESETS))
def test_rtl_presets(preset):
    """A preset (E = 32, d = 128, block 128, fp32 scores): default jobs with and without stalls
    and under output back-pressure, bit-exact; the cycle model exact."""
    cfg = UNIT.preset_config(preset)
    res = _run(cfg, qk_job(cfg, np.random.default_rng(2), seed=2, slow_sink=SLOW_SINK))
    _check_schedule(cfg, res.phases[0], default_jobs(cfg))
    _check_activity(cfg, res)


@pytest.mark.slow
def test_rtl_two_score_lanes_op_depth_3():
    """U = 2 (5 queries x 16 lanes over d = 64), op_depth 3, block 64, fp32 scores."""
    cfg = UNIT.config(None, {"beat_elems": 16, "head_dim": 64, "block": 64, "d_group": 5,
                             "op_depth": 3})
    assert cfg.lanes == 2
    res = _run(cfg, qk_job(cfg, np.random.default_rng(3), seed=3, slow_sink=SLOW_SINK))
    _check_schedule(cfg, res.phases[0], default_jobs(cfg))
    _check_activity(cfg, res)


@pytest.mark.slow
def test_rtl_deep_pipeline_at_the_accumulator_revisit_limit():
    """op_depth 8 with block / beat_elems = 8: each token accumulator comes back the cycle its
    previous sum lands (forwarding), and the K-Buf read register sits before the multipliers."""
    cfg = UNIT.config(None, {**SMALL, "block": 64, "op_depth": 8})
    assert cfg.block // cfg.beat_elems == cfg.op_depth
    res = _run(cfg, qk_job(cfg, np.random.default_rng(4), seed=4, slow_sink=SLOW_SINK))
    _check_schedule(cfg, res.phases[0], default_jobs(cfg))
    _check_activity(cfg, res)
