"""Bench of ``pam_ru``: stimulus, golden expectations, stall phases.

The bench runs a phase with no stalls and a phase with random stalls (p = 0.3) on the valid
side of the input and the ready side of the output.  Expected outputs come from
:mod:`pimforge.sim.golden.pam.common` (``ru_reduce``).

* ``pam_ru``: requests of 1..8 partials in random order.  Every other request among the first
  24 holds partials that ``pu_local_attention`` computed on random q, K, V (1..24 tokens each,
  with a per-partial query scale so the maxima differ); the others hold synthetic partials:
  ``m`` spread over [-12, 12], ``l`` in [1, 64] and ``O = l * u`` with ``|u| <= 2``.  A
  single-partial request and a request whose partials share one maximum are always included.
"""
from __future__ import annotations

import numpy as np

from pimforge.base import numerics as num
from pimforge.base.formats import FP16
from pimforge.sim.benches.pam.beats import STALL_P, partial_beats, ru_request_beats, stalled
from pimforge.sim.golden.pam import pu as g_pu
from pimforge.sim.golden.pam import ru as g_ru
from pimforge.sim.harness.job import Job, Phase

__all__ = ["ru_requests", "ru_expected", "ru_stream", "ru_job", "BENCHES"]

PU_REQUESTS = 12   # requests (per phase) whose partials come from pu_local_attention (slow)


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
        phases.append(stalled(ph, seed) if stall else ph)
    return Job(phases=phases)


BENCHES = {"pam_ru": ru_job}
