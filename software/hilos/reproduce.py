"""``pimforge reproduce hilos``: the paper's headline figures (Figures 10, 12-15, Table 3, §6.4)
next to the model's, with the cause of every gap, and the figures' tables and plots."""
from __future__ import annotations

import math
import time

import numpy as np

from pimforge.software import devices as dev
from pimforge.software import workloads as wl
from pimforge.software.devices import GB
from pimforge.software.energy import energy_plot, energy_table
from pimforge.software.hilos.energy import FPGA_STATIC, accelerator_power, figure17
from pimforge.software.hilos.assumptions import assumptions
from pimforge.software.hilos.config import (
    ALPHAS, CPU_ATTN_BW, DEFAULT_DEVICES, DEVICE_COUNTS, DMA_ROW_S, PAGE_WRITE_OP_S, SPILLS, SYSTEMS
)
from pimforge.software.hilos.figures import (
    ABLATION, FIG10_GRID, FIG14_CONTEXTS, FIG14_MODELS, FIG14_OUTPUTS, FIG15_GRID, figures,
    peak_gflops
)
from pimforge.software.hilos.formulas import traffic_ratio
from pimforge.software.hilos.step import hilos_alpha, ratio
from pimforge.software.report import ModelResult, Plot, Row, Table

__all__ = ["reproduce", "WALL_CLOCK_ROWS", "fig17_rows", "table3_power_rows", "PAPER_POWER"]

# rows whose value is a wall time or derived from one (item -> why): left out of the
# committed baseline (software/baseline.py); none here, every row is modeled
WALL_CLOCK_ROWS: dict = {}

P2P = f"{dev.SMARTSSD.p2p_bw / GB:.1f} GB/s"        # a SmartSSD's flash read: "3.0 GB/s"
CPU_ATTN = f"{CPU_ATTN_BW / GB:g} GB/s"              # FlexGen's CPU attention: "12 GB/s"


def _range_rows(label: str, paper: tuple, values, source: str, note: str) -> list:
    """Two rows, the least and the greatest of ``values``, against the paper's range."""
    return [Row(f"{label} {end}", p, float(f(values)), source=source, note=note)
            for end, p, f in (("min", paper[0], np.nanmin), ("max", paper[1], np.nanmax))]


def _speedup(fig10, key, sysname, base="FLEX(SSD)"):
    return ratio(fig10[key][sysname], fig10[key][base])


def _fig10_peak_rows(fig10) -> list:
    """The largest HILOS speedup, and the range where FLEX(DRAM) cannot hold the KV cache."""
    def sp(key, sysname):
        return _speedup(fig10, key, sysname)

    grid = FIG10_GRID
    hil = [sp(k, f"HILOS({N})") for k in grid for N in DEVICE_COUNTS]
    best_cell = max(((k, N) for k in grid for N in DEVICE_COUNTS),
                    key=lambda kn: np.nan_to_num(sp(kn[0], f"HILOS({kn[1]})"), nan=-1))
    rows = [Row("Fig 10: max HILOS speedup over FLEX(SSD)", 7.86, float(np.nanmax(hil)),
                source="HILOS §6.3", note=f"at {best_cell[0][0]} s={best_cell[0][1]:,} "
                f"HILOS({best_cell[1]}); KV-read bound: N x {P2P} P2P plus the "
                f"X-cache path vs FLEX(SSD) whose RAID read and CPU attention ({CPU_ATTN}, "
                "assumed) serialize")]
    oom = [k for k in grid if math.isnan(fig10[k]["FLEX(DRAM)"])]
    lc = [sp(k, "HILOS(16)") for k in oom]
    label = "Fig 10: long context (FLEX(DRAM) OOM), HILOS(16)/FLEX(SSD)"
    if not lc:
        return rows + [Row(f"{label} min", 5.3, None, source="HILOS §6.3",
                           note="FLEX(DRAM) never OOMs in the grid")]
    return rows + [
        Row(f"{label} min", 5.3, float(np.nanmin(lc)), source="HILOS §6.3",
            note=f"{len(oom)} OOM points: " + ", ".join(f"{k[0]} {k[1] // 1024}K" for k in oom)),
        Row(f"{label} max", 7.8, float(np.nanmax(lc)), source="HILOS §6.3",
            note="same points; HILOS(16) taken as the paper's range reaches the 7.86x maximum")]


def _fig10_baseline_rows(fig10) -> list:
    """HILOS(N) against FLEX(DRAM) where it runs, and FLEX(16 SSDs) against FLEX(SSD)."""
    grid = FIG10_GRID
    fits = [k for k in grid if not math.isnan(fig10[k]["FLEX(DRAM)"])]
    rows = []
    for N, lo, hi in ((4, 1.10, 1.36), (16, 1.88, 2.49)):
        r = [_speedup(fig10, k, f"HILOS({N})", "FLEX(DRAM)") for k in fits]
        note = ("over the points where FLEX(DRAM) runs (reduced batch); both are KV-bound at "
                f"long context: HILOS(N) reads at N x {P2P} (+ X-cache) vs CPU attention at "
                f"{CPU_ATTN} (assumed, set from this comparison), so the ratio grows ~linearly "
                "in N where the paper's grows ~1.8x from 4 to 16 devices")
        rows += _range_rows(f"Fig 10: HILOS({N}) / FLEX(DRAM)", (lo, hi), r, "HILOS §6.3", note)
    r16 = [_speedup(fig10, k, "FLEX(16 SSDs)") for k in grid]
    note16 = ("both reads end at ~25 GB/s (4 x PCIe 4.0 x4 vs the chassis x16 link); the model "
              "has no PCIe-switch / U.2-adapter overhead (the paper gives none), so the gap "
              "comes only from the weights and write paths")
    return rows + _range_rows("Fig 10: FLEX(16 SSDs) / FLEX(SSD)", (0.64, 0.94), r16,
                              "HILOS §6.3", note16)


def _fig15_rows(ab) -> list:
    ans = [v["ANS"] for v in ab.values()]
    wb = [v["ANS+WB"] / v["ANS"] for v in ab.values()]
    xg = [v["ANS+X"] / v["ANS"] for v in ab.values()]
    return [
        Row("Fig 15: ANS over FLEX(SSD), max", 3.39, float(np.nanmax(ans)), source="HILOS §6.5",
            note=f"N = 8, OPT-30B/66B/175B and GLaM-143B, 8K-128K; ANS reads 8 x {P2P} vs "
                 "FLEX(SSD)'s serialized read + CPU attention"),
        Row("Fig 15: ANS+WB over ANS, max", 1.32, float(np.nanmax(wb)), source="HILOS §6.5",
            note=f"sync sub-page writes at {PAGE_WRITE_OP_S * 1e6:g} us each, host-issued one "
                 "by one (assumed); the paper gives no write latency"),
        Row("Fig 15: ANS+X over ANS, max", 1.64, float(np.nanmax(xg)), source="HILOS §6.5",
            note="alpha = 0.5 at N = 8: flash reads 0.75x of the KV cache and the X-cache path "
                 "B_PCI = 8 GB/s balanced (§4.2)")]


def _fig13_rows(f13) -> list:
    m175 = wl.get_model("OPT-175B")
    rows = [Row("§6.4: alpha from the formula at N = 8", 0.5, hilos_alpha(m175, DEFAULT_DEVICES),
                unit="", source="HILOS §4.2, §6.4", note=f"B_SSD = 8 x {P2P}, B_PCI = 8 GB/s "
                "(set from the paper's ratio ~3); 2 x 8 / (24 + 8) = 0.5")]
    a_best = [ALPHAS[int(np.nanargmax(v["alpha"]))] for v in f13.values()]
    rows.append(Row("Fig 13: best alpha of the sweep (OPT-66B, OPT-175B, 32K)", 0.5,
                    float(np.mean(a_best)), unit="", source="HILOS §6.4",
                    note="argmax per model: " + ", ".join(f"{k} {a}" for k, a in
                                                           zip(f13, a_best))))
    c_cases = [np.array(v, float) / np.nanmax(v) for f in f13.values() for v in f["c"].values()]
    c_each = [SPILLS[int(np.nanargmax(v))] for v in c_cases]
    c_best = SPILLS[int(np.nanargmax(np.exp(np.mean(np.log(c_cases), axis=0))))]
    rows.append(Row("Fig 13: best spill interval c", 16, float(c_best), unit="",
                    source="HILOS §4.3, §6.4", note="argmax of the geometric mean over OPT-66B/"
                    "175B x alpha 0.25/0.5 (each: " + ", ".join(str(c) for c in c_each) + "); "
                    f"c < 16 rewrites partial 4 KiB pages ({PAGE_WRITE_OP_S * 1e6:g} us per page "
                    "op, assumed), c > 16 sends more buffered V rows per step "
                    f"({DMA_ROW_S * 1e9:g} ns each, assumed); the optimum is where the two "
                    "slopes meet, not fixed"))
    drop = [1 - v[SPILLS.index(64)] / v[SPILLS.index(16)] for f in f13.values()
            for v in f["c"].values()]
    rows.append(Row("Fig 13 / §7: throughput loss from c = 16 to c = 64", 0.30,
                    float(np.max(drop)), unit="", source="HILOS §7",
                    note="paper: over 30%; ours is the host's buffered-token work (K read, V and "
                    "scores over the chassis link), which is bytes per buffered row and small "
                    "against the step's KV reads; the paper's explicit-DMA software overhead "
                    "is not quantified"))
    return rows


def _table3_rows() -> list:
    return [Row(f"Table 3: peak kernel GFLOPS, d_group = {g}", paper, peak_gflops(g),
                unit="GFLOPS", source="HILOS Table 3",
                note=("calibration, not a reproduction: the FPGA DRAM efficiency is "
                      "set from this figure; " if g == 1 else "prediction: ")
                + "the larger of the cycle model at 296 MHz (one 512-bit K and V beat "
                "per cycle, 32K tokens) and the K/V stream from the FPGA's DDR4-2400 "
                "at 62% of 19.2 GB/s; the DRAM bounds all three")
            for g, paper in ((1, 11.9), (4, 46.8), (5, 56.3))]


def _fig12_14_rows(f12, f14) -> list:
    note12 = ("HILOS(8) over the better of FLEX(DRAM) / FLEX(SSD), Qwen2.5-32B, Mixtral-8x7B, "
              "GLaM-143B, 8K-128K; GQA models run alpha = 0 (their X-cache is larger than the "
              "KV cache); no GPU-memory limit modeled")
    return _range_rows("Fig 12b: GQA/MoE speedup", (1.16, 3.36), list(f12.values()),
                       "HILOS §6.4", note12) + [
        Row("Fig 14: max speedup over output lengths (prefill included)", 6.08,
            float(np.nanmax(list(f14.values()))), source="HILOS §6.4",
            note="HILOS(8) / FLEX(SSD), OPT-66B/175B, s = 16K/64K, n = 16..256; "
                 "prefill on the GPU roofline plus the KV write at the tier's write "
                 "bandwidth (FlashAttention internals not modeled)"),
        Row("Eq. 3: traffic ratio at s = 32K", traffic_ratio(32768), traffic_ratio(32768),
            unit="", source="HILOS §4.1", note="(4sh + 4h) / (8h) = (s + 1) / 2")]


# Table 3: the accelerator's on-chip power (W) per d_group, and 16 of them (§6.2)
PAPER_POWER = {1: 11.25, 4: 15.39, 5: 16.08}
PAPER_POWER_16 = 258.0
PAPER_ENERGY_CUT = 85.0         # %: "reducing energy consumption by up to 85%" (abstract, §8)
FPGA_NOTE = ("the energy table prices ASIC operations and SRAM macros; an FPGA spends several "
             "times more per operation in LUTs, routing and its clock tree and leaks more, so "
             "an ASIC-style table under-prices an FPGA and this miss is the expected one")


def table3_power_rows() -> list:
    """Table 3 power against the kernel's activity model at 296 MHz plus the FPGA's static."""
    rows, ours = [], {}
    for g, paper in PAPER_POWER.items():
        p = accelerator_power(g)
        ours[g] = p["total"]
        rows.append(Row(f"Table 3: accelerator on-chip power, d_group = {g}", paper, p["total"],
                        unit="W", source="HILOS Table 3, §6.2",
                        note=f"{p['dynamic']:.3g} W dynamic (hilos_attention activity model on "
                             f"32K-token jobs paced by the FPGA DRAM, x the table at 45 nm) + "
                             f"{p['static']:g} W static ({FPGA_STATIC}, assumed); " + FPGA_NOTE))
    rows.append(Row("§6.2: 16 accelerators at d_group = 5", PAPER_POWER_16, 16 * ours[5],
                    unit="W", source="HILOS §6.2", note="16 x the d_group = 5 row; " + FPGA_NOTE))
    return rows


def fig17_rows(f17) -> list:
    """Fig. 17(a) and §6.3's statements: HILOS against FLEX(SSD) and FLEX(DRAM)."""
    def j(row, k):
        e = row.get(k)
        return e.j_per_token if e is not None else math.nan

    hil = [f"HILOS({N})" for N in DEVICE_COUNTS]
    cut = [(100 * (1 - j(r, h) / j(r, "FLEX(SSD)")), key, h) for key, r in f17.items()
           for h in hil if math.isfinite(j(r, h))]
    best = max(cut)
    h8 = f"HILOS({DEFAULT_DEVICES})"
    ssd = [j(r, "FLEX(SSD)") / j(r, h8) for r in f17.values()]
    dram = {mn: [j(r, "FLEX(DRAM)") / j(r, h8) for (m2, _), r in f17.items() if m2 == mn
                 and math.isfinite(j(r, "FLEX(DRAM)"))] for mn in ("OPT-30B", "OPT-66B",
                                                                    "OPT-175B")}
    small = float(np.mean(dram["OPT-30B"] + dram["OPT-66B"]))
    big = float(np.mean(dram["OPT-175B"])) if dram["OPT-175B"] else math.nan
    grid = "OPT-30B/66B/175B x 8K-128K, b = 16, n = 64 (Figure 10's grid)"
    direction = "the paper states the direction only; the row's paper value is the parity bound"
    return [
        Row("Fig 17a: most energy reduction of HILOS vs FLEX(SSD)", PAPER_ENERGY_CUT, best[0],
            unit="%", source="HILOS abstract, §6.3, Fig. 17a",
            note=f"at {best[1][0]} s={best[1][1]:,} {best[2]}, over {grid}; J/token from the "
                 "step's actions and the devices' power (GPU, CPU, DIMMs, each SSD at 13 W, each "
                 "FPGA at Table 3's power) over the step time"),
        Row("Fig 17a: FLEX(SSD) energy / HILOS(8) energy, least over the grid (paper: > 1)",
            1.0, float(np.nanmin(ssd)), source="HILOS §6.3, Fig. 17a",
            note=f"{direction}; HILOS's SmartSSDs draw more power than the four PM9A3, but the "
                 "shorter step wins, as §6.3 says"),
        Row("Fig 17a: FLEX(DRAM) energy / HILOS(8) energy, OPT-30B and OPT-66B "
            "(paper: FLEX(DRAM) efficient)", 1.0, small, source="HILOS §6.3, Fig. 17a",
            note=f"{direction} (FLEX(DRAM) about as efficient as HILOS); ours is above it "
                 f"because our FLEX(DRAM) is KV-bound on the CPU attention ({CPU_ATTN}, "
                 "assumed), so its steps are longer than HILOS(8)'s at the same host power"),
        Row("Fig 17a: FLEX(DRAM) energy / HILOS(8) energy, OPT-175B over OPT-30B/66B "
            "(paper: degrades, > 1)", 1.0, big / small, source="HILOS §6.3, Fig. 17a",
            note=f"{direction}; FLEX(DRAM) runs OPT-175B at a cut batch "
                 f"(ours: {', '.join(f'{x:.2f}' for x in dram['OPT-175B'])} over the contexts "
                 "that fit, OOM beyond)" + ("" if big > small else
                 "; ours falls instead: every system streams OPT-175B's weights from storage "
                 "each step, HILOS(8) too, which narrows its lead, and our FLEX(DRAM) is "
                 "already twice HILOS(8)'s energy at 30B/66B (the row above)"))]


def _groups(keys) -> list:
    return [f"{mn.split('-')[1]} {s // 1024}K" for mn, s in keys]


def _tables_and_plots(figs: dict) -> tuple:
    fig10, ab, f12, f13, f14 = (figs[k] for k in ("fig10", "fig15", "fig12b", "fig13", "fig14"))
    cols = list(SYSTEMS)
    tables = [
        Table("Figure 10: throughput normalized to FLEX(SSD) (b = 16, n = 64)",
              ["model", "context"] + cols,
              [[mn, s] + [_speedup(fig10, (mn, s), k) for k in cols] for mn, s in FIG10_GRID],
              note="OOM = FLEX(DRAM) cannot fit one sequence's KV cache in DRAM."),
        Table("Figure 15: ablation at N = 8 (throughput / FLEX(SSD))",
              ["model", "context"] + list(ABLATION),
              [[mn, s] + [ab[(mn, s)][k] for k in ABLATION] for mn, s in FIG15_GRID]),
        Table("Figure 13: spill interval c at alpha 0.25 / 0.5 (tokens/s, 32K, N = 8)",
              ["model", "alpha"] + [f"c={c}" for c in SPILLS],
              [[mn, a] + v for mn, f in f13.items() for a, v in f["c"].items()]),
        Table("Figure 12b: HILOS(8) over the best baseline", ["model", "context", "speedup"],
              [[mn, s, v] for (mn, s), v in f12.items()]),
        Table("Figure 14: HILOS(8) / FLEX(SSD) with prefill by output length",
              ["model", "context"] + [f"n={o}" for o in FIG14_OUTPUTS],
              [[mn, s] + [f14[(mn, s, o)] for o in FIG14_OUTPUTS]
               for mn in FIG14_MODELS for s in FIG14_CONTEXTS])]
    plots = [
        Plot("hilos_fig10", "Figure 10: throughput / FLEX(SSD)", "bar", "model, context",
             "x FLEX(SSD)", {k: [_speedup(fig10, key, k) for key in FIG10_GRID] for k in cols},
             groups=_groups(FIG10_GRID)),
        Plot("hilos_fig15", "Figure 15: ablation (N = 8)", "bar", "model, context",
             "x FLEX(SSD)", {k: [ab[key][k] for key in FIG15_GRID] for k in ABLATION},
             groups=_groups(FIG15_GRID)),
        Plot("hilos_fig13_alpha", "Figure 13: throughput vs alpha (32K, N = 8)", "line",
             "alpha", "tokens/s", {mn: f["alpha"] for mn, f in f13.items()}, x=list(ALPHAS)),
        Plot("hilos_fig13_c", "Figure 13: throughput vs spill interval (alpha 0.5)", "line",
             "c", "tokens/s", {mn: f["c"][0.5] for mn, f in f13.items()}, x=list(SPILLS))]
    return tables, plots


def _data(figs: dict) -> dict:
    fig10, ab, f12, f13, f14 = (figs[k] for k in ("fig10", "fig15", "fig12b", "fig13", "fig14"))
    return {"fig10": {f"{mn}|{s}": fig10[(mn, s)] for mn, s in FIG10_GRID},
            "fig15": {f"{mn}|{s}": ab[(mn, s)] for mn, s in FIG15_GRID},
            "fig12b": {f"{mn}|{s}": v for (mn, s), v in f12.items()},
            "fig13": {mn: {"alpha": f["alpha"], "c": {str(a): v for a, v in f["c"].items()}}
                      for mn, f in f13.items()},
            "fig14": {f"{mn}|{s}|{o}": v for (mn, s, o), v in f14.items()},
            "table3_gflops": {g: peak_gflops(g) for g in (1, 4, 5)}}


def reproduce(progress: bool = True, seed: int = 0) -> ModelResult:
    """The paper's headline figures (Figures 10, 12-15, Table 3, §6.4) against the model."""
    t0 = time.monotonic()
    figs = figures(progress)
    rows = (_fig10_peak_rows(figs["fig10"]) + _fig10_baseline_rows(figs["fig10"])
            + _fig15_rows(figs["fig15"]) + _fig13_rows(figs["fig13"]) + _table3_rows()
            + _fig12_14_rows(figs["fig12b"], figs["fig14"]))
    f17 = figure17()
    rows += fig17_rows(f17) + table3_power_rows()
    tables, plots = _tables_and_plots(figs)
    for mn in ("OPT-30B", "OPT-66B", "OPT-175B"):
        res17 = [e for e in f17[(mn, 32768)].values() if e is not None]
        tables.append(energy_table(res17, f"Figure 17a: energy per output token, {mn}, s = 32K"))
        plots.append(energy_plot(res17, f"hilos_fig17_{mn.split('-')[1].lower()}",
                                 f"Figure 17a: {mn}, s = 32K", normalize_to="FLEX(SSD)"))
    res = ModelResult("hilos", "HILOS (ASPLOS'26) reproduction: system model", {},
                      tables, plots, _data(figs), rows=rows, assumptions=assumptions())
    res.seconds = time.monotonic() - t0
    return res
