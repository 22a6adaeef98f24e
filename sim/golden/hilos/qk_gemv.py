"""Bit-exact golden model of ``qk_gemv``: the scores of a query (group) against K (see
:mod:`~pimforge.sim.golden.hilos.common` for the operation order)."""
from __future__ import annotations

import numpy as np

from pimforge.base.formats import FP16, FP32
from pimforge.base.numerics import float_bits
from pimforge.sim.golden.fp.fma import fp_fma
from pimforge.sim.golden.fp.mul import fp_mul
from pimforge.sim.golden.hilos.common import F32
from pimforge.sim.golden.pam.common import convert, tree_sum

__all__ = ["qk_scores", "group_scores"]


def qk_scores(q16, k16, scale: float, score_fmt=FP32, partials: int = 1) -> np.ndarray:
    """Scores (score_fmt bits) of fp16 ``q`` (d,) or (G, d) against fp16 rows ``k`` (n, d):
    shape (n,) or (G, n).  Dim i adds into partial sum ``i mod partials`` (each from +0); the
    partials are summed pairwise, adjacent pairs first, before the scale."""
    q = convert(FP16, FP32, np.asarray(q16, dtype=np.int64))
    k = convert(FP16, FP32, np.asarray(k16, dtype=np.int64))
    qq = np.atleast_2d(q)
    acc = np.zeros((partials, len(qq), len(k)), dtype=np.int64)
    shape = acc.shape[1:]
    for i in range(qq.shape[1]):
        p = i % partials
        acc[p] = fp_fma(F32, np.broadcast_to(qq[:, i:i + 1], shape), np.broadcast_to(k[:, i],
                        shape), acc[p])
    acc = tree_sum(FP32, np.moveaxis(acc, 0, -1))
    s = fp_mul(F32, acc, np.full_like(acc, int(float_bits(FP32, [scale])[0])))
    s = convert(FP32, score_fmt, s)
    return s if q.ndim == 2 else s[0]


def group_scores(q16, k16, scale: float, score_fmt=FP32, pre=None,
                 partials: int = 1) -> np.ndarray:
    """Scores (G, n_k + c) of a query group: ``qk_scores`` of each query against K, then the
    host-precomputed scalars ``pre`` (G, c) (score_fmt bits) of the most recent tokens."""
    q16 = np.atleast_2d(np.asarray(q16, dtype=np.int64))
    s = qk_scores(q16, k16, scale, score_fmt, partials) if len(k16) else \
        np.zeros((len(q16), 0), dtype=np.int64)
    if pre is not None and np.size(pre):
        s = np.concatenate([s, np.asarray(pre, dtype=np.int64).reshape(len(q16), -1)], axis=1)
    return s
