"""Bench of ``pam_pu``: token sets as beat streams, golden partials as expected output.

:func:`~pimforge.sim.benches.pam.beats.pu_beats` turns one token set (fp16 bit patterns) into the
PU's ``i_q`` and ``i_kv`` beats in the tile order of the stream format (K rows of a tile, then its
V rows); :func:`pu_job` builds a bench job of several sets of different sizes, without and with
random stalls on every stream.
"""
from __future__ import annotations

import numpy as np

from pimforge.base import numerics as num
from pimforge.base.formats import FP16
from pimforge.sim.benches.pam.beats import partial_beats, pu_beats
from pimforge.sim.golden.pam import pu as g_pu
from pimforge.sim.harness.job import Job, Phase, concat_fields
from pimforge.sim.harness.stall import StallPattern

__all__ = ["pu_beats", "pu_expected", "pu_job", "random_set", "DEFAULT_SETS"]

# token-set sizes of the default bench: one token, a partial tile, exact tiles, odd sizes
DEFAULT_SETS = (1, 5, 16, 37, 64)


def pu_expected(cfg, q16, k16, v16) -> dict:
    """Golden ``o`` beats of one token set."""
    r = g_pu.pu_local_attention(cfg.acc, cfg.scale, q16, k16, v16, cfg.tile_tokens)
    return partial_beats(r, cfg.lanes, cfg.acc.width)


def random_set(cfg, rng, n: int, kind: str = "normal") -> tuple:
    d = cfg.head_dim
    q = rng.standard_normal(d)
    k = rng.standard_normal((n, d))
    v = rng.standard_normal((n, d))
    if kind == "large":              # scores up to about 1e4 before scaling
        q = q * 8.0
        k = k * (1e4 / (8.0 * np.sqrt(d) * 3))
    return tuple(num.float_bits(FP16, x) for x in (q, k, v))



def pu_job(cfg, rng, seed: int = 1, sets=DEFAULT_SETS, stall_p: float = 0.3, stalls: bool = True,
           kinds=("normal", "large")) -> Job:
    """Sets of ``sets`` tokens (alternating input kinds), run without stalls, then (``stalls``)
    again with random stalls on both sides of every stream."""
    qs, kvs, outs = [], [], []
    for i, n in enumerate(sets):
        q16, k16, v16 = random_set(cfg, rng, n, kinds[i % len(kinds)])
        qf, kvf = pu_beats(cfg, q16, k16, v16)
        qs.append(qf)
        kvs.append(kvf)
        outs.append(pu_expected(cfg, q16, k16, v16))
    inputs = {"i_q": concat_fields(qs), "i_kv": concat_fields(kvs)}
    expected = {"o": concat_fields(outs)}
    phases = [Phase("no stalls", inputs, expected)]
    if stalls:
        st = {"*": StallPattern.random(stall_p, seed)}
        phases.append(Phase(f"random stalls p={stall_p}", inputs, expected,
                            valid_stall={"i_q": StallPattern.random(stall_p, seed + 1),
                                         "i_kv": StallPattern.random(stall_p, seed + 2)},
                            ready_stall=st))
    return Job(phases)


BENCHES = {"pam_pu": pu_job}
