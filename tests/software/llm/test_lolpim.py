"""SmolLM2 on LoL-PIM: the GEMVs and attention on the AiM ping-pong PU, every command from the
DPA dispatcher run on the request's T_cur.

The PU programs are held to the golden model (channel by channel, ``verify``); the results to
float references; the dispatcher's command stream to the paper's loop (one DOT-PROD per 256-token
KV chunk, rows through the lazily filled Va2Pa table); the cycles to the AiM channel's GEMV cycle
model; the decoding to the reference under teacher forcing."""
import numpy as np
import pytest

from pimforge.base.errors import UserError
from pimforge.hw.lolpim.dpa import OPS
from pimforge.hw.lolpim.perf import kernel_cycles
from pimforge.software.llm.compare import MARGIN_THRESHOLD
from pimforge.software.llm.forward import generate
from pimforge.software.llm.ops import LINEARS, Ops, Step, softmax_attention
from pimforge.software.llm.systems.lolpim import CHUNK_TOKENS, KV_BASE, LolpimOps
from conftest import LONG
from llm_checks import full_model_errors, teacher_forced_errors

PROMPT = "The capital of France is"


@pytest.fixture(scope="module")
def runs(model, ids, ref):
    ops = LolpimOps()
    return ref, generate(model, ops, ids, 4, teacher=ref.generated_ids), ops


@pytest.fixture(scope="module")
def ready(model):
    ops = LolpimOps()
    ops.prepare(model)
    return ops


def _kv(rng, n):
    return (rng.standard_normal((3, n, 64)).astype(np.float32),
            rng.standard_normal((3, n, 64)).astype(np.float32))


def test_teacher_forced_agreement(runs):
    ref, tr, _ = runs
    errs = teacher_forced_errors(ref, tr)
    # bf16 weights, inputs and outputs (8 significant bits, AiM's 2-byte output registers) on
    # two layers: a few tenths of a logit at most
    assert 0 < max(errs) < 0.5


def test_linears_against_float(model, ready):
    """Every GEMV of a layer, one GB chunk (576 columns) or two (FFN down, 1,536), within bf16's
    resolution of float64 (inputs, weights and each chunk's output rounded to 8 bits)."""
    rng = np.random.default_rng(1)
    for name in LINEARS:
        w = model.layers[1][name]
        x = rng.standard_normal(w.shape[1]).astype(np.float32)
        y = ready.linear(Step(9, False), 1, name, w, x)
        r = w.astype(np.float64) @ x
        assert y.shape == r.shape and y.dtype == np.float32
        assert np.abs(y - r).max() < 2 ** -6 * np.abs(r).max(), name


@pytest.mark.parametrize("n", [5, 300])
def test_attention_against_float(ready, n):
    """One KV chunk, and two (T_cur = 300: a Dyn-Loop of LB = 2, SV accumulating over both)."""
    rng = np.random.default_rng(n)
    q = rng.standard_normal((9, 64)).astype(np.float32)
    k, v = _kv(rng, n)
    ready.prepare(ready.model)                  # a new request: the KV cache starts empty
    o = ready.attention(Step(n - 1, False), 0, q, k, v, 0.125)
    r = softmax_attention(q, k, v, 0.125)
    assert o.shape == r.shape and np.abs(o - r).max() < 2 ** -5 * np.abs(r).max()


def test_units_equal_golden(model):
    """The PU programs of GEMVs and of attention at T_cur = 300, run on the golden model of
    three channels (one with idle PUs in SV): equal bits."""
    ops = LolpimOps(verify=(0, 7, 13))
    ops.prepare(model)
    rng = np.random.default_rng(2)
    step = Step(299, True)
    for name in ("attn_k", "ffn_down"):
        w = model.layers[0][name]
        ops.linear(step, 0, name, w, rng.standard_normal(w.shape[1]).astype(np.float32))
    k, v = _kv(rng, 300)
    ops.attention(step, 0, rng.standard_normal((9, 64)).astype(np.float32), k, v, 0.125)


def test_commands_follow_t_cur(model):
    """The attention run: per query head one WR-INP and per KV chunk a DOT-PROD and a RD-OUT;
    per SV pass per chunk a WR-INP and a DOT-PROD, one RD-OUT; the DOT-PRODs' rows are the
    Va2Pa table's, filled one chunk at a time from a free list that is not contiguous."""
    ops = LolpimOps()
    ops.prepare(model)
    rng = np.random.default_rng(3)
    seen = []
    for n in (CHUNK_TOKENS, CHUNK_TOKENS + 1, 3 * CHUNK_TOKENS):
        k, v = _kv(rng, n)
        ops.kv.write(0, k, v)
        cmds = ops.run_dispatcher(Step(n - 1, False), 0, ops.attn[0])
        lb = -(-n // CHUNK_TOKENS)
        count = {op: sum(c["op"] == OPS[op] for c in cmds) for op in ("wr_inp", "dot_prod",
                                                                      "rd_out")}
        assert count == {"wr_inp": 9 + 3 * lb, "dot_prod": 12 * lb, "rd_out": 9 * lb + 3}
        rows = [ops.kv.va2pa[vr][1] for vr in range(lb)]
        assert len(ops.kv.va2pa) == lb and all(r >= KV_BASE for r in rows)
        dots = [c["row"] for c in cmds if c["op"] == OPS["dot_prod"]]
        assert dots[:lb] == rows and set(dots) == set(rows)
        assert all(c["layer"] == 0 for c in cmds)
        seen.append(rows)
    assert seen[0] == seen[1][:1] and abs(seen[2][1] - seen[2][0]) > 1


def test_gemv_cycles_are_the_channel_model(model):
    """A decode step's GEMV: one channel's share (576 / 16 rows) through the PU's cycle model,
    the same as the AiM channel GEMV model of the system model (kernel_cycles), with and
    without ping-pong; the dispatcher counts one cycle per command word plus a layer end."""
    ops = LolpimOps()
    ops.prepare(model)
    rng = np.random.default_rng(4)
    for name, cols in (("attn_q", 576), ("ffn_down", 1536)):
        st = Step(7, True)
        w = model.layers[0][name]
        ops.linear(st, 0, name, w, rng.standard_normal(cols).astype(np.float32))
        assert st.cycles["lolpim_pingpong"] == kernel_cycles(36, cols, pingpong=True)
        assert st.cycles["aimx_serial"] == kernel_cycles(36, cols, pingpong=False)
        assert st.cycles["lolpim_dispatcher"] == len(ops.programs[name][0]) + 1


def test_timing(runs):
    _, tr, ops = runs
    tm = ops.timing(tr.steps)
    cyc = tm["cycles_per_token"]
    assert 0 < cyc["lolpim_pingpong"] < cyc["aimx_serial"]
    assert tm["seconds_per_token"] == pytest.approx(sum(tm["breakdown_s"].values()))
    assert tm["tokens_per_s"] == pytest.approx(1 / tm["seconds_per_token"])
    assert tm["aimx_serial_units"]["tokens_per_s"] < tm["tokens_per_s"]
    sm = tm["system_model_tokens_per_s"]
    assert set(sm) == {"LoL-PIM(123)", "LoL-PIM(1)", "PIM (AiMX)", "GPU-HBM", "GPU-GDDR"}
    assert sm["LoL-PIM(123)"] > sm["LoL-PIM(1)"] > sm["PIM (AiMX)"] > 0
    base = tm["baselines"]
    assert base["AiMX, no ping-pong (units)"] == tm["aimx_serial_units"]["tokens_per_s"]
    assert all(base[k] == sm[k] for k in ("PIM (AiMX)", "GPU-HBM", "GPU-GDDR"))
    assert set(ops.describe()) and ops.timing([]) == {}


def test_rtl_backend_refused():
    with pytest.raises(UserError, match="pam, hilos"):
        LolpimOps(backend="rtl")


@pytest.mark.slow
@pytest.mark.skipif(not LONG, reason="the full 30-layer model: PIMFORGE_LONG=1")
def test_full_model_teacher_forced(full, ids):
    assert max(full_model_errors(full, ids, LolpimOps())) < MARGIN_THRESHOLD / 2
