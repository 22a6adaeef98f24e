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

__all__ = ["reproduce", "WALL_CLOCK_ROWS", "required_items"]

# rows whose value is a wall time or derived from one (item -> why): left out of the
# committed baseline (software/baseline.py); none here, every row is modeled
WALL_CLOCK_ROWS: dict = {}

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


def _share(r, part) -> str:
    return f"{part} {1e3 * r.parts.get(part, 0.0):.1f} of the {1e3 * r.cycle_s:.1f} ms cycle"


def _gpu_cause(f, model, lol_paper) -> str:
    big = CAPACITIES[-1]
    g = f["fig9"][(model, big, "Musique", "GPU-GDDR")]
    return (f"our GPU-GDDR is a roofline at 85% of 4,096 GB/s per GPU with no kernel or "
            f"scheduling overhead and its best TP/PP ({_desc(g)}): {g.tokens_per_s:,.0f} tok/s "
            f"on Musique, whereas the paper's ratio over its own LoL-PIM ({lol_paper:,} tok/s, "
            f"Table 8) puts its GPU-GDDR near {lol_paper / {'Qwen1.5-72B': 8.54}.get(model, 3.53):,.0f}"
            f" tok/s; the DGX simulator's mapping and efficiencies are not given")


def _pim_cause(f, model) -> str:
    p = f["fig9"][(model, CAPACITIES[-1], "Musique", "PIM")]
    return (f"our baseline maps TP over all {p.tp} modules (PP 1, §3.2) and its all-reduces "
            f"cross the 10 GB/s node links: {_share(p, 'TP all-reduce')} ({_desc(p)}); the "
            f"paper's baseline reaches 737 tok/s at 72B (Table 8) with a mapping it does not "
            f"state")


def _fig9_rows(f) -> list:
    f9 = f["fig9"]
    big = CAPACITIES[-1]
    mx72 = max(_ratio(f9, "Qwen1.5-72B", c, "LoL-PIM(123)", "GPU-GDDR") for c in CAPACITIES[1:])
    return [
        _row("Fig. 10: LoL-PIM / GPU-GDDR, Qwen1.5-72B, 1024 GB", 8.54,
             _ratio(f9, "Qwen1.5-72B", big, "LoL-PIM(123)", "GPU-GDDR"), "x", "§8.2, abstract",
             f"geomean over the 3 tasks; max over 256-1024 GB {mx72:.2f}",
             _gpu_cause(f, "Qwen1.5-72B", 1740)),
        _row("Fig. 9: LoL-PIM / GPU-GDDR, Qwen1.5-7B, 1024 GB", 3.53,
             _ratio(f9, "Qwen1.5-7B", big, "LoL-PIM(123)", "GPU-GDDR"), "x", "§8.2",
             "geomean over the 3 tasks", _gpu_cause(f, "Qwen1.5-7B", 3668)),
        _row("Fig. 9: LoL-PIM / PIM, Qwen1.5-7B, 1024 GB", 4.74,
             _ratio(f9, "Qwen1.5-7B", big, "LoL-PIM(123)", "PIM"), "x", "§8.2, abstract",
             "geomean over the 3 tasks", _pim_cause(f, "Qwen1.5-7B")),
        _row("Fig. 10: LoL-PIM / PIM, Qwen1.5-72B, 1024 GB", 2.65,
             _ratio(f9, "Qwen1.5-72B", big, "LoL-PIM(123)", "PIM"), "x", "§8.2",
             "geomean over the 3 tasks", _pim_cause(f, "Qwen1.5-72B")),
    ]


def _fig11_rows(f) -> list:
    f11 = f["fig11"]
    gains, spreads, gaps = {}, [], []
    for cap in FIG11_CAPACITIES:
        tps = sorted({k[1] for k in f11 if k[0] == cap})
        st = {t: f11[(cap, t, "LoL-PIM(1)")] for t in tps}
        dp = {t: f11[(cap, t, "LoL-PIM(12)")] for t in tps}
        for t in tps:
            if not (math.isnan(st[t].tokens_per_s) or math.isnan(dp[t].tokens_per_s)):
                gains[(cap, t)] = dp[t].tokens_per_s / st[t].tokens_per_s
        d = [r.tokens_per_s for r in dp.values() if not math.isnan(r.tokens_per_s)]
        s = [r.tokens_per_s for r in st.values() if not math.isnan(r.tokens_per_s)]
        spreads.append(max(d) / min(d))
        gaps.append(max(d) / max(s))
    (cap, tp), gain = max(gains.items(), key=lambda kv: kv[1])
    a, b = f11[(cap, tp, "LoL-PIM(1)")], f11[(cap, tp, "LoL-PIM(12)")]
    return [
        _row("Fig. 11: DPA gain at a fixed TP/PP (max)", 1.3, gain, "x", "§8.3",
             f"Musique, Qwen1.5-7B, {'/'.join(map(str, FIG11_CAPACITIES))} GB, every TP/PP; "
             f"max at {cap} GB, TP {tp} x PP {a.pp}",
             f"there the static batch ({a.batch:.0f}) is below PP ({a.pp}), so the pipeline "
             f"idles ({_share(a, 'bubble')}); DPA's batch ({b.batch:.0f}) fills it "
             f"({_share(b, 'bubble')}); the paper's TP/PP grid is not given and may stop "
             f"short of such deep pipelines"),
        _row("Fig. 11: TP/PP spread with DPA (max / min)", 1.73, max(spreads), "x", "§8.3",
             "largest over the capacities",
             "deep PP idles below a batch of PP micro-batches and wide TP pays 10 GB/s "
             "all-reduces; the paper's exact TP/PP grid is not given"),
        _row("Fig. 11: best TP/PP with DPA / best without", 1.07, max(gaps), "x", "§8.3",
             "largest over the capacities ('up to 7%')",
             "the best point with DPA keeps the batch growth at the same TP/PP"),
    ]


def _growth_row(f) -> Row:
    g = f["fig4"]
    ratios = {k: v["lazy"] / v["static"] for k, v in g.items() if v["static"]}
    (cap, task), best = max(ratios.items(), key=lambda kv: kv[1])
    cap4 = f["fig4_caption"]
    own = ", ".join(f"N={n} {v['lazy'] / v['static']:.1f}x" for n, v in cap4.items()
                    if v["static"])
    return _row("Fig. 4, §5.4: average batch, DPA + lazy / static (max)", 4.8, best, "x",
                "§5.4 (+380%)", f"Qwen1.5-7B, the 3 tasks, 128-1024 GB; max at {task}, "
                f"{cap} GB (+{100 * (best - 1):.0f}%)",
                "static allocation reserves the 32K context, lazy DPA the 256-token chunks "
                "in use; with Table 2's means (13.5-16.4K) the growth stays near 32K / mean; "
                "+380% needs a mean context near 32K / 4.8 = 6.8K; on Fig. 4's own workload "
                f"(4K x N tokens on 80 GB x N) our lazy / static batch is {own}")


def _table8_cause(f, mn, s, r) -> str:
    t8 = f["table8"]
    if s == "PIM":
        return (f"TP-only HFA over {r.tp} modules (PP 1): all-reduces over the 10 GB/s node "
                f"links, {_share(r, 'TP all-reduce')}; the paper does not say how its baseline "
                f"maps each model")
    if s == "LoL-PIM(12)":
        step = t8[(mn, "LoL-PIM(123)")].tokens_per_s / r.tokens_per_s
        paper = TABLE8_PAPER[mn]["LoL-PIM(123)"][0] / TABLE8_PAPER[mn]["LoL-PIM(12)"][0]
        return (f"without ping-pong our serial channel kernels lose less to I/O than the "
                f"paper's (the ping-pong step is {step:.2f}x here, {paper:.2f}x in Table 8; "
                f"see the Fig. 7a rows); {_desc(r)}")
    return (f"{_share(r, 'TP all-reduce')} and {_share(r, 'bubble')} (2 us per message "
            f"assumed, 10 GB/s between nodes); {_desc(r)}")


def _table8_rows(f) -> list:
    t8 = f["table8"]
    rows = []
    for mn, nodes in TABLE8:
        for s, (tok, util) in TABLE8_PAPER[mn].items():
            r = t8[(mn, s)]
            cause = _table8_cause(f, mn, s, r)
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
        u = f["fig7a_unit"][op]
        if abs(u["saved"] / paper - 1) <= 0.2:
            cause = (f"at our ITPP shape the MACs outweigh the I/O more than at the ping-pong "
                     f"unit's reference shape {u['rows']} x {u['cols']}, where the cycle model "
                     f"saves {u['saved']:.0%}")
        else:
            cause = (f"the cycle model saves {u['saved']:.0%} at the unit's reference shape "
                     f"{u['rows']} x {u['cols']} too: with its GDDR6 timings (assumed in "
                     f"hw/lolpim/aim.py) the MAC tiles leave less GB-load and drain time to "
                     f"hide than the paper's Ramulator does")
        rows.append(_row(f"Fig. 7a: ping-pong saves, {op}", paper, v["saved"], "", "§6",
                         f"one channel, {v['rows']} x {v['cols']} (Qwen1.5-7B, ITPP, TP 4, "
                         f"16K tokens)", cause))
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

