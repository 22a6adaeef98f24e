"""Tables, plots and JSON data of ``reproduce lolpim`` (Figs. 4, 7a, 9-12, Table 8)."""
from __future__ import annotations

import numpy as np

from pimforge.software.lolpim.config import CAPACITIES, SYSTEMS, TASKS
from pimforge.software.lolpim.figures import FIG9_MODELS, TABLE8, TABLE8_SYSTEMS
from pimforge.software.report import Plot, Table

__all__ = ["tables", "plots", "data", "result_dict"]


def result_dict(r) -> dict:
    """A :class:`~pimforge.software.lolpim.pipeline.StepResult` as plain data."""
    return {"tokens_per_s": r.tokens_per_s, "batch": r.batch, "tp": r.tp, "pp": r.pp,
            "micro_batches": r.micro_batches, "cycle_s": r.cycle_s,
            "utilization": r.utilization if r.batch else None, "parts_s": r.parts}


def _task_mean(f9, mn, cap, s) -> float:
    return float(np.mean([f9[(mn, cap, t, s)].tokens_per_s for t in TASKS]))


def _fig11_keys(f):
    return sorted({(k[0], k[1]) for k in f["fig11"]})


def tables(f) -> list:
    f9, f11, t8, g = f["fig9"], f["fig11"], f["table8"], f["fig4"]
    out = [Table(f"Figs. 9-10: tokens/s of {mn} by capacity and task", ["GB", "task"]
                 + list(SYSTEMS),
                 [[c, t] + [f9[(mn, c, t, s)].tokens_per_s for s in SYSTEMS]
                  for c in CAPACITIES for t in TASKS],
                 note="OOM: the weights do not fit. GPUs: one per 64 GB node.")
           for mn in FIG9_MODELS]
    out.append(Table("Fig. 11: Qwen1.5-7B on Musique by TP x PP (ITPP; static vs DPA)",
                     ["GB", "TP", "PP", "batch static", "tok/s static", "batch DPA",
                      "tok/s DPA", "DPA gain"],
                     [[c, tp, f11[(c, tp, "LoL-PIM(12)")].pp, f11[(c, tp, "LoL-PIM(1)")].batch,
                       f11[(c, tp, "LoL-PIM(1)")].tokens_per_s,
                       f11[(c, tp, "LoL-PIM(12)")].batch, f11[(c, tp, "LoL-PIM(12)")].tokens_per_s,
                       f11[(c, tp, "LoL-PIM(12)")].tokens_per_s
                       / f11[(c, tp, "LoL-PIM(1)")].tokens_per_s]
                      for c, tp in _fig11_keys(f)]))
    out.append(Table("Table 8: Musique, tokens/s and utilization (%)", ["model", "nodes"]
                     + [f"{s} {k}" for s in TABLE8_SYSTEMS for k in ("tok/s", "util %")],
                     [[mn, n] + [v for s in TABLE8_SYSTEMS for v in
                                 (t8[(mn, s)].tokens_per_s, 100 * t8[(mn, s)].utilization)]
                      for mn, n in TABLE8],
                     note="(1) ITPP, (12) + DPA / lazy allocation, (123) + ping-pong buffering; "
                          "each at its best TP/PP and micro-batch count."))
    out.append(Table("Fig. 4: average batch of Qwen1.5-7B by allocation", ["GB", "task",
                                                                             "static", "DPA",
                                                                             "DPA + lazy",
                                                                             "growth %"],
                     [[c, t, v["static"], v["dpa"], v["lazy"],
                       100 * (v["lazy"] / v["static"] - 1) if v["static"] else None]
                      for (c, t), v in g.items()],
                     note="At the smallest TP of the capacity (the tightest KV space)."))
    out.append(Table("Fig. 4's own workload (caption): Qwen1.5-7B, 80 GB x N, 4K x N tokens",
                     ["N", "GB", "context", "static", "DPA + lazy", "growth %"],
                     [[n, v["capacity_gb"], v["context"], v["static"], v["lazy"],
                       100 * (v["lazy"] / v["static"] - 1) if v["static"] else None]
                      for n, v in f["fig4_caption"].items()]))
    out.append(Table("Fig. 7a: one channel's GEMV, serial vs ping-pong (cycle model)",
                     ["op", "rows", "cols", "serial us", "ping-pong us", "saved"],
                     [[op, v["rows"], v["cols"], 1e6 * v["serial_s"], 1e6 * v["pingpong_s"],
                       v["saved"]] for op, v in f["fig7a"].items()]))
    parts = sorted({k for r in f["fig12"].values() for k in r.parts})
    out.append(Table("Fig. 12: Qwen1.5-72B on Musique, 16 nodes: busiest stage per cycle (ms)",
                     ["system", "batch", "cycle ms"] + parts,
                     [[s, r.batch, 1e3 * r.cycle_s] + [1e3 * r.parts.get(p, 0.0) for p in parts]
                      for s, r in f["fig12"].items()]))
    return out


def plots(f) -> list:
    f9, f11, t8 = f["fig9"], f["fig11"], f["table8"]
    out = [Plot(f"lolpim_fig{9 if mn.endswith('7B') else 10}",
                f"{mn}: tokens/s by capacity (mean of 3 tasks)", "line", "capacity (GB)",
                "tokens/s", {s: [_task_mean(f9, mn, c, s) for c in CAPACITIES]
                             for s in SYSTEMS}, x=list(CAPACITIES), logy=True)
           for mn in FIG9_MODELS]
    keys = _fig11_keys(f)
    out.append(Plot("lolpim_fig11", "Fig. 11: Qwen1.5-7B, Musique: tokens/s by GB/TPxPP",
                    "bar", "GB / TP x PP", "tokens/s",
                    {s: [f11[(c, tp, s)].tokens_per_s for c, tp in keys]
                     for s in ("LoL-PIM(1)", "LoL-PIM(12)")},
                    groups=[f"{c}/{tp}x{f11[(c, tp, 'LoL-PIM(1)')].pp}" for c, tp in keys],
                    labels={s: [f"{f11[(c, tp, s)].batch:.0f}" for c, tp in keys]
                            for s in ("LoL-PIM(1)", "LoL-PIM(12)")}))
    out.append(Plot("lolpim_table8", "Table 8: utilization (%) on Musique", "bar", "model",
                    "utilization %", {s: [100 * t8[(mn, s)].utilization for mn, _n in TABLE8]
                                      for s in TABLE8_SYSTEMS},
                    groups=[mn for mn, _n in TABLE8]))
    g = f["fig4"]
    out.append(Plot("lolpim_fig4", "Fig. 4: Qwen1.5-7B average batch by allocation", "bar",
                    "GB / task", "batch", {a: [v[a] for v in g.values()] for a in
                                           ("static", "dpa", "lazy")},
                    groups=[f"{c}/{t}" for c, t in g]))
    return out


def data(f) -> dict:
    return {"fig9": {"|".join(map(str, k)): result_dict(v) for k, v in f["fig9"].items()},
            "fig11": {"|".join(map(str, k)): result_dict(v) for k, v in f["fig11"].items()},
            "table8": {"|".join(k): result_dict(v) for k, v in f["table8"].items()},
            "fig4": {f"{c}|{t}": v for (c, t), v in f["fig4"].items()},
            "fig4_caption": f["fig4_caption"], "fig7a": f["fig7a"],
            "fig7a_unit": f["fig7a_unit"], "setups": f["setups"]}
