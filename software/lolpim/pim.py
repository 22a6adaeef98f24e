"""One decode cycle on a multi-node AiM system (§4, §6): FC layers and attention as per-channel
GEMVs timed by the AiM channel's cycle model, HFA or ITPP partitioning of the KV cache, TP
all-reduces, PP hand-offs and bubbles; the batch from the capacity the weights leave (§5)."""
from __future__ import annotations

import math

import numpy as np

from pimforge.software.lolpim.aim_time import channel_gemv_seconds
from pimforge.software.lolpim.config import HUB_BW, NODE, NODE_LINK
from pimforge.software.lolpim.pipeline import (
    OOM, Stages, StepResult, allreduce_s, cycle, micro_batch_choices, split, transfer_s
)
from pimforge.software.lolpim.workload import form_batches

__all__ = ["tp_choices", "stages", "capacity_tokens", "fc_token_s", "attention_s",
           "pim_batch", "pim_point", "flops_per_token", "tp_allreduce_s", "stage_weight_bytes",
           "ROW_TOKENS", "BYTES"]

BYTES = 2           # bf16 weights, KV cache and activations (Table 5's PUs are bf16 MACs)
ROW_TOKENS = 256    # ITPP: one DRAM row per PU holds a 256-token slice of a request's K (§5.1)


def tp_choices(m, modules: int, partition: str = "itpp") -> list:
    """TP degrees over ``modules``: divisors of the module count leaving at most one layer per
    stage; ITPP keeps whole KV heads in a module, so its TP also divides the KV heads (HFA
    splits the (request, head) pairs, so its TP may exceed the heads: §4.1)."""
    return [t for t in range(1, modules + 1)
            if modules % t == 0 and modules // t <= m.layers
            and (partition == "hfa" or m.kv_heads % t == 0)]


def stages(m, modules: int, tp: int) -> Stages:
    return Stages(m.layers, tp, modules // tp)


def _layer_params(m) -> int:
    return m.attn_params + m.ffn_matrix_params


def flops_per_token(m, ctx: np.ndarray) -> float:
    """Useful FLOPs of one decoded token: the weight GEMVs (LM head too) and attention."""
    return 2.0 * (m.layers * _layer_params(m) + m.vocab * m.hidden) + \
        4.0 * m.layers * m.heads * m.head_dim * float(np.mean(ctx))


def stage_weight_bytes(m, st: Stages) -> list:
    """Weight bytes of each stage (its layers; the LM head on the last), split over its TP
    devices."""
    return [(n * _layer_params(m) + (m.vocab * m.hidden if s == st.pp - 1 else 0)) * BYTES
            for s, n in enumerate(st.layer_counts())]


def capacity_tokens(m, st: Stages, device_bytes: float) -> float:
    """KV tokens (of whole requests) the devices hold once each stage's weights are in: the
    tightest stage bounds it."""
    counts = st.layer_counts()
    best = math.inf
    for n, w in zip(counts, stage_weight_bytes(m, st)):
        free = device_bytes - w / st.tp
        per_token = n * 2 * m.kv_heads * m.head_dim * BYTES / st.tp
        best = min(best, free / per_token)
    return max(0.0, best)


def _g(rows: float, cols: int, pingpong: bool) -> float:
    return channel_gemv_seconds(int(math.ceil(rows)), int(cols), pingpong)


def fc_token_s(m, tp: int, pingpong: bool) -> tuple:
    """Seconds one module spends on one token's FC layers of one layer (QKV, Proj, FFN1, FFN2;
    d_out split by TP for QKV and FFN1, d_in for Proj and FFN2 [59]) and on its LM head, the
    output rows spread over the module's channels."""
    ch = NODE.channels_per_module
    qkv = (m.heads + 2 * m.kv_heads) * m.head_dim
    ffn1 = (2 if m.gated_ffn else 1) * m.ffn
    layer = (_g(qkv / tp / ch, m.hidden, pingpong)
             + _g(m.hidden / ch, math.ceil(m.heads * m.head_dim / tp), pingpong)
             + _g(ffn1 / tp / ch, m.hidden, pingpong)
             + _g(m.hidden / ch, math.ceil(m.ffn / tp), pingpong))
    return layer, _g(m.vocab / tp / ch, m.hidden, pingpong)


def _kernel(rows: np.ndarray, cols: np.ndarray, pingpong: bool) -> np.ndarray:
    """Channel GEMV seconds for arrays of shapes (few distinct values: cached)."""
    out = np.empty(len(rows))
    for (r, c), idx in _groups(rows, cols):
        out[idx] = channel_gemv_seconds(int(r), int(c), pingpong)
    return out


def _groups(rows, cols):
    key = np.stack([rows, cols], 1)
    uniq, inv = np.unique(key, axis=0, return_inverse=True)
    inv = inv.reshape(-1)
    return [((u[0], u[1]), inv == i) for i, u in enumerate(uniq)]


def attention_s(m, tp: int, partition: str, pingpong: bool, ctx: np.ndarray) -> float:
    """Seconds one module spends on one layer's attention (QK^T and SV) for the requests
    ``ctx`` of a micro-batch.

    ITPP (§4.3) partitions output dimensions first: QK^T's output is the token dimension, so
    each query head's K is split by tokens over all channels (the query broadcast to them);
    SV's output is the head dimension, so the module's heads x d_h rows of V^T are spread over
    the channels (each channel's rows from one head, whose scores its global buffer holds).
    HFA (§4.1): each (request, KV head) lives in one channel of the stage's ``tp`` modules,
    assigned round-robin; the busiest channel sets the time (idle channels when the pairs are
    fewer than the channels).
    """
    ch = NODE.channels_per_module
    d = m.head_dim
    lr = -(-ctx // ROW_TOKENS) * ROW_TOKENS
    n = len(lr)
    if partition == "itpp":
        heads = m.heads // tp
        qk = heads * _kernel(lr // ch, np.full(n, d), pingpong)
        rows = heads * d / ch
        if rows <= d:
            sv = _kernel(np.full(n, int(math.ceil(rows))), lr, pingpong)
        else:
            sv = -(-heads // ch) * _kernel(np.full(n, d), lr, pingpong)
        return float((qk + sv).sum())
    unit_l = np.repeat(lr, m.kv_heads)
    load = m.d_group * (_kernel(unit_l, np.full(len(unit_l), d), pingpong)
                        + _kernel(np.full(len(unit_l), d), unit_l, pingpong))
    per_channel = np.bincount(np.arange(len(load)) % (ch * tp), weights=load)
    return float(per_channel.max())


def tp_allreduce_s(nbytes: float, tp: int) -> float:
    """An all-reduce over ``tp`` modules: a ring over the HUB inside a node; across nodes,
    hierarchical (inside each node over the HUB, then a ring over the node links)."""
    per = NODE.modules
    if tp <= per:
        return allreduce_s(nbytes, tp, HUB_BW)
    return allreduce_s(nbytes, per, HUB_BW) + allreduce_s(nbytes, -(-tp // per),
                                                          NODE_LINK.effective)


def _node_boundaries(st: Stages) -> int:
    per = NODE.modules
    return sum(1 for b in range(1, st.pp) if (b * st.tp - 1) // per != (b * st.tp) // per)


def pim_batch(m, ctx: np.ndarray, nodes: int, tp: int, partition: str, pingpong: bool,
              micro: int = 0, name: str = "PIM") -> StepResult:
    """The pipeline cycle of one batch (current contexts ``ctx``) at one TP, the best
    micro-batch count unless ``micro`` fixes it."""
    st = stages(m, nodes * NODE.modules, tp)
    fc, lm = fc_token_s(m, tp, pingpong)
    act = m.hidden * BYTES
    best = None
    for k in micro_batch_choices(len(ctx), st.pp, micro):
        mbs = split(ctx, k)
        b = np.array([len(c) for c in mbs], float)
        att = np.array([attention_s(m, tp, partition, pingpong, c) for c in mbs])
        ar = np.array([2 * tp_allreduce_s(x * act, tp) for x in b])
        layer = b * fc + att + ar
        hub = np.array([transfer_s(x * act, HUB_BW) for x in b])
        node = np.array([transfer_s(x * act, NODE_LINK.effective) for x in b])
        cyc, busy = cycle(st, layer, b * lm, hub, node, _node_boundaries(st))
        if best is None or cyc < best[0]:
            n = st.most
            parts = {"FC": n * fc * b.sum(), "attention": n * att.sum(),
                     "TP all-reduce": n * ar.sum(), "LM head": lm * b.sum() if st.pp == 1 else 0,
                     "bubble": cyc - busy}
            best = (cyc, k, parts)
    cyc, k, parts = best
    return StepResult(name, len(ctx), tp, st.pp, k, cyc, flops_per_token(m, ctx),
                      nodes * NODE.peak_flops, parts, float(np.mean(ctx)))


def _mean(results: list, name: str) -> StepResult:
    r0 = results[0]
    cyc = float(np.mean([r.cycle_s for r in results]))
    b = float(np.mean([r.batch for r in results]))
    fl = float(np.average([r.flops_per_token for r in results], weights=[r.batch for r in
                                                                          results]))
    parts = {k: float(np.mean([r.parts[k] for r in results])) for k in r0.parts}
    context = float(np.average([r.context for r in results],
                               weights=[r.batch for r in results]))
    return StepResult(name, b, r0.tp, r0.pp, r0.micro_batches, cyc, fl, r0.peak_flops, parts,
                      context)


def pim_point(m, task: str, nodes: int, *, partition: str, alloc: str, pingpong: bool,
              tp: int = 0, micro: int = 0, max_context: int = 32768, chunk: int = 256,
              batches: int = 3, seed: int = 0, name: str = "PIM",
              tp_only: bool = False) -> StepResult:
    """Throughput of a PIM system on a task: batches sized by the capacity each TP/PP choice
    leaves, the best TP unless ``tp`` fixes it or ``tp_only`` asks for TP over every module
    (PP = 1, the prior works' mapping, §3.2); averaged over ``batches`` sampled batches."""
    modules = nodes * NODE.modules
    best = OOM(name, tp)
    grid = [tp] if tp else ([modules] if tp_only else tp_choices(m, modules, partition))
    for t in grid:
        st = stages(m, modules, t)
        cap = capacity_tokens(m, st, NODE.module_bytes)
        bs = form_batches(task, alloc, cap, max_context=max_context, chunk=chunk,
                          count=batches, seed=seed)
        if not bs:
            continue
        res = _mean([pim_batch(m, b.ctx, nodes, t, partition, pingpong, micro, name)
                     for b in bs], name)
        if math.isnan(best.tokens_per_s) or res.tokens_per_s > best.tokens_per_s:
            best = res
    return best
