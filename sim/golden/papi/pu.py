"""Bit-exact golden model of ``papi_pu`` (PAPI §6; RTL: :mod:`pimforge.hw.papi.pu`).

Weights and inputs are fp16; products, sums and partial sums are in ``cfg.acc`` (fp16 as
AttAcc's FPU: rounded products; fp32: exact products).  Every operation is a round-to-nearest-
even operation of the float library, in the RTL's order: per beat of ``lanes`` elements a
pairwise tree of the products (adjacent pairs first); beat k adds into partial ``k mod Q``,
Q = ``cfg.partials`` (the first add from +0); then a pairwise tree of the Q partials, adjacent
pairs first (Q = 4: ``(p0 + p1) + (p2 + p3)``; partials no beat reached are +0), then fp16.
Vector j does not depend on which FPU took it or on the bank: the order is the same.
"""
from __future__ import annotations

import numpy as np

from pimforge.base.formats import FP16
from pimforge.sim.golden.fp.add import fp_add
from pimforge.sim.golden.fp.mul import fp_mul
from pimforge.sim.golden.pam.common import OpCfg, convert, tree_sum

__all__ = ["pu_gemv"]


def pu_gemv(cfg, w16, x16) -> np.ndarray:
    """``Y = W X`` as the PU computes it: ``w16`` (rows, cols) and ``x16`` (reuse, cols) fp16
    bits, cols a multiple of ``cfg.lanes``.  Returns fp16 bits (rows, reuse)."""
    acc, L = cfg.acc, cfg.lanes
    w = np.asarray(w16, dtype=np.int64)
    x = np.asarray(x16, dtype=np.int64)
    rows, cols = w.shape
    c = OpCfg(acc)
    Q = cfg.partials
    parts = np.zeros((rows, x.shape[0], Q), dtype=np.int64)
    for k in range(cols // L):
        wk = convert(FP16, acc, w[:, None, k * L:(k + 1) * L])
        xk = convert(FP16, acc, x[None, :, k * L:(k + 1) * L])
        t = tree_sum(acc, fp_mul(c, wk, xk))
        q = k % Q
        parts[..., q] = fp_add(c, parts[..., q], t)
    y = tree_sum(acc, parts)
    return convert(acc, FP16, y)
