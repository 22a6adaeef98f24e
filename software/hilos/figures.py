"""The grids of HILOS's evaluation computed with the step model: Figures 10, 12b, 13, 14 and 15
and the kernel throughput of Table 3, as plain data for
:mod:`~pimforge.software.hilos.reproduce`."""
from __future__ import annotations

import numpy as np

from pimforge.software import devices as dev
from pimforge.software import workloads as wl
from pimforge.software.hilos.config import (
    ALPHAS, CONTEXTS, DEFAULT_DEVICES, SPILLS, HilosModelConfig
)
from pimforge.software.hilos.step import all_systems, step_flex_ssd, step_hilos, tput
from pimforge.software.report import Progress

__all__ = ["FIG10_MODELS", "FIG12_MODELS", "FIG13_MODELS", "FIG13_CONTEXT", "FIG13_C_ALPHAS",
           "FIG14_MODELS", "FIG14_CONTEXTS", "FIG14_OUTPUTS", "FIG10_GRID", "FIG15_GRID",
           "ABLATION", "figures", "peak_gflops"]

FIG10_MODELS = ("OPT-30B", "OPT-66B", "OPT-175B")
FIG12_MODELS = ("Qwen2.5-32B", "Mixtral-8x7B", "GLaM-143B")
FIG13_MODELS = ("OPT-66B", "OPT-175B")
FIG13_CONTEXT = 32768
FIG13_C_ALPHAS = (0.25, 0.5)            # the spill-interval sweeps run at these alphas
FIG14_MODELS = ("OPT-66B", "OPT-175B")
FIG14_CONTEXTS = (16384, 65536)
FIG14_OUTPUTS = (16, 32, 64, 128, 256)
FIG10_GRID = tuple((mn, s) for mn in FIG10_MODELS for s in CONTEXTS)
FIG15_GRID = tuple((mn, s) for mn in FIG10_MODELS + ("GLaM-143B",) for s in CONTEXTS)
ABLATION = ("ANS", "ANS+WB", "ANS+X", "HILOS")      # Figure 15's variants of HILOS(8)


def _figure10(gpu, b: int, n: int, pg: Progress) -> dict:
    """Tokens/s of every system (decoding only) per (model, context)."""
    fig10 = {}
    for mn, s in FIG10_GRID:
        m = wl.get_model(mn)
        fig10[(mn, s)] = {k: tput(v, n, False) for k, v in all_systems(m, gpu, b, s, n).items()}
        pg.step(f"{mn} {s}")
    return fig10


def _figure15(gpu, b: int, n: int, pg: Progress) -> dict:
    """The ablation at the default device count: each variant's tokens/s over FLEX(SSD)'s."""
    N = DEFAULT_DEVICES
    ab = {}
    for mn, s in FIG15_GRID:
        m = wl.get_model(mn)
        f = tput(step_flex_ssd(m, gpu, b, s, n), n, False)
        ab[(mn, s)] = {
            "ANS": tput(step_hilos(m, gpu, b, s, n, N, xcache=False, writeback=False), n,
                        False) / f,
            "ANS+WB": tput(step_hilos(m, gpu, b, s, n, N, xcache=False), n, False) / f,
            "ANS+X": tput(step_hilos(m, gpu, b, s, n, N, writeback=False), n, False) / f,
            "HILOS": tput(step_hilos(m, gpu, b, s, n, N), n, False) / f}
        pg.step(f"ablation {mn} {s}")
    return ab


def _figure12b(gpu, b: int, n: int, pg: Progress) -> dict:
    """GQA and MoE models: HILOS at the default device count over the better baseline."""
    N = DEFAULT_DEVICES
    f12 = {}
    for mn in FIG12_MODELS:
        m = wl.get_model(mn)
        for s in CONTEXTS:
            sy = all_systems(m, gpu, b, s, n, devices=(N,))
            best = np.nanmax([tput(sy[k], n, False) for k in ("FLEX(DRAM)", "FLEX(SSD)")])
            f12[(mn, s)] = tput(sy[f"HILOS({N})"], n, False) / best
            pg.step(f"{mn} {s}")
    return f12


def _figure13(gpu, b: int, n: int, pg: Progress) -> dict:
    """Tokens/s over alpha, and over the spill interval c at two alphas."""
    N, s = DEFAULT_DEVICES, FIG13_CONTEXT
    f13 = {}
    for mn in FIG13_MODELS:
        m = wl.get_model(mn)
        f13[mn] = {
            "alpha": [tput(step_hilos(m, gpu, b, s, n, N, a), n, False) for a in ALPHAS],
            "c": {a: [tput(step_hilos(m, gpu, b, s, n, N, a, c), n, False) for c in SPILLS]
                  for a in FIG13_C_ALPHAS}}
        pg.step(f"fig13 {mn}")
    return f13


def _figure14(gpu, b: int, pg: Progress) -> dict:
    """HILOS over FLEX(SSD) by output length, prefill included."""
    N = DEFAULT_DEVICES
    f14 = {}
    for mn in FIG14_MODELS:
        m = wl.get_model(mn)
        for s in FIG14_CONTEXTS:
            for no in FIG14_OUTPUTS:
                f14[(mn, s, no)] = (tput(step_hilos(m, gpu, b, s, no, N), no, True)
                                    / tput(step_flex_ssd(m, gpu, b, s, no), no, True))
                pg.step(f"fig14 {mn} {s} {no}")
    return f14


def figures(progress: bool = True) -> dict:
    """Every figure's grid at the default GPU, batch and output length: ``fig10``, ``fig15``,
    ``fig12b``, ``fig13`` and ``fig14``."""
    cfg = HilosModelConfig()
    gpu, b, n = dev.GPUS[cfg.gpu], cfg.batch, cfg.output_len
    total = (len(FIG10_GRID) + len(FIG15_GRID) + len(FIG12_MODELS) * len(CONTEXTS)
             + len(FIG13_MODELS) + len(FIG14_MODELS) * len(FIG14_CONTEXTS) * len(FIG14_OUTPUTS))
    with Progress(total, "hilos reproduce", enabled=progress) as pg:
        return {"fig10": _figure10(gpu, b, n, pg), "fig15": _figure15(gpu, b, n, pg),
                "fig12b": _figure12b(gpu, b, n, pg), "fig13": _figure13(gpu, b, n, pg),
                "fig14": _figure14(gpu, b, pg)}


def peak_gflops(d_group: int, n: int = 32768, head_dim: int = 128) -> float:
    """Table 3: kernel GFLOPS from the cycle model (4 d FLOPs per token per query head)."""
    sd = dev.SMARTSSD
    jobs = 64
    t = sd.kernel_time(d_group, head_dim, jobs, n)
    return jobs * d_group * 4 * head_dim * n / t / 1e9
