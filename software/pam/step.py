"""One decoding step of the PAM systems: where the KV cache fits, the GPUs' weight GEMMs and
each system's attention (PAM §7.1).

* ``vLLM-offloading``: the GPUs compute full attention; KV that does not fit HBM sits in DDR,
  then SSD, and crosses PCIe every step.
* ``AttAcc``: full attention in HBM-PIM; KV must fit HBM (else OOM).
* ``L-PIM``: full attention on all three PIM tiers, KV filled top down, softmax gathered in one
  place (fixed tiling: scores go to HBM and back).
* ``LS-PIM``: L-PIM plus 8x KV sparsity, with the static top-down placement.
* ``PAM``: sparsity, PAMattention (each tier computes local attention partials, RUs merge them),
  importance-driven placement with Algorithm 2, greedy bank-group mapping.

A tier's attention time comes from the ``pam_pu`` and ``pam_ru`` cycle models
(:class:`~pimforge.software.devices.PimTier`); where the activated tokens sit, how the PUs are
loaded and how many tokens migrate come from token-level traces
(:mod:`pimforge.software.pam.locality`).
"""
from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from pimforge.software import devices as dv
from pimforge.software import workloads as wl
from pimforge.software.pam import locality as loc
from pimforge.software.pam.config import TIERS, Hardware, PamModelConfig
from pimforge.software.pam.relayout import (
    MIGRATION_TOKEN_BYTES, interface_instances, interface_relayout_seconds
)

__all__ = ["capacity_split", "trace_stats", "fc_time", "step", "throughput", "request_lengths",
           "SPARSE"]

SPARSE = ("LS-PIM", "PAM")          # the systems that compute only the activated tokens


# ---------------------------------------------------------------------------------------------
# capacity

def capacity_split(hw: Hardware, model: wl.ModelSpec, kv_bytes: float, reserve: float,
                   tiers=TIERS) -> np.ndarray | None:
    """Shares of the KV cache held by HBM, DDR and SSD when filled top down over the tiers
    named; None when it does not fit (OOM)."""
    free = {"hbm": hw.tiers[0].total_capacity * (1 - reserve) - model.weight_bytes,
            "ddr": hw.tiers[1].total_capacity, "ssd": hw.tiers[2].total_capacity}
    if free["hbm"] <= 0:
        return None
    left, shares = kv_bytes, np.zeros(3)
    for i, name in enumerate(TIERS):
        if name not in tiers or left <= 0:
            continue
        take = min(left, free[name])
        shares[i] = take / kv_bytes
        left -= take
    return None if left > 1e-6 * kv_bytes else shares


# ---------------------------------------------------------------------------------------------
# request lengths and traces (cached: traces depend on the context, the capacity split and the
# locality parameters)

@lru_cache(maxsize=64)
def _lengths_cached(dataset: str, seed: int, n: int = 4096) -> tuple:
    inp, out = wl.get_dataset(dataset).sample(n, seed)
    return float(np.mean(inp + out / 2.0)), float(np.mean(inp + out)), float(np.mean(out))


def request_lengths(dataset: str, seed: int) -> dict:
    """Mean tokens per request of a dataset: ``ctx`` while decoding, ``total`` at the end, and
    ``out`` generated."""
    ctx, total, out = _lengths_cached(dataset, seed)
    return {"ctx": ctx, "total": total, "out": out}


def _quantize(shares) -> tuple:
    """Capacity shares on a grid (HBM and DDR to 1/40 in log-ish steps) so traces are reused."""
    def q(v):
        if v <= 0:
            return 0.0
        return float(min(1.0, max(0.01, round(v * 40) / 40 if v >= 0.05 else round(v, 2))))
    h, d = q(shares[0]), q(shares[1])
    d = min(d, 1.0 - h)
    if shares[2] <= 0:                    # nothing on SSD stays nothing on SSD
        d = 1.0 - h
    return (h, d, max(0.0, round(1.0 - h - d, 4)))


@lru_cache(maxsize=512)
def _traces(policy, n0, shares, ratios, keep, drift, lam, seed, n_traces=4, steps=64):
    p = loc.LocalityParams(keep=keep, drift=drift)
    return tuple(loc.simulate(n0, steps, shares, policy, ratios=ratios, params=p,
                              seed=seed * 1000 + k, lam=lam) for k in range(n_traces))


def trace_stats(policy: str, context: float, shares, ratios, cfg: PamModelConfig) -> dict:
    """Activated-token fractions per tier, fixed-tiling factors, PU imbalance (greedy and
    naive mapping) and migration per step, averaged over a few traces."""
    n0 = int(min(4096, max(64, round(context / 64) * 64)))     # long contexts: 4K-token traces
    sh = _quantize(shares)
    rq = tuple(float(f"{r:.2g}") for r in ratios)
    trs = _traces(policy, n0, sh, rq, cfg.keep, cfg.drift, cfg.lam, cfg.seed)
    frac = np.mean([t.fractions() for t in trs], axis=0)
    tiling = np.mean([t.tiling_factor() for t in trs], axis=0)
    imb = trs[0].imbalance(*trs[1:])
    mig = np.mean([t.migrated.mean(axis=0) / t.tokens.mean() for t in trs], axis=0)
    ev = np.mean([t.evicted.mean() / t.tokens.mean() for t in trs])
    return {"frac": frac, "tiling": tiling, "imbalance": imb, "migrated": mig, "evicted": ev,
            "shares": sh}


# ---------------------------------------------------------------------------------------------
# the parts of a step

def fc_time(hw: Hardware, model: wl.ModelSpec, batch: int) -> float:
    """Weight GEMMs of one step on the GPUs (roofline), plus the tensor-parallel all-reduces
    (two per layer over NVLink, ring: ``2 (tp - 1) / tp`` of the data each).

    ``gpus / tp`` pipeline stages run as many micro-batches, so every GPU is busy: it does
    ``1 / gpus`` of the FLOPs, and reads its stage's weights (``1 / gpus`` of them) once per
    micro-batch; each micro-batch's all-reduces carry ``batch / pp`` tokens."""
    g = hw.gpus
    pp = max(1, g // hw.tp)
    gemm = hw.gpu.time(model.decode_flops() * batch / g, model.weight_bytes * pp / g)
    nv = dv.LINKS["NVLink4"]
    ar = 2 * model.layers * batch * model.hidden * wl.BYTES_FP16 * 2 * (hw.tp - 1) / hw.tp
    return gemm + ar / nv.effective / pp


def _offload_attention(hw: Hardware, model: wl.ModelSpec, batch: int, ctx: float,
                       shares) -> dict:
    """vLLM-offloading: the GPUs read the KV cache in HBM, and the rest over PCIe, each step."""
    kv_step = batch * ctx * model.kv_bytes_per_token
    hbm = kv_step * shares[0] / (hw.gpus * hw.gpu.mem_bw * hw.gpu.eff_memory)
    pcie = hw.host_link.effective * hw.gpus
    ddr = kv_step * shares[1] / min(pcie, hw.tiers[1].devices * hw.tiers[1].host_bw)
    ssd_bw = min(pcie, hw.tiers[2].devices * dv.LINKS["PCIe4x4"].effective)
    ssd = kv_step * shares[2] / ssd_bw if shares[2] else 0.0
    return {"attention": hbm + ddr + ssd, "parts": {"hbm": hbm, "ddr": ddr, "ssd": ssd},
            "kv_bytes": kv_step}


def _pim_tiers(hw, model, sets, tokens, imbalance, tiling, pamattention):
    """Per tier (time, breakdown) for ``sets`` query-head sets with ``tokens[t]`` tokens each
    in tier t."""
    d = model.head_dim
    out = []
    for t, tier in enumerate(hw.tiers):
        n = tokens[t] * tiling[t]
        if n <= 0 or tier.devices == 0:
            out.append({"time": 0.0, "pu": 0.0, "bw": 0.0, "ru": 0.0, "token_reads": 0.0,
                        "job_tokens": 0.0, "ru_requests": 0.0, "ru_partials": 0})
            continue
        busy = sets * min(1.0, n)            # under one token per set: only some sets have any
        n_set = max(1.0, n)
        spread = max(1, math.ceil(n_set / tier.tile))      # 16-token tiles over the PUs
        pu = tier.pu_time(d, busy * spread, n_set / spread)
        bw = tier.bw_time(d, sets * n)
        ru = tier.ru_time(d, busy, spread) if pamattention else 0.0
        # for the energy: the K and V rows the PUs read, in PU jobs of job_tokens tokens, and
        # the RUs' requests of ru_partials partials each
        out.append({"time": max(pu, bw) * imbalance[t] + ru, "pu": pu, "bw": bw, "ru": ru,
                    "token_reads": sets * n, "job_tokens": n_set / spread,
                    "ru_requests": busy if pamattention else 0.0, "ru_partials": spread})
    return out


def _policy(system: str, variant: str) -> str:
    """The locality trace's placement policy of a system (and PAM's ablation variant)."""
    if system == "PAM":
        return "pam_static" if variant == "w/o KV scheduling" else "pam"
    return "static"


def _placement(system: str, variant: str, cfg: PamModelConfig, hw: Hardware,
               model: wl.ModelSpec, ctx: float, shares) -> tuple:
    """(trace statistics or None, activated-token fractions, tiling factors, PU imbalance) per
    tier; dense attention computes every token where it is stored, evenly."""
    ones = np.ones(3)
    if system not in SPARSE:
        return None, shares, ones, ones
    rates = [tier.token_rate(model.head_dim) for tier in hw.tiers]
    ratios = loc.balanced_ratios(rates, shares * max(1.0, ctx))
    st = trace_stats(_policy(system, variant), ctx, shares, ratios, cfg)
    # LS-PIM computes only the activated tokens; the w/o-PAMattention variant of PAM computes
    # whole fixed tiles (FlashDecoding's tiling, PAM §7.4)
    tiling = st["tiling"] if variant == "w/o PAMattention" else ones
    imbalance = st["imbalance"][:, 1 if (variant == "w/o KV mapping" or system != "PAM") else 0]
    return st, st["frac"], tiling, imbalance


def _transfer_bytes(hw: Hardware, d: int, sets: int, act: float, frac, tiling,
                    pamattention: bool) -> list:
    """Bytes per tier of Q out to DDR and SSD, and partials (PAMattention) or scores
    (gathered softmax) back (none for HBM, where the results are gathered)."""
    out = [0.0, 0.0, 0.0]
    for t in (1, 2):
        tier = hw.tiers[t]
        if frac[t] <= 0 or tier.devices == 0:
            continue
        per_set = 2 * d + (2 * d + 8 if pamattention else 4 * act * frac[t] * tiling[t])
        out[t] = sets * per_set
    return out


def _transfers(hw: Hardware, nbytes: list) -> float:
    """Seconds of the transfers of :func:`_transfer_bytes`, each tier over its host links."""
    comm = 0.0
    for t in (1, 2):
        if nbytes[t]:
            comm += nbytes[t] / (hw.tiers[t].devices * hw.tiers[t].host_bw)
    return comm


def _pim_attention(system: str, variant: str, cfg: PamModelConfig, hw: Hardware,
                   model: wl.ModelSpec, batch: int, ctx: float, shares) -> tuple:
    """Attention on the PIM tiers: (result fields, trace statistics or None)."""
    d = model.head_dim
    sets = batch * model.heads * model.layers
    act = (cfg.keep if system in SPARSE else 1.0) * ctx
    pamattention = system in ("AttAcc", "PAM") and variant != "w/o PAMattention"
    st, frac, tiling, imbalance = _placement(system, variant, cfg, hw, model, ctx, shares)
    tier_res = _pim_tiers(hw, model, sets, act * frac, imbalance, tiling, pamattention)
    slowest = max(r["time"] for r in tier_res)
    xfer = _transfer_bytes(hw, d, sets, act, frac, tiling, pamattention)
    comm = _transfers(hw, xfer)
    final = hw.tiers[0].ru_time(d, sets, int(np.count_nonzero(frac > 0)) or 1, final=True) \
        if pamattention else 0.0
    return {"attention": slowest + comm + final,
            "parts": {name: r for name, r in zip(TIERS, tier_res)},
            "comm": comm, "final_reduce": final, "frac": list(map(float, frac)),
            "transfer_bytes": xfer,
            "final_requests": sets if pamattention else 0.0,
            "final_partials": int(np.count_nonzero(frac > 0)) or 1}, st


def _migration(st: dict, hw: Hardware, model: wl.ModelSpec, batch: int, ctx: float,
               fc: float) -> dict:
    """PAM's KV moves (Algorithm 2 swaps and new-token evictions) through the PAM interfaces
    (§6.2: the interface's cycle-model estimate, one instance per channel of the narrower side),
    overlapped with the GPUs' GEMMs.  A swap moves as many tokens up as down; the two
    directions share the channels, so their times add."""
    moved = batch * ctx * model.kv_bytes_per_token
    devices = {t.name: t.devices for t in hw.tiers}

    def move(a: str, b: str, nbytes: float) -> float:
        n = interface_instances(a, b, devices)
        return interface_relayout_seconds(a, b, nbytes, MIGRATION_TOKEN_BYTES, n)["seconds"]

    swap_ds, swap_hd = st["migrated"][0] * moved / 2, st["migrated"][1] * moved / 2
    ds = move("ddr", "ssd", swap_ds) + move("ssd", "ddr", swap_ds)
    hd = move("hbm", "ddr", swap_hd + st["evicted"] * moved) + move("ddr", "hbm", swap_hd)
    return {"migration": max(0.0, ds + hd - fc), "migrated_share": float(st["migrated"].sum()),
            "migrated_bytes": {"ddr>ssd": swap_ds, "ssd>ddr": swap_ds,
                               "hbm>ddr": swap_hd + st["evicted"] * moved, "ddr>hbm": swap_hd}}


# ---------------------------------------------------------------------------------------------
# one decoding step

def step(system: str, cfg: PamModelConfig, batch: int, lengths=None, variant: str = "PAM",
         hw: Hardware | None = None) -> dict:
    """Time of one decoding step of ``batch`` requests (seconds) and its parts; ``oom`` when
    the KV cache does not fit the system's memory."""
    model = wl.get_model(cfg.model)
    hw = hw or Hardware.from_config(cfg)
    if lengths is None:
        lengths = request_lengths(cfg.dataset, cfg.seed)
    ctx = float(lengths["ctx"])                  # mean KV tokens per request while decoding
    kv = batch * lengths["total"] * model.kv_bytes_per_token
    tiers = ("hbm",) if system == "AttAcc" else TIERS
    shares = capacity_split(hw, model, kv, cfg.hbm_reserve, tiers)
    res = {"system": system, "variant": variant, "batch": batch, "oom": shares is None,
           "fc": 0.0, "attention": 0.0, "migration": 0.0, "time": math.inf}
    if shares is None:
        return res
    fc = fc_time(hw, model, batch)
    res["fc"] = fc
    res["shares"] = shares.tolist()
    if system == "vLLM-offloading":
        res.update(_offload_attention(hw, model, batch, ctx, shares))
    else:
        att, st = _pim_attention(system, variant, cfg, hw, model, batch, ctx, shares)
        res.update(att)
        if st is not None and system == "PAM":
            res.update(_migration(st, hw, model, batch, ctx, fc))
    res["time"] = res["fc"] + res["attention"] + res["migration"]
    return res


def throughput(r) -> float:
    """Output tokens per second of a step result (NaN for OOM)."""
    if r is None or r["oom"] or not math.isfinite(r["time"]):
        return float("nan")
    return r["batch"] / r["time"]
