"""hermes_act (Hermes §IV-A activation unit): the golden softmax against float64, its rounding
chain against SoftFloat, ReLU's special values, RTL vs golden (bit-exact, with and without
stalls), the cycle model against RTL cycle stamps, the manifest and config errors.

The default run builds one small design (U = 4 lanes, max_len 64, fp32 inside, 4 partials at
op_depth 3, the deepest 4 partials allow: a partial's sum is written back in the cycle its next
beat reads it), elaborated once: every simulation reuses the same Verilog.  The design at 16
partials and op_depth 15 (fp16 inside), bigger configs and other depths are ``slow``.
"""
import re
from types import SimpleNamespace

import numpy as np
import pytest
from activity_checks import assert_actions
from conftest import require_sim

from pimforge import api
from pimforge.base.errors import ConfigError
from pimforge.base.formats import FP16, FP32
from pimforge.base.numerics import bits_float, float_bits
from pimforge.hw.core.elaborate import elaborate
from pimforge.hw.hermes.act_timing import act_activity, act_cycles, act_schedule, act_timing
from pimforge.hw.hermes.perf import act_estimate
from pimforge.registry import get_unit
from pimforge.sim.benches.hermes.act import (
    ActVector, act_beats, act_job, default_vectors, random_values
)
from pimforge.sim.golden.fp.exp import fp_exp
from pimforge.sim.golden.hermes.act import act_relu, act_softmax
from pimforge.sim.golden.pam.common import OpCfg
from pimforge.sim.harness import runner
from pimforge.sim.harness.job import Job, Phase
from pimforge.sim.reference import softfloat

UNIT = get_unit("hermes_act")
SMALL = {"lanes": 4, "max_len": 64, "op_depth": 3}
# float64 softmax vs the golden y: |y - ref| <= REL * ref + 6e-8 (6e-8: fp16's subnormal step)
REL = {"fp32": 1e-3, "fp16": 1e-2}
# values whose fp16 sums of their exponentials round differently in another order
ORDER_VALUES = (0.0, -0.5, -1.0, -2.0, -7.0, -7.625, -8.0)


def _f64_softmax(x16):
    x = bits_float(FP16, x16).astype(np.float64)
    ref = np.exp(x - x.max())
    return ref / ref.sum()


# ---------------------------------------------------------------------------- golden (no sim)
@pytest.mark.parametrize("acc", ["fp32", "fp16"])
def test_golden_softmax_against_float64(acc):
    """fp32 inside: within 1e-3 relative (fp16 output rounding and exp's error); fp16 inside (the
    paper's units): within 1e-2 for vectors up to 4096 elements."""
    cfg = UNIT.config(None, {"lanes": 8, "max_len": 4096, "acc": acc})
    rng = np.random.default_rng(7)
    for n, kind in ((1, "normal"), (5, "normal"), (64, "normal"), (1000, "normal"),
                    (4096, "normal"), (333, "large"), (100, "subnormal"), (50, "zeros"),
                    (5, "negative"), (13, "positive")):
        x = random_values(rng, n, kind)
        y = bits_float(FP16, act_softmax(x, cfg.lanes, cfg.acc)["y"]).astype(np.float64)
        ref = _f64_softmax(x)
        assert np.all(np.abs(y - ref) <= REL[acc] * ref + 6e-8), (n, kind)


@pytest.mark.parametrize("kind", ["nan", "posinf", "allneginf"])
def test_golden_softmax_nan_cases_match_float64(kind):
    """A NaN, a +inf (inf - inf) or an all -inf vector: NaN everywhere, as in float64."""
    x = random_values(np.random.default_rng(2), 9, kind)
    y = act_softmax(x, 4, FP32)["y"]
    with np.errstate(invalid="ignore"):
        assert np.all(np.isnan(_f64_softmax(x)))
    assert np.all(y == FP16.canonical_nan)


def test_golden_softmax_neginf_and_zeros():
    """-inf elements give +0 exactly; a vector of signed zeros is uniform (max +0)."""
    x = float_bits(FP16, np.array([1.0, -np.inf, 2.0, -np.inf, -0.0]))
    y = act_softmax(x, 4, FP32)["y"]
    assert y[1] == y[3] == 0 and np.all(y[[0, 2, 4]] > 0)
    z = float_bits(FP16, np.array([-0.0, 0.0, -0.0, -0.0, -0.0, 0.0]))
    r = act_softmax(z, 4, FP32)
    assert r["m"] == 0 and np.all(r["y"] == r["y"][0])


def test_golden_relu_special_values():
    """relu(-0) = +0 (the choice documented in hw/hermes/act.py), relu(-inf) = +0, NaNs (of
    either sign, any payload) pass unchanged, positive values and +inf unchanged."""
    x = np.array([0x8000, 0x0000, 0xFC00, 0x7C00, 0x7E00, 0xFE01, 0x7D00, 0xBC00, 0x3C00, 0x8001,
                  0x0001])
    assert act_relu(x).tolist() == [0, 0, 0, 0x7C00, 0x7E00, 0xFE01, 0x7D00, 0, 0x3C00, 0, 1]


@pytest.mark.softfloat
@pytest.mark.parametrize("acc", [FP32, FP16])
def test_golden_rounding_chain_against_softfloat(acc):
    """Every correctly rounded step of the golden softmax redone with SoftFloat in the unit's
    order: x - m (then the golden exp, whose own check is tests/fp/test_exp.py), the lane
    trees, the four partials and Z, and fp16(e * r)."""
    U, n = 4, 37
    x = random_values(np.random.default_rng(3), n, "normal")
    g = act_softmax(x, U, acc)
    x_acc = softfloat.convert(FP16, acc, x)
    m_acc = softfloat.convert(FP16, acc, np.full(n, g["m"]))
    e = fp_exp(OpCfg(acc), softfloat.binary("sub", acc, x_acc, m_acc))
    assert np.array_equal(e, g["e"])
    B = -(-n // U)
    rows = np.zeros(B * U, dtype=np.int64)
    rows[:n] = e
    rows = rows.reshape(B, U)
    add = lambda a, b: int(softfloat.binary("add", acc, np.array([a]), np.array([b]))[0])  # noqa
    sums = [add(add(r[0], r[1]), add(r[2], r[3])) for r in rows]
    parts = [None] * 4
    for k, s in enumerate(sums):
        parts[k % 4] = s if parts[k % 4] is None else add(parts[k % 4], s)
    neg0 = 1 << (acc.width - 1)
    parts = [neg0 if p is None else p for p in parts]
    assert add(add(parts[0], parts[1]), add(parts[2], parts[3])) == g["Z"]
    y = softfloat.convert(acc, FP16, softfloat.binary("mul", acc, e, np.full(n, g["r"])))
    assert np.array_equal(y, g["y"])


def _order_vector(beats, lanes, seed):
    """fp16 bits of ``beats`` beats of one element each (lane 0; the other lanes are -inf, whose
    e is +0, so a beat's lane tree is exact) drawn from ORDER_VALUES, the first +0 (the
    maximum: e = exp(x))."""
    x = np.random.default_rng(seed).choice(ORDER_VALUES, size=beats)
    x[0] = 0.0
    rows = np.full((beats, lanes), -np.inf)
    rows[:, 0] = x
    return float_bits(FP16, rows.reshape(-1))


def _fp16_partials_sum(values, q, finish="tree"):
    """float64 sums rounded to fp16 after every add: beat k into partial k mod q (from -0), then
    the q partials pairwise, adjacent pairs first (``finish="chain"``: left to right)."""
    parts = [np.float16(-0.0)] * q
    for k, v in enumerate(values):
        parts[k % q] = np.float16(np.float64(parts[k % q]) + np.float64(v))
    if finish == "chain":
        z = parts[0]
        for p in parts[1:]:
            z = np.float16(np.float64(z) + np.float64(p))
        return z
    while len(parts) > 1:
        parts = [np.float16(np.float64(a) + np.float64(b)) for a, b in zip(parts[::2], parts[1::2])]
    return parts[0]


@pytest.mark.parametrize("partials,seed", [(4, 45), (8, 1), (16, 2)])
def test_golden_partials_order(partials, seed):
    """Beat k adds into partial k mod Q (from -0), then Z is the pairwise tree of the Q partials,
    adjacent pairs first (the RTL's adder tree).  fp16 inside, 3 Q + 1 beats of one element
    (:func:`_order_vector`); the seed is one where Q's order gives a Z that no other Q (1..16)
    and no left-to-right finish gives."""
    x16 = _order_vector(3 * partials + 1, 4, seed)
    e = bits_float(FP16, fp_exp(OpCfg(FP16), x16[::4]))      # lane 0 of each beat, m = +0
    ref = {(q, f): _fp16_partials_sum(e, q, f) for q in (1, 2, 4, 8, 16) for f in ("tree", "chain")}
    assert [k for k in ref if ref[k] == ref[partials, "tree"]] == [(partials, "tree")]
    g = act_softmax(x16, 4, FP16, partials)
    assert bits_float(FP16, np.array([g["Z"]]))[0] == ref[partials, "tree"]


def test_cycle_model_closed_form_and_estimate():
    """act_cycles is O(1) and equals the schedule of a lone job, the documented formula and
    perf.act_estimate; ReLU of 28672 elements at the paper's 256 lanes."""
    for over in (SMALL, {"lanes": 8, "max_len": 64, "op_depth": 2, "acc": "fp16"},
                 {"lanes": 256, "max_len": 4096, "op_depth": 3},
                 {"lanes": 16, "max_len": 512, "op_depth": 7, "partials": 8},
                 {"lanes": 4, "max_len": 128, "op_depth": 15, "partials": 16}):
        cfg = UNIT.config(None, over)
        lv, lq, d = cfg.lanes.bit_length() - 1, cfg.partials.bit_length() - 1, cfg.op_depth
        c = d if cfg.acc.width == 32 else 0
        for n in (1, cfg.lanes - 1, cfg.lanes, cfg.lanes + 1, cfg.max_len):
            B = -(-n // cfg.lanes)
            assert act_cycles(cfg, "relu", n) == B + 2 == act_estimate(cfg, "relu", n)
            soft = 3 * B + lv + (lv + lq + 7) * d + 3 * c + 8
            assert act_cycles(cfg, "softmax", n) == soft == act_estimate(cfg, "softmax", n)
            assert act_schedule(cfg, [("softmax", n)])[0]["o"][1] + 1 == soft
            assert UNIT.cycle_model(cfg, n) == soft
    paper = UNIT.config(None, {"lanes": UNIT.config_cls.PAPER_LANES})
    assert act_cycles(paper, "relu", 28672) == 114


def test_cycle_model_errors():
    cfg = UNIT.config(None, SMALL)
    with pytest.raises(ValueError, match="max_len = 64"):
        act_cycles(cfg, "softmax", 65)
    with pytest.raises(ValueError, match="op must be one of"):
        act_cycles(cfg, "gelu", 4)
    with pytest.raises(ValueError, match="at least one element"):
        act_cycles(cfg, "relu", 0)


# ---------------------------------------------------------------------------- RTL
@pytest.fixture(scope="module")
def design():
    """The small config elaborated once; ``sim(job)`` runs a job on its Verilog."""
    require_sim("verilator")
    cfg = UNIT.config(None, SMALL)
    verilog, manifest, comp = elaborate(UNIT, cfg, probes=True)

    def sim(job):
        return runner.run(verilog, comp.top, manifest, job, sim="verilator", seed=1,
                          label="hermes_act small")
    return SimpleNamespace(cfg=cfg, manifest=manifest, comp=comp, sim=sim)


def _check_schedule(cfg, vectors, ph):
    """Every vector's first and last i and o transfer as predicted, and the total."""
    sched = act_schedule(cfg, [(v.op, v.n) for v in vectors])
    a = 0
    for v, s in zip(vectors, sched):
        b = a + -(-v.n // cfg.lanes) - 1
        assert (ph.in_stamps["i"][a], ph.in_stamps["i"][b]) == s["i"], v
        assert (ph.out_stamps["o"][a], ph.out_stamps["o"][b]) == s["o"], v
        a = b + 1
    assert ph.cycles == sched[-1]["o"][1] + 1


@pytest.fixture(scope="module")
def bench_run(design):
    """The default bench: every vector kind back to back, then a lone ReLU and a lone softmax
    of max_len, no stalls; the default phases with stalls."""
    cfg = design.cfg
    job = act_job(cfg, np.random.default_rng(1), seed=1)
    lone = [act_job(cfg, np.random.default_rng(2), vectors=[v], stalls=False).phases[0]
            for v in (ActVector("relu", "normal", 4 * cfg.lanes + 3),
                      ActVector("softmax", "normal", cfg.max_len))]
    lone[0].name, lone[1].name = "lone relu", "lone softmax"
    res = design.sim(Job(job.phases + lone))
    return cfg, res


def test_rtl_matches_golden_with_and_without_stalls(bench_run):
    cfg, res = bench_run
    assert [p.name for p in res["phases"]] == ["no stalls", "random stalls p=0.3",
                                               "output 1 in 3", "lone relu", "lone softmax"]
    assert res["passed"], "\n".join(e for p in res["phases"] for e in p.errors)
    n = sum(-(-v.n // cfg.lanes) for v in default_vectors(cfg))
    for p in res["phases"][:3]:
        assert len(p.received["o"]) == len(p.in_stamps["i"]) == n


def test_rtl_cycle_model_is_exact(bench_run, design):
    """The schedule of the back-to-back vectors (ReLU after ReLU and softmax, softmax after
    ReLU), act_cycles of the lone vectors, ReLU at a beat a cycle and the manifest latency."""
    cfg, res = bench_run
    _check_schedule(cfg, default_vectors(cfg), res["phases"][0])
    relu, soft = res["phases"][3], res["phases"][4]
    nb = 5
    assert relu.cycles == act_cycles(cfg, "relu", 4 * cfg.lanes + 3) == nb + 2
    assert relu.in_stamps["i"] == list(range(nb))
    assert relu.out_stamps["o"] == [c + design.comp.latency for c in range(nb)]
    assert soft.cycles == act_cycles(cfg, "softmax", cfg.max_len) == UNIT.cycle_model(cfg, 64)
    B = cfg.max_beats
    assert soft.in_stamps["i"] == list(range(B))          # streamed in once, a beat a cycle
    oo = soft.out_stamps["o"]
    assert oo == list(range(oo[0], oo[0] + B))             # and out at a beat a cycle


def _vectors_activity(cfg, vectors):
    total = {}
    for v in vectors:
        for key, n in act_activity(cfg, v.op, v.n).items():
            total[key] = total.get(key, 0) + n
    return total


def test_activity_model_against_rtl(bench_run):
    """The probes' action counts equal :func:`act_activity` summed over the vectors, in every
    phase (stalls move the passes in time, not their counts); the lone softmax of max_len is
    the cycle model's job, so ``HwUnit.activity`` too."""
    cfg, res = bench_run
    want = _vectors_activity(cfg, default_vectors(cfg))
    for ph in res["phases"][:3]:
        assert_actions(ph, want, ph.name)
    relu, soft = res["phases"][3], res["phases"][4]
    assert_actions(relu, act_activity(cfg, "relu", 4 * cfg.lanes + 3))
    assert_actions(soft, UNIT.activity(cfg, cfg.max_len))


def test_checker_catches_a_one_bit_error(design):
    job = act_job(design.cfg, np.random.default_rng(1),
                  vectors=[ActVector("softmax", "normal", 6)], stalls=False)
    job.phases[0].expected["o"]["data"][1] ^= 1 << 3
    res = design.sim(job)
    assert not res["passed"]
    errs = res["phases"][0].errors
    assert len(errs) == 1 and "transfer #1" in errs[0]


def test_manifest(design):
    cfg, man, comp = design.cfg, design.manifest, design.comp
    assert set(man["streams"]) == {"i", "o"}
    fi = {f["name"]: f for f in man["streams"]["i"]["fields"]}
    fo = {f["name"]: f for f in man["streams"]["o"]["fields"]}
    assert set(fi) == {"data", "count", "op", "last"} and set(fo) == {"data", "count", "last"}
    assert fi["data"]["format"] == fo["data"]["format"] == "fp16x4"
    assert fi["count"]["width"] == 3
    assert man["parameters"] == {"lanes": 4, "max_len": 64, "acc": "fp32", "partials": 4,
                                 "op_depth": 3}
    assert man["latency"] == comp.latency == 2 and man["throughput"] == 1.0
    assert man["timing"] == act_timing(cfg) and man["ops"] == ["relu", "softmax"]
    assert man["sum_partials"] == 4


def test_presets():
    cfg = UNIT.default_config()
    assert (cfg.lanes, cfg.max_len, cfg.acc, cfg.PAPER_LANES) == (16, 4096, FP32, 256)
    assert UNIT.preset_config("hermes_fp16").acc == FP16


@pytest.mark.parametrize("overrides, field, allowed", [
    ({"lanes": 12}, "lanes", "4, 8, 16, 32, 64, 128, 256"),
    ({"lanes": 8, "max_len": 20}, "max_len", "a multiple of lanes = 8"),
    ({"max_len": 1 << 17}, "max_len", "an integer in 4..65536"),
    ({"acc": "bf16"}, "acc", "fp32, fp16"),
    ({"partials": 5}, "partials", "4, 8, 16"),
    ({"op_depth": 4}, "op_depth", "<= partials - 1 = 3 (a partial sum is revisited"),
    ({"partials": 8, "op_depth": 8}, "op_depth", "<= partials - 1 = 7"),
    ({"partials": 16, "op_depth": 16}, "op_depth", "an integer in 1..15"),
    ({"op_depth": 16}, "op_depth", "an integer in 1..15"),
])
def test_bad_config_names_the_field(overrides, field, allowed):
    with pytest.raises(ConfigError) as e:
        UNIT.config(None, overrides)
    assert e.value.field == field and "hermes_act" in str(e.value)
    assert allowed in str(e.value)


# 16 partials at op_depth 15, the deepest the config allows: a partial is revisited every 16
# cycles of pass 2, the cycle its sum is written back.  max_len = 32 beats: the longest vectors
# take each partial twice.  fp16 inside, where a sum in another order shows in the outputs more
# often (at fp32 an ulp of Z seldom changes an fp16 output); the bench's random vectors still
# seldom show it, so the lone softmax is an _order_vector whose outputs do.
DEEP = {"lanes": 4, "max_len": 128, "acc": "fp16", "partials": 16, "op_depth": 15}


# Long run (the suite's time budget: a second design, 47 s): the default run's design has the
# same read-after-write edge at 4 partials (op_depth 3), and the golden order at 16 partials is
# checked above (test_golden_partials_order).
@pytest.mark.slow
def test_rtl_deep_partials():
    """RTL vs golden at DEEP without and with stalls, the schedule of every vector back to back
    and the cycles of a lone softmax of max_len (act_cycles, the unit's cycle model) whose
    outputs at 16 partials differ from those at 4 and 8."""
    require_sim("verilator")
    cfg = UNIT.config(None, DEEP)
    job = act_job(cfg, np.random.default_rng(5), seed=5)
    x16 = _order_vector(cfg.max_beats, cfg.lanes, seed=1)
    ys = {q: act_softmax(x16, cfg.lanes, cfg.acc, q)["y"] for q in (4, 8, 16)}
    assert not np.array_equal(ys[16], ys[4]) and not np.array_equal(ys[16], ys[8])
    i, o = act_beats(cfg, np.random.default_rng(6), ActVector("softmax", "normal", cfg.max_len),
                     x16)
    lone = Phase("lone softmax", {"i": i}, {"o": o})
    res = api.run_bench("hermes_act", cfg, job=Job(job.phases + [lone]))
    assert res.passed, f"hermes_act at 16 partials, op_depth 15:\n{res.summary()}"
    assert [p.name for p in res.phases][1:] == ["random stalls p=0.3", "output 1 in 3",
                                                "lone softmax"]
    _check_schedule(cfg, default_vectors(cfg), res.phases[0])
    soft = res.phases[3]
    assert soft.cycles == act_cycles(cfg, "softmax", cfg.max_len) == \
        UNIT.cycle_model(cfg, cfg.max_len)
    assert soft.in_stamps["i"] == list(range(cfg.max_beats))


# ---------------------------------------------------------------------------- slow sweeps
def _full_run(cfg, seed):
    require_sim("verilator")
    res = api.run_bench("hermes_act", cfg, job=act_job(cfg, np.random.default_rng(seed),
                                                        seed=seed))
    assert res.passed, f"RTL does not match the golden model:\n{res.summary()}\nlog: {res.log}"
    _check_schedule(cfg, default_vectors(cfg), res.phases[0])
    return res


@pytest.mark.slow
@pytest.mark.parametrize("over", [{"lanes": 8, "max_len": 128, "op_depth": 2, "acc": "fp16"},
                                  {"lanes": 4, "max_len": 64, "op_depth": 1},
                                  {"lanes": 32, "max_len": 256, "op_depth": 2},
                                  {"lanes": 8, "max_len": 256, "op_depth": 7, "partials": 8},
                                  # 7 beats: the beat counter is narrower than log2 partials
                                  {"lanes": 4, "max_len": 28, "op_depth": 3, "partials": 16}])
def test_rtl_other_configs(over):
    _full_run(UNIT.config(None, over), seed=3)


# With fp16 inside, 16 partials and op_depth 15, the 16:1 partial select into the partial add
# would be the critical path on ECP5; as a priced stage of the add (float_op ``pre``)
# it gets a register of the add's own at that depth, and none at the default op_depth 2.
@pytest.mark.parametrize("overrides, registered", [
    ({"acc": "fp16", "partials": 16, "op_depth": 15}, True), ({}, False)])
def test_partial_select_gets_a_register_when_deep(overrides, registered):
    cfg = api.config("hermes_act", overrides={"lanes": 4, "max_len": 64, **overrides})
    text, _, _ = api.elaborate("hermes_act", cfg)
    assert (re.search(r"\breg\b[^;]*\bpadd_p0_a\b", text) is not None) == registered
