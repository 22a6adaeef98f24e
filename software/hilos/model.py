"""``pimforge model hilos``: every system at one configuration, and the context, SmartSSD-count,
alpha and spill-interval sweeps around it, as tables, plots and data."""
from __future__ import annotations

import time

import numpy as np

from pimforge.base.config import config_to_dict
from pimforge.software import devices as dev
from pimforge.software import workloads as wl
from pimforge.software.energy import energy_data, energy_plot, energy_table
from pimforge.software.hilos.energy import step_energy
from pimforge.software.hilos.assumptions import assumptions
from pimforge.software.hilos.config import ALPHAS, CONTEXTS, DEVICE_COUNTS, SPILLS, HilosModelConfig
from pimforge.software.hilos.step import all_systems, hilos_alpha, ratio, step_hilos, tput
from pimforge.software.report import ModelResult, Plot, Progress, Table

__all__ = ["run_model", "SWEEPS"]

SWEEPS = {"context": CONTEXTS, "devices": DEVICE_COUNTS, "alpha": ALPHAS, "spill": SPILLS}


def _point(cfg: HilosModelConfig, m, gpu, devs: tuple) -> tuple:
    """Every system at the config's point: (tables, plots, data, FLEX(SSD) tokens/s)."""
    b, s, n, N, pre = cfg.batch, cfg.context, cfg.output_len, cfg.smartssds, cfg.prefill
    point = all_systems(m, gpu, b, s, n, cfg, devs)
    base = tput(point["FLEX(SSD)"], n, pre)
    rows = []
    for name, st in point.items():
        tp = tput(st, n, pre)
        rows.append([name, st.batch if not st.oom else "OOM", tp, ratio(tp, base), st.step,
                     st.bound])
    a_used = hilos_alpha(m, N, cfg.alpha, cfg.xcache)
    hs = point[f"HILOS({N})"]
    tables = [Table(f"Throughput at {m.name}, s={s:,}, b={b}, n={n} ({cfg.gpu})",
                    ["system", "batch", "tokens/s", "vs FLEX(SSD)", "step s", "bound"],
                    rows, note=f"HILOS alpha = {a_used:g} (config {cfg.alpha:g}), "
                    f"c = {cfg.spill_interval}, X-cache {cfg.xcache}, writeback "
                    f"{cfg.writeback}; prefill {'included' if pre else 'excluded'}."),
              Table(f"HILOS({N}) step breakdown (s per decoding step)",
                    ["resource", "seconds", "kind"],
                    [[k, v, "overlapped"] for k, v in hs.parts.items()]
                    + [[k, v, "serial"] for k, v in hs.serial.items()])]
    data = {"point": {k: {"batch": v.batch, "throughput": tput(v, n, pre), "step_s": v.step,
                          "bound": v.bound, "parts": v.parts, "serial": v.serial}
                      for k, v in point.items()},
            "alpha_used": a_used}
    plot = Plot("hilos_point", f"{m.name} s={s}: throughput normalized to FLEX(SSD)",
                "bar", "system", "x FLEX(SSD)",
                {"speedup": [ratio(tput(v, n, pre), base) for v in point.values()]},
                groups=list(point))
    energy = _energy(point, N)
    tables.append(energy_table(energy, f"Energy per output token at {m.name}, s={s:,}, b={b} "
                                       "(decoding)",
                               note="action counts x the energy table; SmartSSD FPGAs at HILOS "
                                    "Table 3's measured power, SSDs at their datasheet power "
                                    f"(§6.3); 'HILOS({N}) units' prices the FPGA bottom-up from "
                                    "the kernel's activity model and an FPGA's static power (a "
                                    "floor: the table's ASIC figures under-price FPGA logic)"))
    data["energy"] = energy_data(energy)
    eplot = energy_plot(energy, "hilos_energy", f"{m.name} s={s}: energy per output token",
                        normalize_to="FLEX(SSD)")
    return tables, [plot, eplot], data, base


def _energy(point: dict, n_dev: int) -> list:
    """Energy per output token of every system that runs, and HILOS(n_dev) priced bottom-up."""
    out = [e for e in (step_energy(st) for st in point.values()) if e is not None]
    hs = point[f"HILOS({n_dev})"]
    if not hs.oom:
        out.append(step_energy(hs, "units", label=f"HILOS({n_dev}) units"))
    return out


def _context_sweep(cfg, m, gpu, devs, pg) -> tuple:
    """Every system's speedup over FLEX(SSD) at each context: (table, plot, data)."""
    b, n, pre = cfg.batch, cfg.output_len, cfg.prefill
    ser = {}
    for ctx in CONTEXTS:
        sysd = all_systems(m, gpu, b, ctx, n, cfg, devs)
        bs = tput(sysd["FLEX(SSD)"], n, pre)
        for k, st in sysd.items():
            ser.setdefault(k, []).append(ratio(tput(st, n, pre), bs))
        pg.step(f"context {ctx}")
    table = Table("Context sweep: throughput / FLEX(SSD)", ["context"] + list(ser),
                  [[c] + [ser[k][i] for k in ser] for i, c in enumerate(CONTEXTS)])
    plot = Plot("hilos_context", f"{m.name}: speedup over FLEX(SSD) vs context", "bar",
                "context", "x FLEX(SSD)", ser, groups=[f"{c // 1024}K" for c in CONTEXTS])
    return table, plot, {"contexts": list(CONTEXTS), "speedup": ser}


def _device_sweep(cfg, m, gpu, base, pg) -> tuple:
    """HILOS(N) over FLEX(SSD) for each SmartSSD count: (table, plot, data)."""
    b, s, n, pre = cfg.batch, cfg.context, cfg.output_len, cfg.prefill
    tps = []
    for k in DEVICE_COUNTS:
        tps.append(tput(step_hilos(m, gpu, b, s, n, k, cfg.alpha, cfg.spill_interval,
                                   cfg.xcache, cfg.writeback), n, pre))
        pg.step(f"N={k}")
    table = Table("SmartSSD-count sweep", ["N", "alpha", "tokens/s", "vs FLEX(SSD)"],
                  [[k, hilos_alpha(m, k, cfg.alpha, cfg.xcache), t, ratio(t, base)]
                   for k, t in zip(DEVICE_COUNTS, tps)])
    plot = Plot("hilos_devices", f"{m.name} s={s}: HILOS(N) over FLEX(SSD)", "line",
                "SmartSSDs", "x FLEX(SSD)", {"HILOS": [ratio(t, base) for t in tps]},
                x=list(DEVICE_COUNTS))
    return table, plot, {"devices": list(DEVICE_COUNTS), "throughput": list(tps)}


def _best(grid: tuple, tps: list):
    """The grid value of the highest throughput (None when none ran) and that throughput."""
    arr = np.array(tps, float)
    best = grid[int(np.nanargmax(arr))] if np.isfinite(arr).any() else None
    return best, np.nanmax(arr)


def _alpha_sweep(cfg, m, gpu, pg) -> tuple:
    """HILOS(N) throughput for each X-cache ratio alpha: (table, plot, data)."""
    b, s, n, N, pre = cfg.batch, cfg.context, cfg.output_len, cfg.smartssds, cfg.prefill
    tps = []
    for a in ALPHAS:
        tps.append(tput(step_hilos(m, gpu, b, s, n, N, a, cfg.spill_interval, True,
                                   cfg.writeback), n, pre))
        pg.step(f"alpha {a}")
    best, top = _best(ALPHAS, tps)
    table = Table(f"Alpha sweep (N={N})", ["alpha", "tokens/s", "vs best"],
                  [[a, t, ratio(t, top)] for a, t in zip(ALPHAS, tps)],
                  note=f"formula alpha = {hilos_alpha(m, N):g}; sweep best = {best}")
    plot = Plot("hilos_alpha", f"{m.name} s={s}: throughput vs alpha", "line", "alpha",
                "tokens/s", {"HILOS": list(tps)}, x=list(ALPHAS))
    return table, plot, {"alpha": list(ALPHAS), "throughput": list(tps), "best": best,
                         "formula": hilos_alpha(m, N)}


def _spill_sweep(cfg, m, gpu, pg) -> tuple:
    """HILOS(N) throughput for each delayed-writeback spill interval c: (table, plot, data)."""
    b, s, n, N, pre = cfg.batch, cfg.context, cfg.output_len, cfg.smartssds, cfg.prefill
    tps = []
    for c in SPILLS:
        tps.append(tput(step_hilos(m, gpu, b, s, n, N, cfg.alpha, c, cfg.xcache, True), n, pre))
        pg.step(f"c {c}")
    best, top = _best(SPILLS, tps)
    table = Table(f"Spill-interval sweep (N={N})", ["c", "tokens/s", "vs best"],
                  [[c, t, ratio(t, top)] for c, t in zip(SPILLS, tps)], note=f"best c = {best}")
    plot = Plot("hilos_spill", f"{m.name} s={s}: throughput vs spill interval c", "line", "c",
                "tokens/s", {"HILOS": list(tps)}, x=list(SPILLS))
    return table, plot, {"c": list(SPILLS), "throughput": list(tps), "best": best}


def run_model(cfg: HilosModelConfig, progress: bool = True) -> ModelResult:
    """Evaluate one configuration and the sweeps ``cfg.sweep`` asks for."""
    t0 = time.monotonic()
    m, gpu = wl.get_model(cfg.model), dev.GPUS[cfg.gpu]
    devs = tuple(sorted({*DEVICE_COUNTS, cfg.smartssds}))
    want = set(SWEEPS) if cfg.sweep == "all" else (
        set() if cfg.sweep == "none" else {cfg.sweep})
    total = 1 + sum(len(grid) for name, grid in SWEEPS.items() if name in want)
    with Progress(total, "hilos", enabled=progress) as pg:
        tables, plots, data, base = _point(cfg, m, gpu, devs)
        pg.step("point")
        sweeps = []
        if "context" in want:
            sweeps.append(("context_sweep", _context_sweep(cfg, m, gpu, devs, pg)))
        if "devices" in want:
            sweeps.append(("device_sweep", _device_sweep(cfg, m, gpu, base, pg)))
        if "alpha" in want:
            sweeps.append(("alpha_sweep", _alpha_sweep(cfg, m, gpu, pg)))
        if "spill" in want:
            sweeps.append(("spill_sweep", _spill_sweep(cfg, m, gpu, pg)))
    for key, (table, plot, sweep_data) in sweeps:
        tables.append(table)
        plots.append(plot)
        data[key] = sweep_data
    res = ModelResult("hilos", f"HILOS system model: {m.name}, s={cfg.context:,}, "
                      f"N={cfg.smartssds}", config_to_dict(cfg), tables, plots, data,
                      assumptions=assumptions())
    res.seconds = time.monotonic() - t0
    return res
