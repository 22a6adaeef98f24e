"""``pimforge reproduce hermes``: the paper's headline figures (§V, Figs. 9-16) next to the
model's, with the cause of every gap, and the figures' tables and plots."""
from __future__ import annotations

import time

import numpy as np

from pimforge.software.hermes.assumptions import REMAP_CHOICE, assumptions
from pimforge.software.hermes.config import (
    BATCHES, DIMM_COUNTS, MODELS, MULTIPLIERS, OPT_MODELS, SYSTEMS, VARIANTS
)
from pimforge.software.hermes.figures import FIG14_MODELS, figures
from pimforge.software.report import ModelResult, Plot, Row, Table

__all__ = ["reproduce", "WALL_CLOCK_ROWS"]

# rows whose value is a wall time or derived from one (item -> why): left out of the committed
# baseline (software/baseline.py), which pins every other row
WALL_CLOCK_ROWS = {"§IV-B: ILP solve time": "the CBC solve's wall time on the machine that runs "
                                            "it"}

BASELINE_CAUSE = ("our baselines stream at 80% of the 64 GB/s link; the paper's measured "
                  "Accelerate/FlexGen run far below that (software overheads it does not give)")


def _ratio(sy, models, batches, a, b) -> float:
    return float(np.nanmean([sy[(m, bb)][a] / sy[(m, bb)][b] for m in models for bb in batches]))


def _system_rows(sy) -> list:
    R = Row
    return [
        R("LLaMA2-70B, batch 1", 13.75, sy[("LLaMA2-70B", 1)]["Hermes"], "tok/s", "Abstract",
          "prefill included (32% of the time, paper 33%); a decode step is 1/3 GPU projection; "
          "miss: our step carries no measured host-scheduler or kernel overheads beyond the "
          "assumed 10 us syncs and 5 us launches"),
        R("OPT-66B, batch 1", 20.37, sy[("OPT-66B", 1)]["Hermes"], "tok/s", "§V-B1 Fig. 9",
          "prefill included"),
        R("Fig. 9: Hermes / Accelerate (OPT, b=1)", 578.42,
          _ratio(sy, OPT_MODELS, (1,), "Hermes", "Accelerate"), source="§V-B1",
          note=BASELINE_CAUSE),
        R("Fig. 9: Hermes / FlexGen (OPT, b=1)", 247.25,
          _ratio(sy, OPT_MODELS, (1,), "Hermes", "FlexGen"), source="§V-B1",
          note=BASELINE_CAUSE),
        R("Fig. 9: Deja Vu / FlexGen (OPT, b=1)", 2.12,
          _ratio(sy, OPT_MODELS, (1,), "Deja Vu", "FlexGen"), source="§V-B1",
          note="Deja Vu loads active MLP neurons and dense attention"),
        R("Fig. 11: Hermes / FlexGen (OPT, b=1-16)", 148.98,
          _ratio(sy, OPT_MODELS, BATCHES, "Hermes", "FlexGen"), source="§V-B2",
          note=BASELINE_CAUSE),
        R("Fig. 11: Hermes / Deja Vu (OPT, b=1-16)", 75.24,
          _ratio(sy, OPT_MODELS, BATCHES, "Hermes", "Deja Vu"), source="§V-B2",
          note=BASELINE_CAUSE),
        R("Fig. 11: Hermes / Hermes-host (all, b=1-16)", 7.17,
          _ratio(sy, MODELS, BATCHES, "Hermes", "Hermes-host"), source="§V-B2",
          note="8 DIMMs x 102.4 GB/s vs the CPU's 89.6 GB/s at 70%; the GPU's hot share and "
               "projection are common to both and cap the gain"),
        R("Fig. 10: Hermes-base / Accelerate (all, b=1)", 53.89,
          _ratio(sy, MODELS, (1,), "Hermes-base", "Accelerate"), source="§V-B1",
          note=BASELINE_CAUSE),
        R("Fig. 10: Hermes / Hermes-base (all, b=1)", 5.17,
          _ratio(sy, MODELS, (1,), "Hermes", "Hermes-base"), source="§V-B1",
          note="the prefill (common to both) dilutes the decode gain"),
    ]


def _other_rows(f) -> list:
    ab = f["ablation"]
    steps = [float(np.mean([ab[m][VARIANTS[i]] / ab[m][VARIANTS[i + 1]] for m in MODELS]))
             for i in range(3)]
    mu = f["multipliers"]
    dm = f["dimms"]
    fit4 = min((n for n in DIMM_COUNTS if not np.isnan(dm[("Falcon-40B", n)])), default=None)
    pred, ilp = f["predictor"], f["ilp"]
    R = Row
    drift = ("our traces' hot set moves little over 128 tokens (%.0f%% of the prefill's hot "
             "neurons change, paper 52%%)" % (100 * pred["hot_changed"]))
    return [
        R("Fig. 13: partition / random (MLP)", 1.63, steps[0], source="§V-C",
          note="greedy offline placement (ILP gap reported below) vs a random one"),
        R("Fig. 13: adjustment / partition", 1.33, steps[1], source="§V-C", note=drift),
        R("Fig. 13: remapping / adjustment", 1.29, steps[2], source="§V-C",
          note="the DIMM imbalance of our traces is mostly per-token noise a 5-token window "
               "cannot foresee; " + REMAP_CHOICE[:60] + "..."),
        R("Fig. 14: min DIMMs for Falcon-40B", 4, fit4, "DIMMs", "§V-E1",
          note="all weights + KV on 32 GB DIMMs"),
        R("Fig. 14: LLaMA2-70B 16 / 8 DIMMs", 1.0, dm[("LLaMA2-70B", 16)] / dm[("LLaMA2-70B", 8)],
          source="§V-E1", note="the GPU's projection and hot share bound the step"),
        R("Fig. 16: b=1, 512 / 64 multipliers", 1.0, mu[(1, 512)] / mu[(1, 64)], source="§V-E3",
          note="hermes_m* cycle-model presets: 64 multipliers saturate the DIMM at batch 1"),
        R("Fig. 16: b=16, 512 / 32 multipliers", 3.86, mu[(16, 512)] / mu[(16, 32)],
          source="§V-E3", note="our GEMV engine is compute-bound at b=16 for every preset "
          "below 512, and the GPU part of OPT-13B is small, so more of the 16x reaches the "
          "end-to-end rate"),
        R("§V-D: prefill share, LLaMA2-70B b=1", 0.3301, f["prefill_share"], "",
          "§V-D", note="weights streamed at 80% of 64 GB/s"),
        R("§IV-C: predictor accuracy", 0.98, pred["accuracy"], "", "§IV-C",
          note="recall %.2f, precision %.2f; cold neurons fire at random in our traces, so "
               "the s1 + 6 s2 rule misses many" % (pred["recall"], pred["precision"])),
        R("§IV-B: ILP solve time", 110.0, ilp["seconds"], "s", "§IV-B",
          note="%d neurons in clusters of %d (CBC, 0.5%% gap); greedy %.3f s, %+.1f%% vs the "
               "clustered ILP at neuron level; not a fidelity target" % (
                   ilp["neurons"], ilp["cluster"], ilp["greedy_seconds"],
                   100 * ilp["greedy_gap"])),
    ]


def _tables(f) -> tuple:
    sy = f["systems"]
    rows = [[m, b] + [sy[(m, b)][s] for s in SYSTEMS] for m in MODELS for b in BATCHES]
    ab = f["ablation"]
    tables = [
        Table("Figs. 9-11: tokens/s (128 in, 128 out, prefill included)", ["model", "batch"]
              + list(SYSTEMS), rows, note="OOM cells: N.P. (FlexGen and Deja Vu run OPT only)."),
        Table("Fig. 13: MLP-block ms per token, batch 1", ["model"] + list(VARIANTS),
              [[m] + [1e3 * ab[m][v] for v in VARIANTS] for m in MODELS]),
        Table("Fig. 14: tokens/s by DIMM count, batch 1", ["model"] + [str(n) for n in
                                                                         DIMM_COUNTS],
              [[m] + [f["dimms"][(m, n)] for n in DIMM_COUNTS] for m in FIG14_MODELS],
              note="OOM: the weights and KV cache do not fit the DIMMs."),
        Table("Fig. 16: OPT-13B tokens/s by multipliers per GEMV unit", ["batch"]
              + [str(k) for k in MULTIPLIERS],
              [[b] + [f["multipliers"][(b, k)] for k in MULTIPLIERS] for b in (1, 16)]),
        Table("Predictor and ILP", ["item", "value"],
              [[k, v] for k, v in {**f["predictor"], **{f"ilp {k}": v for k, v in
                                                        f["ilp"].items()}}.items()])]
    plots = [
        Plot("hermes_fig11", "Figs. 9-11: tokens/s at batch 1", "bar", "model", "tokens/s",
             {s: [sy[(m, 1)][s] for m in MODELS] for s in SYSTEMS}, groups=list(MODELS),
             logy=True),
        Plot("hermes_fig13", "Fig. 13: MLP ms per token", "bar", "model", "ms",
             {v: [1e3 * ab[m][v] for m in MODELS] for v in VARIANTS}, groups=list(MODELS)),
        Plot("hermes_fig14", "Fig. 14: tokens/s by DIMMs (batch 1)", "line", "DIMMs",
             "tokens/s", {m: [f["dimms"][(m, n)] for n in DIMM_COUNTS] for m in FIG14_MODELS},
             x=list(DIMM_COUNTS)),
        Plot("hermes_fig16", "Fig. 16: OPT-13B tokens/s by multipliers", "line", "multipliers",
             "tokens/s", {f"batch {b}": [f["multipliers"][(b, k)] for k in MULTIPLIERS]
                          for b in (1, 16)}, x=list(MULTIPLIERS))]
    return tables, plots


def _data(f) -> dict:
    return {"systems": {f"{m}|{b}": v for (m, b), v in f["systems"].items()},
            "ablation": f["ablation"], "dimms": {f"{m}|{n}": v for (m, n), v in f["dimms"].items()},
            "multipliers": {f"{b}|{k}": v for (b, k), v in f["multipliers"].items()},
            "predictor": f["predictor"], "ilp": f["ilp"], "prefill_share": f["prefill_share"],
            "remap_choice": REMAP_CHOICE}


def reproduce(progress: bool = True, seed: int = 0) -> ModelResult:
    """The paper's headline figures against the model."""
    t0 = time.monotonic()
    f = figures(progress, seed)
    rows = _system_rows(f["systems"]) + _other_rows(f)
    tables, plots = _tables(f)
    res = ModelResult("hermes", "Hermes (NDP-DIMM + GPU) reproduction: system model", {},
                      tables, plots, _data(f), rows=rows, assumptions=assumptions())
    res.seconds = time.monotonic() - t0
    return res
