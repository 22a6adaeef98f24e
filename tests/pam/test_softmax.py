"""online_softmax: the golden merge on streaming scores vs float64 and on hand-derived special
values, RTL vs golden (bit-exact, with and without stalls), the exact cycle model, config errors.

Default RTL builds (each cached in build/sim): online_softmax fp16 and fp32.
"""
import numpy as np
import pytest
from activity_checks import assert_actions
from conftest import require_sim

from pimforge import api
from pimforge.base import numerics as num
from pimforge.base.errors import ConfigError
from pimforge.base.formats import FP16, FP32
from pimforge.hw.fp.softmax import merge_interval
from pimforge.hw.pam.config import OnlineSoftmaxConfig
from pimforge.hw.pam.softmax_timing import softmax_activity, softmax_cycles
from pimforge.registry import get_unit
from pimforge.sim.benches.pam.softmax import (STALL_MIN_PER_CLASS, STALL_SHARE, group_kinds,
                                              softmax_groups)
from pimforge.sim.golden.pam import softmax as g_sm
from pimforge.sim.harness.job import Phase


def _f(acc, bits):
    return num.bits_float(acc, np.atleast_1d(bits))


# ---------------------------------------------------------------- golden model

@pytest.mark.parametrize("acc", [FP16, FP32], ids=["fp16", "fp32"])
def test_golden_streaming_scores_against_float64(acc):
    """online_softmax on scores (l_in = 1, PAM eqs. 1-6): m is the running maximum exactly and
    l = sum exp(s - m) within 2 + 8 ulps per step (the rounding of the fma and the exponential,
    and of the exponent argument |s - m| < 16 to acc)."""
    rng = np.random.default_rng(9)
    s = num.float_bits(num.SCORE, rng.normal(0, 3, size=200))
    r = g_sm.merge(acc, s, np.full(200, acc.one), None)
    sf = _f(num.SCORE, s)
    assert np.array_equal(_f(num.SCORE, r["m"]), np.maximum.accumulate(sf))
    ref = np.array([np.exp(sf[:k + 1] - sf[:k + 1].max()).sum() for k in range(200)])
    err = np.abs(_f(acc, r["l"]) - ref) / ref
    u = 2.0 ** -(acc.frac_bits + 1)
    assert err.max() <= 10 * u * 200, err.max()


def test_golden_merge_special_values():
    """Hand-derived cases of the swap-form merge (fp16 accumulator, fp32 maxima)."""
    b = lambda x: int(num.float_bits(FP16, [x])[0])  # noqa: E731
    s = lambda x: int(num.float_bits(num.SCORE, [x])[0])  # noqa: E731
    # +0 after -0 is larger (-0 < +0): swap, m' = +0, g = exp(-0 - +0) = 1, l' = 1 + 2
    r = g_sm.merge(FP16, [s(-0.0), s(0.0)], [b(1.0), b(2.0)], None)
    assert list(r["m"]) == [s(-0.0), s(0.0)] and list(r["swap"]) == [0, 1]
    assert list(r["l"]) == [b(1.0), b(3.0)] and list(r["g"]) == [FP16.one, FP16.one]
    # equal maxima never swap; a -inf (fully masked) first state is scaled by exp(-inf) = 0
    r = g_sm.merge(FP16, [s(2.0), s(2.0), s(-np.inf)], [b(1.0), b(1.0), b(5.0)], None, [1, 0, 1])
    assert list(r["swap"]) == [0, 0, 0] and list(r["l"][:2]) == [b(1.0), b(2.0)]
    r = g_sm.merge(FP16, [s(-np.inf), s(1.0)], [b(5.0), b(3.0)], None)
    assert list(r["swap"]) == [0, 1] and r["g"][1] == 0 and r["l"][1] == b(3.0)
    # maxima beyond fp16 that differ by 0.5: fp32 keeps the difference, g = exp(-0.5) in fp16
    r = g_sm.merge(FP16, [s(3e5), s(3e5 + 0.5)], [b(1.0), b(1.0)], None)
    assert list(r["m"]) == [s(3e5), s(3e5 + 0.5)] and list(r["swap"]) == [0, 1]
    assert r["g"][1] == b(np.exp(-0.5)) and r["l"][1] == b(1.0 + float(np.float16(np.exp(-0.5))))


# ---------------------------------------------------------------- online_softmax RTL

@pytest.mark.parametrize("preset, op_depth", [
    # fp32 is the long run's (the suite's time budget): the same generator in another format,
    # whose float operators are simulated at fp32 in the default run (tests/fp, the Hermes units)
    (None, None), pytest.param("fp32", None, marks=pytest.mark.slow),
    # op_depth 1: inputs two cycles apart, so each compare reads the m its predecessor wrote
    # in the cycle before (the running-max loop spans two registers)
    (None, 1),
    pytest.param(None, 16, marks=pytest.mark.slow)])
def test_rtl_online_softmax(preset, op_depth):
    """Specials and 1500 random inputs with no stalls, then the specials and about a quarter of
    the random groups, drawn from every class, with random stalls; bit-exact, one input every
    merge_interval cycles, the exact cycle model and the exact activity model (every phase)."""
    require_sim("verilator")
    cfg = api.config("online_softmax", preset=preset,
                     overrides={} if op_depth is None else {"op_depth": op_depth})
    job = get_unit("online_softmax").bench(cfg, np.random.default_rng(2), seed=2, n_random=1500)
    # a third phase whose first input lacks the `first` flag: after reset it restarts anyway
    x = {k: np.array(v[100:160]) for k, v in job.phases[0].inputs["i"].items()}
    x["first"][0] = 0
    r = g_sm.merge(cfg.acc, x["m_in"], x["l_in"], None, x["first"])
    job.phases.append(Phase("first implied", {"i": x},
                            {"o": {k: r[k] for k in ("m", "l", "g", "swap")}}))
    res = api.run_bench("online_softmax", cfg, job=job)
    assert res.passed, f"online_softmax RTL differs from golden:\n{res.summary()}\n{res.log}"
    ph = res.phases[0]
    ins = ph.in_stamps["i"]
    n = len(ins)
    assert ins == [k * merge_interval(cfg.op_depth) for k in range(n)]
    assert ph.out_stamps["o"][0] - ins[0] == res.manifest["latency"]
    assert ph.cycles == softmax_cycles(cfg, n)
    # one merge per input in every phase, stalled or not; the no-stall phase is the cycle
    # model's job, so the registry's activity model predicts it too
    for jp, rp in zip(job.phases, res.phases):
        assert_actions(rp, softmax_activity(cfg, len(jp.inputs["i"]["first"])), rp.name)
    assert_actions(ph, get_unit("online_softmax").activity(cfg, n))


def _groups(x) -> list:
    """The groups of an input stream (each starts at a ``first``), as tuples of (m_in, l_in)."""
    starts = list(np.nonzero(np.asarray(x["first"]))[0]) + [len(x["first"])]
    return [tuple(zip(x["m_in"][a:b].tolist(), x["l_in"][a:b].tolist()))
            for a, b in zip(starts[:-1], starts[1:])]


def test_stall_phase_samples_every_class():
    """The stall phase replays whole groups of the no-stall phase: every special group, and from
    every class of random group (spread, streaming l_in, repeated maxima, crossed with all
    negative / long / other) about a quarter and at least STALL_MIN_PER_CLASS, not a prefix of
    the stream (which left rare classes such as all-negative groups to chance)."""
    cfg = api.config("online_softmax")
    n = 1500
    job = get_unit("online_softmax").bench(cfg, np.random.default_rng(2), seed=2, n_random=n)
    x, spans = softmax_groups(cfg.acc, np.random.default_rng(2), n)
    assert np.array_equal(job.phases[0].inputs["i"]["m_in"], x["m_in"])
    full = _groups(x)
    assert len(full) == len(spans)
    replayed = _groups(job.phases[1].inputs["i"])
    count = {}
    for grp in replayed:
        count[grp] = count.get(grp, 0) + 1
    assert all(count[grp] <= full.count(grp) for grp in count), "a group not in the no-stall phase"
    strata = {}
    for grp, (_, _, cls), kind in zip(full, spans, group_kinds(x, spans)):
        strata.setdefault(-1 if cls < 0 else (cls, kind), []).append(grp)
    assert all(grp in count for grp in strata[-1]), "a special group is not replayed"
    for key, members in strata.items():
        got = sum(1 for grp in members if grp in count)
        assert got >= min(len(members), STALL_MIN_PER_CLASS), (key, got, len(members))
    n_random = sum(len(grp) for grp in replayed) - sum(len(grp) for grp in strata[-1])
    assert n / STALL_SHARE <= n_random <= n / 2, n_random


# ---------------------------------------------------------------- cycle model, configs

@pytest.mark.parametrize("acc, ops", [("fp32", 3), ("fp16", 4)])
def test_softmax_cycle_model_shape(acc, ops):
    """One input: compare register, decision register, sub, (fp16: convert to fp16), exp (one
    extra stage), fma, output FIFO, counted inclusively; then one input every op_depth + 1
    cycles."""
    cfg = OnlineSoftmaxConfig(op_depth=3, acc=acc)
    assert softmax_cycles(cfg, 1) == 2 + ops * 3 + 1 + 1 + 1
    assert softmax_cycles(cfg, 11) - softmax_cycles(cfg, 1) == 10 * 4


def test_bad_softmax_config_names_the_field():
    with pytest.raises(ConfigError, match=r"online_softmax: field 'acc': got 'e5m4'"):
        api.config("online_softmax", overrides={"acc": "e5m4"})
    with pytest.raises(ConfigError, match=r"field 'op_depth': got 0; allowed: an integer in 1..16"):
        api.config("online_softmax", overrides={"op_depth": 0})
