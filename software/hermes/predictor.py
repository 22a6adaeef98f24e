"""The Hermes lightweight predictor (§IV-C, Fig. 7) and the online hot/cold adjustment (Fig. 8a).

* **State table.** Each neuron has a 4-bit state ``s1`` in 0..15, set after the prefill from
  its activation frequency in 16 equal stages of ``STAGE_WIDTH`` (below 2% -> 0; 90% and above
  -> 15, as §IV-C's examples say), then updated per token: ``+STEP_UP`` (4) when the neuron
  fired, ``-1`` when not, saturating at 0 and 15.
* **Correlation table.** The two neurons of the previous layer most correlated with a neuron
  (Pearson, over the profiled tokens).
* **Rule.** ``s2`` counts how many of those two fired for this token; the neuron is predicted
  to fire when ``s1 + LAMBDA * s2 > THRESHOLD`` (6 and 15).  The first layer has no previous
  layer; there ``s2`` is taken as 2 when its state marks it hot (``s1 > HOT``) and 0 otherwise,
  i.e. the token-wise part alone.
* **Hot neurons.** A state above ``HOT`` (10) marks a neuron hot; hot neurons on the DIMMs are
  copied to the GPU in exchange for the GPU's coldest (lowest-state) neuron.
"""
from __future__ import annotations

import numpy as np

__all__ = ["STATE_MAX", "STEP_UP", "STEP_DOWN", "LAMBDA", "THRESHOLD", "HOT", "STAGE_WIDTH",
           "init_state", "update_state", "predict", "top2_correlated", "PredictorStats",
           "run_predictor", "swap_in"]

STATE_MAX = 15      # 4-bit state
STEP_UP = 4         # §IV-C: +s with s = 4 when the neuron fires
STEP_DOWN = 1       # -1 when it does not
LAMBDA = 6          # §IV-C: lambda
THRESHOLD = 15      # §IV-C: T
HOT = 10            # §IV-C: T_h
STAGE_WIDTH = 0.06  # 16 stages over 0..0.96: < 2% -> 0 (and < 6%), >= 90% -> 15


def init_state(freq: np.ndarray) -> np.ndarray:
    """States from prefill activation frequencies (16 stages)."""
    return np.clip(np.floor(np.asarray(freq, float) / STAGE_WIDTH + 1e-9), 0,
                   STATE_MAX).astype(np.int16)


def update_state(state: np.ndarray, fired: np.ndarray) -> np.ndarray:
    """The finite-state machine: +4 on a firing, -1 otherwise, saturating in 0..15."""
    step = np.where(fired, STEP_UP, -STEP_DOWN)
    return np.clip(state + step, 0, STATE_MAX).astype(np.int16)


def predict(state: np.ndarray, parents_fired: np.ndarray | None) -> np.ndarray:
    """``s1 + LAMBDA * s2 > THRESHOLD``; ``parents_fired`` is s2 (0, 1 or 2) or None for the
    first layer (token-wise only: s2 = 2 when the neuron is hot)."""
    s2 = np.where(state > HOT, 2, 0) if parents_fired is None else parents_fired
    return state + LAMBDA * s2 > THRESHOLD


def top2_correlated(prev: np.ndarray, cur: np.ndarray) -> np.ndarray:
    """For each neuron of ``cur`` ([tokens, n] bool), the two neurons of ``prev`` most
    correlated with it over the tokens: [n, 2] indices."""
    a = prev.astype(np.float32)
    b = cur.astype(np.float32)
    a = (a - a.mean(0)) / (a.std(0) + 1e-6)
    b = (b - b.mean(0)) / (b.std(0) + 1e-6)
    corr = b.T @ a                                   # [n_cur, n_prev]
    top = np.argpartition(-corr, 1, axis=1)[:, :2]
    return top


class PredictorStats:
    """Confusion counts of the predictor over (layer, token, neuron)."""

    def __init__(self):
        self.tp = self.fp = self.fn = self.tn = 0

    def add(self, pred: np.ndarray, fired: np.ndarray) -> None:
        self.tp += int((pred & fired).sum())
        self.fp += int((pred & ~fired).sum())
        self.fn += int((~pred & fired).sum())
        self.tn += int((~pred & ~fired).sum())

    @property
    def accuracy(self) -> float:
        n = self.tp + self.fp + self.fn + self.tn
        return (self.tp + self.tn) / n if n else float("nan")

    @property
    def recall(self) -> float:
        return self.tp / max(1, self.tp + self.fn)

    @property
    def precision(self) -> float:
        return self.tp / max(1, self.tp + self.fp)

    def as_dict(self) -> dict:
        return {"accuracy": self.accuracy, "recall": self.recall, "precision": self.precision,
                "tp": self.tp, "fp": self.fp, "fn": self.fn, "tn": self.tn}


def run_predictor(act: np.ndarray, prefill: int, layer_rule: bool = True,
                  token_rule: bool = True) -> tuple:
    """Run the predictor over a trace ``act[layer, token, neuron]``: states initialised from
    the first ``prefill`` tokens, correlation tables from the same tokens, then predict and
    update token by token.  Returns (states [layer, decode token, neuron] before each token,
    PredictorStats).  ``token_rule`` / ``layer_rule`` off give the ablations of §V-C (token-
    or layer-wise prediction only)."""
    L, T, N = act.shape
    tables = [None] + [top2_correlated(act[l - 1, :prefill], act[l, :prefill])
                       for l in range(1, L)]
    state = np.stack([init_state(act[l, :prefill].mean(0)) for l in range(L)])
    states = np.empty((L, T - prefill, N), np.int16)
    stats = PredictorStats()
    for t in range(prefill, T):
        states[:, t - prefill] = state
        for layer in range(L):
            s1 = state[layer] if token_rule else np.full(N, HOT, np.int16)
            s2 = None
            if layer > 0:
                s2 = act[layer - 1, t][tables[layer]].sum(axis=1) if layer_rule else \
                    np.where(s1 > HOT, 2, 0)
            pred = predict(s1, s2)
            if layer > 0:
                stats.add(pred, act[layer, t])
            state[layer] = update_state(state[layer], act[layer, t])
    return states, stats


def swap_in(on_gpu: np.ndarray, state: np.ndarray) -> int:
    """Fig. 8a: every DIMM neuron whose state is above HOT replaces the GPU neuron of lowest
    state, hottest first, while that state is lower.  Updates ``on_gpu`` (bool) in place;
    returns the number of neurons copied to the GPU."""
    cand = np.flatnonzero(~on_gpu & (state > HOT))
    if cand.size == 0:
        return 0
    cand = cand[np.argsort(-state[cand], kind="stable")]
    gpu = np.flatnonzero(on_gpu)
    gpu = gpu[np.argsort(state[gpu], kind="stable")]
    k = 0
    while k < min(cand.size, gpu.size) and state[gpu[k]] < state[cand[k]]:
        k += 1
    on_gpu[gpu[:k]] = False
    on_gpu[cand[:k]] = True
    return k
