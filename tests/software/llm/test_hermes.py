"""Hermes on the real SmolLM2 weights (:mod:`pimforge.software.llm.systems.hermes`).

* The units' arithmetic: each NDP operation of :class:`HermesOps` (a QKV GEMV, the attention
  chain QK^T -> softmax -> S.V, the column-sparse down projection's DIMM chain) equals the
  bit-level golden models (:mod:`pimforge.sim.golden.hermes.gemv`, ``.act``) on the model's own
  weights and shapes.
* The 2-layer model, 4 tokens under teacher forcing with the reference's own continuation: the
  top-1 equals the reference's at every step whose reference top-2 margin is >= 1.0; the logit
  error stays within the fp16 bound below.
* ``sparse=True``: the effect of the predictor's sparsity is measured (top-1 agreement and
  logit error against the reference) and shown to be the sparsity's alone: the same run equals a
  float32 host model that zeroes the same inactive neurons, within the dense bound.
* Timing: the DIMMs' parts are no faster than the DIMMs' bandwidth allows, the per-token time is
  the sum of its parts, and the system model's baselines are there.
* The full 30-layer model under ``PIMFORGE_LONG``.
"""
import numpy as np
import pytest

from pimforge.base.errors import UserError
from pimforge.base.formats import FP16
from pimforge.hw.hermes.config import DDR4_3200
from pimforge.sim.golden.fp import fast as fpfast
from pimforge.sim.golden.hermes.act import act_softmax
from pimforge.sim.golden.hermes.gemv import gemv_cols, gemv_rows
from pimforge.software.llm.forward import generate
from pimforge.software.llm.gguf_model import load_model
from pimforge.software.llm.ops import Ops, Step
from pimforge.software.llm.systems.hermes import BASELINES, HermesOps
from pimforge.software.llm.tokenizer import build_tokenizer

PROMPT = "The capital of France is"
MARGIN = 1.0
# Dense logit error bound: weights and activations rounded to fp16 (2^-11 relative) in every GEMV
# of the two layers; the measured error is about a hundredth, the bound leaves room for other
# prompts without hiding a wrong summation order (which the bit-level tests catch anyway).
DENSE_ERR = 0.1


def _bits(a):
    return fpfast.to_bits(FP16, np.asarray(a, np.float16))


def _f(bits):
    return fpfast.to_float(FP16, bits).astype(np.float32)


def _margins(trace):
    return [float(np.diff(np.sort(lg)[-2:])[0]) for lg in trace.logits]


def _err(a, b):
    return max(float(np.abs(x - y).max()) for x, y in zip(a.logits, b.logits))


def _agree(a, b):
    return [x == y for x, y in zip(a.generated_ids, b.generated_ids)]


@pytest.fixture(scope="module")
def dense(model, ids, ref):
    ops = HermesOps()
    return ops, generate(model, ops, ids, 4, teacher=ref.generated_ids)


@pytest.fixture(scope="module")
def sparse(model, ids, ref):
    ops = HermesOps(sparse=True)
    return ops, generate(model, ops, ids, 4, teacher=ref.generated_ids)


# ------------------------------------------------------------------------ the units' arithmetic
def test_qkv_gemv_is_the_golden_engine(model):
    """attn_k of layer 1 on a decode step: the bit-level row-mode golden model, paper engine."""
    ops = HermesOps()
    ops.prepare(model)
    w = model.layers[1]["attn_k"]
    x = np.random.default_rng(3).standard_normal(w.shape[1]).astype(np.float32)
    y = ops.linear(Step(9, True), 1, "attn_k", w, x)
    want = gemv_rows(ops.gemv, _bits(w), _bits(x[None, :]))[:, 0]
    assert y.dtype == np.float32 and np.array_equal(y, _f(want))


def test_attention_is_the_golden_chain(model):
    """QK^T in row mode, the softmax on hermes_act, S.V in column mode, per KV head, against
    the bit-level golden models; the host folds the scale into q before rounding."""
    ops = HermesOps()
    ops.prepare(model)
    c = model.config
    rng = np.random.default_rng(4)
    n = 300                                   # more than one beat of the paper's 256 lanes
    q = rng.standard_normal((c.n_heads, c.head_dim)).astype(np.float32)
    k = rng.standard_normal((c.n_kv_heads, n, c.head_dim)).astype(np.float32)
    v = rng.standard_normal((c.n_kv_heads, n, c.head_dim)).astype(np.float32)
    scale = 1.0 / np.sqrt(c.head_dim)
    o = ops.attention(Step(n - 1, True), 0, q, k, v, scale)
    g = c.group
    a = ops.act
    for h in range(c.n_kv_heads):
        q16 = _bits(q[h * g:(h + 1) * g] * np.float32(scale))
        s = gemv_rows(ops.gemv, _bits(k[h]), q16)                        # (n, g)
        p = np.stack([act_softmax(s[:, j], a.lanes, a.acc, a.partials)["y"] for j in range(g)])
        want = gemv_cols(ops.gemv, _bits(v[h]), p.T, c.head_dim)         # (g, hd)
        assert np.array_equal(o[h * g:(h + 1) * g], _f(want)), h
    # and it is attention: close to the float64 reference
    assert np.abs(o - Ops().attention(Step(n - 1, True), 0, q, k, v, scale)).max() < 2e-2


def test_down_column_chain_is_the_golden_merge_chain(model):
    """Sparse down projection: DIMM j's columns in column mode, merged with the fp16 result of
    the DIMMs before it; the golden gemv_cols with its merge input, DIMM after DIMM."""
    ops = HermesOps(sparse=True)
    ops.prepare(model)
    w = model.layers[0]["ffn_down"]
    cols16 = w.T.astype(np.float16)
    rng = np.random.default_rng(5)
    h16 = (rng.standard_normal(w.shape[1]) * 0.3).astype(np.float16)
    idx = np.sort(rng.choice(w.shape[1], 300, replace=False))
    y, parts = ops.column_chain(cols16, h16, idx)
    want = None
    for j in range(ops.dimms):
        mine = idx[idx % ops.dimms == j]
        want = gemv_cols(ops.gemv, _bits(cols16[mine]), _bits(h16[mine][:, None]), w.shape[0],
                         want)
    assert len(parts) == ops.dimms
    assert np.array_equal(_bits(y), want)


# --------------------------------------------------------------------------- the 2-layer model
def test_dense_teacher_forced_agrees(ref, dense):
    ops, tr = dense
    margins = _margins(ref)
    assert tr.generated_ids[0] == ref.generated_ids[0]
    for t, (a, m) in enumerate(zip(_agree(tr, ref), margins)):
        if m >= MARGIN:
            assert a, (t, m)
    err = _err(tr, ref)
    print(f"hermes dense: max logit error {err:.4f}, margins {[round(m, 2) for m in margins]}")
    assert 0 < err < DENSE_ERR
    # the prefill ran on the host (the decoder's); every decode step ran on both units
    assert not tr.steps[0].decode and not tr.steps[0].cycles
    for st in tr.steps[1:]:
        assert st.cycles["hermes_gemv"] > 0 and st.cycles["hermes_act"] > 0


class _Masked(Ops):
    """The float32 host model with the FFN neurons a Hermes run did not compute set to zero."""

    def __init__(self, log):
        self.log = log

    def swiglu(self, step, layer, g, u):
        h = super().swiglu(step, layer, g, u)
        if step.decode:
            keep = np.zeros(h.size, bool)
            keep[self.log[(step.pos, layer)]] = True
            h = np.where(keep, h, np.float32(0))
        return h


def test_sparse_effect_is_measured(model, ids, ref, dense, sparse):
    """The predictor's sparsity: fewer neurons and cycles, a measured accuracy cost, and that
    cost is the sparsity's alone (the masked host model gives the same logits within the dense
    bound)."""
    dops, dtr = dense
    sops, str_ = sparse
    share = float(np.mean(sops.active_share))
    assert 0 < share < 1
    for d, s in zip(dtr.steps[1:], str_.steps[1:]):
        assert s.cycles["hermes_gemv"] < d.cycles["hermes_gemv"]
    masked = generate(model, _Masked(sops.active_log), ids, 4, teacher=ref.generated_ids)
    assert _err(str_, masked) < DENSE_ERR
    err, derr = _err(str_, ref), _err(dtr, ref)
    agree = _agree(str_, ref)
    stats = sops.stats.as_dict()
    print(f"hermes sparse (keep {sops.keep}): active share {share:.3f}, predictor recall "
          f"{stats['recall']:.3f} precision {stats['precision']:.3f}; top-1 agreement {agree}; "
          f"max logit error {err:.3f} (dense {derr:.4f})")
    assert err > derr
    # the split waits for the DIMM with the most active neurons: no faster than its weights
    peak = DDR4_3200.peak_bytes_per_ns * 1e9
    c = model.config
    floor = 0.0
    for st in str_.steps[1:]:
        for layer in range(c.n_layers):
            busy = np.bincount(sops.active_log[(st.pos, layer)] % sops.dimms).max()
            floor += busy * 3 * c.d_model * 2 / peak / (len(str_.steps) - 1)
    assert sops.timing(str_.steps)["parts_s"]["MLP (DIMMs)"] >= floor
    assert stats["tp"] + stats["fn"] > 0
    assert sops.timing(str_.steps)["predictor"]["active_share"] == pytest.approx(share)


# ----------------------------------------------------------------------------------- timing
def test_timing_parts_and_bandwidth_floor(model, dense):
    ops, tr = dense
    t = ops.timing(tr.steps)
    assert t["s_per_token"] == pytest.approx(sum(t["parts_s"].values()))
    assert t["tokens_per_s"] == pytest.approx(1 / t["s_per_token"])
    c = model.config
    # the busiest DIMM streams at least its share of the weights at the DIMM's peak
    peak = DDR4_3200.peak_bytes_per_ns * 1e9
    mlp = 3 * c.d_model * c.d_ffn * 2 / ops.dimms / peak
    qkv = c.d_model * (c.d_model + 2 * c.n_kv_heads * c.head_dim) * 2 / ops.dimms / peak
    assert t["parts_s"]["MLP (DIMMs)"] >= c.n_layers * mlp
    assert t["parts_s"]["QKV (DIMMs)"] >= c.n_layers * qkv
    # dense: the DIMMs' parts are the units' critical-path cycles at the NDP clock
    dimm = sum(v for k, v in t["parts_s"].items() if "(DIMMs)" in k)
    assert dimm == pytest.approx(sum(t["cycles_per_token"].values()) / (t["clock_mhz"] * 1e6))
    assert set(t["baselines"]) == set(BASELINES)
    for b in t["baselines"].values():
        assert b["tokens_per_s"] > 0
    assert ops.timing(tr.steps[:1]) == {}          # the prefill step alone has no decode time


def test_rtl_backend_is_refused():
    with pytest.raises(UserError, match="supported on pam, hilos"):
        HermesOps(backend="rtl")


# --------------------------------------------------------------------------- the full model
@pytest.mark.slow
def test_full_model_says_paris():
    m = load_model()
    tok = build_tokenizer(m.metadata)
    ids = tok.encode(PROMPT)
    ref = generate(m, Ops(), ids, 8)
    tr = generate(m, HermesOps(), ids, 8, teacher=ref.generated_ids)
    for t, (a, mg) in enumerate(zip(_agree(tr, ref), _margins(ref))):
        if mg >= MARGIN:
            assert a, (t, mg)
    assert tok.decode(tr.generated_ids[:2]) == " Paris."
    free = generate(m, HermesOps(), ids, 2)
    assert tok.decode(free.generated_ids) == " Paris."
