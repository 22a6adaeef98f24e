"""Bit-exact golden model of ``hilos_attention``: a query group's scores, the two-pass softmax
and S.V, for every KV head (HILOS §4.4)."""
from __future__ import annotations

import numpy as np

from pimforge.base.formats import FP32
from pimforge.sim.golden.hilos.common import MASK_VALUE
from pimforge.sim.golden.hilos.qk_gemv import group_scores
from pimforge.sim.golden.hilos.sv_gemv import sv_output
from pimforge.sim.golden.hilos.two_pass_softmax import two_pass_softmax

__all__ = ["hilos_group", "hilos_attention"]


def hilos_group(q16, k16, v16, block: int = 128, mask=None, scale=None, score_fmt=FP32,
                mask_value=MASK_VALUE, pre=None) -> dict:
    """One KV head and its ``d_group`` queries through the kernel.

    ``q16`` (G, d), ``k16`` (n_k, d), ``v16`` (n, d) with n = n_k + c, ``pre`` (G, c) precomputed
    scores (score_fmt bits) or None, ``mask`` (n,) bool.  Returns ``O`` (G, d) fp16 bits, the
    scores ``s`` (G, n), ``y`` (G, n) fp16 bits and the statistics ``m``, ``Z`` per query."""
    q16 = np.atleast_2d(np.asarray(q16, dtype=np.int64))
    d = q16.shape[1]
    scale = 1.0 / np.sqrt(d) if scale is None else scale
    n_k = len(k16)
    s = group_scores(q16, k16, scale, score_fmt, pre)
    n = s.shape[1]
    segments = [n_k, n - n_k] if n > n_k else [n_k]
    rows = [two_pass_softmax(row, block, mask, score_fmt, mask_value, segments) for row in s]
    y = np.stack([r["y"] for r in rows])
    o = sv_output(y, v16, mask)
    return {"O": o, "s": s, "y": y, "m": [r["m"] for r in rows], "Z": [r["Z"] for r in rows],
            "segments": segments}


def hilos_attention(q16, k16, v16, block: int = 128, mask=None, scale=None,
                    score_fmt=FP32) -> np.ndarray:
    """One query head (fp16 bits q (d,), k and v (n, d)) through the kernel; fp16 O bits."""
    return hilos_group(q16, k16, v16, block, mask, scale, score_fmt)["O"][0]
