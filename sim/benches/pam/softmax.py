"""Bench of ``online_softmax``: stimulus, golden expectations, stall phases.

A phase with no stalls and a phase with random stalls (p = 0.3) on the valid side of the input
and the ready side of the output; expected outputs come from
:func:`pimforge.sim.golden.pam.softmax.merge`.

Groups of 1..12 inputs (``first`` on each group's first input) whose maxima
  are spread over several ranges, with ``l_in`` >= 1 or ``l_in = 1`` (streaming scores, PAM eqs.
  1-6), after a block of special values: equal maxima, -0/+0, +-1e4, maxima beyond fp16 and
  close together (the score format is fp32), fp32 subnormals, -inf (a masked tile), +inf and
  NaN.
"""
from __future__ import annotations

import numpy as np

from pimforge.base import numerics as num
from pimforge.sim.benches.pam.beats import STALL_P, stalled
from pimforge.sim.golden.pam import softmax as g_sm
from pimforge.sim.harness.job import Job, Phase

__all__ = ["softmax_inputs", "softmax_job", "BENCHES"]


def softmax_inputs(acc, rng, n_random: int) -> dict:
    """``m_in`` (score-format bits), ``l_in`` (acc bits) and ``first`` arrays: the special block,
    then ``n_random`` inputs in random groups."""
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
    m, l, first = [], [], []
    for gm, gl in groups:
        m += gm
        l += gl
        first += [1] + [0] * (len(gm) - 1)
    total = 0
    while total < n_random:
        k = int(rng.integers(1, 13))
        spread = float(rng.choice([0.5, 4.0, 30.0, 2000.0]))
        gm = rng.normal(0.0, spread, size=k) + rng.uniform(-spread, spread)
        if rng.random() < 0.5:
            gl = np.ones(k)                                     # streaming scores: l_in = 1
        else:
            gl = 1.0 + rng.exponential(8.0, size=k)
        if rng.random() < 0.15:                                 # repeated maxima
            gm[rng.integers(0, k, size=k // 2)] = gm[0]
        m += gm.tolist()
        l += gl.tolist()
        first += [1] + [0] * (k - 1)
        total += k
    n = len(m) - total + n_random
    m, l, first = m[:n], l[:n], first[:n]
    with np.errstate(over="ignore", invalid="ignore"):
        return {"m_in": num.float_bits(num.SCORE, m), "l_in": num.float_bits(acc, l),
                "first": np.array(first, dtype=np.int64)}


def _softmax_expected(acc, x):
    r = g_sm.merge(acc, x["m_in"], x["l_in"], None, x["first"])
    return {"m": r["m"], "l": r["l"], "g": r["g"], "swap": r["swap"]}


def softmax_job(cfg, rng, seed=1, n_random=3000) -> Job:
    """Job for ``online_softmax``: specials plus ``n_random`` random inputs with no stalls, then
    the specials plus a quarter of them with random stalls on both sides."""
    x = softmax_inputs(cfg.acc, rng, n_random)
    cut = len(x["first"]) - n_random + max(1, n_random // 4)   # the specials and a quarter
    short = {k: v[:cut] for k, v in x.items()}
    return Job(phases=[
        Phase("no stalls", inputs={"i": x}, expected={"o": _softmax_expected(cfg.acc, x)}),
        stalled(Phase(f"random stalls p={STALL_P}", inputs={"i": short},
                     expected={"o": _softmax_expected(cfg.acc, short)}), seed),
    ])


BENCHES = {"online_softmax": softmax_job}
