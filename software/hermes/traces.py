"""Synthetic activation traces for the Hermes model (no network, so no real activations).

A *trace* is a boolean array ``act[layer, token, neuron]``: whether the ReLU output of a neuron
(a row of the up-projection or QKV matrix, §II-B footnote 1) is non-zero for a token.  The
generator reproduces the four properties Hermes builds on, each with a parameter of
:class:`TraceSpec` (values and sources in :data:`TRACE_PARAMS`):

* **ReLU sparsity** per layer: neuron ``i`` fires with marginal probability ``p_i`` and the
  ``p_i`` average to ``1 - sparsity``.
* **Power law** (§III-A): ``p_i`` is proportional to ``rank^-alpha`` (capped at ``P_MAX``),
  ``alpha`` solved so that the top ``HOT_SHARE`` (20%) of neurons carry ``HOT_LOAD`` (80%) of
  the activations.  Ranks are shuffled over neuron ids, so hot neurons are scattered.
* **Token drift** (§III-B1, §IV-D): a neuron fires when a standard-normal latent ``x`` exceeds
  ``Phi^-1(1 - p_i)`` (a Gaussian copula: the marginal stays ``p_i``).  The latent's own part is
  a slow AR(1) context (per-token correlation ``rho``, share ``slow``) plus per-token noise, so
  neighbouring tokens fire similar sets while the set wanders over a sequence.
* **Layer correlation** (§III-B2): each neuron has two parents in the previous layer; its latent
  mixes the parents' latents with weight ``parent_weight``.

Batched traces are the union over ``batch`` independent sequences (a neuron's weights are read
once when any sequence needs them).  Everything is seeded and deterministic.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from statistics import NormalDist

import numpy as np

__all__ = ["TraceSpec", "Trace", "TRACE_PARAMS", "HOT_SHARE", "HOT_LOAD", "P_MAX", "WINDOW",
           "propensities", "generate", "load_share", "window_drift", "adjacent_similarity"]

HOT_SHARE = 0.20    # §III-A: about 20% of neurons ...
HOT_LOAD = 0.80     # ... carry about 80% of the activations
P_MAX = 0.95        # the hottest neuron fires on at most 95% of tokens (assumed)
WINDOW = 5          # §IV-D: five tokens per remapping window

_INV = np.vectorize(NormalDist().inv_cdf, otypes=[float])


@dataclass(frozen=True)
class TraceSpec:
    """Shape and statistics of one trace (defaults: see :data:`TRACE_PARAMS`)."""

    neurons: int = 2048
    layers: int = 3
    prefill: int = 128
    decode: int = 128
    sparsity: float = 0.9
    rho: float = 0.998
    slow: float = 0.6
    parent_weight: float = 0.8
    batch: int = 1
    seed: int = 0
    stream: int = 0     # which sequences (0: the request, 1: the offline profile); the
    #                     neurons' rates and parents depend on ``seed`` only

    @property
    def tokens(self) -> int:
        return self.prefill + self.decode


TRACE_PARAMS = [
    ("trace neurons per layer", "2,048 (full layers are scaled by fraction)",
     "the loads are fractions of a layer; 2,048 keeps reproduce under a minute"),
    ("trace layers", "3 (a root layer and two correlated ones)", "every layer is statistically "
     "alike; two are enough to hold the predictor's layer rule"),
    ("prefill / decode tokens", "128 / 128", "Hermes §V-A: 128 input and 128 output tokens"),
    ("power law", f"top {HOT_SHARE:.0%} of neurons carry {HOT_LOAD:.0%} of activations, p <= "
     f"{P_MAX}", "Hermes §III-A (20/80); the cap is assumed"),
    ("slow-context AR(1) rho", "0.998 per token", "chosen so a DIMM's expected load moves "
     "< 5% within a 5-token window (§IV-D) while the hot set wanders over a sequence (§III-B: "
     "52% of the initial hot neurons change)"),
    ("slow share of a neuron's own latent", "0.6", "assumed: the rest is per-token noise; sets "
     "the adjacent-token similarity (Fig. 4a)"),
    ("parent weight", "0.8 (two parents in the previous layer, drawn in proportion to their "
     "activity; the child's latent mixes their standardized firings)", "assumed: gives the "
     "layer correlation of Fig. 4b (a parent firing makes the child several times likelier)"),
    ("batched traces", "union of independent sequences", "a weight is read once per batch"),
]


def _solve_alpha(n: int, mean: float) -> float:
    """Exponent of the power law whose top HOT_SHARE carry HOT_LOAD of the activations."""
    lo, hi = 0.0, 4.0
    for _ in range(60):
        a = (lo + hi) / 2
        share = load_share(_scaled(n, a, mean), HOT_SHARE)
        lo, hi = (a, hi) if share < HOT_LOAD else (lo, a)
    return (lo + hi) / 2


def _scaled(n: int, alpha: float, mean: float) -> np.ndarray:
    """rank^-alpha scaled to ``mean`` with the cap P_MAX (fixed point on the scale)."""
    base = np.arange(1, n + 1, dtype=float) ** -alpha
    c = mean / base.mean()
    for _ in range(50):
        p = np.minimum(P_MAX, c * base)
        if abs(p.mean() - mean) < 1e-9:
            break
        c *= mean / p.mean()
    return np.minimum(P_MAX, c * base)


@lru_cache(maxsize=64)
def propensities(neurons: int, sparsity: float) -> np.ndarray:
    """Marginal firing probabilities sorted hottest first (the power law of §III-A)."""
    mean = 1.0 - sparsity
    return _scaled(neurons, _solve_alpha(neurons, mean), mean)


def load_share(rates: np.ndarray, top: float) -> float:
    """The share of all activations carried by the ``top`` fraction of neurons."""
    r = np.sort(np.asarray(rates, float))[::-1]
    k = max(1, int(round(top * len(r))))
    return float(r[:k].sum() / r.sum())


@dataclass
class Trace:
    """``act[layer, token, neuron]`` (bool), the neurons' marginal rates ``p[layer, neuron]``,
    each neuron's two parents ``parents[layer, neuron, 2]`` (layer 0 has none: -1) and the root
    layer's expected rates given the slow context ``expected[token, neuron]``."""

    spec: TraceSpec
    act: np.ndarray
    p: np.ndarray
    parents: np.ndarray
    expected: np.ndarray


def _sequence(spec: TraceSpec, rng, thr, p, parents, expected: bool = True) -> tuple:
    """One sequence: (act[layers, tokens, neurons], root expected rates[tokens, neurons], or None
    without ``expected``).  The arithmetic runs in place where it can: the same operations in
    the same order as the expressions in the comments, so the same bits."""
    L, T, N = spec.layers, spec.tokens, spec.neurons
    shocks = rng.standard_normal((L, T, N)).astype(np.float32)
    slow = np.empty((L, T, N), np.float32)
    slow[:, 0] = rng.standard_normal((L, N))
    shocks *= np.float32(np.sqrt(1 - spec.rho ** 2))        # k * shocks
    for t in range(1, T):                                     # rho * slow[t-1] + k * shocks[t]
        np.multiply(slow[:, t - 1], spec.rho, out=slow[:, t])
        slow[:, t] += shocks[:, t]
    noise = rng.standard_normal((L, T, N)).astype(np.float32)
    lat = np.sqrt(spec.slow) * slow                           # own = sqrt(slow) * slow
    lat += np.sqrt(1 - spec.slow) * noise                     #       + sqrt(1 - slow) * noise
    w = spec.parent_weight
    for layer in range(1, L):
        fired = (lat[layer - 1] > thr[layer - 1]).astype(np.float32)
        pp = p[layer - 1]
        z = fired - pp
        z /= np.sqrt(pp * (1 - pp))                           # each parent's firing, standardized
        mix = z.take(parents[layer, :, 0], axis=1)            # mix = (z[:, a] + z[:, b])
        mix += z.take(parents[layer, :, 1], axis=1)           #       / sqrt(2)
        mix /= np.sqrt(2)
        mix *= np.sqrt(w)                                     # lat = sqrt(w) * mix
        lat[layer] *= np.sqrt(1 - w)                          #       + sqrt(1 - w) * own
        lat[layer] += mix
    act = lat > thr[:, None, :]
    if not expected:
        return act, None
    sd = np.sqrt(1 - spec.slow)
    z = (np.sqrt(spec.slow) * slow[0] - thr[0][None, :]) / sd
    return act, 0.5 * (1 + _erf(z / np.sqrt(2)))


def _erf(x: np.ndarray) -> np.ndarray:
    """Abramowitz-Stegun 7.1.26 (|error| < 1.5e-7), vectorized (no SciPy in the lock)."""
    s = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t
               + 0.254829592) * t * np.exp(-a * a)
    return s * y


@lru_cache(maxsize=128)
def generate(spec: TraceSpec) -> Trace:
    """The trace of ``spec`` (cached: callers must not modify it)."""
    rng = np.random.default_rng([spec.seed, spec.neurons, spec.layers,
                                 int(spec.sparsity * 1e6)])
    L, N = spec.layers, spec.neurons
    base = propensities(N, spec.sparsity)
    p = np.stack([base[rng.permutation(N)] for _ in range(L)])
    parents = np.full((L, N, 2), -1, np.int64)
    for layer in range(1, L):
        w = p[layer - 1] / p[layer - 1].sum()      # parents drawn by activity: busy neurons
        a = rng.choice(N, N, p=w)
        b = rng.choice(N, N, p=w)
        b = np.where(b == a, (a + 1) % N, b)       # two distinct parents
        parents[layer] = np.stack([a, b], axis=1)
    thr = _INV(1.0 - p).astype(np.float32)
    rng = np.random.default_rng([spec.seed, spec.stream, spec.batch, spec.neurons,
                                 int(spec.sparsity * 1e6), 1])
    act = np.zeros((L, spec.tokens, N), bool)
    expected = None
    for b in range(spec.batch):             # the expected rates are the first sequence's
        a, e = _sequence(spec, rng, thr, p, parents, expected=b == 0)
        act |= a
        expected = e if expected is None else expected
    return Trace(spec, act, p, parents, expected)


def window_drift(trace: Trace, groups: int = 8, window: int = WINDOW) -> float:
    """The largest relative change, within any ``window``-token window of the decode phase, of a
    group's expected load (root layer; neurons dealt round-robin over ``groups`` DIMMs): the
    quantity §IV-D bounds by 5%."""
    e = trace.expected[trace.spec.prefill:]
    n = e.shape[1]
    load = np.stack([e[:, g::groups].sum(axis=1) for g in range(min(groups, n))], axis=1)
    worst = 0.0
    for s in range(0, len(load) - window + 1, window):
        w = load[s:s + window]
        worst = max(worst, float(((w.max(axis=0) - w.min(axis=0)) / w.mean(axis=0)).max()))
    return worst


def adjacent_similarity(trace: Trace, distance: int = 1) -> float:
    """Mean Jaccard similarity of the active sets of tokens ``distance`` apart (Fig. 4a)."""
    a = trace.act[:, :-distance]
    b = trace.act[:, distance:]
    inter = (a & b).sum(axis=2)
    union = np.maximum(1, (a | b).sum(axis=2))
    return float((inter / union).mean())
