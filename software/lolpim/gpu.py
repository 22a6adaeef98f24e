"""The GPU baselines of §8.1 (GPU-HBM: A100-80GB; GPU-GDDR: 64 GB of GDDR6 at the PIM node's
4,096 GB/s): one GPU per node, roofline time per layer (weights once per micro-batch, KV per
request), paged KV allocation, TP all-reduces and PP hand-offs over the 10 GB/s node links."""
from __future__ import annotations

import math

import numpy as np

from pimforge.software.lolpim.config import GPU_USABLE, NODE_LINK
from pimforge.software.lolpim.pim import BYTES, capacity_tokens, flops_per_token, stages
from pimforge.software.lolpim.pipeline import (
    OOM, StepResult, allreduce_s, cycle, micro_batch_choices, split, transfer_s
)
from pimforge.software.lolpim.workload import form_batches

__all__ = ["gpu_batch", "gpu_point", "gpu_tp_choices", "PAGE_TOKENS"]

PAGE_TOKENS = 16     # vLLM's PagedAttention block [13]: GPUs allocate KV on demand


def gpu_tp_choices(m, gpus: int) -> list:
    return [t for t in range(1, gpus + 1)
            if gpus % t == 0 and m.kv_heads % t == 0 and gpus // t <= m.layers]


def _layer_s(gpu, m, tp: int, b: int, tokens: float) -> float:
    """One layer for a micro-batch of ``b`` requests holding ``tokens`` context in all."""
    params = (m.attn_params + m.ffn_matrix_params) / tp
    kv = 2 * m.kv_heads * m.head_dim * BYTES / tp
    flops = 2.0 * b * params + 4.0 * m.heads / tp * m.head_dim * tokens
    return gpu.time(flops, params * BYTES + tokens * kv)


def gpu_batch(gpu, m, ctx: np.ndarray, gpus: int, tp: int, micro: int = 0,
              name: str = "GPU") -> StepResult:
    """The pipeline cycle of one batch on ``gpus`` GPUs at one TP (best micro-batch count)."""
    st = stages(m, gpus, tp)
    act = m.hidden * BYTES
    link = NODE_LINK.effective
    best = None
    for k in micro_batch_choices(len(ctx), st.pp, micro):
        mbs = split(ctx, k)
        b = np.array([len(c) for c in mbs], float)
        comp = np.array([_layer_s(gpu, m, tp, len(c), float(c.sum())) for c in mbs])
        ar = np.array([2 * allreduce_s(x * act, tp, link) for x in b])
        lm = np.array([gpu.time(2.0 * x * m.vocab * m.hidden / tp,
                                m.vocab * m.hidden * BYTES / tp) for x in b])
        hop = np.array([transfer_s(x * act, link) for x in b])
        cyc, busy = cycle(st, comp + ar, lm, hop, hop, st.pp - 1)
        if best is None or cyc < best[0]:
            n = st.most
            parts = {"FC + attention": n * comp.sum(), "TP all-reduce": n * ar.sum(),
                     "LM head": lm.sum() if st.pp == 1 else 0.0, "bubble": cyc - busy}
            best = (cyc, k, parts)
    cyc, k, parts = best
    return StepResult(name, len(ctx), tp, st.pp, k, cyc, flops_per_token(m, ctx),
                      gpus * gpu.peak_flops, parts, float(np.mean(ctx)))


def gpu_point(gpu, m, task: str, gpus: int, *, tp: int = 0, max_context: int = 32768,
              batches: int = 3, seed: int = 0, name: str = "GPU") -> StepResult:
    """Throughput of ``gpus`` GPUs on a task, the best TP/PP (paged KV: lazy allocation in
    16-token blocks)."""
    best = OOM(name, tp)
    for t in ([tp] if tp else gpu_tp_choices(m, gpus)):
        st = stages(m, gpus, t)
        cap = capacity_tokens(m, st, gpu.mem_bytes * GPU_USABLE)
        bs = form_batches(task, "lazy", cap, max_context=max_context, chunk=PAGE_TOKENS,
                          count=batches, seed=seed)
        if not bs:
            continue
        rs = [gpu_batch(gpu, m, b.ctx, gpus, t, 0, name) for b in bs]
        cyc = float(np.mean([r.cycle_s for r in rs]))
        res = StepResult(name, float(np.mean([r.batch for r in rs])), t, rs[0].pp,
                         rs[0].micro_batches, cyc, rs[0].flops_per_token, rs[0].peak_flops,
                         {k: float(np.mean([r.parts[k] for r in rs])) for k in rs[0].parts},
                         float(np.average([r.context for r in rs],
                                          weights=[r.batch for r in rs])))
        if math.isnan(best.tokens_per_s) or res.tokens_per_s > best.tokens_per_s:
            best = res
    return best
