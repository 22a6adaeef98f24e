"""Bench of ``online_softmax``: stimulus, golden expectations, stall phases.

A phase with no stalls and a phase with random stalls (p = 0.3) on the valid side of the input
and the ready side of the output; expected outputs come from
:func:`pimforge.sim.golden.pam.softmax.merge`.

Groups of 1..12 inputs (``first`` on each group's first input) whose maxima
  are spread over several ranges, with ``l_in`` >= 1 or ``l_in = 1`` (streaming scores, PAM eqs.
  1-6), after a block of special values: equal maxima, -0/+0, +-1e4, maxima beyond fp16 and
  close together (the score format is fp32), fp32 subnormals, -inf (a masked tile), +inf and
  NaN.

The stall phase replays every special group and a sample of the random groups drawn from every
class on its own (:func:`stall_groups`): the spread, ``l_in`` streaming or not, repeated maxima,
and whether the group's maxima are all negative or it is long.  A prefix of the stream would
leave a rare class (all-negative groups are about one in ten) to chance.
"""
from __future__ import annotations

import numpy as np

from pimforge.base import numerics as num
from pimforge.sim.benches.pam.beats import STALL_P, stalled
from pimforge.sim.golden.pam import softmax as g_sm
from pimforge.sim.harness.job import Job, Phase

__all__ = ["softmax_inputs", "softmax_groups", "group_kinds", "stall_groups", "softmax_job",
           "SPREADS", "KINDS", "STALL_SHARE", "STALL_MIN_PER_CLASS", "BENCHES"]

# the random groups' spreads of maxima: near-equal, a few units, beyond exp's range in fp16
# (g = 0 or subnormal), far beyond it
SPREADS = (0.5, 4.0, 30.0, 2000.0)
# kinds of a random group (group_kinds), the first that applies
KINDS = ("all negative", "long", "other")
LONG = 8                      # a long group has this many inputs or more
# the stall phase replays about 1 / STALL_SHARE of each class's random groups, and at least
# STALL_MIN_PER_CLASS of each (all, when it has fewer)
STALL_SHARE = 4
STALL_MIN_PER_CLASS = 2


def softmax_inputs(acc, rng, n_random: int) -> dict:
    """``m_in`` (score-format bits), ``l_in`` (acc bits) and ``first`` arrays: the special block,
    then ``n_random`` inputs in random groups."""
    return softmax_groups(acc, rng, n_random)[0]


def softmax_groups(acc, rng, n_random: int) -> tuple:
    """:func:`softmax_inputs`' arrays and its groups: a list of ``(start, stop, cls)`` slices,
    ``cls`` -1 for a special group, else the random group's generation class, ``4 * spread
    index + 2 * streaming + repeated maxima`` (:data:`SPREADS`)."""
    inf, nan = np.inf, np.nan
    groups = [
        ([+0.0, -0.0, +0.0, -0.0, -0.0], [1, 1, 1, 1, 1]),
        ([-0.0, +0.0, 1.0, -0.0], [2, 3, 1, 4]),
        ([3.5, 3.5, 3.5, 3.5], [1, 2, 3, 4]),                   # equal maxima: never swap
        ([1e4, -1e4, 1e4, -1e4, 2e4], [1, 5, 1, 7, 1]),
        ([-1e4, 1e4, 0.0], [3, 1, 1]),
        ([3e5, 3e5 + 0.75, 3e5 - 2.5, 1e6], [1, 2, 3, 1]),     # beyond fp16, differences small
        ([1e-40, -1e-40, 3e-39], [1, 1, 1]),                    # fp32 subnormal maxima
        ([-inf, 2.0, -inf, 1.0], [5, 1, 9, 1]),                 # a fully masked tile first
        ([-inf, -inf], [1, 1]),
        ([60000.0, 60000.0, 60000.0], [30000, 30000, 30000]),  # l overflows in fp16
        ([inf, 1.0, inf], [1, 1, 1]),
        ([1.0, nan, 2.0, nan], [1, 1, 1, 1]),
        ([nan, 1.0], [1, 1]),
        ([5.0, 2.0], [nan, 1]),
    ]
    m, l, first, spans = [], [], [], []
    for gm, gl in groups:
        spans.append((len(m), len(m) + len(gm), -1))
        m += gm
        l += gl
        first += [1] + [0] * (len(gm) - 1)
    total = 0
    while total < n_random:
        k = int(rng.integers(1, 13))
        spread = float(rng.choice(SPREADS))
        gm = rng.normal(0.0, spread, size=k) + rng.uniform(-spread, spread)
        streaming = rng.random() < 0.5
        if streaming:
            gl = np.ones(k)                                     # streaming scores: l_in = 1
        else:
            gl = 1.0 + rng.exponential(8.0, size=k)
        repeated = rng.random() < 0.15
        if repeated:                                            # repeated maxima
            gm[rng.integers(0, k, size=k // 2)] = gm[0]
        spans.append((len(m), len(m) + k, 4 * SPREADS.index(spread) + 2 * streaming + repeated))
        m += gm.tolist()
        l += gl.tolist()
        first += [1] + [0] * (k - 1)
        total += k
    n = len(m) - total + n_random
    m, l, first = m[:n], l[:n], first[:n]
    spans[-1] = (spans[-1][0], n, spans[-1][2])                # the last group, cut short
    with np.errstate(over="ignore", invalid="ignore"):
        x = {"m_in": num.float_bits(num.SCORE, m), "l_in": num.float_bits(acc, l),
             "first": np.array(first, dtype=np.int64)}
    return x, spans


def group_kinds(x, spans) -> np.ndarray:
    """The kind of each group, an index into :data:`KINDS`: every maximum negative (a running
    maximum or padding that starts from 0 shows there), else :data:`LONG` inputs or more, else
    other."""
    m = num.bits_float(num.SCORE, x["m_in"])
    kinds = []
    for start, stop, _ in spans:
        if np.all(m[start:stop] < 0):
            kinds.append(KINDS.index("all negative"))
        elif stop - start >= LONG:
            kinds.append(KINDS.index("long"))
        else:
            kinds.append(KINDS.index("other"))
    return np.array(kinds, dtype=np.int64)


def stall_groups(x, spans, rng, share: float = 1 / STALL_SHARE,
                 minimum: int = STALL_MIN_PER_CLASS) -> list:
    """Indices into ``spans`` of the groups the stall phase replays, in a shuffled order: every
    special group, and from every class of random group (its generation class crossed with
    :func:`group_kinds`) the same random ``share``, at least ``minimum`` (all when fewer)."""
    cls = np.array([c for _, _, c in spans], dtype=np.int64)
    strata = np.where(cls < 0, -1, cls * len(KINDS) + group_kinds(x, spans))
    picked = [np.nonzero(strata == -1)[0]]
    for s in np.unique(strata[strata >= 0]):
        members = np.nonzero(strata == s)[0]
        k = min(len(members), max(minimum, int(np.ceil(len(members) * share))))
        picked.append(rng.choice(members, size=k, replace=False))
    return rng.permutation(np.concatenate(picked)).tolist()


def _softmax_expected(acc, x):
    r = g_sm.merge(acc, x["m_in"], x["l_in"], None, x["first"])
    return {"m": r["m"], "l": r["l"], "g": r["g"], "swap": r["swap"]}


def softmax_job(cfg, rng, seed=1, n_random=3000) -> Job:
    """Job for ``online_softmax``: specials plus ``n_random`` random inputs with no stalls, then
    the specials and :func:`stall_groups`' sample of the random groups (about a quarter) with
    random stalls on both sides."""
    x, spans = softmax_groups(cfg.acc, rng, n_random)
    # separate from ``rng`` so that the sample leaves the no-stall phase as it was
    order = stall_groups(x, spans, np.random.default_rng([seed, 2]))
    idx = np.concatenate([np.arange(spans[g][0], spans[g][1]) for g in order])
    short = {k: v[idx] for k, v in x.items()}
    return Job(phases=[
        Phase("no stalls", inputs={"i": x}, expected={"o": _softmax_expected(cfg.acc, x)}),
        stalled(Phase(f"random stalls p={STALL_P}", inputs={"i": short},
                     expected={"o": _softmax_expected(cfg.acc, short)}), seed),
    ])


BENCHES = {"online_softmax": softmax_job}
