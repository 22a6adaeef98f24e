"""Bench of ``pam_device``: requests of random q, K, V as beat streams,
golden ``device_attention`` / ``system_attention`` results as the expected output.

A device request of N tokens gives PU k the k-th contiguous share
(:func:`~pimforge.base.numerics.spread`), or the request names its per-PU counts; the Q beats
carry the mask of the PUs with tokens (on the first beat; the others carry its complement,
which the device must ignore), and each PU's K/V stream gets its share in the ``pam_pu``
format.  A system request
splits the tokens over the tiers first (in the ratio ``split``), then over each tier's PUs;
every tier gets a Q load (mask 0 when it has no tokens).  Both jobs run once without stalls and
once with random stalls (p = 0.3) on every input stream and on ``o``.
"""
from __future__ import annotations

import numpy as np

from pimforge.base import numerics as num
from pimforge.sim.benches.pam.beats import pack_rows, partial_beats, pu_beats
from pimforge.sim.benches.pam.pu import random_set
from pimforge.sim.golden.pam import device as g_dev
from pimforge.sim.golden.pam import pu as g_pu
from pimforge.sim.golden.pam import ru as g_ru
from pimforge.sim.harness.job import Job, Phase
from pimforge.sim.harness.stall import StallPattern

__all__ = ["DEVICE_REQUESTS", "device_stream", "device_job", "device_inputs", "empty_kv",
           "extend", "stall_phases", "BENCHES"]

# token counts: not a multiple of the PU count, one token (PUs 1.. idle between two requests
# that use them), an odd size spanning several tiles, whole tiles on two PUs
DEVICE_REQUESTS = (5, 1, 37, 32)
def _q_beats(q16, lanes: int, mask: int, pus: int) -> dict:
    """Q beats; the device reads ``active`` on beat 0 only, so the later beats carry the mask's
    complement (a device that read them would start the idle PUs and skip the busy ones)."""
    rows = np.asarray(q16, dtype=np.int64).reshape(-1, lanes)
    other = ~mask & ((1 << pus) - 1)
    return {"data": pack_rows(rows, 16), "active": [mask] + [other] * (len(rows) - 1)}


def device_inputs(dcfg, q16, k16, v16, counts, kv: list) -> dict:
    """Q fields of one request for a device, appending the PUs' K/V beats to ``kv``."""
    pcfg = dcfg.pu_config()
    mask, start = 0, 0
    for k, c in enumerate(counts):
        if c:
            mask |= 1 << k
            extend(kv[k], pu_beats(pcfg, q16, k16[start:start + c], v16[start:start + c])[1])
        start += c
    return _q_beats(q16, dcfg.lanes, mask, dcfg.pus)


def extend(dst: dict, src: dict):
    for k, v in src.items():
        dst.setdefault(k, []).extend(v)


def empty_kv():
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
    kv = [empty_kv() for _ in range(cfg.pus)]
    q, o = {}, {}
    for i, spec in enumerate(sizes):
        counts = num.spread(spec, [1] * cfg.pus) if isinstance(spec, int) else list(spec)
        q16, k16, v16 = random_set(cfg, rng, sum(counts), ("normal", "large")[i % 2])
        extend(q, device_inputs(cfg, q16, k16, v16, counts, kv))
        r = _device_golden(cfg, q16, k16, v16, counts)
        if r is not None:
            extend(o, partial_beats(r, cfg.ru_vector_width, cfg.acc.width))
    inputs = {"i_q": q, **{f"i_kv{k}": kv[k] for k in range(cfg.pus)}}
    return inputs, {"o": o}


def stall_phases(inputs, expected, seed, stall_p, stalls) -> Job:
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
    return stall_phases(*device_stream(cfg, rng, sizes), seed, stall_p, stalls)


BENCHES = {"pam_device": device_job}
