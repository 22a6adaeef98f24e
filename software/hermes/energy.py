"""Energy per output token of Hermes and the systems it is compared with (§V-A), from the
actions one decode step performs, priced by the shared energy table
(:mod:`pimforge.software.energy`).  The paper gives no energy result (only the DIMM-link's
1.17 pJ/b, Table II), so these are reported by ``pimforge model hermes`` only.

Per decode step of a batch of ``b`` (divided by ``b`` tokens):

* the GPU (RTX 4090): the weights it multiplies read from its GDDR6X, its FLOPs, its static
  power over the step; weights streamed over PCIe are also written into its memory;
* the NDP-DIMMs: the cold neurons' and the KV cache's bits read from DDR4, the ``hermes_gemv``
  actions of each GEMV job (its activity model,
  :func:`~pimforge.hw.hermes.gemv_timing.gemv_activity`), softmax and ReLU on ``hermes_act``
  (its activity model, :func:`~pimforge.hw.hermes.act_timing.act_activity`), each DIMM's
  background power;
* the links: activations at every GPU <-> DIMM synchronisation and the hot/cold swaps over
  PCIe, the window remapping over the DIMM-links;
* Hermes-host's CPU: its base power while the step runs, its DDR4 reads.
"""
from __future__ import annotations

import math

from pimforge.hw.hermes.act_timing import act_activity
from pimforge.hw.hermes.config import act_preset, gemv_preset
from pimforge.hw.hermes.gemv_timing import GemvJob, gemv_activity
from pimforge.software.energy import EnergyResult, add_counts, scale_counts
from pimforge.software.hermes.config import DEJAVU_PREDICTOR
from pimforge.software.hermes.step import BYTES, shape

__all__ = ["step_counts", "energy_result", "gemv_counts", "act_counts", "ENERGY_NODE",
           "SYNCS_PER_LAYER"]

ENERGY_NODE = "asap7"       # Table II: the NDP core is a 7 nm design
SYNCS_PER_LAYER = {"Hermes": 5, "Hermes-host": 5, "Hermes-base": 2}   # as step.py's _sync calls
BITS = 8 * BYTES


def gemv_counts(gemv: str, mode: str, d_in: int, d_out: int, batch: int, n: float) -> dict:
    """``hermes_gemv``'s actions for one job of the system model (``n`` active neurons), split
    into passes of at most ``max_beats`` beats as
    :func:`~pimforge.hw.hermes.perf.gemv_estimate` times it (row mode: each pass after the first merges the previous one's
    output)."""
    cfg = gemv_preset(gemv)
    length = d_in if mode == "rows" else d_out
    beats = math.ceil(length / cfg.beat_elems)
    out: dict = {}
    for p in range(math.ceil(beats / cfg.max_beats)):
        job = GemvJob(mode, batch, n, min(cfg.max_beats, beats - p * cfg.max_beats),
                      merge=mode == "rows" and p > 0)
        out = add_counts(out, gemv_activity(cfg, job))
    return out


def act_counts(op: str, n: int) -> dict:
    """``hermes_act``'s actions (the paper's 256 lanes) on one vector of ``n`` elements: its
    activity model, the job its cycle model times."""
    return act_activity(act_preset("hermes"), op, n)


def _gpu(bytes_: float, flops: float) -> dict:
    return {"dram:gddr6:bit": 8 * bytes_, "gpu:flop:e5m10": flops}


def _attention_dimms(s, b: int, ctx: int, gemv: str) -> dict:
    """One layer's attention on the DIMMs: every (sequence, KV head) job (step.py's
    _attention) and the K and V it reads."""
    m = s.m
    g = m.d_group
    one = add_counts(gemv_counts(gemv, "rows", m.head_dim, ctx, g, ctx),
                     scale_counts(act_counts("softmax", ctx), g),
                     gemv_counts(gemv, "cols", ctx, m.head_dim, g, ctx))
    return add_counts(scale_counts(one, b * m.kv_heads),
                      {"dram:ddr4:bit": b * ctx * 2 * m.kv_heads * m.head_dim * BITS})


def _hermes(s, b: int, cfg, info: dict, ctx: int) -> dict:
    h, J, g = s.h, cfg.dimms, cfg.gemv
    nb = s.mlp_mats * h * BYTES
    qg, qd = info["qkv_gpu"] * s.qkv, info["qkv_cold"] * s.qkv
    fg, fd = info["ffn_gpu"] * s.ffn, info["ffn_cold"] * s.ffn
    # the DIMMs' cold neurons, each DIMM's job a J-th of them
    dimm = add_counts(gemv_counts(g, "rows", h, s.qkv, b, qd / J),
                      scale_counts(gemv_counts(g, "rows", h, s.ffn, b, fd / J), s.mlp_mats - 1),
                      gemv_counts(g, "cols", s.ffn, h, b, fd / J))
    swap = info["qkv_swaps"] * s.qkv * h * BYTES + info["ffn_swaps"] * s.ffn * nb
    move = info["qkv_moves"] * s.qkv * h * BYTES + info["ffn_moves"] * s.ffn * nb
    layer = add_counts(
        _gpu(qg * h * BYTES, 2 * b * qg * h), _gpu(fg * nb, 2 * b * fg * s.mlp_mats * h),
        _gpu(h * h * BYTES, 2 * b * h * h), scale_counts(dimm, J),
        {"dram:ddr4:bit": (qd * h * BYTES + fd * nb) * 8},
        _attention_dimms(s, b, ctx, g), act_counts("relu", b * h),
        # a swap reads the DIMM and writes the GPU; a remap reads one DIMM and writes another
        {"link:pcie:bit": 8 * swap, "dram:ddr4:bit": 8 * (swap + 2 * move),
         "dram:gddr6:bit": 8 * swap, "link:dimm:bit": 8 * move})
    return add_counts(scale_counts(layer, s.layers), _gpu(s.head_bytes, 2 * b * s.head_bytes
                                                          / BYTES))


def _base(s, b: int, cfg, info: dict, ctx: int) -> dict:
    L, h, J, g = s.layers, s.h, cfg.dimms, cfg.gemv
    k = info["gpu_layers"]
    layer_bytes = (s.qkv_bytes + s.ffn_bytes + s.proj_bytes) / L
    dimm = add_counts(gemv_counts(g, "rows", h, s.qkv, b, math.ceil(s.qkv / J)),
                      gemv_counts(g, "rows", h, h, b, math.ceil(h / J)),
                      scale_counts(gemv_counts(g, "rows", h, s.ffn, b, math.ceil(s.ffn / J)),
                                   s.mlp_mats - 1),
                      gemv_counts(g, "cols", s.ffn, h, b, math.ceil(s.ffn / J)))
    return add_counts(scale_counts(_gpu(layer_bytes, 2 * b * layer_bytes / BYTES), k),
                      scale_counts(add_counts(scale_counts(dimm, J),
                                              {"dram:ddr4:bit": 8 * layer_bytes}), L - k),
                      scale_counts(_attention_dimms(s, b, ctx, g), L),
                      _gpu(s.head_bytes, 2 * b * s.head_bytes / BYTES))


def _host(s, b: int, cfg, info: dict, ctx: int, seconds: float) -> dict:
    m, h = s.m, s.h
    nb = s.mlp_mats * h * BYTES
    cold = info["qkv_cold"] * s.qkv * h * BYTES + info["ffn_cold"] * s.ffn * nb
    hot = info["qkv_gpu"] * s.qkv * h * BYTES + info["ffn_gpu"] * s.ffn * nb + h * h * BYTES
    kv = b * ctx * m.kv_bytes_per_token / s.layers
    layer = add_counts(_gpu(hot, 2 * b * hot / BYTES), {"dram:ddr4:bit": 8 * (cold + kv)})
    return add_counts(scale_counts(layer, s.layers), _gpu(s.head_bytes, 2 * b * s.head_bytes),
                      {"static:i9_13900k": seconds})


def _offload(system: str, s, b: int, info: dict, ctx: int) -> dict:
    """Accelerate, FlexGen (every layer the GPU does not hold streamed in each step) and Deja
    Vu (only the active MLP neurons, and a predictor's share of the compute)."""
    m, L = s.m, s.layers
    k = info["gpu_layers"]
    per_layer = (s.qkv_bytes + s.ffn_bytes + s.proj_bytes) / L
    extra = 1.0
    if system == "Deja Vu":
        per_layer = (s.qkv_bytes + s.proj_bytes + info["active_ffn"] * s.ffn_bytes) / L
        extra = 1.0 / (1.0 - DEJAVU_PREDICTOR)
    weights = L * per_layer + s.head_bytes
    load = (L - k) * per_layer
    kv = b * ctx * m.kv_bytes_per_token
    return add_counts(_gpu(weights + kv, extra * 2.0 * b * weights / BYTES
                           + b * m.attention_flops(ctx)),
                      {"link:pcie:bit": 8 * load, "dram:ddr4:bit": 8 * load,
                       "dram:gddr6:bit": 8 * load})


def step_counts(system: str, m, b: int, cfg, run) -> dict:
    """Actions of one decode step of ``run`` (a :class:`~pimforge.software.hermes.step.Run` of
    ``system`` on ``m`` at batch ``b``), all ``b`` tokens."""
    s = shape(m)
    ctx = cfg.input_len + cfg.output_len // 2
    if system == "Hermes":
        c = _hermes(s, b, cfg, run.info, ctx)
    elif system == "Hermes-base":
        c = _base(s, b, cfg, run.info, ctx)
    elif system == "Hermes-host":
        c = _host(s, b, cfg, run.info, ctx, run.step)
    else:
        c = _offload(system, s, b, run.info, ctx)
    syncs = SYNCS_PER_LAYER.get(system, 0) * s.layers
    # every system's GPU and host memory (the same DIMMs) draw their static power all along
    return add_counts(c, {"link:pcie:bit": syncs * b * s.h * BITS,
                          "static:rtx4090": run.step, "static:ddr4_dimm": cfg.dimms * run.step})


def energy_result(system: str, m, b: int, cfg, run) -> EnergyResult:
    """Per output token: the decode step's actions and seconds over its ``b`` tokens."""
    return EnergyResult(system, scale_counts(step_counts(system, m, b, cfg, run), 1.0 / b),
                        run.step / b, ENERGY_NODE)
