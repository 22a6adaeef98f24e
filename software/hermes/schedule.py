"""The Hermes scheduling variants of Fig. 13 run over activation traces: per decode token, how
many of a layer's neurons fire on the GPU and on the busiest DIMM, and how many move.

* ``random``: a random offline placement (the GPU's share of neurons drawn at random).
* ``partition``: the offline placement of §IV-B (on the offline profile trace).
* ``adjustment``: + the online hot/cold adjustment of §IV-C (predictor states, Fig. 8a).
* ``hermes``: + the window remapping of cold neurons across DIMMs of §IV-D (Algorithm 1).

Every neuron is stored on a DIMM (§IV-C2: "we store all the weight parameters on DIMMs"); the
GPU keeps copies of its share.  A neuron the GPU holds is computed there, any other firing
neuron on its home DIMM.  Loads are fractions of the layer, so the step model scales them to
the full layer of any model.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np

from pimforge.software.hermes.placement import PlacementProblem, greedy, remap
from pimforge.software.hermes.predictor import run_predictor, swap_in
from pimforge.software.hermes.traces import WINDOW, TraceSpec, generate

__all__ = ["BlockLoads", "block_loads", "profile_problem", "predictor_run"]


@dataclass(frozen=True)
class BlockLoads:
    """Per (layer, decode token) fractions of a layer's neurons: firing on the GPU (``gpu``),
    on the busiest DIMM (``dimm_max``), on all DIMMs (``cold``), any firing (``active``),
    copied to the GPU (``swaps``) and remapped on the busiest DIMM pair (``moves``)."""

    gpu: np.ndarray
    dimm_max: np.ndarray
    cold: np.ndarray
    active: np.ndarray
    swaps: np.ndarray
    moves: np.ndarray


def profile_problem(spec: TraceSpec, gpu_frac: float, dimms: int, t_gpu: float,
                    t_dimm: float) -> PlacementProblem:
    """The offline problem (Table I) from the profile trace (stream 1, batch 1): frequencies of
    the correlated layers, the GPU's capacity ``gpu_frac`` of them."""
    prof = generate(replace(spec, stream=1, batch=1))
    freq = prof.act[1:].mean(axis=1)
    return PlacementProblem(freq, dimms, int(gpu_frac * freq.size), freq.size, t_gpu, t_dimm)


@lru_cache(maxsize=64)
def predictor_run(spec: TraceSpec) -> tuple:
    """The predictor over the request trace: (states [layer, token, neuron], stats)."""
    tr = generate(spec)
    return run_predictor(tr.act, spec.prefill)


def _offline(spec: TraceSpec, variant: str, gpu_frac: float, dimms: int, ratio: float):
    """Offline unit per (layer, neuron): -1 GPU, else DIMM."""
    prob = profile_problem(spec, gpu_frac, dimms, 1.0, ratio)
    L, N = prob.freq.shape
    if variant == "random":
        rng = np.random.default_rng([spec.seed, 7])
        unit = np.stack([np.resize(np.arange(dimms), N) for _ in range(L)])
        unit = np.stack([rng.permutation(u) for u in unit])
        gpu = rng.permutation(L * N)[:prob.gpu_capacity]
        unit.ravel()[gpu] = -1
        return unit
    return greedy(prob).unit


@lru_cache(maxsize=512)
def block_loads(spec: TraceSpec, variant: str, gpu_frac: float, dimms: int,
                ratio: float = 8.0) -> BlockLoads:
    """Run ``variant`` over the request trace of ``spec``; ``ratio`` is the time of a neuron
    on a DIMM over the GPU's (the ILP's T^DIMM / T^GPU)."""
    tr = generate(spec)
    unit = _offline(spec, variant, gpu_frac, dimms, ratio)
    Lu, N = unit.shape
    D, P = spec.decode, spec.prefill
    states = predictor_run(spec)[0][1:] if variant in ("adjustment", "hermes") else None
    rr = np.resize(np.arange(dimms), N)
    out = {k: np.zeros((Lu, D)) for k in ("gpu", "dimm_max", "cold", "active", "swaps",
                                          "moves")}
    for layer in range(Lu):
        on_gpu = unit[layer] < 0
        home = np.where(on_gpu, rr, unit[layer])      # the GPU's neurons keep a DIMM copy
        window = np.zeros(N)
        for t in range(D):
            if states is not None:
                out["swaps"][layer, t] = swap_in(on_gpu, states[layer, t])
            fired = tr.act[layer + 1, P + t]
            cold = fired & ~on_gpu
            per = np.bincount(home[cold], minlength=dimms)
            out["gpu"][layer, t] = (fired & on_gpu).sum()
            out["dimm_max"][layer, t] = per.max()
            out["cold"][layer, t] = cold.sum()
            out["active"][layer, t] = fired.sum()
            window += fired
            if variant == "hermes" and (t + 1) % WINDOW == 0:
                home, moved = remap(home, on_gpu, window, dimms)
                out["moves"][layer, t] = max(moved) if moved else 0
                window[:] = 0
    return BlockLoads(**{k: v / N for k, v in out.items()})
