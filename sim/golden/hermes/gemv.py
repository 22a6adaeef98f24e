"""Bit-exact golden model of ``hermes_gemv`` (Hermes §IV-A; RTL: :mod:`pimforge.hw.hermes.gemv`).

Weights and inputs are fp16; products, sums and partial sums are in the accumulator format
``acc`` (fp32: fp16 x fp16 is exact in fp32; fp16: rounded products).  Every operation is a
round-to-nearest-even operation of the float library, in the hardware's order:

* **rows** (neuron = a row of W): per beat of E = 8 beat_words elements, a pairwise tree of the E
  products (adjacent pairs first); beat k adds into partial ``k mod Q`` (from +0), Q =
  ``cfg.partials``; then the pairwise tree of the Q partials, adjacent pairs first (Q = 4:
  ``(p0 + p1) + (p2 + p3)``; partials no beat reached are +0).
* **cols** (neuron = a column of W): ``y = +0``, then ``y += x_c w_c`` column by column in list
  order.
* **merge**: ``y + p`` (the GPU's fp16 partial, converted exactly) when merging; then fp16.
"""
from __future__ import annotations

import numpy as np

from pimforge.base.formats import FP16
from pimforge.sim.golden.fp.add import fp_add
from pimforge.sim.golden.fp.mul import fp_mul
from pimforge.sim.golden.pam.common import OpCfg, convert, tree_sum

__all__ = ["gemv_rows", "gemv_cols", "products"]


def products(acc, w16, x16) -> np.ndarray:
    """``w * x`` elementwise (broadcast) in ``acc``: exact in fp32, rounded in fp16."""
    return fp_mul(OpCfg(acc), convert(FP16, acc, w16), convert(FP16, acc, x16))


def _finish(acc, y, p16):
    if p16 is not None:
        y = fp_add(OpCfg(acc), y, convert(FP16, acc, p16))
    return convert(acc, FP16, y)


def gemv_rows(cfg, w16, x16, p16=None) -> np.ndarray:
    """Row mode: ``w16`` (n, d_in) the active rows, ``x16`` (b, d_in), ``p16`` (n, b) or None.
    Returns fp16 bits (n, b)."""
    acc, E = cfg.acc, cfg.beat_elems
    w = np.asarray(w16, dtype=np.int64)
    x = np.asarray(x16, dtype=np.int64)
    n, d = w.shape
    b = x.shape[0]
    beats = d // E
    c = OpCfg(acc)
    Q = cfg.partials
    parts = np.zeros((n, b, Q), dtype=np.int64)
    for k in range(beats):
        prod = products(acc, w[:, None, k * E:(k + 1) * E], x[None, :, k * E:(k + 1) * E])
        t = tree_sum(acc, prod)                          # (n, b)
        j = k % Q
        parts[..., j] = fp_add(c, parts[..., j], t)      # the first add starts from +0
    y = tree_sum(acc, parts)
    return _finish(acc, y, p16)


def gemv_cols(cfg, w16, xc16, d_out: int, p16=None) -> np.ndarray:
    """Column mode: ``w16`` (n, d_out) the active columns, ``xc16`` (n, b) their x values,
    ``p16`` (b, d_out) or None.  Returns fp16 bits (b, d_out)."""
    acc = cfg.acc
    w = np.asarray(w16, dtype=np.int64).reshape(-1, d_out)
    xc = np.asarray(xc16, dtype=np.int64)
    b = xc.shape[1]
    y = np.zeros((b, d_out), dtype=np.int64)
    c = OpCfg(acc)
    for i in range(w.shape[0]):
        y = fp_add(c, y, products(acc, w[i][None, :], xc[i][:, None]))
    return _finish(acc, y, p16)
