"""Benches of ``pam_device`` and ``pam_system``: requests of random q, K, V as beat streams,
golden ``device_attention`` / ``system_attention`` results as the expected output.

A device request of N tokens gives PU k the k-th contiguous share (:func:`~pimforge.sim.golden.
pam.spread`), or the request names its per-PU counts; the Q beats carry the mask of the PUs with
tokens, and each PU's K/V stream gets its share in the ``pam_pu`` format.  A system request
splits the tokens over the tiers first (in the ratio ``split``), then over each tier's PUs;
every tier gets a Q load (mask 0 when it has no tokens).  Both jobs run once without stalls and
once with random stalls (p = 0.3) on every input stream and on ``o``.
"""
from __future__ import annotations

import numpy as np

from pimforge.hw.pam.config import TIERS
from pimforge.sim.benches.pam.beats import pack_rows, partial_beats, pu_beats
from pimforge.sim.benches.pam.pu import random_set
from pimforge.base import numerics as num
from pimforge.sim.golden.pam import device as g_dev
from pimforge.sim.golden.pam import pu as g_pu
from pimforge.sim.golden.pam import ru as g_ru
from pimforge.sim.golden.pam import system as g_sys
from pimforge.sim.harness.job import Job, Phase
from pimforge.sim.harness.stall import StallPattern

__all__ = ["DEVICE_REQUESTS", "SYSTEM_REQUESTS", "device_stream", "device_job", "system_stream",
           "system_job"]

# token counts: not a multiple of the PU count, one token (PUs 1.. idle between two requests
# that use them), an odd size spanning several tiles, whole tiles on two PUs
DEVICE_REQUESTS = (5, 1, 37, 32)
# (tokens, tier split): every tier has tokens, one token (DDR and SSD idle), an idle DDR tier,
# an idle HBM tier, a larger odd request
SYSTEM_REQUESTS = ((7, (2, 1, 1)), (1, (2, 1, 1)), (20, (1, 0, 1)), (9, (0, 1, 2)),
                   (45, (2, 1, 1)))


def _q_beats(q16, lanes: int, mask: int) -> dict:
    rows = np.asarray(q16, dtype=np.int64).reshape(-1, lanes)
    return {"data": pack_rows(rows, 16), "active": [mask] * len(rows)}


def _device_inputs(dcfg, q16, k16, v16, counts, kv: list) -> dict:
    """Q fields of one request for a device, appending the PUs' K/V beats to ``kv``."""
    pcfg = dcfg.pu_config()
    mask, start = 0, 0
    for k, c in enumerate(counts):
        if c:
            mask |= 1 << k
            _extend(kv[k], pu_beats(pcfg, q16, k16[start:start + c], v16[start:start + c])[1])
        start += c
    return _q_beats(q16, dcfg.lanes, mask)


def _extend(dst: dict, src: dict):
    for k, v in src.items():
        dst.setdefault(k, []).extend(v)


def _empty_kv():
    return {"data": [], "is_v": [], "last": []}


def _device_golden(cfg, q16, k16, v16, counts):
    """The device's merged partial for per-PU ``counts`` (None without tokens): the golden
    ``device_attention`` for the even split, else the PU partials merged in PU order."""
    if counts == num.spread(len(k16), [1] * cfg.pus):
        return g_dev.device_attention(cfg.acc, cfg.pu_config().scale, q16, k16, v16, cfg.pus,
                                  cfg.tile_tokens)
    parts, start = [], 0
    for c in counts:
        if c:
            parts.append(g_pu.pu_local_attention(cfg.acc, cfg.pu_config().scale, q16,
                                              k16[start:start + c], v16[start:start + c],
                                              cfg.tile_tokens))
        start += c
    return g_ru.ru_reduce(cfg.acc, parts) if parts else None


def device_stream(cfg, rng, sizes=DEVICE_REQUESTS) -> tuple:
    """``(inputs, expected)`` of ``pam_device``; each entry of ``sizes`` is a token count
    (spread evenly over the PUs) or a tuple of per-PU counts (all zero: Q only, no output)."""
    kv = [_empty_kv() for _ in range(cfg.pus)]
    q, o = {}, {}
    for i, spec in enumerate(sizes):
        counts = num.spread(spec, [1] * cfg.pus) if isinstance(spec, int) else list(spec)
        q16, k16, v16 = random_set(cfg, rng, sum(counts), ("normal", "large")[i % 2])
        _extend(q, _device_inputs(cfg, q16, k16, v16, counts, kv))
        r = _device_golden(cfg, q16, k16, v16, counts)
        if r is not None:
            _extend(o, partial_beats(r, cfg.ru_vector_width, cfg.acc.width))
    inputs = {"i_q": q, **{f"i_kv{k}": kv[k] for k in range(cfg.pus)}}
    return inputs, {"o": o}


def system_stream(cfg, rng, requests=SYSTEM_REQUESTS) -> tuple:
    """``(inputs, expected)`` of ``pam_system`` for ``(tokens, split)`` requests."""
    dcfgs = [cfg.device_config(t) for t in TIERS]
    kv = {t: [_empty_kv() for _ in range(d.pus)] for t, d in zip(TIERS, dcfgs)}
    q = {t: {} for t in TIERS}
    o = {}
    for i, (n, split) in enumerate(requests):
        q16, k16, v16 = random_set(dcfgs[0], rng, n, ("normal", "large")[i % 2])
        r = g_sys.system_attention(cfg.acc, dcfgs[0].pu_config().scale, q16, k16, v16, split,
                               [d.pus for d in dcfgs], cfg.tile_tokens)
        start = 0
        for t, d, c, dev in zip(TIERS, dcfgs, r["tier_counts"], r["devices"]):
            counts = dev["pu_counts"] if dev is not None else [0] * d.pus
            _extend(q[t], _device_inputs(d, q16, k16[start:start + c], v16[start:start + c],
                                         counts, kv[t]))
            start += c
        _extend(o, partial_beats(r, cfg.ru_vector_width, cfg.acc.width, final=True))
    inputs = {f"i_q_{t}": q[t] for t in TIERS}
    for t in TIERS:
        inputs.update({f"i_kv_{t}{k}": f for k, f in enumerate(kv[t])})
    return inputs, {"o": o}


def _phases(inputs, expected, seed, stall_p, stalls) -> Job:
    phases = [Phase("no stalls", inputs, expected)]
    if stalls:
        vs = {name: StallPattern.random(stall_p, seed + 1 + k)
              for k, name in enumerate(sorted(inputs))}
        phases.append(Phase(f"random stalls p={stall_p}", inputs, expected, valid_stall=vs,
                            ready_stall={"*": StallPattern.random(stall_p, seed)}))
    return Job(phases)


def device_job(cfg, rng, seed: int = 1, sizes=DEVICE_REQUESTS, stall_p: float = 0.3,
               stalls: bool = True) -> Job:
    """Requests of ``sizes`` tokens without stalls, then (``stalls``) the same requests with
    random stalls on every stream (each input stream its own pattern)."""
    return _phases(*device_stream(cfg, rng, sizes), seed, stall_p, stalls)


def system_job(cfg, rng, seed: int = 1, requests=SYSTEM_REQUESTS, stall_p: float = 0.3,
               stalls: bool = True) -> Job:
    """``(tokens, split)`` requests without stalls, then (``stalls``) again with random stalls on
    every stream."""
    return _phases(*system_stream(cfg, rng, requests), seed, stall_p, stalls)
