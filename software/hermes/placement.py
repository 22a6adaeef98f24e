"""Neuron placement: the offline ILP of Hermes §IV-B (Table I, eqs. 1-7), a greedy heuristic,
and the window-based online remapping of §IV-D (Algorithm 1).

**ILP.**  Units are the GPU and ``dimms`` NDP-DIMMs.  With ``y[c, j]`` the number of neurons of
cluster ``c`` computed on unit ``j``, eqs. 4-5 give a layer's load on each unit, eq. 2's max over
the DIMMs and eq. 1's max of GPU and DIMMs are linearised by one variable per layer,
``T_l >= T_GPU,l + 2 T_sync`` (eq. 3) and ``T_l >= T_DIMM,j,l`` for every DIMM, and the objective
is ``sum_l T_l``.  Eqs. 6-7 cap the neurons on the GPU and on each DIMM.  A *cluster* is a run of
neurons of one layer with neighbouring profiled frequencies; with clusters of one neuron this is
exactly the paper's binary ILP, and larger clusters (their neurons interchangeable at the
cluster's mean frequency) keep CBC well under a second at the reproduced sizes.

**Greedy.**  The hottest neurons over all layers go to the GPU, as many as minimise the
objective (scanned over the GPU's capacity); the rest are dealt to the DIMMs in frequency
order in a snake (0..J-1, J-1..0, ...), a vectorised stand-in for longest-processing-time.

**Remapping (Algorithm 1).**  The printed loop (``for id < J/2: while Z_id <= Z_{J-id}``) reads
an index past the end at ``id = 0`` and, after the descending sort, a condition that is false
from the start.  We implement the evident intent, as the text describes it: sort the DIMMs by
their activations in the last window, pair the most loaded with the least loaded (``id`` with
``J-1-id``), and move the heavier DIMM's most-activated neurons to the lighter one, each the most
activated whose count is at most half the pair's difference (so the pair never swaps order and
its maximum falls with every move), until no such neuron is left or the pair is within
``tol`` of the mean.
"""
from __future__ import annotations

import time
import warnings
from dataclasses import dataclass

import numpy as np
import pulp

__all__ = ["PlacementProblem", "Placement", "solve_ilp", "greedy", "objective", "remap",
           "expand"]


@dataclass(frozen=True)
class PlacementProblem:
    """``freq[layer, neuron]`` profiled activation frequencies; ``t_gpu`` and ``t_dimm`` the
    time of one activated neuron on the GPU and on a DIMM (Table I's T_l^j, the same for every
    layer); ``t_sync`` one synchronisation; capacities in neurons (eqs. 6-7).  The DIMM
    capacity is split evenly over the layers (each DIMM holds its share of every layer), which
    keeps each layer's DIMMs interchangeable, so the ILP may order them (symmetry breaking)."""

    freq: np.ndarray
    dimms: int
    gpu_capacity: int
    dimm_capacity: int
    t_gpu: float
    t_dimm: float
    t_sync: float = 0.0


@dataclass
class Placement:
    """``unit[layer, neuron]``: -1 for the GPU, else the DIMM; the objective (eq. 1), and the
    solver's wall time and status."""

    unit: np.ndarray
    objective: float
    seconds: float = 0.0
    status: str = ""


def objective(prob: PlacementProblem, unit: np.ndarray) -> float:
    """Eq. 1 for a placement: sum over layers of max(T_GPU + 2 T_sync, max_j T_DIMM,j)."""
    total = 0.0
    for layer in range(prob.freq.shape[0]):
        f, u = prob.freq[layer], unit[layer]
        gpu = prob.t_gpu * f[u < 0].sum() + 2 * prob.t_sync
        dimm = max(prob.t_dimm * f[u == j].sum() for j in range(prob.dimms))
        total += max(gpu, dimm)
    return float(total)


def _clusters(freq: np.ndarray, size: int) -> list:
    """Per layer: neuron ids sorted hottest first, cut into runs of ``size``."""
    out = []
    for layer in range(freq.shape[0]):
        order = np.argsort(-freq[layer], kind="stable")
        out.append([order[i:i + size] for i in range(0, len(order), size)])
    return out


def expand(prob: PlacementProblem, clusters: list, counts: dict) -> np.ndarray:
    """Neuron-level placement from cluster counts: within a cluster the hottest go to the GPU,
    the rest are dealt over their DIMMs in turn."""
    L, N = prob.freq.shape
    unit = np.zeros((L, N), np.int64)
    for layer, cl in enumerate(clusters):
        for c, ids in enumerate(cl):
            units = [j for j in range(prob.dimms) for _ in range(counts[(layer, c, j)])]
            order = [-1] * counts[(layer, c, -1)]
            # the DIMM share dealt in turn, so each DIMM gets hot and cold members alike
            unit[layer, ids] = np.array(order + _interleave(units), np.int64)[:len(ids)]
    return unit


def _interleave(units: list) -> list:
    """[0,0,1,1,2] -> [0,1,2,0,1]: round-robin over the units with their multiplicities."""
    left = {j: units.count(j) for j in sorted(set(units))}
    out = []
    while left:
        for j in list(left):
            out.append(j)
            left[j] -= 1
            if not left[j]:
                del left[j]
    return out


def solve_ilp(prob: PlacementProblem, cluster: int = 128, time_limit: float = 20.0,
              gap: float = 5e-3) -> Placement:
    """Eqs. 1-7 with PuLP's CBC on clusters of ``cluster`` neurons (1 = the exact binary ILP),
    to a relative optimality ``gap`` (CBC's ratio gap) or ``time_limit`` seconds."""
    t0 = time.monotonic()
    cl = _clusters(prob.freq, cluster)
    units = [-1] + list(range(prob.dimms))
    dimm_cap = prob.dimm_capacity // len(cl)
    lp = pulp.LpProblem("hermes_placement", pulp.LpMinimize)
    y, T = {}, []
    for layer, cls in enumerate(cl):
        for c, ids in enumerate(cls):
            for j in units:
                y[(layer, c, j)] = lp.add_variable(f"y_{layer}_{c}_{j + 1}", 0, len(ids),
                                                   cat="Integer")
            lp += pulp.lpSum(y[(layer, c, j)] for j in units) == len(ids)
        T.append(lp.add_variable(f"T_{layer}", 0))
        mean = [prob.freq[layer, ids].mean() for ids in cls]
        load = {j: pulp.lpSum(mean[c] * y[(layer, c, j)] for c in range(len(cls)))
                for j in units}
        lp += T[layer] >= prob.t_gpu * load[-1] + 2 * prob.t_sync           # eqs. 3-4
        for j in units[1:]:
            lp += T[layer] >= prob.t_dimm * load[j]                          # eqs. 2, 5
            if j > 0:                     # a layer's DIMMs are interchangeable: order them
                lp += load[j - 1] >= load[j]
            lp += pulp.lpSum(y[(layer, c, j)] for c in range(len(cls))) <= dimm_cap  # eq. 7
    lp += pulp.lpSum(T)                                                      # eq. 1
    lp += pulp.lpSum(v for k, v in y.items() if k[2] == -1) <= prob.gpu_capacity   # eq. 6
    with warnings.catch_warnings():
        # PuLP 3.3 flags its bundled CBC for PuLP 4.0; COIN_CMD needs a cbc on PATH, which the
        # lock does not give, so the bundled one stays
        warnings.simplefilter("ignore", DeprecationWarning)
        solver = pulp.PULP_CBC_CMD(msg=False, timeLimit=time_limit, gapRel=gap)
    lp.solve(solver)
    counts = {k: int(round(v.value() or 0)) for k, v in y.items()}
    unit = expand(prob, cl, counts)
    return Placement(unit, objective(prob, unit), time.monotonic() - t0,
                     pulp.LpStatus[lp.status])


def _snake(n: int, dimms: int) -> np.ndarray:
    """0, 1, .., J-1, J-1, .., 0, 0, 1, ... for n items."""
    period = np.concatenate([np.arange(dimms), np.arange(dimms)[::-1]])
    return np.resize(period, n)


def greedy(prob: PlacementProblem, steps: int = 64) -> Placement:
    """Hottest neurons (over all layers) on the GPU, the count scanned for the best eq. 1; the
    rest snake-dealt over the DIMMs by frequency."""
    t0 = time.monotonic()
    L, N = prob.freq.shape
    flat = np.argsort(-prob.freq.ravel(), kind="stable")
    cap = min(prob.gpu_capacity, L * N)
    best = None
    for k in sorted(set(np.linspace(0, cap, steps + 1).astype(int))):
        unit = np.zeros(L * N, np.int64)
        unit[flat[:k]] = -1
        unit = unit.reshape(L, N)
        for layer in range(L):
            rest = np.flatnonzero(unit[layer] >= 0)
            rest = rest[np.argsort(-prob.freq[layer, rest], kind="stable")]
            unit[layer, rest] = _snake(len(rest), prob.dimms)
        if np.bincount(unit[unit >= 0], minlength=prob.dimms).max() > prob.dimm_capacity:
            continue
        obj = objective(prob, unit)
        if best is None or obj < best.objective:
            best = Placement(unit, obj)
    best.seconds = time.monotonic() - t0
    best.status = "greedy"
    return best


def remap(home: np.ndarray, on_gpu: np.ndarray, counts: np.ndarray, dimms: int,
          tol: float = 0.02) -> tuple:
    """Algorithm 1 on one layer: ``home[neuron]`` the DIMM holding it, ``on_gpu`` the neurons
    the GPU computes (not counted), ``counts`` their activations in the last window.  Returns
    (new home, neurons moved per pair)."""
    home = home.copy()
    cold = ~on_gpu
    z = np.bincount(home[cold], weights=counts[cold], minlength=dimms).astype(float)
    order = np.argsort(-z, kind="stable")
    mean = z.mean()
    moved = []
    for pid in range(dimms // 2):
        h, lo = order[pid], order[dimms - 1 - pid]
        ids = np.flatnonzero(cold & (home == h) & (counts > 0))
        ids = ids[np.argsort(-counts[ids], kind="stable")]
        n = 0
        for i in ids:
            diff = z[h] - z[lo]
            if diff <= tol * mean:
                break
            if counts[i] <= diff / 2:
                home[i] = lo
                z[h] -= counts[i]
                z[lo] += counts[i]
                n += 1
        moved.append(n)
    return home, moved
