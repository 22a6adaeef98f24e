"""The data behind ``reproduce lolpim``: Figs. 9-10 (throughput by capacity), Fig. 11 (TP/PP with
and without DPA), Table 8 (throughput and utilization by model scale), Fig. 4 (batch growth),
Fig. 7a (ping-pong per operation) and Fig. 12 (latency breakdown)."""
from __future__ import annotations

import numpy as np

from pimforge.hw.lolpim.perf import KERNELS
from pimforge.software import workloads as wl
from pimforge.software.lolpim.aim_time import channel_gemv_seconds
from pimforge.software.lolpim.config import (
    CAPACITIES, CHUNK_TOKENS, MAX_CONTEXT, NODE, SYSTEMS, TASKS, system_setup
)
from pimforge.software.lolpim.pim import ROW_TOKENS, capacity_tokens, stages, tp_choices
from pimforge.software.lolpim.systems import Knobs, run_system
from pimforge.software.lolpim.workload import form_batches
from pimforge.software.report import Progress

__all__ = ["figures", "FIG9_MODELS", "FIG11_CAPACITIES", "TABLE8", "pingpong_ops", "batch_growth",
           "pingpong_unit_shapes", "fig4_caption"]

FIG9_MODELS = ("Qwen1.5-7B", "Qwen1.5-72B")
FIG11_CAPACITIES = (256, 512, 1024)
TABLE8 = (("Qwen1.5-7B", 4), ("Qwen1.5-14B", 5), ("Qwen1.5-72B", 16))
TABLE8_SYSTEMS = ("PIM", "LoL-PIM(1)", "LoL-PIM(12)", "LoL-PIM(123)")


def _fig9(kn, pg) -> dict:
    out = {}
    for mn in FIG9_MODELS:
        m = wl.get_model(mn)
        for cap in CAPACITIES:
            for task in TASKS:
                for s in SYSTEMS:
                    out[(mn, cap, task, s)] = run_system(s, m, task, cap // 64, kn)
            pg.step(f"Fig. 9/10 {mn} {cap} GB")
    return out


def _fig11(kn, pg) -> dict:
    """Musique, Qwen1.5-7B: every TP/PP at each capacity, ITPP static (1) and DPA (12)."""
    m = wl.get_model("Qwen1.5-7B")
    out = {}
    for cap in FIG11_CAPACITIES:
        nodes = cap // 64
        for tp in tp_choices(m, nodes * NODE.modules):
            for s in ("LoL-PIM(1)", "LoL-PIM(12)"):
                out[(cap, tp, s)] = run_system(s, m, "Musique", nodes, kn, tp=tp)
        pg.step(f"Fig. 11 {cap} GB")
    return out


def _table8(kn, pg) -> dict:
    out = {}
    for mn, nodes in TABLE8:
        m = wl.get_model(mn)
        for s in TABLE8_SYSTEMS:
            out[(mn, s)] = run_system(s, m, "Musique", nodes, kn)
        pg.step(f"Table 8 {mn}")
    return out


def batch_growth(m, task: str, nodes: int, kn: Knobs, tp: int = 0) -> dict:
    """Average batch under static, DPA and lazy allocation at one TP (default: the smallest
    TP, the one that leaves the least KV capacity per request)."""
    modules = nodes * NODE.modules
    tp = tp or tp_choices(m, modules)[0]
    cap = capacity_tokens(m, stages(m, modules, tp), NODE.module_bytes)
    out = {}
    for alloc in ("static", "dpa", "lazy"):
        bs = form_batches(task, alloc, cap, max_context=kn.max_context, chunk=kn.chunk,
                          count=kn.batches, seed=kn.seed)
        out[alloc] = float(np.mean([b.size for b in bs])) if bs else 0.0
    return out


def _fig4(kn) -> dict:
    m = wl.get_model("Qwen1.5-7B")
    return {(cap, task): batch_growth(m, task, cap // 64, kn) for cap in CAPACITIES
            for task in TASKS}


def fig4_caption(n_values=(1, 2, 4, 8)) -> dict:
    """Fig. 4's own workload (caption): 80 GB x N of capacity, every request 4K x N tokens,
    Qwen1.5-7B; batch under static (32K each) and lazy (chunks in use) allocation, the KV
    space being what the weights leave."""
    m = wl.get_model("Qwen1.5-7B")
    out = {}
    for n in n_values:
        tokens = (80e9 * n - m.weight_bytes) / m.kv_bytes_per_token
        ctx = 4096 * n
        static = tokens // MAX_CONTEXT
        lazy = tokens // (-(-ctx // CHUNK_TOKENS) * CHUNK_TOKENS)
        out[n] = {"capacity_gb": 80 * n, "context": ctx, "static": static, "lazy": lazy}
    return out


def pingpong_ops(model: str = "Qwen1.5-7B", tp: int = 4, context: int = 16384) -> dict:
    """Fig. 7a: one module's channel GEMV per operation, serial vs ping-pong, at the ITPP shapes
    (``context`` tokens, ``tp`` modules per layer group): fraction of the latency saved."""
    m = wl.get_model(model)
    ch = NODE.channels_per_module
    lr = -(-context // ROW_TOKENS) * ROW_TOKENS
    ffn1 = (2 if m.gated_ffn else 1) * m.ffn
    shapes = {"QK^T": (lr // ch, m.head_dim),
              "SV": (min(m.head_dim, -(-(m.heads // tp) * m.head_dim // ch)), lr),
              "FFN1": (-(-ffn1 // (tp * ch)), m.hidden),
              "FFN2": (-(-m.hidden // ch), m.ffn // tp)}
    out = {}
    for op, (r, c) in shapes.items():
        serial = channel_gemv_seconds(r, c, False)
        pp = channel_gemv_seconds(r, c, True)
        out[op] = {"rows": r, "cols": c, "serial_s": serial, "pingpong_s": pp,
                   "saved": 1.0 - pp / serial}
    return out


def pingpong_unit_shapes() -> dict:
    """Fig. 7a at the ping-pong unit's own reference shapes (``hw/lolpim/aim.KERNELS``)."""
    out = {}
    for op, (r, c) in KERNELS.items():
        serial = channel_gemv_seconds(r, c, False)
        out["SV" if op == "S.V" else op] = {"rows": r, "cols": c,
                                            "saved": 1.0 - channel_gemv_seconds(r, c, True)
                                            / serial}
    return out


def figures(progress: bool = True, seed: int = 0, batches: int = 2) -> dict:
    """Everything ``reproduce`` reports, deterministic for a seed."""
    kn = Knobs(batches=batches, seed=seed)
    steps = len(FIG9_MODELS) * len(CAPACITIES) + len(FIG11_CAPACITIES) + len(TABLE8) + 1
    with Progress(steps, "lolpim", enabled=progress) as pg:
        f = {"fig9": _fig9(kn, pg), "fig11": _fig11(kn, pg), "table8": _table8(kn, pg)}
        f["fig4"] = _fig4(kn)
        f["fig4_caption"] = fig4_caption()
        f["fig7a"] = pingpong_ops()
        f["fig7a_unit"] = pingpong_unit_shapes()
        f["fig12"] = {s: f["table8"][("Qwen1.5-72B", s)] for s in TABLE8_SYSTEMS}
        pg.step("Figs. 4, 7a, 12")
    f["setups"] = {s: system_setup(s) for s in SYSTEMS if not s.startswith("GPU")}
    return f
