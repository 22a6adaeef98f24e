"""Closed-form cycle estimates of the Hermes NDP core at model sizes (Hermes §IV-A).

The exact cycle models (:func:`pimforge.hw.hermes.gemv_timing.gemv_schedule`, which includes
the DIMM, and :func:`pimforge.hw.hermes.act_timing.act_cycles`) are checked against the RTL;
their cost grows with the job (one step per DRAM burst), so the system model, which needs whole
layers of 70B models, uses these O(1) forms instead.  ``tests/hermes/test_perf.py`` holds them
to the exact models.

A GEMV job streams ``n`` active neurons of ``length`` fp16 values each.  Its time is the larger
of the DIMM's (bytes over ``dimm_efficiency`` x the peak) and the engine's (one beat per ``G``
cycles), plus a fixed fill-and-drain latency and, in column mode, the write-back of the result.
"""
from __future__ import annotations

import math

from pimforge.hw.hermes.act_timing import act_cycles
from pimforge.hw.hermes.config import DDR4_3200, MODES, NDP_CLOCK_MHZ, HermesActConfig
from pimforge.hw.hermes.config import HermesGemvConfig

__all__ = ["gemv_estimate", "act_estimate", "DIMM_EFFICIENCY", "GEMV_OVERHEAD"]

DIMM_EFFICIENCY = 0.97   # streaming fraction of the DIMM peak (row switches; see test_perf)
GEMV_OVERHEAD = 120      # cycles: DRAM latency, the engine's pipeline and the last drain


def gemv_estimate(cfg: HermesGemvConfig, mode: str, d_in: int, d_out: int, batch: int = 1,
                  n_active: int | None = None, timing=DDR4_3200,
                  clock_mhz: float = NDP_CLOCK_MHZ) -> float:
    """Cycles of ``y = W x`` on one NDP core for ``batch`` vectors.

    ``mode`` is ``rows`` (neurons are W's rows, ``n_active`` of ``d_out``; dense when None) or
    ``cols`` (neurons are W's columns, ``n_active`` of ``d_in``).  Longer neurons than the buffer
    holds run as several passes (column mode: the output split; row mode: the input split, each
    pass's output merged into the next)."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
    length, total = (d_in, d_out) if mode == "rows" else (d_out, d_in)
    n = total if n_active is None else n_active
    beats = math.ceil(length / cfg.beat_elems)
    groups = cfg.groups(batch)
    passes = math.ceil(beats / cfg.max_beats)
    mem = n * length * 2 / (timing.peak_bytes_per_cycle(clock_mhz) * DIMM_EFFICIENCY)
    compute = n * beats * groups
    drain = beats * batch if mode == "cols" else 0
    return max(mem, compute) + drain + GEMV_OVERHEAD * passes


def act_estimate(cfg: HermesActConfig, op: str, n: int) -> float:
    """Cycles of ReLU (one pass) or softmax (stream in with the max, exp-and-sum, normalize:
    three passes over the buffered vector) over ``n`` elements: the exact, O(1) cycle model
    :func:`pimforge.hw.hermes.act_timing.act_cycles`."""
    return act_cycles(cfg, op, n)
