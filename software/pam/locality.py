"""Context locality, KV importance and PAM's KV placement, simulated token by token (PAM §3.2,
§6.1, §6.3).

One trace follows one (request, KV head) through ``steps`` decoding steps:

* **Scores with locality.**  Each token has a latent log-importance ``z`` (normal, spread
  ``sigma``); the ``window`` most recent tokens and the first ``sinks`` tokens get a boost
  (PAM §3.2: important tokens cluster around the current one; attention sinks).  Each step a
  fraction ``drift`` of the tokens draws a new ``z``: the important set drifts.  The
  performance score ``S`` is the softmax of the logits scaled to mean 1.
* **Sparse attention.**  The top ``keep`` fraction of tokens by score is activated (PAM §7.1:
  8x compression): only those are computed, wherever they are stored.
* **Importance** (PAM eq. 7): ``I = lambda * S + (1 - lambda) * I_prev``, lambda = 0.6;
  **device importance score** (eq. 8): the mean ``I`` of the tokens a tier holds.
* **Placement policies.**  ``pam``: prefill tokens placed by importance, new tokens into HBM
  (evicting the least important token down a tier when a tier is over its share), and
  Algorithm 2's two greedy swap loops after every step.  ``pam_static`` ("w/o KV
  scheduling"): the same prefill placement, new tokens into the highest tier with room, no
  swaps.  ``static``: tiers filled in token order (L-PIM / LS-PIM: placement ignores
  importance).
* **Intra-device mapping** (PAM §6.1): tokens of a tier go to bank groups (PUs) either
  greedily by activation frequency over the last 10 steps (PAM) or by their 16-token page
  index round robin (naive, "w/o KV mapping"); the trace records each PU's activated tokens.
* **Fixed tiling** ("w/o PAMattention"): the work if a tier's tokens, stored 16 to a tile in
  position order, must be computed a whole tile at a time whenever one of them is activated.

Everything per step is vectorized NumPy over the tokens.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["LocalityParams", "Trace", "importance_update", "device_scores", "schedule_step",
           "balanced_ratios", "simulate", "POLICIES", "LAMBDA"]

LAMBDA = 0.6            # PAM §6.3.1, eq. 7
POLICIES = ("pam", "pam_static", "static")
TILE = 16               # fixed tile / page size: vLLM's KV block of 16 tokens
FREQ_WINDOW = 10        # PAM §6.1: activation frequency tracked over 10 decoding steps
H, D, S = 0, 1, 2
_TIER_IDS = np.array([H, D, S], np.int8)


@dataclass(frozen=True)
class LocalityParams:
    """The attention-score generator.  None of these is given by PAM (assumed values)."""

    sigma: float = 1.5          # spread of the latent log-importance
    window: int = 32            # recent tokens boosted
    recency_boost: float = 2.5
    sinks: int = 4
    sink_boost: float = 4.0
    drift: float = 0.02         # fraction of tokens re-drawn per step
    keep: float = 1 / 8         # PAM §7.1: 8x KV compression


def importance_update(i_prev: np.ndarray, score: np.ndarray, lam: float = LAMBDA) -> np.ndarray:
    """PAM eq. 7: ``I_j = lam * S_j + (1 - lam) * I_{j-1}``."""
    return lam * score + (1.0 - lam) * i_prev


def device_scores(importance: np.ndarray, tier: np.ndarray) -> np.ndarray:
    """PAM eq. 8: per tier (HBM, DDR, SSD), the sum of its tokens' importance over its token
    count (0 for an empty tier)."""
    sums = np.bincount(tier, weights=importance, minlength=3)
    counts = np.bincount(tier, minlength=3)
    return np.divide(sums, counts, out=np.zeros(3), where=counts > 0)


def balanced_ratios(rates, counts) -> tuple:
    """The x : y : 1 targets of eq. 9 that balance the tiers' load.

    A tier's attention time is its activated tokens over its rate; with importance standing for
    activation probability, ``IS_t * n_t / R_t`` equal in every tier gives
    ``IS_t ~ R_t / n_t``.  PAM finds x and y by offline profiling; we take them from the
    tiers' rates (from the cycle models) and token counts."""
    r = np.asarray(rates, float)
    n = np.maximum(np.asarray(counts, float), 1.0)
    w = r / n
    return float(w[H] / w[S]), float(w[D] / w[S])


def _swap_count(low: np.ndarray, high: np.ndarray, ok) -> int:
    """Algorithm 2's loop in closed form: swap the k least important tokens of the upper tier
    (``low``, ascending) with the k most important of the lower tier (``high``, descending),
    for the smallest k that satisfies ``ok(gain)`` (gain = cumulative importance moved up), or
    as long as a swap still moves importance up."""
    m = min(len(low), len(high))
    if m == 0:
        return 0
    gains = high[:m] - low[:m]
    stop = gains <= 0
    first = int(stop.argmax())                  # the first True, or 0 if there is none
    useful = first if stop[first] else m
    if useful == 0:
        return 0
    cum = np.cumsum(gains[:useful])
    hit = ok(cum)
    first = int(hit.argmax())
    return first + 1 if hit[first] else useful


def schedule_step(importance: np.ndarray, tier: np.ndarray, x: float, y: float) -> tuple:
    """PAM Algorithm 2 on one trace, in place: returns the swaps of its two loops (DDR-SSD,
    HBM-DDR); each swap moves two tokens."""
    idx = [np.flatnonzero(tier == t) for t in (H, D, S)]
    n = np.array([len(i) for i in idx], float)
    if n[S] == 0 or n[D] == 0:
        return 0, 0
    imps = [importance[i] for i in idx]          # each tier's importances, in position order
    sums = np.array([v.sum() for v in imps])
    swaps = [0, 0]

    # lines 2-7: HBM and DDR together against SSD, swapping DDR's least with SSD's most
    def ok1(g):
        xs = sums[H] / max(n[H], 1) / ((sums[S] - g) / n[S])
        ys = (sums[D] + g) / n[D] / ((sums[S] - g) / n[S])
        return xs + ys >= x + y

    if sums[S] > 0 and not ok1(0.0):
        d_ord = idx[D][np.argsort(imps[D], kind="stable")]
        s_ord = idx[S][np.argsort(-imps[S], kind="stable")]
        k = _swap_count(importance[d_ord], importance[s_ord], ok1)
        g = float(np.sum(importance[s_ord[:k]] - importance[d_ord[:k]]))
        tier[d_ord[:k]], tier[s_ord[:k]] = S, D
        sums[D] += g
        sums[S] -= g
        swaps[0] = k
    # lines 8-12: HBM against DDR
    if n[H] == 0 or y <= 0:
        return tuple(swaps)

    def ok2(g):
        return ((sums[H] + g) / n[H]) / np.maximum((sums[D] - g) / n[D], 1e-300) >= x / y

    if sums[D] > 0 and not ok2(0.0):
        # the first loop leaves HBM alone, and DDR too when it swapped nothing
        h_idx, d_idx = idx[H], (np.flatnonzero(tier == D) if swaps[0] else idx[D])
        h_ord = h_idx[np.argsort(imps[H], kind="stable")]
        d_ord = d_idx[np.argsort(-importance[d_idx], kind="stable")]
        k = _swap_count(importance[h_ord], importance[d_ord], ok2)
        tier[h_ord[:k]], tier[d_ord[:k]] = D, H
        swaps[1] = k
    return tuple(swaps)


@dataclass
class Trace:
    """Per-step results of :func:`simulate` (arrays over steps)."""

    activated: np.ndarray        # (steps, 3) activated tokens per tier
    tokens: np.ndarray           # (steps,) context length
    migrated: np.ndarray         # (steps, 2) tokens moved by Algorithm 2: DDR<->SSD, HBM<->DDR
    evicted: np.ndarray          # (steps,) tokens moved down by new-token placement
    tiled: np.ndarray            # (steps, 3) tokens computed under fixed 16-token tiling
    pu_load: np.ndarray          # (steps, 3, pus, 2) activated tokens per PU: greedy, naive

    def fractions(self) -> np.ndarray:
        """Mean share of the activated tokens held by each tier."""
        a = self.activated.sum(axis=0)
        return a / max(a.sum(), 1)

    def migration_rate(self) -> float:
        """Tokens moved by Algorithm 2 per step over the context (PAM §6.3: 0.7%)."""
        return float(np.mean(self.migrated.sum(axis=1) / self.tokens))

    def tiling_factor(self) -> np.ndarray:
        """Per tier, work under fixed tiling over token-wise work (>= 1)."""
        a = self.activated.sum(axis=0)
        return np.where(a > 0, self.tiled.sum(axis=0) / np.maximum(a, 1), 1.0)

    def imbalance(self, *others: "Trace") -> np.ndarray:
        """(3, 2): per tier, the busiest PU's work over the mean PU's, for the greedy and the
        naive mapping, in the large-batch limit: the loads of every step and of the other
        traces (other requests sharing the same PUs) add up before the busiest PU is taken, so
        random imbalance averages out and only the mapping's systematic skew remains."""
        load = self.pu_load.sum(axis=0).astype(float)   # (3, pus, 2)
        for o in others:
            load = load + o.pu_load.sum(axis=0)
        busiest = load.max(axis=1)
        mean = load.mean(axis=1)
        return np.where(mean > 0, busiest / np.maximum(mean, 1e-12), 1.0)


def _tiled_work(tier: np.ndarray, act: np.ndarray) -> np.ndarray:
    """Tokens each tier computes under fixed tiling: a tier stores its tokens in position
    order, 16 to a tile, and computes every tile that holds one of the activated tokens."""
    cnt = np.bincount(tier, minlength=3).tolist()
    t_act = tier[act]
    # rank of each activated token in its tier's storage order: tier members before it
    rank = np.cumsum(tier == _TIER_IDS[:, None], axis=1)[t_act, act] - 1
    hit = np.zeros((3, len(tier) // TILE + 1), bool)     # the tiles each tier computes
    hit[t_act, rank // TILE] = True
    tiles = hit.sum(axis=1).tolist()
    work = np.zeros(3, np.int64)
    for t in (H, D, S):
        if tiles[t] == 0:
            continue
        last = (cnt[t] - 1) // TILE                      # the last tile may be partial
        work[t] = tiles[t] * TILE - (TILE * (last + 1) - cnt[t] if hit[t, last] else 0)
    return work


def _place_prefill(policy, score, shares, n):
    caps = _caps(shares, n)
    tier = np.full(n, S, np.int8)
    order = np.arange(n) if policy == "static" else np.argsort(-score, kind="stable")
    tier[order[:caps[H]]] = H
    tier[order[caps[H]:caps[H] + caps[D]]] = D
    return tier


def _caps(shares, n):
    """Tokens each tier may hold out of ``n`` (the last tier takes the rounding), as Python
    ints (``round`` rounds half to even, like ``np.rint``)."""
    sh = [float(v) for v in shares]
    c = [round(v * n) for v in sh]
    c[H] = min(c[H], n)
    c[D] = min(c[D], n - c[H])
    if sh[S] <= 0:                  # no SSD share: DDR (or HBM) takes the rounding
        c[D if sh[D] > 0 else H] += n - c[H] - c[D]
    c[S] = n - c[H] - c[D]
    return c


def simulate(n0: int, steps: int, shares, policy: str = "pam", ratios=(1.0, 1.0),
             params: LocalityParams = LocalityParams(), seed: int = 0, pus: int = 16,
             lam: float = LAMBDA) -> Trace:
    """Run one trace.  ``shares`` = fractions of the context each tier can hold (HBM, DDR,
    SSD; the batch-level capacity split), ``ratios`` = Algorithm 2's (x, y), ``pus`` = bank
    groups per tier for the intra-device mapping, ``lam`` = eq. 7's lambda."""
    if policy not in POLICIES:
        raise ValueError(f"policy {policy!r}; allowed: {', '.join(POLICIES)}")
    rng = np.random.default_rng(seed)
    p = params
    n_max = n0 + steps
    z = rng.normal(0.0, p.sigma, n_max)
    pos = np.arange(n_max)
    boost = np.where(pos < p.sinks, p.sink_boost, 0.0)
    x, y = ratios

    def scores(n):
        logit = z[:n] + boost[:n]
        logit[max(0, n - p.window):n] += p.recency_boost
        e = np.exp(logit - logit.max())
        return e * (n / e.sum())

    s0 = scores(n0)
    tier = np.empty(n_max, np.int8)
    tier[:n0] = _place_prefill(policy, s0, shares, n0)
    imp = np.zeros(n_max)
    imp[:n0] = s0
    # intra-device mapping: naive = page index round robin; greedy = least recently active PU
    naive_pu = (pos // TILE) % pus
    greedy_pu = np.empty(n_max, np.int64)
    freq = np.zeros((3, pus))                 # activations per PU over the last 10 steps
    hist = np.zeros((FREQ_WINDOW, 3, pus))
    counts = np.zeros((3, pus))
    for t in (H, D, S):                       # prefill tokens: round robin by importance rank
        members = np.flatnonzero(tier[:n0] == t)
        members = members[np.argsort(-s0[members], kind="stable")]
        greedy_pu[members] = np.arange(len(members)) % pus
        counts[t] += np.bincount(greedy_pu[members], minlength=pus)
    out = {k: [] for k in ("act", "mig", "ev", "tiled", "load")}
    for j in range(steps):
        n = n0 + j
        if j > 0:
            # the previous step's token joins the context
            new = n - 1
            caps = _caps(shares, n)
            cnt = np.bincount(tier[:new], minlength=3).tolist()
            ev = 0
            if policy == "pam":
                tier[new] = H
                cnt[H] += 1
                for hi, lo in ((H, D), (D, S)):
                    if cnt[hi] > caps[hi]:
                        members = np.flatnonzero(tier[:n] == hi)
                        victim = members[np.argmin(imp[members])]
                        tier[victim] = lo
                        cnt[hi] -= 1
                        cnt[lo] += 1
                        ev += 1
            else:
                room = [t for t in (H, D) if cnt[t] < caps[t]]
                tier[new] = room[0] if room else S
            t_new = tier[new]
            greedy_pu[new] = int(np.argmin(freq[t_new] + 1e-3 * counts[t_new]))
            counts[t_new, greedy_pu[new]] += 1
            # drift: some tokens' latent importance changes
            k = int(round(p.drift * n))
            if k:
                z[rng.choice(n, k, replace=False)] = rng.normal(0.0, p.sigma, k)
        else:
            ev = 0
        s = scores(n)
        k_act = max(1, int(np.ceil(p.keep * n)))
        act = np.argpartition(-s, k_act - 1)[:k_act]
        tiers_act = tier[act]
        out["act"].append(np.bincount(tiers_act, minlength=3))
        out["tiled"].append(_tiled_work(tier[:n], act))
        # activated tokens per (tier, PU, mapping): greedy and naive counted in one pass
        cell = 2 * pus * tiers_act.astype(np.int64)
        cells = np.concatenate([cell + 2 * greedy_pu[act], cell + 2 * naive_pu[act] + 1])
        load = np.bincount(cells, minlength=6 * pus).reshape(3, pus, 2).astype(float)
        out["load"].append(load)
        hist[j % FREQ_WINDOW] = load[..., 0]
        freq = hist.sum(axis=0)
        imp[:n] = importance_update(imp[:n], s, lam)
        sw = schedule_step(imp[:n], tier[:n], x, y) if policy == "pam" else (0, 0)
        out["mig"].append((2 * sw[0], 2 * sw[1]))
        out["ev"].append(ev)
    return Trace(activated=np.array(out["act"]), tokens=n0 + np.arange(steps),
                 migrated=np.array(out["mig"]), evicted=np.array(out["ev"]),
                 tiled=np.array(out["tiled"]), pu_load=np.array(out["load"]))
