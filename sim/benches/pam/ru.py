"""Benches of ``online_softmax`` and ``pam_ru``: stimulus, golden expectations, stall phases.

Both benches run a phase with no stalls and a phase with random stalls (p = 0.3) on the valid
side of the input and the ready side of the output.  Expected outputs come from
:mod:`pimforge.sim.golden.pam.common` (``merge`` and ``ru_reduce``).

* ``online_softmax``: groups of 1..12 inputs (``first`` on each group's first input) whose maxima
  are spread over several ranges, with ``l_in`` >= 1 or ``l_in = 1`` (streaming scores, PAM eqs.
  1-6), after a block of special values: equal maxima, -0/+0, +-1e4, maxima beyond fp16 and
  close together (the score format is fp32), fp32 subnormals, -inf (a masked tile), +inf and
  NaN.
* ``pam_ru``: requests of 1..8 partials in random order.  Every other request among the first
  24 holds partials that ``pu_local_attention`` computed on random q, K, V (1..24 tokens each,
  with a per-partial query scale so the maxima differ); the others hold synthetic partials:
  ``m`` spread over [-12, 12], ``l`` in [1, 64] and ``O = l * u`` with ``|u| <= 2``.  A
  single-partial request and a request whose partials share one maximum are always included.
"""
from __future__ import annotations

import numpy as np

from pimforge.base.formats import FP16
from pimforge.sim.benches.pam.beats import partial_beats, ru_request_beats
from pimforge.base import numerics as num
from pimforge.sim.golden.pam import pu as g_pu
from pimforge.sim.golden.pam import ru as g_ru
from pimforge.sim.golden.pam import softmax as g_sm
from pimforge.sim.harness.job import Job, Phase
from pimforge.sim.harness.stall import StallPattern

__all__ = ["softmax_inputs", "softmax_job", "ru_requests", "ru_expected", "ru_stream", "ru_job",
           "STALL_P"]

STALL_P = 0.3
PU_REQUESTS = 12   # requests (per phase) whose partials come from pu_local_attention (slow)


def _stall(phase: Phase, seed: int) -> Phase:
    phase.valid_stall = {"*": StallPattern.random(STALL_P, seed)}
    phase.ready_stall = {"*": StallPattern.random(STALL_P, seed + 1)}
    return phase


# ---------------------------------------------------------------- online_softmax

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
        _stall(Phase(f"random stalls p={STALL_P}", inputs={"i": short},
                     expected={"o": _softmax_expected(cfg.acc, short)}), seed),
    ])


# ---------------------------------------------------------------- pam_ru

def _pu_partials(cfg, rng, count):
    """``count`` partials of ``pu_local_attention`` on random fp16 q, K, V."""
    d, acc = cfg.head_dim, cfg.acc
    out = []
    for _ in range(count):
        n_tok = int(rng.integers(1, 25))
        q = rng.normal(0, 1.0, size=d) * float(rng.choice([0.5, 1.0, 2.0, 4.0]))
        k = rng.normal(0, 1.0, size=(n_tok, d)) + rng.normal(0, 0.5)
        v = rng.normal(0, 1.0, size=(n_tok, d))
        r = g_pu.pu_local_attention(acc, 1.0 / np.sqrt(d), num.float_bits(FP16, q),
                                   num.float_bits(FP16, k), num.float_bits(FP16, v), tile=16)
        out.append({"O": r["O"], "m": r["m"], "l": r["l"]})
    return out


def _synthetic_partials(cfg, rng, count, same_m=False):
    """``m`` in [-12, 12] (fp32), ``l`` in [1, 64], ``O = l * u`` with ``|u| <= 2``."""
    acc, d = cfg.acc, cfg.head_dim
    ms = np.full(count, rng.uniform(-12, 12)) if same_m else rng.uniform(-12, 12, size=count)
    out = []
    for j in range(count):
        l = 1.0 + 63.0 * rng.random()
        o = l * rng.uniform(-2, 2, size=d)
        out.append({"O": num.float_bits(acc, o), "m": int(num.float_bits(num.SCORE, [ms[j]])[0]),
                    "l": int(num.float_bits(acc, [l])[0])})
    return out


def ru_requests(cfg, rng, n_requests: int) -> list:
    """``n_requests`` lists of partials (dicts with ``O``, ``m``, ``l`` bits), each in random order;
    the first request has one partial, the second shares one maximum over all partials, and
    even-numbered requests among the first ``2 * PU_REQUESTS`` hold PU partials."""
    reqs = []
    for r in range(n_requests):
        count = 1 if r == 0 else int(rng.integers(1, 9))
        if r == 1:
            parts = _synthetic_partials(cfg, rng, max(count, 3), same_m=True)
        elif r % 2 == 0 and r < 2 * PU_REQUESTS:
            parts = _pu_partials(cfg, rng, count)
        else:
            parts = _synthetic_partials(cfg, rng, count)
        reqs.append([parts[i] for i in rng.permutation(len(parts))])
    return reqs


def ru_expected(cfg, parts) -> dict:
    """Golden ``o`` fields (``ru_reduce``) of one request."""
    r = g_ru.ru_reduce(cfg.acc, parts, final=cfg.final)
    return partial_beats(r, cfg.vector_width, cfg.acc.width, final=cfg.final)


def ru_stream(cfg, requests) -> tuple:
    """Input fields and expected output fields (golden ``ru_reduce``) for a list of requests."""
    fin, fout = {}, {}
    for parts in requests:
        for dst, src in ((fin, ru_request_beats(parts, cfg.vector_width, cfg.acc.width)),
                         (fout, ru_expected(cfg, parts))):
            for k, v in src.items():
                dst.setdefault(k, []).extend(v)
    return fin, fout


def ru_job(cfg, rng, seed=1, n_random=None, n_requests=None, stall_requests=None) -> Job:
    """Job for ``pam_ru``: ``n_requests`` requests with no stalls, then ``stall_requests`` more
    with random stalls on both sides.  ``n_random`` (the CLI's count) asks for about that many
    input beats in the no-stall phase instead."""
    if n_requests is None:
        n_requests = 24 if n_random is None else max(4, n_random // (4 * cfg.beats))
    if stall_requests is None:
        stall_requests = max(4, n_requests // 2)
    phases = []
    for name, count, stall in (("no stalls", n_requests, False),
                               (f"random stalls p={STALL_P}", stall_requests, True)):
        fin, fout = ru_stream(cfg, ru_requests(cfg, rng, count))
        ph = Phase(name, inputs={"i": fin}, expected={"o": fout})
        phases.append(_stall(ph, seed) if stall else ph)
    return Job(phases=phases)
