"""The data behind ``reproduce papi``: Figs. 8-9 (end-to-end speedup and energy efficiency over
the batch x speculation grid), Fig. 10 (RLP and TLP sweeps), Figs. 11-12 (PIM-only PAPI against
AttAcc-only, decoding only), §3's arithmetic intensities, eqs. 3-4 and alpha."""
from __future__ import annotations

import numpy as np

from pimforge.software import workloads as wl
from pimforge.software.papi.config import FC_STACKS, FPU_AREA_PAPER, MODELS, SYSTEMS
from pimforge.software.papi.hardware import bank_bound, banks_per_die, pim_kind, power_w
from pimforge.software.papi.systems import calibrate_alpha, run_system
from pimforge.software.papi.workload import attention_intensity, fc_intensity
from pimforge.software.report import Progress

__all__ = ["figures", "GRID_BATCH", "GRID_SPEC", "FIG10_BATCH", "FIG10_SPEC", "geomean",
           "point", "FIG9_MODEL", "FIG10_MODEL"]

GRID_BATCH = (4, 16, 64)          # Fig. 8: batch sizes
GRID_SPEC = (1, 2, 4)             # Fig. 8: speculation lengths
FIG10_BATCH = (4, 8, 16, 32, 64, 128)
FIG10_SPEC = (1, 2, 3, 4, 5, 6, 7, 8)
FIG9_MODEL = "GPT-3-175B"
FIG10_MODEL = "LLaMA-65B"
FIG9_SYSTEMS = ("A100+AttAcc", "A100+HBM-PIM", "AttAcc-only", "PAPI")


def geomean(v) -> float:
    v = [x for x in v if x and np.isfinite(x)]
    return float(np.exp(np.mean(np.log(v)))) if v else float("nan")


def point(mname: str, task: str, batch: int, spec: int, alpha: float, systems, seed: int,
          batches: int, decode_only: bool = False, **kw) -> dict:
    """Every system of ``systems`` at one (model, task, batch, spec) point."""
    m = wl.get_model(mname)
    return {s: run_system(s, m, task, batch, spec, alpha=alpha, batches=batches, seed=seed,
                          decode_only=decode_only, **kw) for s in systems}


def _grid(mnames, task, systems, alphas, seed, batches, pg, decode_only=False, **kw) -> dict:
    out = {}
    for mn in mnames:
        for b in GRID_BATCH:
            for s in GRID_SPEC:
                out[(mn, b, s)] = point(mn, task, b, s, alphas[mn], systems, seed, batches,
                                        decode_only, **kw)
        pg.step(f"{task} {mn}")
    return out


def _intensity() -> dict:
    m = wl.get_model("OPT-30B")
    return {"fc": fc_intensity(4, 8, m.hidden), "attention": attention_intensity(8, m.head_dim),
            "fc_by_batch": {b: fc_intensity(b, 8, m.hidden) for b in FIG10_BATCH},
            "attention_by_spec": {s: attention_intensity(s, m.head_dim) for s in FIG10_SPEC}}


def _banks(fpu_area: float) -> dict:
    out = {}
    for name, a in (("paper", FPU_AREA_PAPER), ("configured", fpu_area)):
        cap = FC_STACKS * pim_kind(4, 1, a).capacity
        out[name] = {"fpu_area_mm2": a, "bound": bank_bound(4, a), "banks": banks_per_die(4, a),
                     "capacity_gib": pim_kind(4, 1, a).capacity / 2 ** 30,
                     "gpt3_175b_fits": wl.get_model("GPT-3-175B").weight_bytes <= cap}
    return out


def _power(fpu_area: float) -> dict:
    kinds = {k: pim_kind(f, b, fpu_area) for k, (f, b) in
             {"1P1B": (1, 1), "1P2B": (1, 2), "2P1B": (2, 1), "4P1B": (4, 1)}.items()}
    return {k: {r: power_w(v, r) for r in (1, 2, 4, 8, 16, 32, 64)} for k, v in kinds.items()}


def figures(progress: bool = True, seed: int = 0, batches: int = 1,
            fpu_area: float = FPU_AREA_PAPER) -> dict:
    """Everything ``reproduce papi`` reports, deterministic for a seed."""
    steps = 2 * len(MODELS) + 4
    with Progress(steps, "papi", enabled=progress) as pg:
        alphas = {mn: calibrate_alpha(wl.get_model(mn), fpu_area) for mn in MODELS}
        kw = {"fpu_area": fpu_area}
        a = {mn: v["alpha"] for mn, v in alphas.items()}
        f = {"alpha": alphas,
             "fig8": _grid(MODELS, "creative-writing", SYSTEMS, a, seed, batches, pg, **kw),
             "fig9": _grid((FIG9_MODEL,), "general-qa", FIG9_SYSTEMS, a, seed, batches, pg, **kw)}
        f["fig11"] = _grid(MODELS, "creative-writing", ("AttAcc-only", "PIM-only PAPI"), a, seed,
                           batches, pg, decode_only=True, **kw)
        f["fig10a"] = {b: point(FIG10_MODEL, "creative-writing", b, 1, a[FIG10_MODEL],
                                ("A100+AttAcc", "AttAcc-only", "PAPI"), seed, batches, **kw)
                       for b in FIG10_BATCH}
        pg.step("Fig. 10a")
        f["fig10b"] = {s: point(FIG10_MODEL, "creative-writing", 4, s, a[FIG10_MODEL],
                                ("A100+AttAcc", "AttAcc-only", "PAPI"), seed, batches, **kw)
                       for s in FIG10_SPEC}
        pg.step("Fig. 10b")
        f["fig12"] = point(FIG10_MODEL, "creative-writing", 4, 4, a[FIG10_MODEL],
                           ("AttAcc-only", "PIM-only PAPI"), seed, batches, decode_only=True, **kw)
        f["intensity"] = _intensity()
        f["banks"] = _banks(fpu_area)
        f["power"] = _power(fpu_area)
        pg.step("Fig. 12, §3, eqs. 3-4")
    return f
