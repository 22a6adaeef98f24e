"""The grids of Hermes §V computed with the step model (Figs. 9-11, 13, 14, 16), the predictor's
accuracy and the ILP's solve time, as plain data for :mod:`~pimforge.software.hermes.reproduce`."""
from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from pimforge.software import workloads as wl
from pimforge.software.hermes.config import (
    BATCHES, DIMM_COUNTS, MODELS, MULTIPLIERS, OPT_MODELS, SYSTEMS, VARIANTS, HermesModelConfig
)
from pimforge.software.hermes.placement import greedy, solve_ilp
from pimforge.software.hermes.schedule import predictor_run, profile_problem
from pimforge.software.hermes.step import (
    gpu_fraction, hermes_step, run_system, shape, trace_spec
)
from pimforge.software.hermes.traces import generate
from pimforge.software.report import Progress

__all__ = ["FIG14_MODELS", "figures", "gemv_preset", "ilp_check", "predictor_check"]

FIG14_MODELS = ("OPT-30B", "OPT-66B", "Falcon-40B", "LLaMA2-70B")


def gemv_preset(mult: int) -> str:
    return "hermes" if mult == 256 else f"hermes_m{mult}"


def _tput(cfg, run) -> float:
    return run.tokens_per_s(cfg.output_len, cfg.prefill)


def _systems(cfg, pg) -> dict:
    """tokens/s of every system per (model, batch); N.P. (NaN) for FlexGen and Deja Vu beyond
    OPT (§V-A)."""
    out = {}
    for mn in MODELS:
        m = wl.get_model(mn)
        for b in BATCHES:
            out[(mn, b)] = {s: (math.nan if s in ("FlexGen", "Deja Vu") and mn not in OPT_MODELS
                                else _tput(cfg, run_system(s, m, b, cfg))) for s in SYSTEMS}
            pg.step(f"{mn} b={b}")
    return out


def _ablation(cfg, pg) -> dict:
    """Fig. 13: MLP-block seconds per token of each scheduling variant, batch 1."""
    out = {}
    for mn in MODELS:
        m = wl.get_model(mn)
        out[mn] = {v: hermes_step(m, 1, cfg, variant=v).info["mlp_s"] for v in VARIANTS}
        pg.step(f"ablation {mn}")
    return out


def _dimms(cfg, pg) -> dict:
    """Fig. 14: tokens/s at batch 1 per DIMM count (NaN: the model does not fit)."""
    out = {}
    for mn in FIG14_MODELS:
        m = wl.get_model(mn)
        for n in DIMM_COUNTS:
            r = hermes_step(m, 1, cfg, dimms=n)
            out[(mn, n)] = _tput(cfg, r)
        pg.step(f"dimms {mn}")
    return out


def _multipliers(cfg, pg) -> dict:
    """Fig. 16: OPT-13B tokens/s per multiplier count at batch 1 and 16 (cycle model presets)."""
    m = wl.get_model("OPT-13B")
    out = {}
    for b in (1, 16):
        for k in MULTIPLIERS:
            out[(b, k)] = _tput(cfg, hermes_step(m, b, cfg, gemv=gemv_preset(k)))
        pg.step(f"multipliers b={b}")
    return out


def predictor_check(cfg, model: str = "LLaMA2-70B") -> dict:
    """Predictor accuracy over the model's MLP trace at batch 1, and the share of the prefill's
    hot neurons (top 20%) that are not hot over the decode (§III-B: 52%)."""
    spec = trace_spec(wl.get_model(model), 0, 1, cfg.trace_neurons, cfg.seed, cfg.input_len,
                      cfg.output_len)
    stats = predictor_run(spec)[1].as_dict()
    act = generate(spec).act[1:]
    k = int(0.2 * act.shape[2])
    changed = []
    for a in act:
        h0 = set(np.argsort(-a[:spec.prefill].mean(0), kind="stable")[:k])
        h1 = set(np.argsort(-a[spec.prefill:].mean(0), kind="stable")[:k])
        changed.append(1 - len(h0 & h1) / k)
    stats["hot_changed"] = float(np.mean(changed))
    return stats


def ilp_check(cfg, model: str = "OPT-66B", cluster: int = 128) -> dict:
    """The offline ILP (eqs. 1-7) on the model's MLP profile: solve time, objective and the
    greedy heuristic's gap to it."""
    m = wl.get_model(model)
    s = shape(m)
    spec = trace_spec(m, 0, 1, cfg.trace_neurons, cfg.seed, cfg.input_len, cfg.output_len)
    prob = profile_problem(spec, gpu_fraction(s), cfg.dimms, 1.0, 8.0)
    ilp = solve_ilp(prob, cluster=cluster)
    gr = greedy(prob)
    return {"model": model, "neurons": int(prob.freq.size), "cluster": cluster,
            "seconds": ilp.seconds, "status": ilp.status, "ilp_objective": ilp.objective,
            "greedy_objective": gr.objective, "greedy_seconds": gr.seconds,
            "greedy_gap": gr.objective / ilp.objective - 1}


def figures(progress: bool = True, seed: int = 0) -> dict:
    """Every grid of the reproduction at the default config."""
    cfg = replace(HermesModelConfig(), seed=seed)
    total = len(MODELS) * (len(BATCHES) + 1) + len(FIG14_MODELS) + 2 + 2
    with Progress(total, "hermes reproduce", enabled=progress) as pg:
        out = {"systems": _systems(cfg, pg), "ablation": _ablation(cfg, pg),
               "dimms": _dimms(cfg, pg), "multipliers": _multipliers(cfg, pg)}
        out["predictor"] = predictor_check(cfg)
        pg.step("predictor")
        out["ilp"] = ilp_check(cfg)
        pg.step("ilp")
    l70 = hermes_step(wl.get_model("LLaMA2-70B"), 1, cfg)
    out["prefill_share"] = l70.prefill / (l70.prefill + cfg.output_len * l70.step)
    return out
