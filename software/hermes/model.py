"""``pimforge model hermes``: every system at one configuration, Hermes' step breakdown, and
the batch, DIMM-count and multiplier sweeps around it."""
from __future__ import annotations

import math
import time

from pimforge.base.config import config_to_dict
from pimforge.software import workloads as wl
from pimforge.software.energy import energy_data, energy_plot, energy_table
from pimforge.software.hermes.assumptions import assumptions
from pimforge.software.hermes.energy import energy_result
from pimforge.software.hermes.config import (
    BATCHES, DIMM_COUNTS, MULTIPLIERS, OPT_MODELS, SYSTEMS, HermesModelConfig
)
from pimforge.software.hermes.figures import gemv_preset
from pimforge.software.hermes.step import hermes_step, run_system
from pimforge.software.report import ModelResult, Plot, Progress, Table

__all__ = ["run_model"]

ENERGY_NOTE = ("one decode step's actions over its tokens, prefill left out "
               "(software/hermes/energy.py), priced by the shared energy table (pimforge model "
               "--describe lists its entries and sources), the NDP cores' logic at ASAP7 (Table "
               "II: 7 nm); static: the GPU and every DIMM over the step, Hermes-host's CPU too; "
               "the paper gives no energy result")
SWEEPS = {"batch": BATCHES, "dimms": DIMM_COUNTS, "multipliers": MULTIPLIERS}


def _tp(cfg, run) -> float:
    return run.tokens_per_s(cfg.output_len, cfg.prefill)


def _point(cfg, m) -> tuple:
    runs = {s: run_system(s, m, cfg.batch, cfg) for s in SYSTEMS
            if s not in ("FlexGen", "Deja Vu") or m.name in OPT_MODELS}
    h = runs["Hermes"]
    rows = [[s, _tp(cfg, r), 1e3 * r.step, r.prefill, _tp(cfg, h) / _tp(cfg, r)]
            for s, r in runs.items()]
    tables = [Table(f"{m.name}, batch {cfg.batch}, {cfg.dimms} DIMMs, {cfg.gemv}, "
                    f"{cfg.variant}", ["system", "tokens/s", "step ms", "prefill s",
                                       "Hermes speedup"], rows),
              Table("Hermes decode step breakdown (ms per token)", ["part", "ms"],
                    [[k, 1e3 * v] for k, v in h.parts.items()],
                    note=", ".join(f"{k} = {v:.3g}" for k, v in h.info.items()))]
    data = {"point": {s: {"tokens_per_s": _tp(cfg, r), "step_s": r.step, "prefill_s": r.prefill,
                          "parts": r.parts} for s, r in runs.items()}}
    plot = Plot("hermes_point", f"{m.name} b={cfg.batch}: tokens/s", "bar", "system",
                "tokens/s", {"tokens/s": [_tp(cfg, r) for r in runs.values()]},
                groups=list(runs), logy=True)
    energy = [energy_result(s, m, cfg.batch, cfg, r) for s, r in runs.items() if r.fits]
    unfit = [s for s, r in runs.items() if not r.fits]
    label = f"{m.name}, batch {cfg.batch}, {cfg.dimms} DIMMs"
    tables.append(energy_table(energy, f"Energy per decoded token: {label}", note=ENERGY_NOTE
                               + (f"; does not fit, no energy: {', '.join(unfit)}"
                                  if unfit else "")))
    eplot = energy_plot(energy, "hermes_energy", f"{label}: energy per decoded token by "
                        "component")
    data["energy"] = energy_data(energy)
    return tables, [plot, eplot], data


def _sweep(cfg, m, name, pg) -> tuple:
    tps = []
    for v in SWEEPS[name]:
        kw = {"batch": {}, "dimms": {"dimms": v}, "multipliers": {"gemv": gemv_preset(v)}}[name]
        b = v if name == "batch" else cfg.batch
        tps.append(_tp(cfg, hermes_step(m, b, cfg, **kw)))
        pg.step(f"{name} {v}")
    grid = list(SWEEPS[name])
    table = Table(f"Hermes tokens/s by {name}", [name, "tokens/s"],
                  [[v, t] for v, t in zip(grid, tps)],
                  note="OOM: does not fit the DIMMs" if any(math.isnan(t) for t in tps) else "")
    plot = Plot(f"hermes_{name}", f"{m.name}: tokens/s by {name}", "line", name, "tokens/s",
                {"Hermes": tps}, x=grid)
    return table, plot, {"grid": grid, "tokens_per_s": tps}


def run_model(cfg: HermesModelConfig, progress: bool = True) -> ModelResult:
    """Evaluate one configuration and the sweeps ``cfg.sweep`` asks for."""
    t0 = time.monotonic()
    m = wl.get_model(cfg.model)
    want = list(SWEEPS) if cfg.sweep == "all" else ([] if cfg.sweep == "none" else [cfg.sweep])
    with Progress(1 + sum(len(SWEEPS[w]) for w in want), "hermes", enabled=progress) as pg:
        tables, plots, data = _point(cfg, m)
        pg.step("point")
        for w in want:
            t, p, d = _sweep(cfg, m, w, pg)
            tables.append(t)
            plots.append(p)
            data[f"{w}_sweep"] = d
    res = ModelResult("hermes", f"Hermes system model: {m.name}, batch {cfg.batch}",
                      config_to_dict(cfg), tables, plots, data, assumptions=assumptions())
    res.seconds = time.monotonic() - t0
    return res
