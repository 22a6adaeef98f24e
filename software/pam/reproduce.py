"""``pimforge reproduce pam``: PAM's headline results (§7.2, §7.4, §6.3) next to ours, the
causes of the misses, and how the gains move with the parameters PAM does not give."""
from __future__ import annotations

import math
import time
from dataclasses import replace

import numpy as np

from pimforge.hw.core.energy import table
from pimforge.software import workloads as wl
from pimforge.software.pam.assumptions import assumptions
from pimforge.software.energy import energy_data, energy_plot, energy_table
from pimforge.software.pam.energy import attention_joules, figure11
from pimforge.software.pam.config import (
    ABLATION_BATCHES, ABLATIONS, PAM_MODELS, SYSTEMS, Hardware, PamModelConfig
)
from pimforge.software.pam.relayout import (
    HOST, MIGRATION_TOKEN_BYTES, host_relayout_seconds, interface_instances,
    interface_relayout_seconds
)
from pimforge.software.pam.step import step
from pimforge.software.pam.sweeps import figure9, figure10, figure12
from pimforge.software.report import ModelResult, Plot, Progress, Row, Table

__all__ = ["reproduce", "WALL_CLOCK_ROWS", "sensitivity", "SENSITIVITY", "relayout_table",
           "energy_rows", "PAPER_FIG11"]

# rows whose value is a wall time or derived from one (item -> why): left out of the
# committed baseline (software/baseline.py); none here, every row is modeled
WALL_CLOCK_ROWS: dict = {}

# the paper's figures (PAM abstract, §7.2, §7.4)
PAPER_FIG9 = {"Qwen2.5-32B": 7.20, "LLaMA3-70B": 6.93, "OPT-175B": 24.53}
PAPER_CONVERSATION = 12.88
PAPER_ONLINE_SETS = (("WildChat", 13.76), ("ShareGPT", 6.12))
PAPER_ONLINE_LS_PIM = 4.54
PAPER_FIG10 = {("LLaMA3-70B", "Arxiv_sum"): 39.2, ("LLaMA3-70B", "Write_doc"): 25.2,
               ("OPT-175B", "Arxiv_sum"): 33.0, ("OPT-175B", "Write_doc"): 8.26}
PAPER_LONG_CONTEXT = 26.41
# Fig. 12, small and large batch: PAM / LS-PIM, then PAM over each ablation variant
PAPER_FIG12 = (("small", (18.7, 1.93, 2.06, 2.74)), ("large", (48.56, 2.35, 4.15, 4.62)))
PAPER_MIGRATED = 0.7        # % of the tokens per step (PAM §6.3)
PAPER_HOST_MS = 500.0       # host re-layout of an MB-scale transfer, "more than" (PAM §6.2)
PAPER_IF_GAIN = 20.0        # the interface cuts transfer latency "by more than 20x" (PAM §6.2)
RELAYOUT_BYTES = 1 << 20    # the MB-scale migration of the §6.2 rows
RELAYOUT_PAIRS = (("hbm", "ddr"), ("ddr", "hbm"), ("ddr", "ssd"), ("ssd", "ddr"))  # Alg. 2's
# §7.3 / Fig. 11: PAM's energy reduction (%) against each baseline, least and most over the four
# cases (LS-PIM: attention only), and vLLM-offloading's KV movement on OPT-175B Arxiv_sum
PAPER_FIG11 = {"vLLM-offloading": (53.1, 92.7), "L-PIM": (7.8, 66.9), "LS-PIM": (4.0, 18.7)}
PAPER_KV_MOVED_GB = 2304.0
PAPER_KV_SHARE = 95.0       # % of vLLM-offloading's energy, "more than"

# parameters the paper does not give, each moved away from our assumed value
SENSITIVITY = (("assumed values", {}),
               ("GPU GEMMs at 100% of peak", {"gpu_eff": 1.0}),
               ("GPU GEMMs at 35% of peak", {"gpu_eff": 0.35}),
               ("PCIe at 100% of its rate", {"pcie_eff": 1.0}),
               ("PCIe at 25% of its rate", {"pcie_eff": 0.25}),
               ("drift 0.002 per step", {"drift": 0.002}),
               ("drift 0.03 per step", {"drift": 0.03}))


def _mean(v):
    """Arithmetic mean of the finite values (the papers' "average" gains)."""
    v = [x for x in v if x and math.isfinite(x)]
    return float(np.mean(v)) if v else float("nan")


def _gain(row, a="PAM", b="vLLM-offloading"):
    return row[a]["throughput"] / row[b]["throughput"]


def _model_gains(f9) -> dict:
    """Per model, PAM / vLLM-offloading online, mean over datasets and SLOs."""
    return {m: _mean([_gain(r) for (mm, _, _), r in f9.items() if mm == m]) for m in PAM_MODELS}


def _offline_gains(f10) -> dict:
    """Per (model, dataset), PAM / vLLM-offloading offline at each batch."""
    off = {}
    for (m, d, _), r in f10.items():
        off.setdefault((m, d), []).append(r["PAM"] / r["vLLM-offloading"])
    return off


def _headlines(f9, f10, f12) -> tuple:
    """(conversation gain, long-context gain, ablation-small PAM / LS-PIM) as reproduce
    computes them."""
    conv = _mean(list(_model_gains(f9).values()))
    long_ctx = _mean([_mean(v) for v in _offline_gains(f10).values()])
    abl = _mean([r["PAM"] for (_, i), r in f12.items() if i == 0]) if f12 else float("nan")
    return conv, long_ctx, abl


def sensitivity(progress: bool = True, seed: int = 0, labels=None) -> Table:
    """How the headline gains move with the parameters PAM does not give (``labels``: only
    those rows of :data:`SENSITIVITY`, in its order; default all)."""
    rows = []
    todo = [(lab, over) for lab, over in SENSITIVITY if labels is None or lab in labels]
    with Progress(len(todo), "pam sensitivity", enabled=progress) as p:
        for label, over in todo:
            sys2 = ("vLLM-offloading", "PAM")
            f9 = figure9(False, seed, systems=sys2, base=over)
            f10 = figure10(False, seed, systems=sys2, base=over)
            f12 = figure12(False, seed, base=over)
            rows.append([label] + list(_headlines(f9, f10, f12)))
            p.step(label)
    small = PAPER_FIG12[0][1][0]
    return Table("Sensitivity: headline gains under other values of the parameters PAM does not "
                 f"give (paper: {PAPER_CONVERSATION:g}x, {PAPER_LONG_CONTEXT:g}x, {small:g}x)",
                 ["parameter", "conversation PAM / vLLM", "long context PAM / vLLM",
                  "ablation small batch PAM / LS-PIM"], rows)


# ---------------------------------------------------------------------------------------------
# the rows: paper, ours, cause of a miss

def _online_rows(f9, seed: int) -> list:
    hw = Hardware.from_config(PamModelConfig(seed=seed))
    rows = []
    per_model = _model_gains(f9)
    for m in PAM_MODELS:
        # the weight GEMMs alone cap decoding at gpus x peak / (2 x active params) tokens/s
        cap = hw.gpus * hw.gpu.peak_flops / wl.get_model(m).decode_flops()
        base = _mean([r["vLLM-offloading"]["throughput"] for (mm, _, _), r in f9.items()
                      if mm == m])
        note = (f"{hw.gpus} {hw.gpu.name} at 100% of peak cap {m} decoding at {cap:,.0f} "
                f"tokens/s from the weight GEMMs alone, {cap / base:.1f}x our vLLM-offloading's "
                f"peak ({base:,.0f}); no attention speedup can exceed that"
                if cap / base < PAPER_FIG9[m] else "")
        rows.append(Row(f"online: PAM / vLLM-offloading, {m} (mean over sets and SLOs)",
                        PAPER_FIG9[m], per_model[m], source="PAM §7.2, Fig. 9", note=note))
    rows.append(Row("conversation: PAM / vLLM-offloading, mean of the three models",
                    PAPER_CONVERSATION, _mean(list(per_model.values())),
                    source="PAM abstract, §7.2"))
    for d, pv in PAPER_ONLINE_SETS:
        rows.append(Row(f"online {d}: PAM / vLLM-offloading", pv,
                        _mean([_gain(r) for (_, dd, _), r in f9.items() if dd == d]),
                        source="PAM §7.2"))
    rows.append(Row("online: PAM / LS-PIM", PAPER_ONLINE_LS_PIM,
                    _mean([_gain(r, b="LS-PIM") for r in f9.values()]), source="PAM §7.2"))
    return rows


def _offline_rows(f10) -> list:
    off = _offline_gains(f10)
    rows = [Row(f"offline {k[0]} {k[1]}: PAM / vLLM-offloading (mean over batches)", pv,
                _mean(off[k]), source="PAM §7.2, Fig. 10") for k, pv in PAPER_FIG10.items()]
    rows.append(Row("long context: PAM / vLLM-offloading, mean of the four", PAPER_LONG_CONTEXT,
                    _mean([_mean(v) for v in off.values()]), source="PAM abstract, §7.2"))
    return rows


def _ablation_rows(f12) -> list:
    rows = []
    for i, (label, pv) in enumerate(PAPER_FIG12):
        cases = [r for (m, j), r in f12.items() if j == i]
        pam = _mean([c["PAM"] for c in cases])
        rows.append(Row(f"ablation {label} batch: PAM / LS-PIM (attention)", pv[0], pam,
                        source="PAM §7.4, Fig. 12"))
        for v, p_v in zip(ABLATIONS[1:], pv[1:]):
            rows.append(Row(f"ablation {label} batch: PAM / {v}", p_v,
                            _mean([c["PAM"] / c[v] for c in cases]), source="PAM §7.4, Fig. 12"))
    return rows


def _migration_row(seed: int) -> Row:
    cfg = replace(PamModelConfig(seed=seed), dataset="Arxiv_sum")
    batch = ABLATION_BATCHES[cfg.model][1]
    mig = step("PAM", cfg, batch).get("migrated_share", float("nan"))
    return Row("tokens migrated per step", PAPER_MIGRATED, 100 * mig, unit="%", source="PAM §6.3",
               note=f"calibration, not a reproduction: drift (not given) is set to {cfg.drift:g} "
                    f"per step, the value at which Algorithm 2 moves about {PAPER_MIGRATED:g}% "
                    f"({cfg.model}, {cfg.dataset}, batch {batch:,}: KV over all three tiers)")


def relayout_table() -> Table:
    """§6.2: a 1 MB migration through the host CPU against the PAM interfaces of one device
    on each side, for the tier pairs Algorithm 2 moves between."""
    rows = []
    n = RELAYOUT_BYTES // MIGRATION_TOKEN_BYTES
    for a, b in RELAYOUT_PAIRS:
        host = host_relayout_seconds(a, b, n, MIGRATION_TOKEN_BYTES)
        k = interface_instances(a, b, {a: 1, b: 1})
        itf = interface_relayout_seconds(a, b, RELAYOUT_BYTES, MIGRATION_TOKEN_BYTES, k)
        bw_only = host["seconds"] - host["parts"]["interaction"]
        rows.append([f"{a} -> {b}", 1e3 * host["seconds"], 1e3 * bw_only, k,
                     1e3 * itf["seconds"], itf["bandwidth_fraction"],
                     host["seconds"] / itf["seconds"], bw_only / itf["seconds"]])
    return Table(f"PAM interface (§6.2): a {RELAYOUT_BYTES >> 20} MB KV migration "
                 f"({n:,} tokens of {MIGRATION_TOKEN_BYTES} B) through the host CPU and through "
                 f"the interface", ["tiers", "host ms", "host ms without interactions",
                                    "interface instances", "interface ms",
                                    "interface bandwidth fraction", "host / interface",
                                    "host without interactions / interface"], rows)


def _relayout_rows(table: Table) -> list:
    worst = min(table.rows, key=lambda r: r[6])
    slow_host = max(table.rows, key=lambda r: r[1])
    each = "; ".join(f"{r[0]} {r[6]:.0f}x ({r[7]:.1f}x without the interactions)"
                     for r in table.rows)
    return [Row(f"host re-layout of a {RELAYOUT_BYTES >> 20} MB migration", PAPER_HOST_MS,
                slow_host[1], unit="ms", source="PAM §6.2",
                note=f"the paper says 'more than' {PAPER_HOST_MS:g} ms; ours ({slow_host[0]}) is "
                     f"{HOST.interaction_s * 1e6:g} us of CPU-PIM interaction per token and side "
                     f"(assumed, not given) plus the reads and writes at "
                     f"{HOST.hash_eff:.0%} of the host bandwidth and a "
                     f"{HOST.copy_bw / 1e9:g} GB/s re-format"),
            Row("PAM interface: host re-layout time / interface time (least of Alg. 2's pairs)",
                PAPER_IF_GAIN, worst[6], source="PAM §6.2",
                note=f"the paper says 'more than' {PAPER_IF_GAIN:g}x; per pair: {each}")]


def _reduction(f11, base: str, dynamic: bool = False) -> list:
    """PAM's energy reduction (%) against ``base`` per Fig. 11 case (LS-PIM: attention only;
    ``dynamic``: without static power)."""
    out = []
    for row in f11.values():
        (ep, rp), (eb, rb) = row["PAM"], row[base]
        if ep is None or eb is None:
            continue
        if base == "LS-PIM":
            jp, jb = attention_joules(ep, rp, dynamic), attention_joules(eb, rb, dynamic)
        else:
            jp, jb = (ep.j_per_token, eb.j_per_token) if not dynamic else (
                ep.j_per_token - ep.breakdown().get("static", 0.0),
                eb.j_per_token - eb.breakdown().get("static", 0.0))
        out.append(100.0 * (1.0 - jp / jb))
    return out


def energy_rows(f11) -> list:
    """PAM §7.3 / Fig. 11: the reduction ranges and vLLM-offloading's KV movement."""
    rows = []
    causes = {
        "vLLM-offloading": "static power (8 H100s, HBM stacks, DIMMs, SSDs) over the step time "
                           "is most of every system's energy in our model, so the reduction "
                           "follows the step-time ratio",
        "L-PIM": "L-PIM computes every token where it sits, so its step is bound by the slow "
                 "tiers and static power over that longer step dominates; the paper's split "
                 "between static and dynamic energy is not given",
        "LS-PIM": "our LS-PIM attention is several times slower than PAM's at these batches "
                  "(static placement leaves activated tokens on DDR and SSD, as in the ablation "
                  "rows), and static power over the attention time dominates"}
    for base, (lo, hi) in PAPER_FIG11.items():
        red, dyn = _reduction(f11, base), _reduction(f11, base, dynamic=True)
        what = "attention energy" if base == "LS-PIM" else "energy per output token"
        for end, paper, f in (("least", lo, min), ("most", hi, max)):
            ours = f(red) if red else None
            note = (f"{what} from action counts x the energy table, over LLaMA3-70B / OPT-175B "
                    f"on WildChat (batch 8192 / 512) and Arxiv_sum (1024 / 64); without static "
                    f"power the {end} is {f(dyn):.1f}%" if dyn else "every case OOM")
            r = Row(f"Fig 11: PAM energy reduction vs {base}, {end} of the four cases", paper,
                    ours, unit="%", source="PAM §7.3, Fig. 11", note=note)
            if r.within is False:
                r.note += "; " + causes[base]
            rows.append(r)
    ev, rv = f11[("OPT-175B", "Arxiv_sum", 64)]["vLLM-offloading"]
    kv = rv["kv_bytes"]
    off = kv * (rv["shares"][1] + rv["shares"][2])
    rows.append(Row("Fig 11: vLLM-offloading KV moved per step, OPT-175B Arxiv_sum batch 64",
                    PAPER_KV_MOVED_GB, kv / 1e9, unit="GB", source="PAM §7.3",
                    note=f"batch x mean context x KV per token ({off / 1e9:,.0f} GB of it from "
                         f"DDR and SSD over PCIe); our Arxiv_sum lengths give a mean context "
                         f"of {rv['kv_bytes'] / 64 / wl.get_model('OPT-175B').kv_bytes_per_token:,.0f}"
                         f" tokens, the paper's would be {PAPER_KV_MOVED_GB * 1e9 / kv:.2f}x longer"))
    b = ev.breakdown()
    kv_keys = ("dram:hbm", "dram:ddr4", "ssd", "link:pcie")
    kv_j = sum(b.get(k, 0.0) for k in kv_keys) - _gemm_hbm_j(ev)
    dyn = ev.j_per_token - b.get("static", 0.0)
    rows.append(Row("Fig 11: KV movement share of vLLM-offloading's energy, OPT-175B Arxiv_sum",
                    PAPER_KV_SHARE, 100.0 * kv_j / ev.j_per_token, unit="%", source="PAM §7.3",
                    note=f"the paper says more than {PAPER_KV_SHARE:g}%; ours: the KV bytes' "
                         f"HBM, DDR, SSD and PCIe energy, {100 * kv_j / dyn:.0f}% of the dynamic "
                         f"energy; static power (the 8 H100s, HBM stacks, DIMMs) over the PCIe-bound step is "
                         f"{100 * b.get('static', 0.0) / ev.j_per_token:.0f}% of the total "
                         f"(the paper's energy model has no stated static power)"))
    return rows


def _gemm_hbm_j(e) -> float:
    """J/token of the weight reads from HBM (they share the dram:hbm component with KV)."""
    t = table(e.node)
    return t.joules({k: v for k, v in e.parts["gemm"].items() if k.startswith("dram:hbm")})


def _annotate(rows, shares):
    """Causes for the misses, named per family of rows, with the figures that show them."""
    online = (f"at its peak batch our vLLM-offloading spends only {100 * shares['online']:.0f}% "
              f"of a step in attention: with all KV in HBM the weight GEMMs dominate (at any "
              f"GEMM efficiency, see the sensitivity table), so speeding up attention cannot give "
              f"the paper's gain; PAM §1 puts attention above 80% of runtime, which our 8-H100 "
              f"roofline does not reproduce (PAM's LLMCompass and vLLM settings are not given)")
    offline = (f"our vLLM-offloading streams every offloaded KV byte over PCIe each step "
               f"({100 * shares['offline']:.0f}% of its step time on average): the gain is the "
               f"PIM tiers' rate over PCIe, which hangs on link efficiency, prefetch overlap and "
               f"the length split of the offline sets, none given by PAM")
    for r in rows:
        if r.within is not False or r.note:
            continue
        if "LS-PIM" in r.item and "online" in r.item:
            r.note = ("at their peak batches both systems hold most of the KV cache in HBM, "
                      "where LS-PIM's sparse HBM-PIM attention is already fast, and the weight "
                      "GEMMs dominate both steps; LS-PIM falls behind only once KV spills")
        elif "online" in r.item or "conversation" in r.item:
            r.note = online
        elif "vLLM" in r.item:
            r.note = offline
        elif "w/o PAMattention" in r.item:
            r.note = ("fixed 16-token tiles computed whole: in our traces the few activated "
                      "tokens left in DDR and SSD sit one per tile, so tiling multiplies the slow "
                      "tiers' work ~16x; the score shape that sets this is not given")
        elif "small batch" in r.item and "scheduling" in r.item:
            r.note = ("at the small batch the KV cache spills only into DDR and HBM is the "
                      "slowest tier with or without scheduling, so placement does not change "
                      "the attention time; the paper's small batch is not given")
        elif "ablation" in r.item:
            r.note = ("the variants' costs come from our locality traces (drift rate, score "
                      "spread, sink tokens: not given) and the assumed ablation batches")


def _attention_shares(f9, f10) -> dict:
    """vLLM-offloading's share of a step in attention (online, at its peak batches) and in
    offloaded-KV transfers (offline)."""
    att = [r["vLLM-offloading"]["attention_share"] for r in f9.values()
           if r["vLLM-offloading"]["attention_share"] is not None]
    off_share = [r["vllm_offload_share"] for r in f10.values() if r["vllm_offload_share"]]
    return {"online": float(np.mean(att)) if att else float("nan"),
            "offline": float(np.mean(off_share)) if off_share else float("nan")}


# ---------------------------------------------------------------------------------------------
# tables, plots and data of the figures

def _tables(f9, f10, f12):
    t9 = Table("Online serving (Fig. 9): largest batch within the SLO and throughput "
               "(tokens/s)", ["model", "dataset", "SLO ms"] + [f"{s} batch" for s in SYSTEMS]
               + [f"{s} tok/s" for s in SYSTEMS], [])
    for (m, d, s), r in f9.items():
        t9.rows.append([m, d, s] + [r[x]["batch"] for x in SYSTEMS]
                       + [r[x]["throughput"] for x in SYSTEMS])
    t10 = Table("Offline throughput (Fig. 10), tokens/s; OOM = out of memory",
                ["model", "dataset", "batch"] + list(SYSTEMS), [])
    for (m, d, b), r in f10.items():
        t10.rows.append([m, d, b] + [r[s] for s in SYSTEMS])
    t12 = Table("Ablation (Fig. 12): attention speedup over LS-PIM",
                ["model", "batch"] + list(ABLATIONS), [])
    for (m, i), r in f12.items():
        t12.rows.append([m, ABLATION_BATCHES[m][i]] + [r[v] for v in ABLATIONS])
    return [t9, t10, t12]


def _plots(f9, f10, f12):
    plots = []
    groups9 = [f"{m.split('-')[0]} {d} {s:.0f}" for (m, d, s) in f9]
    plots.append(Plot("pam_fig9", "Online throughput normalized to vLLM-offloading (Fig. 9)",
                      "bar", "model, dataset, SLO (ms)", "normalized throughput",
                      {s: [r[s]["throughput"] / r["vLLM-offloading"]["throughput"]
                           for r in f9.values()] for s in SYSTEMS}, groups=groups9, logy=True))
    groups10 = [f"{m.split('-')[0]} {d} b{b}" for (m, d, b) in f10]
    plots.append(Plot("pam_fig10", "Offline throughput normalized to vLLM-offloading (Fig. 10)",
                      "bar", "model, dataset, batch", "normalized throughput",
                      {s: [r[s] / r["vLLM-offloading"] for r in f10.values()] for s in SYSTEMS},
                      groups=groups10, logy=True))
    groups12 = [f"{m.split('-')[0]} b{ABLATION_BATCHES[m][i]}" for (m, i) in f12]
    plots.append(Plot("pam_fig12", "Attention speedup over LS-PIM (Fig. 12)", "bar",
                      "model, batch", "speedup over LS-PIM",
                      {v: [r[v] for r in f12.values()] for v in ABLATIONS}, groups=groups12,
                      logy=True))
    return plots


def _data(f9, f10, f12):
    return {"figure9": [{"model": m, "dataset": d, "slo_ms": s, **r}
                        for (m, d, s), r in f9.items()],
            "figure10": [{"model": m, "dataset": d, "batch": b, **r}
                         for (m, d, b), r in f10.items()],
            "figure12": [{"model": m, "batch": ABLATION_BATCHES[m][i], **r}
                         for (m, i), r in f12.items()]}


def reproduce(progress: bool = True, seed: int = 0, with_sensitivity: bool = True) -> ModelResult:
    """PAM's headline results (§7.2, §7.4, §6.3) next to ours, and (``with_sensitivity``) how
    the main gains move with the parameters PAM does not give."""
    t0 = time.monotonic()
    f9 = figure9(progress, seed)
    f10 = figure10(progress, seed)
    f12 = figure12(progress, seed)
    relayout = relayout_table()
    f11 = figure11(seed)
    rows = (_online_rows(f9, seed) + _offline_rows(f10) + _ablation_rows(f12)
            + [_migration_row(seed)] + _relayout_rows(relayout) + energy_rows(f11))
    _annotate(rows, _attention_shares(f9, f10))
    tables, data = _tables(f9, f10, f12) + [relayout], _data(f9, f10, f12)
    data["relayout"] = [dict(zip(relayout.columns, r)) for r in relayout.rows]
    plots = _plots(f9, f10, f12)
    data["figure11"] = {}
    for (m, d, b), row in f11.items():
        res11 = [e for e, _ in row.values() if e is not None]
        tables.append(energy_table(res11, f"Fig. 11: energy per output token, {m} {d} batch {b}"))
        plots.append(energy_plot(res11, f"pam_fig11_{m.split('-')[0].lower()}_{d.lower()}",
                                 f"Fig. 11: {m} {d} batch {b}", normalize_to="PAM"))
        data["figure11"][f"{m}|{d}|{b}"] = energy_data(res11)
    if with_sensitivity:
        sens = sensitivity(progress, seed)
        tables.append(sens)
        data["sensitivity"] = [dict(zip(sens.columns, r)) for r in sens.rows]
    res = ModelResult("pam", "PAM: reproduced headline results", {"seed": seed}, tables,
                      plots, data, rows, assumptions())
    res.seconds = time.monotonic() - t0
    return res
