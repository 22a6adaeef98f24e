"""``pimforge model lolpim``: the configured PIM system and every system of §8 at one point,
its cycle breakdown and batch by allocation, and the TP/PP and capacity sweeps around it."""
from __future__ import annotations

import time

from pimforge.base.config import config_to_dict
from pimforge.software import workloads as wl
from pimforge.software.energy import energy_data, energy_plot, energy_table
from pimforge.software.lolpim.assumptions import assumptions
from pimforge.software.lolpim.config import NODE, SYSTEMS, LolpimModelConfig
from pimforge.software.lolpim.energy import energy_result
from pimforge.software.lolpim.figures import batch_growth
from pimforge.software.lolpim.pim import tp_choices
from pimforge.software.lolpim.systems import Knobs, run_system
from pimforge.software.lolpim.tables import result_dict
from pimforge.software.report import ModelResult, Plot, Progress, Table

__all__ = ["run_model"]

NODE_SWEEP = (2, 4, 8, 16)
ENERGY_NOTE = ("one decode cycle's actions over the batch's tokens (software/lolpim/energy.py), "
               "priced by the shared energy table (pimforge model --describe lists its entries "
               "and sources); the paper gives no energy figure")
COLUMNS = ["system", "tokens/s", "batch", "TP", "PP", "micro-batches", "cycle ms", "util %",
           "configured / system"]


def _setup(cfg) -> dict:
    return {"partition": cfg.partition, "alloc": cfg.alloc, "pingpong": cfg.pingpong,
            "tp_only": cfg.tp_only}


def _knobs(cfg) -> Knobs:
    return Knobs(cfg.max_context, cfg.chunk, cfg.batches, cfg.seed)


def _configured(cfg, m, nodes, tp=None):
    return run_system("configured", m, cfg.task, nodes, _knobs(cfg),
                      tp=cfg.tp if tp is None else tp, micro=cfg.micro_batches,
                      setup=_setup(cfg))


def _row(r, ref) -> list:
    return [r.system, r.tokens_per_s, r.batch, r.tp, r.pp, r.micro_batches, 1e3 * r.cycle_s,
            100 * r.utilization if r.batch else None, ref.tokens_per_s / r.tokens_per_s]


def _point(cfg, m, pg) -> tuple:
    me = _configured(cfg, m, cfg.nodes)
    runs = {"configured": me}
    for s in SYSTEMS:
        runs[s] = run_system(s, m, cfg.task, cfg.nodes, _knobs(cfg))
        pg.step(s)
    label = (f"{m.name}, {cfg.task}, {cfg.nodes} nodes ({cfg.nodes * 64} GB); configured: "
             f"{cfg.partition}, {cfg.alloc}, ping-pong {'on' if cfg.pingpong else 'off'}")
    grow = batch_growth(m, cfg.task, cfg.nodes, _knobs(cfg), me.tp)
    tables = [Table(label, COLUMNS, [_row(r, me) for r in runs.values()],
                    note="OOM: the weights (or one request) do not fit."),
              Table("Configured system: busiest stage per cycle (ms)", ["part", "ms"],
                    [[k, 1e3 * v] for k, v in me.parts.items()]),
              Table(f"Average batch by allocation at TP {me.tp}", ["static", "DPA",
                                                                  "DPA + lazy", "growth %"],
                    [[grow["static"], grow["dpa"], grow["lazy"],
                      100 * (grow["lazy"] / grow["static"] - 1) if grow["static"] else None]])]
    plot = Plot("lolpim_point", f"{m.name}, {cfg.task}, {cfg.nodes} nodes: tokens/s", "bar",
                "system", "tokens/s", {"tokens/s": [r.tokens_per_s for r in runs.values()]},
                groups=list(runs), logy=True)
    energy = [energy_result(k, m, r, cfg.nodes) for k, r in runs.items() if r.batch]
    oom = [k for k, r in runs.items() if not r.batch]
    tables.append(energy_table(energy, f"Energy per output token: {label}",
                               note=ENERGY_NOTE + (f"; OOM, no energy: {', '.join(oom)}"
                                                   if oom else "")))
    eplot = energy_plot(energy, "lolpim_energy", f"{m.name}, {cfg.task}, {cfg.nodes} nodes: "
                        "energy per token by component")
    data = {"point": {k: result_dict(r) for k, r in runs.items()}, "batch_by_alloc": grow,
            "energy": energy_data(energy)}
    return tables, [plot, eplot], data


def _sweep_tp(cfg, m, pg) -> tuple:
    modules = cfg.nodes * NODE.modules
    grid = [modules] if cfg.tp_only else tp_choices(m, modules, cfg.partition)
    rs = [_configured(cfg, m, cfg.nodes, t) for t in grid]
    pg.step("TP/PP sweep")
    table = Table("Configured system by TP x PP", ["TP", "PP", "batch", "micro-batches",
                                                   "tokens/s"],
                  [[r.tp, r.pp, r.batch, r.micro_batches, r.tokens_per_s] for r in rs])
    plot = Plot("lolpim_tp_pp", f"{m.name}: tokens/s by TP (PP = modules / TP)", "line", "TP",
                "tokens/s", {"configured": [r.tokens_per_s for r in rs]}, x=grid)
    return table, plot, {"tp": grid, "results": [result_dict(r) for r in rs]}


def _sweep_nodes(cfg, m, pg) -> tuple:
    names = ("configured", "GPU-GDDR", "PIM")
    res = {n: [] for n in names}
    for nodes in NODE_SWEEP:
        res["configured"].append(_configured(cfg, m, nodes, 0))
        for s in names[1:]:
            res[s].append(run_system(s, m, cfg.task, nodes, _knobs(cfg)))
        pg.step(f"{nodes} nodes")
    table = Table("Tokens/s by capacity (best TP/PP)", ["nodes", "GB"] + list(names),
                  [[n, 64 * n] + [res[s][i].tokens_per_s for s in names]
                   for i, n in enumerate(NODE_SWEEP)])
    plot = Plot("lolpim_capacity", f"{m.name}, {cfg.task}: tokens/s by capacity", "line",
                "GB", "tokens/s", {s: [r.tokens_per_s for r in res[s]] for s in names},
                x=[64 * n for n in NODE_SWEEP], logy=True)
    return table, plot, {"nodes": list(NODE_SWEEP),
                         "results": {s: [result_dict(r) for r in v] for s, v in res.items()}}


def run_model(cfg: LolpimModelConfig, progress: bool = True) -> ModelResult:
    """Evaluate one configuration and the sweeps ``cfg.sweep`` asks for."""
    t0 = time.monotonic()
    m = wl.get_model(cfg.model)
    want = {"all": ("tp_pp", "capacity"), "none": ()}.get(cfg.sweep, (cfg.sweep,))
    steps = len(SYSTEMS) + (1 if "tp_pp" in want else 0) + (len(NODE_SWEEP) if "capacity" in
                                                            want else 0)
    with Progress(steps, "lolpim", enabled=progress) as pg:
        tables, plots, data = _point(cfg, m, pg)
        for w, fn in (("tp_pp", _sweep_tp), ("capacity", _sweep_nodes)):
            if w in want:
                t, p, d = fn(cfg, m, pg)
                tables.append(t)
                plots.append(p)
                data[f"{w}_sweep"] = d
    res = ModelResult("lolpim", f"LoL-PIM system model: {m.name} on {cfg.task}, "
                      f"{cfg.nodes} nodes", config_to_dict(cfg), tables, plots, data,
                      assumptions=assumptions())
    res.seconds = time.monotonic() - t0
    return res
