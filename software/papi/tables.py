"""Tables, plots and JSON data of ``reproduce papi`` (Figs. 7c, 8-12, §3, eqs. 3-4, alpha)."""
from __future__ import annotations

from pimforge.software.papi.config import MODELS, SYSTEMS
from pimforge.software.papi.figures import FIG9_MODEL, FIG10_MODEL, GRID_BATCH, GRID_SPEC
from pimforge.software.report import Plot, Table

__all__ = ["tables", "plots", "data", "result_dict", "speedups"]

BASE = "A100+AttAcc"


def result_dict(r) -> dict:
    """A :class:`~pimforge.software.papi.systems.RunResult` as plain data."""
    return {"seconds": r.seconds, "joules": r.joules, "tokens": r.tokens,
            "tokens_per_s": r.tokens_per_s, "tokens_per_j": r.tokens_per_j,
            "iterations": r.iterations, "gpu_iterations": r.gpu_iters, "parts_s": r.parts}


def speedups(pt: dict, base: str = BASE) -> dict:
    """Tokens/s of every system over ``base`` at one point."""
    return {s: r.tokens_per_s / pt[base].tokens_per_s for s, r in pt.items()}


def _grid_table(g: dict, title: str, systems, energy: bool = False) -> Table:
    key = "tokens_per_j" if energy else "tokens_per_s"
    rows = []
    for (mn, b, s), pt in g.items():
        ref = getattr(pt[BASE], key)
        rows.append([mn, b, s] + [getattr(pt[x], key) / ref for x in systems]
                    + [pt["PAPI"].gpu_iters, pt["PAPI"].iterations])
    return Table(title, ["model", "batch", "spec"] + list(systems)
                 + ["PAPI FC-on-GPU iters", "iters"], rows,
                 note=f"Normalized to {BASE}.")


def tables(f) -> list:
    out = [Table("alpha: our GPU / FC-PIM crossover (§5.2.1)", ["model", "alpha",
                                                                "first RLP x TLP with GPU faster",
                                                                "one crossover"],
                 [[mn, v["alpha"], v["crossover"], v["consistent"]]
                  for mn, v in f["alpha"].items()],
                 note="One layer's FC kernels with their transfers, six A100s vs 30 FC-PIM "
                      "stacks, RLP x TLP = 1..1024; FC runs on FC-PIM when RLP x TLP <= alpha."),
           Table("Eqs. 3-4: banks per FC-PIM die (4P1B)", ["FPU area", "mm^2", "eq. 3 bound",
                                                           "banks (whole groups of 32)",
                                                           "stack GiB", "30 stacks hold GPT-3 175B"],
                 [[k, v["fpu_area_mm2"], v["bound"], v["banks"], v["capacity_gib"],
                   v["gpt3_175b_fits"]]
                  for k, v in f["banks"].items()]),
           Table("Fig. 7c: power of one stack with every FPU busy (W; budget 116)",
                 ["config"] + [f"reuse {r}" for r in next(iter(f["power"].values()))],
                 [[k] + list(v.values()) for k, v in f["power"].items()]),
           _grid_table(f["fig8"], "Fig. 8a: speedup, creative-writing", SYSTEMS),
           _grid_table(f["fig8"], "Fig. 8b: energy efficiency, creative-writing", SYSTEMS, True),
           _grid_table(f["fig9"], f"Fig. 9: speedup, general-qa, {FIG9_MODEL}",
                       tuple(next(iter(f["fig9"].values())))),
           _grid_table(f["fig9"], f"Fig. 9b: energy efficiency, general-qa, {FIG9_MODEL}",
                       tuple(next(iter(f["fig9"].values()))), True)]
    for k, title in (("fig10a", "Fig. 10a: speedup by batch (spec 1)"),
                     ("fig10b", "Fig. 10b: speedup by speculation length (batch 4)")):
        out.append(Table(f"{title}, {FIG10_MODEL}", ["x"] + list(next(iter(f[k].values()))),
                         [[x] + list(speedups(pt).values()) for x, pt in f[k].items()]))
    out.append(Table("Fig. 11: PIM-only PAPI / AttAcc-only, decoding only", ["model", "batch",
                                                                             "spec", "speedup"],
                     [[mn, b, s, pt["PIM-only PAPI"].tokens_per_s
                       / pt["AttAcc-only"].tokens_per_s] for (mn, b, s), pt in
                      f["fig11"].items()]))
    f12 = f["fig12"]
    out.append(Table(f"Fig. 12: decoding time per token (ms), {FIG10_MODEL}, batch 4, spec 4",
                     ["system", "FC", "attention", "communication", "total"],
                     [[s, *(1e3 * r.parts[p] / r.tokens for p in ("FC", "attention",
                                                                  "communication")),
                       1e3 * r.seconds / r.tokens] for s, r in f12.items()]))
    ai = f["intensity"]
    out.append(Table("§3 / Fig. 2: arithmetic intensity, OPT-30B (FLOP/B)",
                     ["kernel", "point", "AI"],
                     [["FC", "batch 4, spec 8", ai["fc"]], ["attention", "spec 8", ai["attention"]]]
                     + [["FC", f"batch {b}, spec 8", v] for b, v in ai["fc_by_batch"].items()]
                     + [["attention", f"spec {s}", v] for s, v in ai["attention_by_spec"].items()]))
    return out


def plots(f) -> list:
    groups = [f"{mn[:9]} {b}/{s}" for mn in MODELS for b in GRID_BATCH for s in GRID_SPEC]
    out = [Plot("papi_fig8a", "Fig. 8a: speedup over A100+AttAcc, creative-writing", "bar",
                "model batch/spec", "speedup", {s: [speedups(pt)[s] for pt in f["fig8"].values()]
                                                for s in SYSTEMS}, groups=groups, logy=True),
           Plot("papi_fig8b", "Fig. 8b: energy efficiency over A100+AttAcc", "bar",
                "model batch/spec", "tokens/J ratio",
                {s: [pt[s].tokens_per_j / pt[BASE].tokens_per_j for pt in f["fig8"].values()]
                 for s in SYSTEMS}, groups=groups, logy=True)]
    for k, xl in (("fig10a", "batch (spec 1)"), ("fig10b", "speculation length (batch 4)")):
        pts = f[k]
        names = list(next(iter(pts.values())))
        out.append(Plot(f"papi_{k}", f"{k[:3].title()}. {k[3:]}: speedup over A100+AttAcc, "
                        f"{FIG10_MODEL}", "line", xl, "speedup",
                        {s: [speedups(pt)[s] for pt in pts.values()] for s in names},
                        x=list(pts), logy=True))
    out.append(Plot("papi_fig11", "Fig. 11: PIM-only PAPI / AttAcc-only (decoding)", "bar",
                    "model batch/spec", "speedup",
                    {"PIM-only PAPI": [pt["PIM-only PAPI"].tokens_per_s
                                       / pt["AttAcc-only"].tokens_per_s
                                       for pt in f["fig11"].values()]}, groups=groups))
    out.append(Plot("papi_fig7c", "Fig. 7c: stack power with every FPU busy", "line",
                    "data reuse", "W", {k: list(v.values()) for k, v in f["power"].items()},
                    x=list(next(iter(f["power"].values()))), logy=True, hlines=[116.0]))
    return out


def data(f) -> dict:
    def grid(g):
        return {"|".join(map(str, k)): {s: result_dict(r) for s, r in pt.items()}
                for k, pt in g.items()}

    return {"alpha": f["alpha"], "banks": f["banks"], "power_w": f["power"],
            "intensity": f["intensity"], "fig8": grid(f["fig8"]), "fig9": grid(f["fig9"]),
            "fig11": grid(f["fig11"]),
            "fig10a": {b: {s: result_dict(r) for s, r in pt.items()}
                       for b, pt in f["fig10a"].items()},
            "fig10b": {s: {x: result_dict(r) for x, r in pt.items()}
                       for s, pt in f["fig10b"].items()},
            "fig12": {s: result_dict(r) for s, r in f["fig12"].items()}}
