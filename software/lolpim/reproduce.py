"""``pimforge reproduce lolpim``: the paper's headline figures (§5.4, §6, §8, Figs. 4, 7a, 9-11,
Table 8) next to the model's, with the cause of every miss, and the figures' tables and plots."""
from __future__ import annotations

import math
import time

import numpy as np

from pimforge.software.lolpim.assumptions import assumptions
from pimforge.software.lolpim.config import CAPACITIES, TASKS
from pimforge.software.lolpim.figures import FIG11_CAPACITIES, TABLE8, figures
from pimforge.software.lolpim.tables import data, plots, tables
from pimforge.software.report import ModelResult, Row

__all__ = ["reproduce", "required_items"]

# Table 8's columns as the paper prints them: the PIM baseline, LoL-PIM (12), LoL-PIM (123)
TABLE8_PAPER = {
    "Qwen1.5-7B": {"PIM": (1833, 15.1), "LoL-PIM(12)": (2455, 20.2), "LoL-PIM(123)": (3668, 30.1)},
    "Qwen1.5-14B": {"PIM": (1309, 15.4), "LoL-PIM(12)": (1737, 20.5),
                    "LoL-PIM(123)": (2553, 30.1)},
    "Qwen1.5-72B": {"PIM": (737, 12.8), "LoL-PIM(12)": (1211, 21.1), "LoL-PIM(123)": (1740, 30.3)},
}
FIG7A = {"QK^T": 0.40, "SV": 0.44, "FFN1": 0.29, "FFN2": 0.28}


def _row(item, paper, ours, unit, source, how, cause) -> Row:
    r = Row(item, paper, ours, unit, source, how)
    if r.within is False:
        r.note = f"{how}; miss: {cause}"
    return r


def _ratio(f9, model, cap, a, b) -> float:
    """Geometric mean over the three tasks of a / b (tokens/s)."""
    v = [f9[(model, cap, t, a)].tokens_per_s / f9[(model, cap, t, b)].tokens_per_s
         for t in TASKS]
    v = [x for x in v if not math.isnan(x)]
    return float(np.exp(np.mean(np.log(v)))) if v else math.nan


def _desc(r) -> str:
    return f"{r.system}: batch {r.batch:.0f}, TP {r.tp} x PP {r.pp}, util {r.utilization:.0%}"


def _fig9_rows(f) -> list:
    f9 = f["fig9"]
    big = CAPACITIES[-1]
    lo, gd, pim = (f9[("Qwen1.5-72B", big, "Musique", s)] for s in
                   ("LoL-PIM(123)", "GPU-GDDR", "PIM"))
    l7, g7, p7 = (f9[("Qwen1.5-7B", big, "Musique", s)] for s in
                  ("LoL-PIM(123)", "GPU-GDDR", "PIM"))
    gpu_cause = ("our GPU-GDDR streams weights once per micro-batch and KV at 85%% of 4,096 "
                 "GB/s and may pick PP to dodge 10 GB/s all-reduces; the paper's DGX-simulator "
                 "GPU mapping and efficiency are not given (Musique: %s; %s)")
    pim_cause = ("our PIM baseline keeps HFA's full-bank channel GEMVs and picks its best TP/PP "
                 "and micro-batches, so it loses only static allocation, ITPP's SV spread and "
                 "ping-pong (Musique: %s; %s)")
    mx72 = max(_ratio(f9, "Qwen1.5-72B", c, "LoL-PIM(123)", "GPU-GDDR") for c in CAPACITIES[1:])
    return [
        _row("Fig. 10: LoL-PIM / GPU-GDDR, Qwen1.5-72B, 1024 GB", 8.54,
             _ratio(f9, "Qwen1.5-72B", big, "LoL-PIM(123)", "GPU-GDDR"), "x", "§8.2, abstract",
             f"geomean over the 3 tasks; max over 256-1024 GB {mx72:.2f}",
             gpu_cause % (_desc(lo), _desc(gd))),
        _row("Fig. 9: LoL-PIM / GPU-GDDR, Qwen1.5-7B, 1024 GB", 3.53,
             _ratio(f9, "Qwen1.5-7B", big, "LoL-PIM(123)", "GPU-GDDR"), "x", "§8.2",
             "geomean over the 3 tasks", gpu_cause % (_desc(l7), _desc(g7))),
        _row("Fig. 9: LoL-PIM / PIM, Qwen1.5-7B, 1024 GB", 4.74,
             _ratio(f9, "Qwen1.5-7B", big, "LoL-PIM(123)", "PIM"), "x", "§8.2, abstract",
             "geomean over the 3 tasks", pim_cause % (_desc(l7), _desc(p7))),
        _row("Fig. 10: LoL-PIM / PIM, Qwen1.5-72B, 1024 GB", 2.65,
             _ratio(f9, "Qwen1.5-72B", big, "LoL-PIM(123)", "PIM"), "x", "§8.2",
             "geomean over the 3 tasks", pim_cause % (_desc(lo), _desc(pim))),
    ]


def _fig11_rows(f) -> list:
    f11 = f["fig11"]
    gains, spreads, gaps = [], [], []
    for cap in FIG11_CAPACITIES:
        keys = [k for k in f11 if k[0] == cap]
        tps = sorted({k[1] for k in keys})
        st = [f11[(cap, t, "LoL-PIM(1)")].tokens_per_s for t in tps]
        dp = [f11[(cap, t, "LoL-PIM(12)")].tokens_per_s for t in tps]
        ok = [(a, b) for a, b in zip(st, dp) if not (math.isnan(a) or math.isnan(b))]
        gains += [b / a for a, b in ok]
        d = [x for x in dp if not math.isnan(x)]
        s = [x for x in st if not math.isnan(x)]
        spreads.append(max(d) / min(d))
        gaps.append(max(d) / max(s))
    return [
        _row("Fig. 11: DPA gain at a fixed TP/PP (max)", 1.3, max(gains), "x", "§8.3",
             f"Musique, Qwen1.5-7B, {'/'.join(map(str, FIG11_CAPACITIES))} GB, every TP/PP",
             "with ITPP every channel is busy at any batch, so DPA's larger batch buys only "
             "amortised all-reduce latency and fewer bubbles"),
        _row("Fig. 11: TP/PP spread with DPA (max / min)", 1.73, max(spreads), "x", "§8.3",
             "largest over the capacities",
             "our TP/PP choices differ mostly in all-reduce traffic (HUB vs 10 GB/s links) and "
             "bubbles; the paper's exact TP/PP grid is not given"),
        _row("Fig. 11: best TP/PP with DPA / best without", 1.07, max(gaps), "x", "§8.3",
             "largest over the capacities ('up to 7%')",
             "the best point with DPA gains the batch growth at the same TP/PP"),
    ]


def _growth_row(f) -> Row:
    g = f["fig4"]
    ratios = {k: v["lazy"] / v["static"] for k, v in g.items() if v["static"]}
    (cap, task), best = max(ratios.items(), key=lambda kv: kv[1])
    return _row("Fig. 4, §5.4: average batch, DPA + lazy / static (max)", 4.8, best, "x",
                "§5.4 (+380%)", f"Qwen1.5-7B, the 3 tasks, 128-1024 GB; max at {task}, "
                f"{cap} GB (+{100 * (best - 1):.0f}%)",
                "static allocation reserves the 32K context, lazy DPA the 256-token chunks "
                "actually used; with Table 2's means (13.5-16.4K) that caps the growth near "
                "32K / mean; +380% needs contexts near 7K (Fig. 4's 4K x N workloads)")


def _table8_rows(f) -> list:
    t8 = f["table8"]
    rows = []
    for mn, nodes in TABLE8:
        for s, (tok, util) in TABLE8_PAPER[mn].items():
            r = t8[(mn, s)]
            cause = (f"{_desc(r)}; parts per cycle (ms): " + ", ".join(
                f"{k} {1e3 * v:.2f}" for k, v in r.parts.items()))
            rows.append(_row(f"Table 8: {mn}, {nodes} nodes, {s} tokens/s", tok,
                             r.tokens_per_s, "tok/s", "Table 8", "Musique", cause))
            rows.append(_row(f"Table 8: {mn}, {nodes} nodes, {s} utilization", util,
                             100 * r.utilization, "%", "Table 8",
                             "useful FLOP/s over 65.5 TFLOPS per node", cause))
    return rows


def _pingpong_rows(f) -> list:
    rows = []
    for op, paper in FIG7A.items():
        v = f["fig7a"][op]
        rows.append(_row(f"Fig. 7a: ping-pong saves, {op}", paper, v["saved"], "", "§6",
                         f"one channel, {v['rows']} x {v['cols']} (Qwen1.5-7B, TP 4, 16K)",
                         "the AiM channel cycle model's overlap of global-buffer loads, MACs "
                         "and output drains at this shape"))
    return rows


def required_items() -> list:
    """The headline items every reproduce run must report (the tests check them)."""
    return ["Fig. 10: LoL-PIM / GPU-GDDR, Qwen1.5-72B, 1024 GB",
            "Fig. 9: LoL-PIM / GPU-GDDR, Qwen1.5-7B, 1024 GB",
            "Fig. 9: LoL-PIM / PIM, Qwen1.5-7B, 1024 GB",
            "Fig. 10: LoL-PIM / PIM, Qwen1.5-72B, 1024 GB",
            "Fig. 11: DPA gain at a fixed TP/PP (max)",
            "Fig. 11: TP/PP spread with DPA (max / min)",
            "Fig. 4, §5.4: average batch, DPA + lazy / static (max)"] + [
        f"Table 8: {mn}, {n} nodes, {s} {k}" for mn, n in TABLE8
        for s in TABLE8_PAPER[mn] for k in ("tokens/s", "utilization")]


def reproduce(progress: bool = True, seed: int = 0) -> ModelResult:
    """The paper's headline figures against the model."""
    t0 = time.monotonic()
    f = figures(progress, seed)
    rows = (_fig9_rows(f) + _fig11_rows(f) + [_growth_row(f)] + _table8_rows(f)
            + _pingpong_rows(f))
    res = ModelResult("lolpim", "LoL-PIM (multi-node AiM PIM, long-context decoding) "
                      "reproduction: system model", {"seed": seed}, tables(f), plots(f),
                      data(f), rows=rows, assumptions=assumptions())
    res.seconds = time.monotonic() - t0
    return res

