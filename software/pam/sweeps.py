"""Sweeps of the PAM step model: the peak batch within an SLO, and PAM's Figures 9 (online
serving), 10 (offline throughput) and 12 (ablation) as plain data."""
from __future__ import annotations

from dataclasses import replace
from functools import lru_cache

from pimforge.software.pam.config import (
    ABLATION_BATCHES, ABLATIONS, OFFLINE, OFFLINE_BATCHES, ONLINE, PAM_MODELS, SLOS, SYSTEMS,
    PamModelConfig
)
from pimforge.software.pam.step import request_lengths, step, throughput
from pimforge.software.report import Progress

__all__ = ["BATCH_GRID", "max_batch", "figure9", "figure10", "figure12"]

# batches tried for the online peak: 1 .. 32,768 in steps of 2^(1/4) (19% apart)
BATCH_GRID = tuple(sorted({int(round(2 ** (k / 4))) for k in range(61)}))


@lru_cache(maxsize=256)
def _curve(system: str, cfg: PamModelConfig, variant: str) -> tuple:
    """Step results over :data:`BATCH_GRID` (cfg with the SLO and batch fields cleared)."""
    lengths = request_lengths(cfg.dataset, cfg.seed)
    out = []
    for b in BATCH_GRID:
        r = step(system, cfg, b, lengths, variant)
        out.append(r)
        if r["oom"]:
            break                     # larger batches do not fit either
    return tuple(out)


def max_batch(system: str, cfg: PamModelConfig, slo_s: float, variant="PAM") -> tuple:
    """Peak throughput within the SLO and the memory (PAM §7.1's online metric): every batch of
    :data:`BATCH_GRID` whose step fits the SLO is a candidate, and the one with the highest
    throughput wins (the larger batch on a tie within 0.1%).  Spilling the KV cache to a slower
    tier can make a larger batch slower, so this is not simply the largest feasible batch.
    Returns (batch, step result) or (0, result of batch 1)."""
    key = replace(cfg, slo_ms=1.0, batch=0, sweep="none")
    curve = _curve(system, key, variant)
    best = (0, curve[0])
    for r in curve:
        if r["oom"] or r["time"] > slo_s:
            continue
        if best[0] == 0 or throughput(r) >= 0.999 * throughput(best[1]):
            best = (r["batch"], r)
    return best


def figure9(progress=True, seed=0, models=PAM_MODELS, datasets=ONLINE, slos=SLOS,
            systems=SYSTEMS, base=None, label="pam fig 9") -> dict:
    """Online serving (PAM Figure 9): per model, dataset and SLO, each system's peak
    throughput within the SLO and its batch.  ``base``: config overrides for every run."""
    out = {}
    jobs = [(m, d, s) for m in models for d in datasets for s in slos]
    with Progress(len(jobs), label, enabled=progress) as p:
        for m, d, s in jobs:
            cfg = PamModelConfig(**{**(base or {}), "model": m, "dataset": d, "slo_ms": s,
                                    "seed": seed})
            row = {}
            for sysname in systems:
                b, r = max_batch(sysname, cfg, s / 1000.0)
                row[sysname] = {"batch": b, "throughput": throughput(r) if b else float("nan"),
                                "attention_share": r["attention"] / r["time"] if b else None}
            out[(m, d, s)] = row
            p.step(f"{m} {d} {s:.0f} ms")
    return out


def figure10(progress=True, seed=0, systems=SYSTEMS, base=None, label="pam fig 10") -> dict:
    """Offline throughput at fixed batches (PAM Figure 10)."""
    out = {}
    jobs = [(m, d, b) for m, bs in OFFLINE_BATCHES.items() for d in OFFLINE for b in bs]
    with Progress(len(jobs), label, enabled=progress) as p:
        for m, d, b in jobs:
            cfg = PamModelConfig(**{**(base or {}), "model": m, "dataset": d, "seed": seed})
            steps = {s: step(s, cfg, b) for s in systems}
            out[(m, d, b)] = {s: throughput(r) for s, r in steps.items()}
            v = steps["vLLM-offloading"]
            out[(m, d, b)]["vllm_offload_share"] = (
                (v["parts"]["ddr"] + v["parts"]["ssd"]) / v["time"] if not v["oom"] else None)
            p.step(f"{m} {d} {b}")
    return out


def figure12(progress=True, seed=0, base=None, label="pam fig 12") -> dict:
    """Ablation (PAM Figure 12): attention time of LS-PIM over each variant's, small and
    large batch, on Arxiv_sum (assumed: the paper does not name the dataset or batches)."""
    out = {}
    jobs = [(m, i) for m in PAM_MODELS for i in (0, 1)]
    with Progress(len(jobs), label, enabled=progress) as p:
        for m, i in jobs:
            b = ABLATION_BATCHES[m][i]
            cfg = PamModelConfig(**{**(base or {}), "model": m, "dataset": "Arxiv_sum",
                                    "seed": seed})
            ls_pim = step("LS-PIM", cfg, b)["attention"]
            out[(m, i)] = {v: ls_pim / step("PAM", cfg, b, variant=v)["attention"]
                           for v in ABLATIONS}
            p.step(f"{m} batch {b}")
    return out
