"""The HILOS kernel for every KV head at once, bit-exact with
:func:`~pimforge.sim.golden.hilos.attention.hilos_group` on finite values.

``hilos_group`` runs one KV head (one job: its ``d_group`` queries) at a time on integer bit
patterns.  This model runs the same operations in the same order, through the float fast paths
(:mod:`pimforge.sim.golden.fp.fast`), on arrays that hold every head and every query of its group
(see :mod:`~pimforge.sim.golden.hilos.common` for the order):

* ``qk_gemv``: a loop over the head dimension, ``acc = fma(q_i, k_ji, acc)`` from +0 for all
  heads, queries and tokens at once.  An fp16 x fp16 product is exact in fp32 (22 significand
  bits, never below fp32's normal range), so that fma is the fp32 sum of the fp32 product and
  ``acc``; then the scale (fp32) and the score format.
* ``two_pass_softmax``: a loop over the blocks (never straddling the stored / precomputed
  segments), each block's max tree (the comparator's order: -0 below +0), exponentials, sum tree
  and streaming update element-wise over (heads, queries); pass 2 over every score at once.
* ``sv_gemv``: a loop over the tokens, ``O = fma(y_j, v_j, O)`` (again an exact product plus an
  fp32 sum).  A masked token has ``y_j = +0``, and adding the product ``+-0`` to an accumulator
  that started at +0 leaves it unchanged under round-to-nearest, so masked tokens need no skip.

Non-finite inputs, or a non-finite value on the way (a score that overflows fp16, an output that
overflows), make the heads run through ``hilos_group`` instead (NaN payloads differ between NumPy
and the units).  ``tests/hilos/test_fast.py`` holds this model to ``hilos_group``.
"""
from __future__ import annotations

import numpy as np

from pimforge.base.formats import FP16, FP32
from pimforge.base.numerics import block_starts, next_pow2
from pimforge.sim.golden.fp import fast as ff
from pimforge.sim.golden.hilos.attention import hilos_group
from pimforge.sim.golden.hilos.common import MASK_VALUE

__all__ = ["hilos_groups", "greater", "tree_max", "tree_sum"]


def greater(a, b) -> np.ndarray:
    """The comparator's ``a > b`` on finite fp32 arrays: IEEE order, and -0 below +0."""
    zeros = (a == b) & np.signbit(b) & ~np.signbit(a)
    return (a > b) | zeros


def tree_max(x) -> np.ndarray:
    """Pairwise max tree over the last axis (a power of two), adjacent pairs first."""
    while x.shape[-1] > 1:
        a, b = x[..., 0::2], x[..., 1::2]
        x = np.where(greater(b, a), b, a)
    return x[..., 0]


def tree_sum(x) -> np.ndarray:
    """Pairwise fp32 adder tree over the last axis (a power of two), adjacent pairs first."""
    while x.shape[-1] > 1:
        x = ff.add(FP32, x[..., 0::2], x[..., 1::2])
    return x[..., 0]


def _exp_diff(a, b):
    """``exp(a - b)`` in fp32 (``a - b`` = ``a + (-b)``, exactly the unit's subtraction)."""
    return ff.exp(FP32, ff.add(FP32, a, np.negative(b)))


def _pad(x, width: int, value) -> np.ndarray:
    pad = np.full(x.shape[:-1] + (width - x.shape[-1],), value, dtype=np.float32)
    return np.concatenate([x, pad], axis=-1)


def _scores(q, k, scale, score_fmt):
    """(H, G, n_k) scores in ``score_fmt`` (as float32 values) of q (H, G, d), k (H, n_k, d)."""
    h, g, d = q.shape
    acc = np.zeros((h, g, k.shape[1]), dtype=np.float32)
    for i in range(d):
        acc = ff.add(FP32, acc, ff.mul(FP32, q[:, :, i, None], k[:, None, :, i]))
    s = ff.mul(FP32, acc, np.float32(scale))
    if score_fmt == FP16:
        with np.errstate(over="ignore"):
            s = s.astype(np.float16).astype(np.float32)
    return s


def _softmax(x, block: int, segments, mask):
    """Alg. 1 on rows x (H, G, n) fp32: y (H, G, n) float16, m and Z (H, G) fp32."""
    width = next_pow2(block)
    m = z = None
    for a, e in block_starts(x.shape[-1], block, segments):
        xb = x[..., a:e]
        m_b = tree_max(_pad(xb, width, -np.inf))
        s_b = tree_sum(_pad(_exp_diff(xb, m_b[..., None]), width, 0.0))
        if m is None:
            m, z = m_b, s_b
            continue
        up = greater(m_b, m)
        g = _exp_diff(np.where(up, m, m_b), np.where(up, m_b, m))
        z = np.where(up, ff.fma(FP32, z, g, s_b), ff.fma(FP32, s_b, g, z))
        m = np.where(up, m_b, m)
    r = ff.recip(FP32, z)
    y = ff.mul(FP32, _exp_diff(x, m[..., None]), r[..., None]).astype(np.float16)
    return np.where(mask[:, None, :], np.float16(0), y), m, z


def _sv(y, v):
    """O (H, G, d) fp32: ``O = fma(y_j, v_j, O)`` over the tokens in order, from +0."""
    yf = y.astype(np.float32)
    o = np.zeros((v.shape[0], y.shape[1], v.shape[2]), dtype=np.float32)
    for j in range(v.shape[1]):
        o = ff.add(FP32, o, ff.mul(FP32, yf[:, :, j, None], v[:, None, j, :]))
    return o


def _slow(q16, k16, v16, block, mask, scale, score_fmt, mask_value, pre) -> dict:
    rows = [hilos_group(q16[h], k16[h], v16[h], block, mask[h], scale, score_fmt, mask_value,
                        None if pre is None else pre[h]) for h in range(len(q16))]
    return {"O": np.stack([r["O"] for r in rows]), "s": np.stack([r["s"] for r in rows]),
            "y": np.stack([r["y"] for r in rows]),
            "m": np.array([r["m"] for r in rows], dtype=np.int64),
            "Z": np.array([r["Z"] for r in rows], dtype=np.int64), "segments": rows[0]["segments"],
            "fast": False}


def hilos_groups(q16, k16, v16, block: int = 128, mask=None, scale=None, score_fmt=FP32,
                 mask_value=MASK_VALUE, pre=None) -> dict:
    """Every KV head's job through the kernel: ``hilos_group(q16[h], k16[h], v16[h], ...)`` for
    each head ``h``, stacked.

    ``q16`` (H, G, d), ``k16`` (H, n_k, d), ``v16`` (H, n, d) fp16 bits with n = n_k + c,
    ``pre`` (H, G, c) precomputed scores (``score_fmt`` bits) or None, ``mask`` (n,) or (H, n)
    bool or None.  Returns ``O`` (H, G, d) fp16 bits, ``s`` (H, G, n) score bits, ``y``
    (H, G, n) fp16 bits, ``m`` and ``Z`` (H, G) fp32 bits, ``segments`` and ``fast`` (False
    when the golden model computed it)."""
    q16 = np.asarray(q16, dtype=np.int64)
    k16 = np.asarray(k16, dtype=np.int64)
    v16 = np.asarray(v16, dtype=np.int64)
    hkv, _, d = q16.shape
    n_k, n = k16.shape[1], v16.shape[1]
    mask = np.zeros((hkv, n), dtype=bool) if mask is None else \
        np.broadcast_to(np.asarray(mask, dtype=bool), (hkv, n))
    scale = 1.0 / np.sqrt(d) if scale is None else scale
    if pre is not None and not np.size(pre):
        pre = None
    if pre is not None:
        pre = np.asarray(pre, dtype=np.int64).reshape(hkv, q16.shape[1], -1)
    q, k, v = (ff.to_float(FP16, a).astype(np.float32) for a in (q16, k16, v16))
    p = None if pre is None else ff.to_float(score_fmt, pre).astype(np.float32)
    args = (q16, k16, v16, block, mask, scale, score_fmt, mask_value, pre)
    if not ff.finite(q, k, v, *(() if p is None else (p,))):
        return _slow(*args)
    x = _scores(q, k, scale, score_fmt)
    if p is not None:
        x = np.concatenate([x, p], axis=-1)
    if not ff.finite(x):
        return _slow(*args)
    s = ff.to_bits(score_fmt, x.astype(ff.dtype(score_fmt)))
    segments = [n_k, n - n_k] if n > n_k else [n_k]
    x = np.where(mask[:, None, :], np.float32(mask_value), x)
    y, m, z = _softmax(x, block, segments, mask)
    with np.errstate(over="ignore"):
        o = _sv(y, v).astype(np.float16)
    if not ff.finite(o, z):
        return _slow(*args)
    return {"O": ff.to_bits(FP16, o), "s": s, "y": ff.to_bits(FP16, y), "m": ff.to_bits(FP32, m),
            "Z": ff.to_bits(FP32, z), "segments": segments, "fast": True}
