"""``pimforge model pam``: every system at one configuration, and the SLO and batch sweeps
around it, as tables, plots and data."""
from __future__ import annotations

import time

from pimforge.base.config import config_to_dict
from pimforge.software import workloads as wl
from pimforge.software.energy import energy_data, energy_plot, energy_table
from pimforge.software.pam.assumptions import assumptions
from pimforge.software.pam.config import SYSTEMS, PamModelConfig
from pimforge.software.pam.energy import step_energy
from pimforge.software.pam.step import request_lengths, step, throughput
from pimforge.software.pam.sweeps import max_batch
from pimforge.software.report import ModelResult, Plot, Progress, Table

__all__ = ["run_model", "SLO_SWEEP", "BATCH_SWEEP"]

SLO_SWEEP = (50.0, 100.0, 150.0, 200.0, 300.0)      # ms
BATCH_SWEEP = tuple(2 ** k for k in range(2, 13))   # 4 .. 4,096


def _ms(r, key: str):
    """A step result's part in ms; None when it did not run (OOM)."""
    return None if r is None or r["oom"] else 1000 * r[key]


def _point(cfg: PamModelConfig, lengths: dict) -> tuple:
    """Each system at the config's batch, or at its own peak batch within the SLO: (table
    rows, data per system, energy per output token of each system that runs)."""
    rows, systems, energy = [], {}, []
    for s in SYSTEMS:
        if cfg.batch:
            r = step(s, cfg, cfg.batch, lengths)
            b = cfg.batch
        else:
            b, r = max_batch(s, cfg, cfg.slo_ms / 1000.0)
        tput = throughput(r) if b else float("nan")
        systems[s] = {"batch": b, "throughput": tput, "step_ms": _ms(r, "time"),
                      "fc_ms": _ms(r, "fc"), "attention_ms": _ms(r, "attention"),
                      "oom": bool(r is None or r["oom"])}
        oom = systems[s]["oom"]
        e = None if oom else step_energy(s, r, cfg, lengths["ctx"])
        if e is not None:
            energy.append(e)
        rows.append([s, b, "OOM" if oom else 1000 * r["time"],
                     None if oom else 1000 * r["fc"], None if oom else 1000 * r["attention"],
                     tput])
    return rows, systems, energy


def _point_table(cfg: PamModelConfig, lengths: dict, rows: list) -> Table:
    model = wl.get_model(cfg.model)
    at = f"batch {cfg.batch}" if cfg.batch else f"largest batch within {cfg.slo_ms:g} ms"
    return Table(f"{cfg.model} on {cfg.dataset}: one decoding step ({at})",
                 ["system", "batch", "step ms", "GEMM ms", "attention ms", "tokens/s"], rows,
                 note=f"mean context while decoding {lengths['ctx']:.0f} tokens; KV "
                      f"{model.kv_bytes_per_token / 1024:.0f} KiB per token")


def _slo_sweep(cfg: PamModelConfig, p: Progress) -> tuple:
    """Each system's peak throughput within each SLO of :data:`SLO_SWEEP`: (table, plot,
    data)."""
    series = {s: [] for s in SYSTEMS}
    for slo in SLO_SWEEP:
        for s in SYSTEMS:
            b, r = max_batch(s, cfg, slo / 1000.0)
            series[s].append(throughput(r) if b else float("nan"))
        p.step(f"SLO {slo:g} ms")
    table = Table("Throughput (tokens/s) at the largest batch within each SLO",
                  ["SLO ms"] + list(SYSTEMS),
                  [[slo] + [series[s][i] for s in SYSTEMS] for i, slo in enumerate(SLO_SWEEP)])
    plot = Plot("pam_slo", f"{cfg.model}, {cfg.dataset}: throughput vs SLO", "line",
                "SLO (ms)", "tokens/s", series, x=list(SLO_SWEEP), logy=True)
    return table, plot, {"slo_ms": list(SLO_SWEEP), **series}


def _batch_sweep(cfg: PamModelConfig, lengths: dict, p: Progress) -> tuple:
    """Each system's throughput at each batch of :data:`BATCH_SWEEP`: (table, plot, data)."""
    batches = list(BATCH_SWEEP)
    series = {s: [] for s in SYSTEMS}
    for b in batches:
        for s in SYSTEMS:
            series[s].append(throughput(step(s, cfg, b, lengths)))
        p.step(f"batch {b}")
    table = Table("Throughput (tokens/s) by batch size (OOM = out of memory)",
                  ["batch"] + list(SYSTEMS),
                  [[b] + [series[s][i] for s in SYSTEMS] for i, b in enumerate(batches)])
    plot = Plot("pam_batch", f"{cfg.model}, {cfg.dataset}: throughput vs batch", "line",
                "batch", "tokens/s", series, x=batches, logy=True)
    return table, plot, {"batch": batches, **series}


def run_model(cfg: PamModelConfig, progress: bool = True) -> ModelResult:
    """One configuration: every system at the config's batch (or its own largest batch within
    the SLO), plus the SLO and batch sweeps."""
    t0 = time.monotonic()
    lengths = request_lengths(cfg.dataset, cfg.seed)
    rows, systems, energy = _point(cfg, lengths)
    data = {"systems": systems, "energy": energy_data(energy)}
    at = f"batch {cfg.batch}" if cfg.batch else "each system's batch of the table above"
    tables = [_point_table(cfg, lengths, rows),
              energy_table(energy, f"{cfg.model} on {cfg.dataset}: energy per output token "
                                   f"({at})")]
    plots = [Plot("pam_systems", f"{cfg.model}, {cfg.dataset}: throughput", "bar", "system",
                  "tokens/s", {"throughput": [systems[s]["throughput"] for s in SYSTEMS]},
                  groups=list(SYSTEMS)),
             energy_plot(energy, "pam_energy", f"{cfg.model}, {cfg.dataset}: energy per output "
                         f"token by component")]
    slo, batch = cfg.sweep in ("slo", "all"), cfg.sweep in ("batch", "all")
    total = len(SLO_SWEEP) * slo + len(BATCH_SWEEP) * batch
    with Progress(total, "pam model", enabled=progress and total > 0) as p:
        if slo:
            table, plot, data["slo_sweep"] = _slo_sweep(cfg, p)
            tables.append(table)
            plots.append(plot)
        if batch:
            table, plot, data["batch_sweep"] = _batch_sweep(cfg, lengths, p)
            tables.append(table)
            plots.append(plot)
    res = ModelResult("pam", f"PAM system model: {cfg.model}, {cfg.dataset}", config_to_dict(cfg),
                      tables, plots, data, assumptions=assumptions())
    res.seconds = time.monotonic() - t0
    return res
