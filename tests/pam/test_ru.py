"""pam_ru: golden merge vs float64, RTL vs golden (bit-exact, with and without stalls), the
exact cycle model and the ``P * Bw + latency`` contract, partial order, config errors.

Default RTL builds (each cached in build/sim): four RU configs chosen to cover fp16/fp32,
final/non-final, vector_width 16/8, head_dim 64/128 and op_depth 1..3 (the Bw = 4, op_depth = 3
config is the scratch read-after-write edge case).  Two of them are the RUs that
``run pam-attention --backend rtl`` builds for the HBM tier at d = 128 (the default config and
its final mode; tests/software/test_pam_attention_cli.py), so those builds serve both files.
PIMFORGE_LONG=1 adds more RU configs.
"""
import numpy as np
import pytest
from activity_checks import assert_actions
from conftest import require_sim

from pimforge import api
from pimforge.base import numerics as num
from pimforge.base.errors import ConfigError, UserError
from pimforge.base.formats import FP16, FP32
from pimforge.hw.pam.config import PamRuConfig
from pimforge.hw.pam.ru_timing import ru_activity, ru_cycles, ru_latency, ru_schedule
from pimforge.registry import get_unit
from pimforge.sim.benches.pam.ru import ru_requests, ru_stream
from pimforge.sim.golden.pam import ru as g_ru
from pimforge.sim.harness.job import Job, Phase
from pimforge.sim.harness.stall import StallPattern

# Relative-error bounds against float64 for <= 8 merges (u = unit roundoff of acc: 2**-11 for
# fp16, 2**-24 for fp32).  Each merge rounds the exponent argument to acc (m in [-12, 12]: at
# most 16 u relative in g), the exp (fp16 <= 1 ulp, fp32 <= 4 ulp) and the fma: l and O within
# 8 u (fp16) and 32 u (fp32), lse (fp32, m exact) within 8 u and 16 u; the normalized output is
# fp16 in both cases, so its bound adds fp16 ulps.  Measured worst cases over the 150 requests:
# fp16 l 6.5e-4, O 1.4e-3, norm 2.1e-3, lse 9.5e-4; fp32 l and O 2e-7, norm 4.3e-4, lse 1.2e-7.
TOL = {"fp16": {"l": 4e-3, "O": 4e-3, "norm": 5e-3, "lse": 4e-3},
       "fp32": {"l": 2e-6, "O": 2e-6, "norm": 1e-3, "lse": 1e-6}}


def _f(acc, bits):
    return num.bits_float(acc, np.atleast_1d(bits))


def _f64_merge(acc, parts):
    """PAM Alg. 1 Reduction in float64 on the partials' values: m, l, O, lse."""
    m = np.array([_f(num.SCORE, p["m"])[0] for p in parts])
    l = np.array([_f(acc, p["l"])[0] for p in parts])
    o = np.stack([_f(acc, p["O"]) for p in parts])
    top = m.max()
    w = np.exp(m - top)
    big_l = float((w * l).sum())
    return top, big_l, (w[:, None] * o).sum(0), top + np.log(big_l)


def _errors(acc, got, parts):
    """Relative errors of a merged result (``m``, ``l``, ``O``, ``norm``, ``lse`` as floats)."""
    top, big_l, o, lse = _f64_merge(acc, parts)
    assert got["m"] == top, "the merged maximum must be the largest input maximum exactly"
    scale = np.abs(o).max()
    return {"l": abs(got["l"] - big_l) / big_l, "O": np.abs(got["O"] - o).max() / scale,
            "norm": np.abs(got["norm"] - o / big_l).max() / (scale / big_l),
            "lse": abs(got["lse"] - lse) / max(1.0, abs(lse))}


# ---------------------------------------------------------------- golden model vs float64

@pytest.mark.parametrize("acc", [FP16, FP32], ids=["fp16", "fp32"])
def test_golden_merge_against_float64(acc):
    """ru_reduce (final) of 150 requests of 1..8 partials (PU partials on random q/K/V and
    synthetic ones) against the float64 merge of the same partials."""
    cfg = PamRuConfig(acc=acc, head_dim=64, vector_width=16, final=True)
    worst = {k: 0.0 for k in TOL[acc.name]}
    for parts in ru_requests(cfg, np.random.default_rng(5), 150):
        r = g_ru.ru_reduce(acc, parts, final=True)
        got = {"m": _f(num.SCORE, r["m"])[0], "l": _f(acc, r["l"])[0], "O": _f(acc, r["O"]),
               "norm": _f(FP16, r["norm"]), "lse": _f(num.SCORE, r["lse"])[0]}
        for k, e in _errors(acc, got, parts).items():
            worst[k] = max(worst[k], e)
    print(f"\n{acc.name} worst relative errors: {worst}")
    for k, e in worst.items():
        assert e <= TOL[acc.name][k], f"{k}: {e:.3g} > {TOL[acc.name][k]}"


# ---------------------------------------------------------------- pam_ru RTL

RU_CONFIGS = {
    # Bw = 8 with op_depth 7: the scratch write lands in the cycle the next partial reads it,
    # and the final statistics (recip, log, add) decide the latency.  8 wide: the same edge as
    # the 16-wide Bw = 4, op_depth 3 config (in RU_SLOW) at half the Verilog.
    "fp16-w8-d64-final-od7": dict(vector_width=8, head_dim=64, final=True, op_depth=7),
}
# Long run: the RU's fp32 accumulation, and features the default configs above already exercise
# (fp16 final and non-final; op_depth 1 and 7) in other combinations, to keep the default run
# within its time budget (fp32-w8-d128-final-od1 alone is 14 s; the operators' fp32 paths stay
# in the default run in pam_pu's 4-lane fp32 config and the float-operator tests).
RU_SLOW = {
    # a non-final RU (the devices' own), 8 wide at op_depth 1; non-final RUs are simulated in the
    # default run inside pam_device (tests/pam/test_device.py), so this one is the long run's
    "fp16-w8-d64-od1": dict(vector_width=8, head_dim=64, op_depth=1),
    # Bw = 4 with op_depth 3, 16 wide (see fp16-w8-d64-final-od7 above)
    "fp16-w16-d64-final-od3": dict(vector_width=16, head_dim=64, final=True, op_depth=3),
    # the rtl backend's HBM-tier RUs (builds shared with tests/software/test_pam_attention_cli.py,
    # also long-run): non-final and final at op_depth 2
    "fp16-w16-d128": dict(),
    "fp16-w16-d128-final": dict(final=True),
    # fp32 final with the shallowest operators (the fp32 -> fp16 normalization at op_depth 1)
    "fp32-w8-d128-final-od1": dict(vector_width=8, head_dim=128, acc="fp32", final=True,
                                   op_depth=1),
    "fp32-w8-d128-final": dict(vector_width=8, head_dim=128, acc="fp32", final=True),
    "fp32-w16-d64-od3": dict(vector_width=16, head_dim=64, acc="fp32", op_depth=3),
    "fp32-w16-d128-final-od1": dict(acc="fp32", final=True, op_depth=1),
    # the read-after-write edge (Bw = op_depth + 1) at the deepest op_depth Bw = 8 allows
    "fp16-w16-d128-final-od7": dict(final=True, op_depth=7),
    # the same edge at op_depth 15 (Bw = 16)
    "fp16-w4-d64-od15": dict(vector_width=4, head_dim=64, op_depth=15),
}


def _counts(cfg, phase):
    """Partials per request of a phase, from its ``last`` flags."""
    ends = np.flatnonzero(np.asarray(phase.inputs["i"]["last"])) + 1
    return list(np.diff(np.concatenate([[0], ends])) // cfg.beats)


def _long_stall_phase(cfg, rng):
    """Requests under long stalls: the output ready one cycle in 13, the input valid 3 in 4."""
    fin, fout = ru_stream(cfg, ru_requests(cfg, rng, 4))
    return Phase("long output stalls", inputs={"i": fin}, expected={"o": fout},
                 valid_stall={"*": StallPattern.cycle([1, 1, 1, 0])},
                 ready_stall={"*": StallPattern.cycle([1] + [0] * 12)})


def _ru_check(name, overrides):
    require_sim("verilator")
    cfg = api.config("pam_ru", overrides=overrides)
    rng = np.random.default_rng(11)
    job = get_unit("pam_ru").bench(cfg, rng, seed=3, n_requests=12, stall_requests=8)
    # the last phase is one request of three partials: the registry's cycle-model job
    fin, fout = ru_stream(cfg, [ru_requests(cfg, rng, 3)[1][:3]])
    job = Job(job.phases + [_long_stall_phase(cfg, rng),
                            Phase("one request", inputs={"i": fin}, expected={"o": fout})])
    res = api.run_bench("pam_ru", cfg, job=job)
    assert res.passed, f"pam_ru {name} RTL differs from golden:\n{res.summary()}\n{res.log}"
    assert res.manifest["storage_bytes"] == cfg.head_dim * cfg.acc.width // 8
    # cycle model and the contract on the no-stall phase
    ph, bw = job.phases[0], cfg.beats
    r0 = res.phases[0]
    counts = _counts(cfg, ph)
    model = ru_cycles(cfg, counts)
    assert r0.cycles == model, f"cycle model {model} != RTL {r0.cycles} cycles"
    ins, outs, lat = r0.in_stamps["i"], r0.out_stamps["o"], res.manifest["latency"]
    assert lat == ru_latency(cfg)
    sched = ru_schedule(cfg, counts)
    assert [(ins[sum(counts[:k]) * bw], outs[k * bw], outs[(k + 1) * bw - 1])
            for k in range(len(counts))] == sched
    first_beat = 0
    for k, p in enumerate(counts):
        beats = ins[first_beat:first_beat + p * bw]
        assert beats == list(range(beats[0], beats[0] + p * bw)), "bubble inside a request"
        first_out = outs[k * bw]
        assert first_out - beats[-1] == lat, "latency (last input beat -> first output beat)"
        assert first_out - beats[0] + 1 <= p * bw + lat, "P*Bw + latency contract"
        assert outs[k * bw:(k + 1) * bw] == list(range(first_out, first_out + bw))
        first_beat += p * bw
    # the activity model on every phase: its counts follow partials and beats, so the stalls
    # do not change them
    for jp, rp in zip(job.phases, res.phases):
        assert_actions(rp, ru_activity(cfg, _counts(cfg, jp)), rp.name)
    unit, n_beats = get_unit("pam_ru"), 3 * bw
    assert _counts(cfg, job.phases[-1]) == [3]
    assert unit.cycle_model(cfg, n_beats) == ru_cycles(cfg, [3])
    assert_actions(res.phases[-1], unit.activity(cfg, n_beats))
    return res


@pytest.mark.parametrize("name", list(RU_CONFIGS))
def test_rtl_pam_ru(name):
    _ru_check(name, RU_CONFIGS[name])


@pytest.mark.slow
@pytest.mark.parametrize("name", list(RU_SLOW))
def test_rtl_pam_ru_long(name):
    _ru_check(name, RU_SLOW[name])


def test_rtl_partial_order():
    """The same 6 partials in 5 orders: every order is bit-exact with the golden model of that
    order, all lie within TOL of the float64 merge, and the orders do not all agree bit for bit
    (floating-point merging is not associative)."""
    require_sim("verilator")
    cfg = api.config("pam_ru", overrides=RU_CONFIGS["fp16-w8-d64-final-od7"])
    acc, rng = cfg.acc, np.random.default_rng(21)
    parts = ru_requests(cfg, rng, 3)[2]
    while len(parts) < 6:
        parts = parts + ru_requests(cfg, rng, 3)[2]
    parts = parts[:6]
    orders = [list(range(6)), list(range(5, -1, -1))] + [list(rng.permutation(6)) for _ in range(3)]
    reqs = [[parts[i] for i in o] for o in orders]
    fin, fout = ru_stream(cfg, reqs)
    res = api.run_bench("pam_ru", cfg, job=Job([Phase("orders", {"i": fin}, {"o": fout})]))
    assert res.passed, res.summary()
    got = res.phases[0].received["o"]
    fields = {f["name"]: f for f in res.manifest["streams"]["o"]["fields"]}

    def field(word, name, n=1, width=None):
        f = fields[name]
        width = width or f["width"] // n
        v = (word >> f["offset"]) & ((1 << f["width"]) - 1)
        return [(v >> (j * width)) & ((1 << width) - 1) for j in range(n)]

    w, bw = cfg.vector_width, cfg.beats
    results = []
    for k in range(len(orders)):
        beats = got[k * bw:(k + 1) * bw]
        o_bits = sum((field(x, "data", w) for x in beats), [])
        n_bits = sum((field(x, "norm", w) for x in beats), [])
        results.append(tuple(o_bits))
        out = {"m": _f(num.SCORE, field(beats[0], "m")[0])[0],
               "l": _f(acc, field(beats[0], "l")[0])[0], "O": _f(acc, o_bits),
               "norm": _f(FP16, n_bits), "lse": _f(num.SCORE, field(beats[0], "lse")[0])[0]}
        for key, e in _errors(acc, out, parts).items():
            assert e <= TOL[acc.name][key], f"order {orders[k]}: {key} error {e:.3g}"
    assert len(set(results)) > 1, "expected some orders to round differently"


# ---------------------------------------------------------------- cycle model, configs

def test_ru_cycle_model_shape():
    """The model itself: P partials of Bw beats back to back, then drain; the next request
    starts once the scratch has been read out."""
    cfg = PamRuConfig(vector_width=16, head_dim=64)
    lat, bw = ru_latency(cfg), cfg.beats
    assert ru_cycles(cfg, [1]) == bw - 1 + lat + bw
    assert ru_cycles(cfg, [3]) == 3 * bw - 1 + lat + bw
    # non-final: the reader starts one cycle before the first output and reads Bw entries; the
    # next request's first beat enters right after, Bw - 1 cycles after the first output
    first_out = 2 * bw - 1 + lat
    assert ru_cycles(cfg, [2, 1]) == (first_out + bw - 1) + bw - 1 + lat + bw
    with pytest.raises(ValueError, match="at least one partial"):
        ru_cycles(cfg, [0])


@pytest.mark.parametrize("kw, field, allowed", [
    (dict(head_dim=64, acc="fp32", scratch_bytes=128), "scratch_bytes", ">= 256"),
    (dict(head_dim=128, scratch_bytes=200), "scratch_bytes", ">= 256"),
    (dict(head_dim=64, vector_width=32), "vector_width", "at most head_dim/4 = 16"),
    (dict(vector_width=12), "vector_width", "a power of two"),
    (dict(acc="bf16"), "acc", "fp16, fp32"),
    (dict(op_depth=17), "op_depth", "an integer in 1..16"),
    # the next partial reads a beat Bw = 8 cycles after this one: its fma may take 7
    (dict(op_depth=8), "op_depth", "at most head_dim/vector_width - 1 = 7"),
    (dict(head_dim=64, op_depth=4), "op_depth", "at most head_dim/vector_width - 1 = 3"),
])
def test_bad_ru_config_names_the_field(kw, field, allowed):
    with pytest.raises(ConfigError) as e:
        api.config("pam_ru", overrides=kw)
    assert e.value.field == field
    assert str(e.value).startswith(f"pam_ru: field '{field}'") and allowed in str(e.value)


def test_manifest_reports_storage_and_timing():
    for kw in RU_CONFIGS.values():   # the configs the RTL tests elaborate anyway
        cfg = api.config("pam_ru", overrides=kw)
        _, man, _ = api.elaborate("pam_ru", cfg)
        assert man["storage_bytes"] == cfg.head_dim * cfg.acc.width // 8 <= cfg.scratch_bytes
        assert man["latency"] == ru_latency(cfg) and man["throughput"] == 1.0
        names = [f["name"] for f in man["streams"]["o"]["fields"]]
        assert names == (["data", "norm", "m", "l", "lse"] if cfg.final else ["data", "m", "l"])


def test_clock_mhz_is_an_unknown_field():
    """The RU's clock changed nothing in the RTL or the cycle model: it is no longer a field."""
    with pytest.raises(UserError, match="pam_ru: unknown field 'clock_mhz'"):
        get_unit("pam_ru").config(None, {"clock_mhz": 500.0})
