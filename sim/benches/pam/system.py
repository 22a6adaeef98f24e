"""Bench of ``pam_system``: requests of random q, K, V split over the tiers (in the ratio
``split``), then over each tier's PUs, as in :mod:`~pimforge.sim.benches.pam.device`; every tier gets a Q load (mask 0
when it has no tokens).  Golden ``system_attention`` results are the expected output.  The job
runs once without stalls and once with random stalls (p = 0.3) on every stream.
"""
from __future__ import annotations

from pimforge.hw.pam.config import TIERS
from pimforge.sim.benches.pam.beats import partial_beats
from pimforge.sim.benches.pam.device import device_inputs, empty_kv, extend, stall_phases
from pimforge.sim.benches.pam.pu import random_set
from pimforge.sim.golden.pam import system as g_sys
from pimforge.sim.harness.job import Job

__all__ = ["SYSTEM_REQUESTS", "system_stream", "system_job", "BENCHES"]

# (tokens, tier split): every tier has tokens, one token (DDR and SSD idle), an idle DDR tier,
# an idle HBM tier, a larger odd request
SYSTEM_REQUESTS = ((7, (2, 1, 1)), (1, (2, 1, 1)), (20, (1, 0, 1)), (9, (0, 1, 2)),
                   (45, (2, 1, 1)))


def system_stream(cfg, rng, requests=SYSTEM_REQUESTS) -> tuple:
    """``(inputs, expected)`` of ``pam_system`` for ``(tokens, split)`` requests."""
    dcfgs = [cfg.device_config(t) for t in TIERS]
    kv = {t: [empty_kv() for _ in range(d.pus)] for t, d in zip(TIERS, dcfgs)}
    q = {t: {} for t in TIERS}
    o = {}
    for i, (n, split) in enumerate(requests):
        q16, k16, v16 = random_set(dcfgs[0], rng, n, ("normal", "large")[i % 2])
        r = g_sys.system_attention(cfg.acc, dcfgs[0].pu_config().scale, q16, k16, v16, split,
                               [d.pus for d in dcfgs], cfg.tile_tokens)
        start = 0
        for t, d, c, dev in zip(TIERS, dcfgs, r["tier_counts"], r["devices"]):
            counts = dev["pu_counts"] if dev is not None else [0] * d.pus
            extend(q[t], device_inputs(d, q16, k16[start:start + c], v16[start:start + c],
                                         counts, kv[t]))
            start += c
        extend(o, partial_beats(r, cfg.ru_vector_width, cfg.acc.width, final=True))
    inputs = {f"i_q_{t}": q[t] for t in TIERS}
    for t in TIERS:
        inputs.update({f"i_kv_{t}{k}": f for k, f in enumerate(kv[t])})
    return inputs, {"o": o}


def system_job(cfg, rng, seed: int = 1, requests=SYSTEM_REQUESTS, stall_p: float = 0.3,
               stalls: bool = True) -> Job:
    """``(tokens, split)`` requests without stalls, then (``stalls``) again with random stalls on
    every stream."""
    return stall_phases(*system_stream(cfg, rng, requests), seed, stall_p, stalls)


BENCHES = {"pam_system": system_job}
