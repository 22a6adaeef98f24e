"""``pimforge model papi``: every system of §7 at one point (model, task, batch, speculation
length), PAPI's per-iteration placements and time breakdown, alpha, eqs. 3-4, and the batch and
speculation sweeps around the point."""
from __future__ import annotations

import time

from pimforge.base.config import config_to_dict
from pimforge.base.errors import ConfigError
from pimforge.software import workloads as wl
from pimforge.software.energy import energy_data, energy_plot, energy_table
from pimforge.software.papi.assumptions import assumptions
from pimforge.software.papi.config import FC_STACKS, FPU_AREA_PAPER, SYSTEMS, PapiModelConfig
from pimforge.software.papi.figures import FIG10_BATCH, FIG10_SPEC
from pimforge.software.papi.hardware import bank_bound, banks_per_die, pim_kind
from pimforge.software.papi.systems import PARTS, calibrate_alpha, run_system
from pimforge.software.papi.tables import result_dict
from pimforge.software.report import ModelResult, Plot, Progress, Table

__all__ = ["run_model"]

ENERGY_NOTE = ("a static batch's actions (prefill included) over its output tokens, priced by "
               "the shared energy table at the HBM die's node (pimforge model --describe lists "
               "the entries and their sources); static: the six A100s while they run a kernel "
               "and the 90 stacks' background over the whole batch")
COLUMNS = ["system", "tokens/s", "tokens/J", "speedup vs A100+AttAcc", "FC-on-GPU iters",
           "iters"] + [f"{p} s" for p in PARTS]


def _run(cfg, system, m, batch, spec, alpha):
    """One system (``configured``: PAPI's hardware with the configured FC placement)."""
    kw = {"fpu_area": cfg.fpu_area_mm2, "fc_fpus": cfg.fc_fpus, "cap": cfg.power_cap}
    if system == "configured":
        kw["fc"] = cfg.scheduler
    r = run_system("PAPI" if system == "configured" else system, m, cfg.task, batch, spec,
                   alpha=alpha, batches=cfg.batches, seed=cfg.seed, **kw)
    r.system = system
    return r


def _banks_table(cfg) -> Table:
    rows = []
    for name, a in (("paper", FPU_AREA_PAPER), ("configured", cfg.fpu_area_mm2)):
        rows.append([name, a, bank_bound(cfg.fc_fpus, a), banks_per_die(cfg.fc_fpus, a),
                     pim_kind(cfg.fc_fpus, 1, a).capacity / 2 ** 30])
    return Table(f"Eqs. 3-4: banks per FC-PIM die ({cfg.fc_fpus}P1B)",
                 ["FPU area", "mm^2", "eq. 3 bound", "banks", "stack GiB"], rows)


def _point(cfg, m, alpha, pg) -> tuple:
    runs = {}
    for s in ("configured",) + SYSTEMS:
        runs[s] = _run(cfg, s, m, cfg.batch, cfg.spec, alpha)
        pg.step(s)
    base = runs["A100+AttAcc"]
    rows = [[s, r.tokens_per_s, r.tokens_per_j, r.tokens_per_s / base.tokens_per_s,
             r.gpu_iters, r.iterations] + [r.parts[p] for p in PARTS] for s, r in runs.items()]
    label = (f"{m.name}, {cfg.task}, batch {cfg.batch}, spec {cfg.spec}; configured: PAPI, "
             f"{cfg.scheduler} scheduling, alpha {alpha:g}")
    tables = [Table(label, COLUMNS, rows, note="Mean of the seeded static batches; times are "
                    "per batch."), _banks_table(cfg)]
    rl = runs["configured"].rlp
    tables.append(Table("Configured: RLP over the decoding iterations (every tenth)",
                        ["iteration", "RLP", "RLP x TLP", "FC on"],
                        [[k, v, v * cfg.spec, "GPU" if v * cfg.spec > alpha else "FC-PIM"]
                         for k, v in list(enumerate(rl))[::max(1, len(rl) // 10)]]))
    plot = Plot("papi_point", f"{label}: tokens/s", "bar", "system", "tokens/s",
                {"tokens/s": [r.tokens_per_s for r in runs.values()]}, groups=list(runs))
    energy = [r.energy(s) for s, r in runs.items()]
    tables.append(energy_table(energy, f"Energy per output token: {label}", note=ENERGY_NOTE))
    eplot = energy_plot(energy, "papi_energy", f"{label}: energy per token by component",
                        normalize_to="A100+AttAcc")
    return tables, [plot, eplot], {"point": {s: result_dict(r) for s, r in runs.items()},
                                   "rlp_per_iteration": rl, "energy": energy_data(energy)}


def _sweep(cfg, m, alpha, what, pg) -> tuple:
    xs = FIG10_BATCH if what == "batch" else FIG10_SPEC
    names = ("configured", "A100+AttAcc", "AttAcc-only")
    res = {s: [] for s in names}
    for x in xs:
        b, s = (x, cfg.spec) if what == "batch" else (cfg.batch, x)
        for n in names:
            res[n].append(_run(cfg, n, m, b, s, alpha))
        pg.step(f"{what} {x}")
    table = Table(f"Tokens/s by {what}", [what] + list(names),
                  [[x] + [res[n][i].tokens_per_s for n in names] for i, x in enumerate(xs)])
    plot = Plot(f"papi_{what}", f"{m.name}: tokens/s by {what}", "line", what, "tokens/s",
                {n: [r.tokens_per_s for r in v] for n, v in res.items()}, x=list(xs), logy=True)
    return table, plot, {"x": list(xs), "results": {n: [result_dict(r) for r in v]
                                                    for n, v in res.items()}}


def run_model(cfg: PapiModelConfig, progress: bool = True) -> ModelResult:
    """Evaluate one configuration and the sweeps ``cfg.sweep`` asks for."""
    t0 = time.monotonic()
    m = wl.get_model(cfg.model)
    cap = FC_STACKS * pim_kind(cfg.fc_fpus, 1, cfg.fpu_area_mm2).capacity
    if m.weight_bytes > cap:
        raise ConfigError(cfg.UNIT, "fpu_area_mm2", cfg.fpu_area_mm2,
                          f"an area whose eq. 3 banks hold {m.name}'s "
                          f"{m.weight_bytes / 1e9:.0f} GB on {FC_STACKS} FC-PIM stacks "
                          f"(now {cap / 1e9:.0f} GB)")
    cal = calibrate_alpha(m, cfg.fpu_area_mm2, cfg.fc_fpus, cfg.power_cap)
    alpha = cfg.alpha or cal["alpha"]
    want = {"all": ("batch", "spec"), "none": ()}.get(cfg.sweep, (cfg.sweep,))
    steps = len(SYSTEMS) + 1 + sum(len(FIG10_BATCH if w == "batch" else FIG10_SPEC)
                                   for w in want)
    with Progress(steps, "papi", enabled=progress) as pg:
        tables, plots, data = _point(cfg, m, alpha, pg)
        for w in want:
            t, p, d = _sweep(cfg, m, alpha, w, pg)
            tables.append(t)
            plots.append(p)
            data[f"{w}_sweep"] = d
    tables.insert(1, Table("alpha", ["calibrated", "used", "first RLP x TLP with GPU faster"],
                           [[cal["alpha"], alpha, cal["crossover"]]]))
    data["alpha"] = {"calibrated": cal, "used": alpha}
    res = ModelResult("papi", f"PAPI system model: {m.name} on {cfg.task}, batch {cfg.batch}, "
                      f"spec {cfg.spec}", config_to_dict(cfg), tables, plots, data,
                      assumptions=assumptions())
    res.seconds = time.monotonic() - t0
    return res
