"""SmolLM2 on PAM: decode attention through PAMattention with the KV cache placed over the HBM,
DDR and SSD tiers by PAM's policy; everything else on the host.

The attention is held to the golden system model run head by head on the tokens of each tier
gathered here from the policy's placement; the policy to the rules of the system model's traces
(shares of the context, importance order, evictions, Algorithm 2's swaps moving importance up);
the cycles to the units' cycle models; the decoding to the reference under teacher forcing; one
layer-step to the Verilog (long run: its four Verilator builds take over a minute)."""

import numpy as np
import pytest

from pimforge.base.formats import FP16, FP32
from pimforge.hw.pam.config import PamSystemConfig
from pimforge.hw.pam.pu_timing import pu_schedule
from pimforge.hw.pam.ru_timing import ru_cycles
from pimforge.sim.golden.pam.system import system_attention
from pimforge.software import devices as dv
from pimforge.software.llm.forward import generate
from pimforge.software.llm.gguf_model import load_model
from pimforge.software.llm.ops import Step, softmax_attention
from pimforge.software.llm.systems.pam import PamOps, tier_caps
from pimforge.software.llm.tokenizer import build_tokenizer
from conftest import LONG, require_sim
from llm_checks import teacher_forced_errors

PROMPT = "The capital of France is"


def _bits16(x):
    return np.asarray(x, np.float32).astype(np.float16).view(np.uint16).astype(np.int64)


def _feed(ops, layer, n, rng, decode_from):
    """Steps 0..n-1 of one layer with random LLM-shaped Q, K, V (the cache grows by a row each
    step); returns the last step's inputs and output."""
    k = rng.standard_normal((3, n, 64)).astype(np.float32) * 2
    v = rng.standard_normal((3, n, 64)).astype(np.float32)
    for p in range(n):
        q = rng.standard_normal((9, 64)).astype(np.float32)
        out = ops.attention(Step(p, p >= decode_from), layer, q, k[:, :p + 1], v[:, :p + 1],
                            0.125)
    return q, k, v, out


@pytest.mark.parametrize("acc, fmt", [("fp16", FP16), ("fp32", FP32)])
def test_attention_is_pam_on_the_policys_tiers(model, acc, fmt):
    """A decode step's output equals ``system_attention`` per query head on its KV head's tokens
    gathered tier by tier (position order inside a tier) from the policy's placement; the prompt
    steps are the host's attention."""
    rng = np.random.default_rng(1)
    ops = PamOps(acc=acc)
    ops.prepare(model)
    n = 45
    q, k, v, out = _feed(ops, 1, n, rng, decode_from=40)
    rec = ops.records[n - 1][0]
    assert rec["layer"] == 1
    tier = rec["placement"]           # the tiers at the attention (Algorithm 2 swaps after it)
    counts = [int(np.sum(tier[0] == t)) for t in range(3)]
    assert min(counts) > 0
    for h in range(9):
        g = h // 3
        order = np.concatenate([np.flatnonzero(tier[g] == t) for t in range(3)])
        r = system_attention(fmt, 0.125, _bits16(q[h]), _bits16(k[g, order]), _bits16(v[g, order]),
                             counts, (4, 4, 4), 16)
        assert np.array_equal(_bits16(out[h]), r["norm"]), h
    # fp16 PAMattention against float64 attention on the same values (PAM §5.2.1's accuracy)
    ref = softmax_attention(q, k, v, 0.125)
    assert np.abs(out - ref).max() < (4e-3 if acc == "fp16" else 1e-3) * np.abs(ref).max()
    # a prompt step: the host's attention
    q2 = rng.standard_normal((9, 64)).astype(np.float32)
    host = PamOps()
    host.prepare(model)
    assert np.array_equal(host.attention(Step(0, False), 0, q2, k[:, :1], v[:, :1], 0.125),
                          softmax_attention(q2, k[:, :1], v[:, :1], 0.125))


def test_tier_caps():
    """Each tier's share of the context rounded half to even, SSD the rest; no SSD share: the
    lowest tier with a share takes the rounding."""
    assert tier_caps((0.5, 0.25, 0.25), 7) == [4, 2, 1]
    assert tier_caps((0.5, 0.25, 0.25), 10) == [5, 2, 3]
    assert tier_caps((0.5, 0.5, 0.0), 5) == [2, 3, 0]
    assert tier_caps((1.0, 0.0, 0.0), 3) == [3, 0, 0]


def test_placement_follows_importance(model):
    """First decode step: the most important prompt tokens fill HBM, the next DDR, the rest SSD;
    the new token enters HBM and, HBM being over its share, HBM's least important token goes down
    to DDR, then DDR's least important to SSD.  The new token is still unscored (importance 0),
    so it is the one that goes, twice: it ends in SSD, as in the system model's traces."""
    ops = PamOps()
    ops.prepare(model)
    imp = np.array([[0.5, 3.0, 1.0, 2.0, 0.1, 0.7, 1.5, 0.2]] * 3)      # 8 prompt tokens
    ops.imp[0] = imp
    down = ops._place(0, 9)
    # caps of 8: 4 / 2 / 2: HBM = 1, 3, 6, 2; DDR = 5, 0; SSD = 7, 4; caps of 9: 4 / 2 / 3
    want = [1, 0, 0, 0, 2, 1, 0, 2, 2]
    assert ops.tier[0].tolist() == [want] * 3
    assert down == [3, 3]


def test_algorithm2_moves_importance_up(model):
    """After a step's attention Algorithm 2 swaps: an SSD token far more important than DDR's
    ends up above SSD; tier counts stay, importance moved up."""
    ops = PamOps()
    ops.prepare(model)
    n = 12
    ops.imp[0] = np.ones((3, n))
    ops.tier[0] = np.array([[0] * 6 + [1] * 3 + [2] * 3] * 3, np.int8)
    ops.imp[0][:, 10] = 50.0
    swaps = ops._schedule(0, [6, 3, 3])
    assert swaps[0] > 0
    assert all(ops.tier[0][g, 10] != 2 for g in range(3))
    assert [int(np.sum(ops.tier[0][0] == t)) for t in range(3)] == [6, 3, 3]


def test_policy_over_a_run(model, ids):
    """Over a real run: at every decode step HBM holds its share of the context and DDR at most
    its share (SSD the rest), and the swaps and evictions are recorded and happen."""
    ops = PamOps()
    tr = generate(model, ops, ids, 6)
    n0 = len(ids)
    for s in tr.steps:
        if not s.decode:
            assert s.cycles == {}
            continue
        for rec in ops.records[s.pos]:
            caps = tier_caps(ops.shares, s.context)
            assert sum(rec["counts"]) == s.context
            assert rec["counts"][0] == caps[0] and rec["counts"][1] <= caps[1]
    assert sum(sum(r["swaps"]) for recs in ops.records.values() for r in recs) > 0
    assert sum(sum(r["evicted"]) for recs in ops.records.values() for r in recs) > 0
    assert sorted(ops.records) == list(range(n0, n0 + 5))


def test_cycles_are_the_cycle_models(model):
    """A step's cycles: per tier, each PU with tokens runs the 9 query heads' sets back to back
    (pam_pu schedule), the tier's RU merges 9 requests of its PUs' partials, the final RU 9
    requests of the tiers' partials (pam_ru schedule)."""
    rng = np.random.default_rng(4)
    ops = PamOps()
    ops.prepare(model)
    _feed(ops, 0, 30, rng, decode_from=29)
    rec = ops.records[29][0]
    cfg = PamSystemConfig(head_dim=64)
    total_pu, total_ru = 0, 0
    for t, name in enumerate(("hbm", "ddr", "ssd")):
        n = rec["counts"][t]
        per = [n // 4 + (i < n % 4) for i in range(4)]
        per = [c for c in per if c]
        dev = cfg.device_config(name)
        pu = [pu_schedule(dev.pu_config(), [c] * 9)[-1][1] + 1 for c in per]
        ru = ru_cycles(dev.ru_config(), [len(per)] * 9)
        assert rec["tiers"][name] == {"pu": max(pu), "ru": ru, "tokens": n}
        total_pu += sum(pu)
        total_ru += ru
    fin = ru_cycles(cfg.device_config("hbm").ru_config(final=True), [3] * 9)
    assert rec["final"] == fin
    # the Step of that position carries the same cycles, per unit
    st = Step(30, True)
    ops.attention(st, 0, *(rng.standard_normal(s).astype(np.float32)
                           for s in ((9, 64), (3, 31, 64), (3, 31, 64))), 0.125)
    r2 = ops.records[30][0]
    assert st.cycles["pam_ru"] == sum(x["ru"] for x in r2["tiers"].values()) + r2["final"]
    assert st.cycles["pam_pu"] >= sum(x["pu"] for x in r2["tiers"].values())
    assert total_pu > 0 and total_ru > 0


def test_two_layers_teacher_forced(model, ids, ref):
    """Under the reference's own continuation PAM's top-1 matches wherever the reference's
    margin resolves it and the logits stay close (the run's speed is benchmarked by `pimforge
    bench --only llm`, not timed here)."""
    ops = PamOps()
    tr = generate(model, ops, ids, 4, teacher=ref.generated_ids)
    errs = teacher_forced_errors(ref, tr)
    assert 0 < max(errs) < 0.1             # fp16 K, V and accumulation on two layers
    tm = ops.timing(tr.steps)
    assert tm["tokens_per_s"] > 0 and tm["seconds_per_token"] == pytest.approx(
        tm["parts"]["gemm_gpu"] + tm["parts"]["attention"] + tm["parts"]["migration"])
    assert tm["parts"]["attention"] > 0
    assert set(ops.describe()) >= {"pam_pu, pam_ru", "placement", "host"}


def test_longer_context_costs_more_time(model, ids):
    """The modelled attention grows with the context (the PUs' tiles and the tiers' reads)."""
    rng = np.random.default_rng(7)
    times = []
    for n in (20, 90):
        ops = PamOps()
        ops.prepare(model)
        _feed(ops, 0, n, rng, decode_from=n - 1)
        times.append(ops._layer_seconds(ops.records[n - 1][0])["attention"])
    assert times[1] > times[0]


def test_layer_time_is_the_slower_of_pus_and_memory(model):
    """A tier's time: the slower of its PUs (cycles at the tier's clock) and its reads (K and V
    of each query head's tokens, fp16, at one device's internal bandwidth), plus its RU and,
    below HBM, Q out and the partial back over its host link; then the final RU.  At these
    sizes the SSD tier is bound by its flash reads, the DDR tier by its 4-lane PUs."""
    rng = np.random.default_rng(9)
    ops = PamOps()
    ops.prepare(model)
    _feed(ops, 0, 128, rng, decode_from=127)
    rec = ops.records[127][0]
    got = ops._layer_seconds(rec)
    bound = []
    for t, tier in enumerate(dv.PAM_TIERS.values()):
        r, clk = rec["tiers"][tier.name], tier.clock_mhz * 1e6
        reads = 9 * r["tokens"] * 2 * 64 * 2 / tier.internal_bw
        link = 0.0 if t == 0 else 9 * (2 * 64 + 64 * 2 + 8) / tier.host_bw
        assert got["tiers"][tier.name] == pytest.approx(max(r["pu"] / clk, reads)
                                                        + r["ru"] / clk + link)
        bound.append(reads > r["pu"] / clk)
    assert bound[1:] == [False, True]
    fin = rec["final"] / (dv.PAM_TIERS["hbm"].clock_mhz * 1e6)
    assert got["attention"] == pytest.approx(max(got["tiers"].values()) + fin)


def test_bad_options():
    for kw in ({"backend": "verilog"}, {"acc": "bf16"}, {"shares": (1, -1, 1)}):
        with pytest.raises(Exception):
            PamOps(**kw)


@pytest.mark.rtl
def test_rtl_layer_step_equals_golden(model, ids):
    """One layer-step (layer 0, the first decode step) on the Verilog of pam_pu and pam_ru over
    the three tiers; the run asserts RTL == golden bit for bit.  Most of its time on a fresh
    build cache is the four Verilator builds (the HBM/SSD and DDR PUs, the RU and the final RU
    at d = 64)."""
    require_sim("verilator")
    ops = PamOps(backend="rtl", rtl_layers=[0], rtl_steps=1)
    tr = generate(model, ops, ids, 3)
    assert len(ops.rtl_runs) == 1
    run = ops.rtl_runs[0]
    assert run["layer"] == 0 and run["pos"] == len(ids) and run["simulations"] == 7
    gold = generate(model, PamOps(), ids, 3)
    assert all(np.array_equal(a, b) for a, b in zip(tr.logits, gold.logits))


@pytest.mark.slow
@pytest.mark.skipif(not LONG, reason="the full model: PIMFORGE_LONG=1")
def test_full_model_answers_paris():
    """The real 30-layer model on PAM completes the prompt as the reference does."""
    full = load_model()
    tok = build_tokenizer(full.metadata)
    tr = generate(full, PamOps(), tok.encode(PROMPT), 3)
    assert tok.decode(tr.generated_ids).strip().startswith("Paris")
