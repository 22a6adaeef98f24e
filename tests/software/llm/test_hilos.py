"""SmolLM2 on HILOS: decode attention through the near-storage kernel at d_group 3 with the
newest tokens' scores precomputed on the host (delayed writeback), everything else on the host.

The kernel's numbers are held to the golden model run head by head (``hilos_group``, which the
RTL benches check), the delayed-writeback split to the spill interval's arithmetic written out
here, the decoding to the reference under teacher forcing, the timing to the kernel's lower
bound, and one layer-step to the Verilog."""
import time
from types import SimpleNamespace

import numpy as np
import pytest

from pimforge.base.errors import ToolError
from pimforge.base.formats import FP16, FP32
from pimforge.base.numerics import float_bits
from pimforge.hw.hilos.attention_timing import kernel_schedule
from pimforge.hw.hilos.config import HilosAttentionConfig
from pimforge.sim.golden.hilos.attention import hilos_group
from pimforge.software.hilos.config import HilosModelConfig
from pimforge.software.llm.compare import MARGIN_THRESHOLD
from pimforge.software.llm.forward import generate
from pimforge.software.llm.ops import Step
from pimforge.software.llm.systems import hilos as hilos_sys
from pimforge.software.llm.systems.hilos import UNIT, HilosOps
from conftest import require_sim
from llm_checks import full_model_errors, teacher_forced_errors

PROMPT = "The capital of France is"


def _bits16(x):
    return np.asarray(x, np.float32).astype(np.float16).view(np.uint16).astype(np.int64)


@pytest.mark.parametrize("fmt", ["fp32", "fp16"])
def test_attention_is_the_kernel_per_kv_head(model, fmt):
    """One decode step's attention on random LLM-shaped inputs (9 query heads over 3 KV heads,
    d 64, a 130-token context with 3 buffered tokens) equals ``hilos_group`` run per KV head
    on the fp16 values, the stored tokens' K and the host's float64 scores of the buffered
    ones, rounded once to the score format."""
    rng = np.random.default_rng(1)
    ops = HilosOps(score_fmt=fmt)
    ops.prepare(model)
    p = 127
    q = rng.standard_normal((9, 64)).astype(np.float32)
    k = rng.standard_normal((3, 130, 64)).astype(np.float32) * 2
    v = rng.standard_normal((3, 130, 64)).astype(np.float32)
    ops.attention(Step(p, True), 0, q, k[:, :p + 1], v[:, :p + 1], 0.125)  # prefill ends at p
    out = ops.attention(Step(p + 2, True), 0, q, k, v, 0.125)             # 3rd decode step
    sf = {"fp32": FP32, "fp16": FP16}[fmt]
    q16, k16, v16 = _bits16(q), _bits16(k), _bits16(v)
    qf = q16.astype(np.uint16).view(np.float16).astype(np.float64)
    kf = k16.astype(np.uint16).view(np.float16).astype(np.float64)
    for h in range(3):
        pre = float_bits(sf, qf[3 * h:3 * h + 3] @ kf[h, p:].T * 0.125)
        g = hilos_group(q16[3 * h:3 * h + 3], k16[h, :p], v16[h], 128, None, 0.125, sf, pre=pre)
        want = g["O"].astype(np.uint16).view(np.float16).astype(np.float32)
        assert np.array_equal(out[3 * h:3 * h + 3], want), h


def test_delayed_writeback_split(model, ids):
    """Spill interval 2: the kernel reads K of the prompt's tokens at decode steps 1 and 2, of
    the prompt and the first two generated tokens at steps 3 and 4; the host scores the rest
    (the current token always among them)."""
    ops = HilosOps(spill_interval=2)
    tr = generate(model, ops, ids, 5)
    p = len(ids)
    assert [s.pos for s in tr.steps if s.decode] == [p, p + 1, p + 2, p + 3]
    assert [ops.split[p + j] for j in range(4)] == [(p, 1), (p, 2), (p + 2, 1), (p + 2, 2)]


def test_default_spill_interval_is_the_system_models():
    assert HilosOps().spill == HilosModelConfig().spill_interval == 16


def test_two_layers_agree_with_the_reference(model, ids, ref):
    """Teacher-forced with the reference's continuation: top-1 equal wherever the reference's
    top-2 margin is at least the threshold, and logit errors well under it (fp16 Q, K, V and O
    against the reference's float32 with a float64 softmax)."""
    errs = teacher_forced_errors(ref, generate(model, HilosOps(), ids, 4,
                                               teacher=ref.generated_ids))
    assert 0.0 < max(errs) < MARGIN_THRESHOLD / 4


def test_timing_counts_the_kernel(model, ids, ref):
    """Every decode step charges each layer's kernel at least its bound (the S.V unit takes one
    beat per V row: context x head_dim / beat_elems beats), and the per-token time is the
    busiest resource plus the serial host work, never below the kernel's share."""
    ops = HilosOps()
    tr = generate(model, ops, ids, 4, teacher=ref.generated_ids)
    dec = [s for s in tr.steps if s.decode]
    assert len(dec) == 3 and not tr.steps[0].cycles
    cfg = HilosAttentionConfig(d_group=3, head_dim=64)
    for s in dec:
        assert s.cycles[UNIT] >= 2 * s.context * 64 // cfg.beat_elems
    t = ops.timing(tr.steps)
    assert t["decode_steps"] == 3
    assert t["tokens_per_s"] == pytest.approx(1.0 / t["s_per_token"])
    b = t["breakdown_s"]
    kernel = np.mean([s.cycles[UNIT] for s in dec]) / 296e6
    assert b["kernel"] >= kernel * (1 - 1e-12)
    assert t["s_per_token"] >= max(b["weights"], b["kernel"], b["ssd"]) + b["host_buffer"]
    assert set(t["baselines"]) >= {"FLEX(DRAM)", "FLEX(SSD)", "FLEX(16 SSDs)"}
    assert all(x > 0 for x in t["baselines"].values())


def test_kernel_cycles_per_device(model, ids, ref):
    """The KV heads spread over the SmartSSDs: with 8 devices each of the 3 heads is one job on
    its own device, so a layer costs one job's cycles; with one device the 3 jobs run back to
    back.  (The cycle model is the unit's; what is checked is the jobs each layer hands it.)"""
    cfg = HilosAttentionConfig(d_group=3, head_dim=64)
    for devices, jobs in ((8, 1), (1, 3)):
        ops = HilosOps(smartssds=devices)
        tr = generate(model, ops, ids, 3, teacher=ref.generated_ids)
        for s in tr.steps[1:]:
            n_k, c = ops.split[s.pos]
            want = kernel_schedule(cfg, [(n_k, n_k + c)] * jobs)["cycles"]
            assert s.cycles[UNIT] == 2 * want, (devices, s.pos)


def test_rtl_mismatch_is_an_error(model, ids, monkeypatch):
    """The RTL check raises when the Verilog's O differs from the golden model's in one bit
    (a stand-in for the simulation returns the golden O with one bit flipped)."""
    real = hilos_sys.hatt.hilos_attention

    def fake(q, k, v, mask, pre, block, fmt, scale, backend):
        o = real(q, k, v, mask, pre, block, fmt, scale, backend="golden").o.copy()
        o.view(np.uint16)[4, 7] ^= 1
        return SimpleNamespace(o=o)

    monkeypatch.setattr(hilos_sys.hatt, "hilos_attention", fake)
    with pytest.raises(ToolError, match="differs from the golden model"):
        generate(model, HilosOps(backend="rtl", rtl_layers=[1], rtl_steps=1), ids, 2)


def test_rtl_layer_step(model, ids):
    """Layer 0 of the first decode step on the Verilog: the run asserts RTL == golden (O bit
    for bit), and the logits equal the golden run's."""
    require_sim("verilator")
    gold = generate(model, HilosOps(), ids, 2)
    ops = HilosOps(backend="rtl", rtl_layers=[0], rtl_steps=1)
    t0 = time.perf_counter()
    tr = generate(model, ops, ids, 2)
    wall = time.perf_counter() - t0
    assert ops.rtl_checked == [(len(ids), 0)]
    assert all(np.array_equal(a, b) for a, b in zip(tr.logits, gold.logits))
    print(f"one RTL layer-step: {wall:.1f} s")


@pytest.mark.slow
def test_full_model_agrees(full, ids):
    assert max(full_model_errors(full, ids, HilosOps())) < MARGIN_THRESHOLD / 4
