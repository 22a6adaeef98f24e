"""Per-token time of Hermes and its baselines (§IV-A Fig. 6, §V-A).

Hermes, per layer (Fig. 6): the QKV split between the GPU (hot neurons) and the DIMMs (cold),
merged on the DIMMs; attention on the DIMMs; the projection on the GPU, during which the hot/cold
swaps (PCIe) and the window remapping (DIMM-links) run, only their excess over the projection
adding; the MLP split the same way; the reduction on the DIMMs.  A split block takes the longer
of the GPU and the busiest DIMM plus two synchronisations (eq. 3).  DIMM time is the
``hermes_gemv`` / ``hermes_act`` cycle models (:mod:`pimforge.hw.hermes.perf`) at the NDP clock.

The loads (which neurons fire where) come from :mod:`~pimforge.software.hermes.schedule` as
fractions of a layer, scaled to the model's layer; the first ``trace layers - 1`` layers of the
trace stand for every layer.  Tokens/s is ``batch x output / (prefill + output x step)``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from pimforge.hw.hermes.config import GEMV_PRESETS, NDP_CLOCK_MHZ, act_preset
from pimforge.hw.hermes.config import HermesGemvConfig
from pimforge.hw.hermes.perf import act_estimate, gemv_estimate
from pimforge.software import workloads as wl
from pimforge.software.hermes.config import (
    CPU, DEJAVU_PREDICTOR, DIMM_BYTES, DIMM_LINK, GPU, GPU_RESERVE, HOST_LINK, KERNEL_S,
    SPARSITY, SYNC_S
)
from pimforge.software.hermes.schedule import block_loads
from pimforge.software.hermes.traces import TraceSpec

__all__ = ["Run", "Shape", "shape", "dimm_time", "hermes_step", "baseline_step", "run_system",
           "gpu_fraction", "trace_spec"]

BYTES = wl.BYTES_FP16


@dataclass(frozen=True)
class Shape:
    """One model's layer shapes for the split: QKV rows (``qkv`` of ``h`` each), MLP neurons
    (``ffn`` of ``mlp_mats x h`` each), the projection (h x h) and the LM head."""

    m: wl.ModelSpec
    h: int
    qkv: int
    ffn: int
    mlp_mats: int
    layers: int

    @property
    def qkv_bytes(self) -> float:
        return self.layers * self.qkv * self.h * BYTES

    @property
    def ffn_bytes(self) -> float:
        return self.layers * self.ffn * self.mlp_mats * self.h * BYTES

    @property
    def proj_bytes(self) -> float:
        return self.layers * self.h * self.h * BYTES

    @property
    def head_bytes(self) -> float:
        return self.m.vocab * self.h * BYTES


def shape(m: wl.ModelSpec) -> Shape:
    return Shape(m, m.hidden, m.hidden + 2 * m.kv_heads * m.head_dim, m.ffn,
                 3 if m.gated_ffn else 2, m.layers)


@dataclass
class Run:
    """One system on one workload: ``parts`` seconds per decode token by component, the
    prefill, and whether it fits (``fits`` False: N.P. / OOM)."""

    system: str
    batch: int
    parts: dict
    prefill: float
    fits: bool = True
    info: dict = field(default_factory=dict)

    @property
    def step(self) -> float:
        return sum(self.parts.values()) if self.fits else math.nan

    def tokens_per_s(self, output_len: int, with_prefill: bool = True) -> float:
        if not self.fits:
            return math.nan
        total = output_len * self.step + (self.prefill if with_prefill else 0.0)
        return self.batch * output_len / total


@lru_cache(maxsize=200000)
def dimm_time(gemv: str, mode: str, d_in: int, d_out: int, batch: int, n: int) -> float:
    """Seconds of one GEMV job on one NDP core (the ``hermes_gemv`` estimate)."""
    if n <= 0:
        return 0.0
    cfg = HermesGemvConfig(**GEMV_PRESETS[gemv])
    return gemv_estimate(cfg, mode, d_in, d_out, batch, n) / (NDP_CLOCK_MHZ * 1e6)


@lru_cache(maxsize=4096)
def _act_time(op: str, n: int) -> float:
    return act_estimate(act_preset("hermes"), op, n) / (NDP_CLOCK_MHZ * 1e6)


def gpu_fraction(s: Shape) -> float:
    """Share of the QKV and MLP neurons the GPU holds: its memory less the projections (always
    on the GPU, §IV-A), the LM head and a reserve."""
    budget = GPU.mem_bytes - GPU_RESERVE - s.proj_bytes - s.head_bytes
    return float(np.clip(budget / (s.qkv_bytes + s.ffn_bytes), 0.0, 1.0))


def _gpu(bytes_: float, flops: float, kernels: int = 1) -> float:
    return GPU.time(flops, bytes_) + kernels * KERNEL_S


def _sync(s: Shape, b: int) -> float:
    return SYNC_S + b * s.h * BYTES / HOST_LINK.effective


def _attention(s: Shape, b: int, ctx: int, dimms: int, gemv: str) -> float:
    """QK^T, softmax and S.V of every KV head and sequence, spread over the DIMMs."""
    m = s.m
    jobs = math.ceil(b * m.kv_heads / dimms)
    g = m.d_group
    one = (dimm_time(gemv, "rows", m.head_dim, ctx, g, ctx)
           + g * _act_time("softmax", ctx) + dimm_time(gemv, "cols", ctx, m.head_dim, g, ctx))
    return jobs * one


def _split(s: Shape, gemv: str, b: int, qkv_n: tuple, ffn_n: tuple) -> tuple:
    """(QKV, MLP) seconds for GPU / busiest-DIMM neuron counts (n_gpu, n_dimm) each."""
    h = s.h
    qg, qd = qkv_n
    fg, fd = ffn_n
    t_qkv = max(_gpu(qg * h * BYTES, 2 * b * qg * h), dimm_time(gemv, "rows", h, s.qkv, b, qd))
    up = (s.mlp_mats - 1) * dimm_time(gemv, "rows", h, s.ffn, b, fd)
    t_mlp = max(_gpu(fg * s.mlp_mats * h * BYTES, 2 * b * fg * s.mlp_mats * h, 2),
                up + dimm_time(gemv, "cols", s.ffn, h, b, fd))
    return t_qkv + 2 * _sync(s, b), t_mlp + 2 * _sync(s, b)


def _prefill(m: wl.ModelSpec, b: int, in_len: int, resident: float, serial: bool) -> float:
    """The prompt on the GPU, the weights it does not hold streamed over PCIe (§IV-A2)."""
    stream = max(0.0, m.weight_bytes - resident) / HOST_LINK.effective
    compute = GPU.time(2.0 * m.params * b * in_len, 0.0)
    kv = b * in_len * m.kv_bytes_per_token / HOST_LINK.effective
    return (stream + compute if serial else max(stream, compute)) + kv


def trace_spec(m: wl.ModelSpec, block: int, batch: int, neurons: int, seed: int, in_len: int,
               out_len: int) -> TraceSpec:
    """The activation trace of ``m``'s MLP neurons (``block`` 0) or QKV inputs (``block`` 1)
    at ``batch``, with the block's ReLU sparsity, over at most 128 prefill and 128 decode
    tokens."""
    fam = m.name.split("-")[0]
    return TraceSpec(neurons=neurons, sparsity=SPARSITY[fam][block], batch=batch, seed=seed,
                     prefill=min(in_len, 128), decode=min(out_len, 128))


def hermes_step(m: wl.ModelSpec, b: int, cfg, variant: str | None = None,
                dimms: int | None = None, gemv: str | None = None) -> Run:
    """Hermes (or a Fig. 13 variant) on ``m`` at batch ``b``; ``cfg`` a HermesModelConfig."""
    variant, dimms, gemv = variant or cfg.variant, dimms or cfg.dimms, gemv or cfg.gemv
    s = shape(m)
    frac = gpu_fraction(s)
    fits = (m.weight_bytes + b * (cfg.input_len + cfg.output_len) * m.kv_bytes_per_token
            <= dimms * DIMM_BYTES)
    ql = block_loads(trace_spec(m, 1, b, cfg.trace_neurons, cfg.seed, cfg.input_len,
                                cfg.output_len), variant, round(frac, 4), dimms)
    fl = block_loads(trace_spec(m, 0, b, cfg.trace_neurons, cfg.seed, cfg.input_len,
                                cfg.output_len), variant, round(frac, 4), dimms)
    ctx = cfg.input_len + cfg.output_len // 2
    attn = _attention(s, b, ctx, dimms, gemv) + _sync(s, b)
    proj = _gpu(s.h * s.h * BYTES, 2 * b * s.h * s.h)
    qkv, mlp, mig = [], [], []
    nb = s.mlp_mats * s.h * BYTES
    for li, t in np.ndindex(fl.gpu.shape):
        tq, tm = _split(s, gemv, b, (round(ql.gpu[li, t] * s.qkv), round(ql.dimm_max[li, t] * s.qkv)),
                        (round(fl.gpu[li, t] * s.ffn), round(fl.dimm_max[li, t] * s.ffn)))
        qkv.append(tq)
        mlp.append(tm)
        swap = (ql.swaps[li, t] * s.qkv * s.h * BYTES + fl.swaps[li, t] * s.ffn * nb) \
            / HOST_LINK.effective
        move = (ql.moves[li, t] * s.qkv * s.h * BYTES + fl.moves[li, t] * s.ffn * nb) \
            / DIMM_LINK.effective
        mig.append(max(0.0, max(swap, move) - proj))
    L = s.layers
    reduce = _act_time("relu", b * s.h)
    parts = {"QKV (split)": L * float(np.mean(qkv)), "attention (DIMMs)": L * attn,
             "projection (GPU)": L * proj, "migration excess": L * float(np.mean(mig)),
             "MLP (split)": L * float(np.mean(mlp)), "reduction (DIMMs)": L * reduce,
             "LM head (GPU)": _gpu(s.head_bytes, 2 * b * s.head_bytes / BYTES)}
    resident = frac * (s.qkv_bytes + s.ffn_bytes) + s.proj_bytes + s.head_bytes
    return Run("Hermes" if variant == "hermes" else f"Hermes-{variant}", b, parts,
               _prefill(m, b, cfg.input_len, resident, False), fits,
               {"gpu_fraction": frac, "mlp_s": L * float(np.mean(mlp)),
                "active_ffn": float(fl.active.mean()), "hot_share_ffn":
                    float(fl.gpu.mean() / max(1e-12, fl.active.mean())), **_load_means(ql, fl)})


def _load_means(ql, fl) -> dict:
    """The blocks' mean loads (shares of a layer's neurons) the energy model counts from."""
    return {f"{name}_{k}": float(getattr(lo, k).mean()) for name, lo in (("qkv", ql), ("ffn", fl))
            for k in ("gpu", "cold", "swaps", "moves")}


def _resident_layers(s: Shape) -> int:
    """Whole layers the GPU holds (Accelerate, FlexGen, Deja Vu, Hermes-base)."""
    layer = (s.qkv_bytes + s.ffn_bytes + s.proj_bytes) / s.layers
    return int(max(0.0, GPU.mem_bytes - GPU_RESERVE - s.head_bytes) // layer)


def baseline_step(system: str, m: wl.ModelSpec, b: int, cfg) -> Run:
    """Accelerate, FlexGen, Deja Vu, Hermes-host or Hermes-base on ``m`` at batch ``b``."""
    s = shape(m)
    L, h = s.layers, s.h
    layer_bytes = (s.qkv_bytes + s.ffn_bytes + s.proj_bytes) / L
    k = min(L, _resident_layers(s))
    off = (L - k) * layer_bytes
    ctx = cfg.input_len + cfg.output_len // 2
    compute = _gpu(L * layer_bytes + s.head_bytes, 2.0 * b * (L * layer_bytes + s.head_bytes)
                   / BYTES, 3 * L)
    gpu_attn = GPU.time(b * m.attention_flops(ctx), b * ctx * m.kv_bytes_per_token)
    fits = m.weight_bytes <= cfg.dimms * DIMM_BYTES
    resident = k * layer_bytes + s.head_bytes
    if system in ("Accelerate", "FlexGen"):
        load = off / HOST_LINK.effective
        parts = ({"PCIe weight load": load, "GPU compute": compute + gpu_attn}
                 if system == "Accelerate" else
                 {"PCIe weight load (overlapped)": max(load, compute + gpu_attn)})
        return Run(system, b, parts, _prefill(m, b, cfg.input_len, resident,
                                              system == "Accelerate"), fits, {"gpu_layers": k})
    if system == "Deja Vu":
        fl = block_loads(trace_spec(m, 0, b, cfg.trace_neurons, cfg.seed, cfg.input_len,
                                    cfg.output_len), "partition", 0.0, cfg.dimms)
        act = float(fl.active.mean())
        per_layer = s.qkv_bytes / L + s.proj_bytes / L + act * s.ffn_bytes / L
        c = _gpu(L * per_layer + s.head_bytes, 2.0 * b * (L * per_layer + s.head_bytes) / BYTES,
                 3 * L) + gpu_attn
        return Run(system, b, {"PCIe load (active MLP neurons, dense attention)":
                               (L - k) * per_layer / HOST_LINK.effective,
                               "GPU compute": c, "MLP predictor": c * DEJAVU_PREDICTOR
                               / (1 - DEJAVU_PREDICTOR)},
                   _prefill(m, b, cfg.input_len, resident, False), fits,
                   {"gpu_layers": k, "active_ffn": act})
    if system == "Hermes-host":
        return _host_step(m, s, b, cfg)
    return _base_step(m, s, b, cfg, k)


def _host_step(m, s: Shape, b: int, cfg) -> Run:
    """Hermes-host (PowerInfer): hot neurons on the GPU, cold ones and attention on the CPU."""
    frac = gpu_fraction(s)
    L, h = s.layers, s.h
    ql = block_loads(trace_spec(m, 1, b, cfg.trace_neurons, cfg.seed, cfg.input_len,
                                cfg.output_len), "partition", round(frac, 4), cfg.dimms)
    fl = block_loads(trace_spec(m, 0, b, cfg.trace_neurons, cfg.seed, cfg.input_len,
                                cfg.output_len), "partition", round(frac, 4), cfg.dimms)
    nb = s.mlp_mats * h * BYTES
    cq, cf = float(ql.cold.mean()) * s.qkv * h * BYTES, float(fl.cold.mean()) * s.ffn * nb
    gq, gf = float(ql.gpu.mean()) * s.qkv * h * BYTES, float(fl.gpu.mean()) * s.ffn * nb
    ctx = cfg.input_len + cfg.output_len // 2
    t = (max(CPU.time(2 * b * cq / BYTES, cq), _gpu(gq, 2 * b * gq / BYTES))
         + max(CPU.time(2 * b * cf / BYTES, cf), _gpu(gf, 2 * b * gf / BYTES, 2))
         + CPU.time(b * m.attention_flops(ctx) / L, b * ctx * m.kv_bytes_per_token / L)
         + _gpu(h * h * BYTES, 2 * b * h * h) + 5 * _sync(s, b))
    resident = frac * (s.qkv_bytes + s.ffn_bytes) + s.proj_bytes + s.head_bytes
    return Run("Hermes-host", b, {"layers (GPU hot || CPU cold, CPU attention)": L * t,
                                  "LM head (GPU)": _gpu(s.head_bytes, 2 * b * s.head_bytes)},
               _prefill(m, b, cfg.input_len, resident, False), True, _load_means(ql, fl))


def _base_step(m, s: Shape, b: int, cfg, k: int) -> Run:
    """Hermes-base: dense; whole layers on the GPU while they fit, the rest on the DIMMs
    (weights split by neurons over the DIMMs); attention always on the DIMMs."""
    L, h, J, g = s.layers, s.h, cfg.dimms, cfg.gemv
    ctx = cfg.input_len + cfg.output_len // 2
    gpu_layer = _gpu((s.qkv_bytes + s.ffn_bytes + s.proj_bytes) / L,
                     2 * b * (s.qkv_bytes + s.ffn_bytes + s.proj_bytes) / L / BYTES, 4)
    dimm_layer = (dimm_time(g, "rows", h, s.qkv, b, math.ceil(s.qkv / J))
                  + dimm_time(g, "rows", h, h, b, math.ceil(h / J))
                  + (s.mlp_mats - 1) * dimm_time(g, "rows", h, s.ffn, b, math.ceil(s.ffn / J))
                  + dimm_time(g, "cols", s.ffn, h, b, math.ceil(s.ffn / J)))
    attn = _attention(s, b, ctx, J, g) + 2 * _sync(s, b)
    resident = k * (s.qkv_bytes + s.ffn_bytes + s.proj_bytes) / L + s.head_bytes
    return Run("Hermes-base", b, {"GPU layers": k * gpu_layer, "DIMM layers": (L - k) * dimm_layer,
                                  "attention (DIMMs)": L * attn,
                                  "LM head (GPU)": _gpu(s.head_bytes, 2 * b * s.head_bytes)},
               _prefill(m, b, cfg.input_len, resident, False),
               m.weight_bytes <= J * DIMM_BYTES, {"gpu_layers": k})


def run_system(system: str, m: wl.ModelSpec, b: int, cfg) -> Run:
    """Any system of §V by name."""
    if system == "Hermes":
        return hermes_step(m, b, cfg)
    return baseline_step(system, m, b, cfg)
