"""SmolLM2 on PAPI: FC where the scheduler's golden model places it (FC-PIM's papi_pu fc_pim in
the system model's 2D blocks, or the GPUs = the host), attention on papi_pu attn_pim.

The FC and attention numbers are held to the golden ``pu_gemv`` run block by block (the RTL
benches check it), the mapping's cycles to the PAPI system model's own times, the placement to
the scheduler's rule, the batch to its identical columns, and the decoding to the reference
under teacher forcing."""
import numpy as np
import pytest

from pimforge.base.errors import UserError
from pimforge.hw.papi.config import pu_preset
from pimforge.hw.papi.perf import PU_CLOCK_MHZ
from pimforge.sim.golden.papi.pu import pu_gemv
from pimforge.software.llm.compare import MARGIN_THRESHOLD
from pimforge.software.llm.forward import generate
from pimforge.software.llm.ops import Ops, Step, softmax_attention
from pimforge.software.llm.systems.papi import ATTN_UNIT, FC_UNIT, SCHED_UNIT, PapiOps
from pimforge.software.papi.config import ATTN_STACKS, FC_STACKS
from pimforge.software.papi.hardware import pim_attention, pim_fc
from llm_checks import full_model_errors, teacher_forced_errors

PROMPT = "The capital of France is"


@pytest.fixture(scope="module")
def run1(model, ids, ref):
    ops = PapiOps()
    return ops, generate(model, ops, ids, 4, teacher=ref.generated_ids)


def _b16(x):
    return np.asarray(x, np.float32).astype(np.float16).view(np.uint16).astype(np.int64)


def _f(bits):
    return np.asarray(bits).astype(np.uint16).view(np.float16).astype(np.float32)


def _seq_sum(parts):
    out = parts[0]
    for p in parts[1:]:
        out = out + p
    return out


@pytest.mark.parametrize("name,cg", [("attn_k", 64), ("ffn_up", 72)])
def test_linear_is_the_unit_block_by_block(model, name, cg):
    """A decode step's FC on FC-PIM: the matrix's columns in blocks of ``cg`` (the system
    model's 2D blocks: QKV's 960 rows over the 23,040 groups split the 576 columns 9 ways, the
    fused gate/up's 3,072 rows 8 ways, 72 columns a block, padded to 80), each block the golden
    PU's fp16 result, the blocks added in float32 in order."""
    ops = PapiOps()
    ops.prepare(model)
    w = model.layers[1][name]
    x = np.random.default_rng(3).standard_normal(w.shape[1]).astype(np.float32)
    got = ops.linear(Step(10, True), 1, name, w, x)
    w16, x16 = _b16(w), _b16(x)[None, :]
    cfg = pu_preset("fc_pim")
    parts = []
    for j in range(0, w.shape[1], cg):
        wb = np.zeros((w.shape[0], 80 if cg == 72 else cg), np.int64)
        xb = np.zeros((1, wb.shape[1]), np.int64)
        wb[:, :cg], xb[:, :cg] = w16[:, j:j + cg], x16[:, j:j + cg]
        parts.append(_f(pu_gemv(cfg, wb, xb))[:, 0])
    assert np.array_equal(got, _seq_sum(parts))


@pytest.mark.parametrize("n,per_group", [(20, 1), (515, 2)])
def test_attention_is_the_unit(model, n, per_group):
    """Q K^T per KV head on attn_pim (the group's 3 query heads the reuse), the softmax of the
    fp16 scores in float64, S V over the tokens a processing group holds (the 512 groups of a
    1P2B stack: one token each up to 512, two beyond), the groups' fp16 sums added in float32."""
    rng = np.random.default_rng(n)
    ops = PapiOps()
    ops.prepare(model)
    q = rng.standard_normal((9, 64)).astype(np.float32)
    k = rng.standard_normal((3, n, 64)).astype(np.float32)
    v = rng.standard_normal((3, n, 64)).astype(np.float32)
    got = ops.attention(Step(n - 1, True), 0, q, k, v, 0.125)
    cfg = pu_preset("attn_pim")
    for g in range(3):
        s = _f(pu_gemv(cfg, _b16(k[g]), _b16(q[3 * g:3 * g + 3]))).astype(np.float64) * 0.125
        p = np.exp(s - s.max(axis=0))
        # float64 probabilities rounded once to fp16 (not through float32)
        p16 = (p / p.sum(axis=0)).T.astype(np.float16).view(np.uint16).astype(np.int64)
        parts = []
        for j in range(0, n, per_group):
            vb = np.zeros((64, 16), np.int64)
            pb = np.zeros((3, 16), np.int64)
            t = min(per_group, n - j)
            vb[:, :t], pb[:, :t] = _b16(v[g, j:j + t].T), p16[:, j:j + t]
            parts.append(_f(pu_gemv(cfg, vb, pb)))                     # (64, 3)
        assert np.array_equal(got[3 * g:3 * g + 3], _seq_sum(parts).T), g
    ref = softmax_attention(q, k, v, 0.125)
    assert np.abs(got - ref).max() < 0.02          # fp16 scores and probabilities


def test_teacher_forced_agreement(ref, run1):
    """Top-1 equals the reference's wherever the reference's margin is at least the threshold;
    the logit error stays far under it."""
    _, tr = run1
    errs = teacher_forced_errors(ref, tr)
    assert max(errs) < MARGIN_THRESHOLD / 4, errs
    assert all(s.cycles[FC_UNIT] > 0 and s.cycles[ATTN_UNIT] > 0 for s in tr.steps[1:])


def test_cycles_are_the_system_models(model, ids, ref, run1):
    """The PU counts are the system model's own: per iteration, the fc_pim block cycles of the
    four fused kernels (QKV, projection, gate/up, down) x layers are ``pim_fc``'s uncapped time,
    the attn_pim ones ``pim_attention``'s with (request, KV head) pairs and the GQA group as
    reuse; at batch 5 the FPUs take the vectors in two groups, so FC takes longer."""
    ops, tr = run1
    ops5 = PapiOps(batch=5)
    tr5 = generate(model, ops5, ids, 2, teacher=ref.generated_ids)
    clock = PU_CLOCK_MHZ * 1e6
    shapes = [(960, 576), (576, 576), (3072, 576), (576, 1536)]
    for o, t, b in ((ops, tr, 1), (ops5, tr5, 5)):
        for st in t.steps[1:]:
            fc = sum(pim_fc(o.hw.fc_kind, FC_STACKS, r, c, b, cap=False).s for r, c in shapes)
            assert st.cycles[FC_UNIT] / clock == pytest.approx(2 * fc, rel=1e-12)

            class Gqa:
                heads, head_dim = 3, 64
            att = pim_attention(o.hw.attn_kind, ATTN_STACKS, Gqa, np.full(b, st.context), 3,
                                cap=False).s
            assert st.cycles[ATTN_UNIT] / clock == pytest.approx(2 * att, rel=1e-12)
    assert tr5.steps[1].cycles[FC_UNIT] > tr.steps[1].cycles[FC_UNIT]


def test_batch_hands_identical_columns(model, ids, ref, run1):
    """B copies of the sequence: the same numbers as one (a vector's result does not depend on
    the others), the scheduler fed B tokens, B tokens per iteration in the time."""
    _, tr = run1
    ops = PapiOps(batch=17)
    tr17 = generate(model, ops, ids, 3, teacher=ref.generated_ids)
    for n in range(3):
        assert np.array_equal(tr17.logits[n], tr.logits[n])
    t = ops.timing(tr17.steps)
    assert t["batch"] == 17 and t["tokens_per_s"] == pytest.approx(17 / t["s_per_token"])
    # 17 tokens are two beats of the paper preset's 16
    assert tr17.steps[2].cycles[SCHED_UNIT] == tr.steps[2].cycles[SCHED_UNIT] + 1


@pytest.mark.parametrize("batch,alpha,where", [(3, 2, "gpu"), (3, 3, "pim"), (1, 0, "gpu")])
def test_placement_from_the_scheduler(model, ids, ref, batch, alpha, where):
    """FC goes to the GPUs when RLP x TLP > alpha (there: the host's float32, no FC-PIM
    cycles), else to FC-PIM; attention stays on Attn-PIM."""
    ops = PapiOps(batch=batch, alpha=alpha)
    tr = generate(model, ops, ids, 3, teacher=ref.generated_ids)
    t = ops.timing(tr.steps)
    assert t["placements"] == [where, where]
    for st in tr.steps[1:]:
        assert (FC_UNIT in st.cycles) == (where == "pim") and st.cycles[ATTN_UNIT] > 0
    if where == "gpu":
        host = Ops()
        w, x = model.layers[0]["ffn_down"], np.ones(1536, np.float32)
        assert np.array_equal(ops.linear(tr.steps[1], 0, "ffn_down", w, x),
                              host.linear(tr.steps[1], 0, "ffn_down", w, x))


def test_timing_and_baselines(run1):
    """The default alpha is the system model's calibration; at batch 1 FC stays on FC-PIM,
    so PAPI is PIM-only PAPI plus the scheduler's decisions; the GPU-FC systems are timed."""
    ops, tr = run1
    t = ops.timing(tr.steps)
    assert t["alpha"] >= 1 and t["placements"] == ["pim"] * 3
    assert set(t["baselines"]) == {"A100+AttAcc", "A100+HBM-PIM", "AttAcc-only",
                                   "PIM-only PAPI"}
    sched = t["breakdown_s"]["scheduler"]
    assert sched > 0
    assert t["s_per_token"] - sched == pytest.approx(t["baseline_s_per_token"]["PIM-only PAPI"])
    assert t["s_per_token"] == pytest.approx(sum(t["breakdown_s"].values()))
    assert t["tokens_per_s"] == pytest.approx(1 / t["s_per_token"])


def test_bad_options():
    with pytest.raises(UserError, match="supported on pam, hilos"):
        PapiOps(backend="rtl")
    with pytest.raises(UserError, match="--batch"):
        PapiOps(batch=0)
    with pytest.raises(UserError, match="--batch"):
        PapiOps(batch=129)


@pytest.mark.slow
def test_full_model_agreement(full, ids):
    """The 30-layer model, 8 tokens (make test-long)."""
    assert max(full_model_errors(full, ids, PapiOps())) < MARGIN_THRESHOLD / 2
