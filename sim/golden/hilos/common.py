"""Bit-exact golden models of the HILOS near-storage attention kernel (HILOS §4.4, Alg. 1,
Fig. 7): the spec the units of :mod:`pimforge.hw.hilos` follow bit for bit.

Formats: Q, K, V and the output are fp16; MACs, exponentials and sums are fp32 (``F32``).
Scores are kept in ``score_fmt`` (fp32 by default; fp16 is the paper's storage format).

* ``qk_scores``: MAC j accumulates ``acc = fma(q_i, k_ji, acc)`` over i = 0..d-1 from +0 in
  fp32, then ``s_j = acc * scale`` (fp32), rounded to ``score_fmt``.
* ``two_pass_softmax`` (Alg. 1): per block of ``block`` tokens, MASK, the pairwise max tree
  ``m_B``, ``e_j = exp(x_j - m_B)``, the pairwise adder tree ``S_B``, then the streaming update
  (first block: ``m, Z = m_B, S_B``; ``m_B > m``: ``Z = fma(Z, exp(m - m_B), S_B)``, ``m = m_B``;
  else ``Z = fma(S_B, exp(m_B - m), Z)``).  Pass 2: ``y_j = fp16(exp(x_j - m) * recip(Z))``.
  Masked positions get ``y_j = +0`` (their score is the mask value in pass 1, -1e4 by default).
  Trees run over a power-of-two width: a short last block is padded with -inf (max) and +0 (sum).
  Blocks never straddle a *segment*: the scores the kernel computes from K come first, then the
  host-precomputed scalars (HILOS §4.3, the most recent tokens) as a segment of their own.
* ``sv_output``: ``O = fma(y_j, v_j, O)`` token by token from +0 in fp32, masked tokens skipped,
  then fp16.
"""
from __future__ import annotations

import numpy as np

from pimforge.base.formats import FP16, FP32
from pimforge.sim.golden.fp.add import fp_add
from pimforge.sim.golden.fp.fma import fp_fma
from pimforge.sim.golden.fp.exp import fp_exp
from pimforge.sim.golden.fp.recip import fp_recip
from pimforge.sim.golden.fp.mul import fp_mul
from pimforge.base.numerics import float_bits
from pimforge.sim.golden.pam.common import OpCfg, _convert, greater

__all__ = ["qk_scores", "two_pass_softmax", "sv_output", "hilos_attention", "hilos_group",
           "group_scores", "block_starts", "mask_bits", "MASK_VALUE"]

F32 = OpCfg(FP32)
MASK_VALUE = -1e4
NEG_INF32 = 0xFF800000


def qk_scores(q16, k16, scale: float, score_fmt=FP32) -> np.ndarray:
    """Scores (score_fmt bits) of fp16 ``q`` (d,) or (G, d) against fp16 rows ``k`` (n, d):
    shape (n,) or (G, n)."""
    q = _convert(FP16, FP32, np.asarray(q16, dtype=np.int64))
    k = _convert(FP16, FP32, np.asarray(k16, dtype=np.int64))
    qq = np.atleast_2d(q)
    acc = np.zeros((len(qq), len(k)), dtype=np.int64)
    for i in range(qq.shape[1]):
        acc = fp_fma(F32, np.broadcast_to(qq[:, i:i + 1], acc.shape), np.broadcast_to(k[:, i],
                     acc.shape), acc)
    s = fp_mul(F32, acc, np.full_like(acc, int(float_bits(FP32, [scale])[0])))
    s = _convert(FP32, score_fmt, s)
    return s if q.ndim == 2 else s[0]


def _tree(values, op):
    x = np.asarray(values, dtype=np.int64)
    while len(x) > 1:
        x = op(x[0::2], x[1::2])
    return int(x[0])


def _tree_max(x):
    return _tree(x, lambda a, b: np.where(greater(b, a, FP32), b, a))


def _tree_sum(x):
    return _tree(x, lambda a, b: fp_add(F32, a, b))


def _pow2(n: int) -> int:
    p = 1
    while p < n:
        p *= 2
    return p


def block_starts(n: int, block: int, segments=None) -> list:
    """``(start, end)`` of every block: chunks of ``block`` positions inside each segment
    (``segments`` = segment lengths summing to n; default one segment)."""
    segments = [n] if segments is None else [int(s) for s in segments]
    if sum(segments) != n:
        raise ValueError(f"segments {segments} do not add up to {n} positions")
    out, a = [], 0
    for seg in segments:
        for b in range(a, a + seg, block):
            out.append((b, min(b + block, a + seg)))
        a += seg
    return out


def two_pass_softmax(x, block: int, mask=None, score_fmt=FP32, mask_value=MASK_VALUE,
                     segments=None) -> dict:
    """Alg. 1 on one row of scores ``x`` (score_fmt bits).  ``mask`` (bool, True = masked).
    Returns ``y`` (fp16 bits), ``m`` and ``Z`` (fp32 bits) and the per-block ``m_B``, ``S_B``."""
    x = _convert(score_fmt, FP32, np.asarray(x, dtype=np.int64))
    n = len(x)
    mask = np.zeros(n, dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
    x = np.where(mask, mask_bits(mask_value), x)
    width = _pow2(block)
    m = z = None
    blocks = []
    for a, e_ in block_starts(n, block, segments):
        xb = x[a:e_]
        pad = width - len(xb)
        m_b = _tree_max(np.concatenate([xb, np.full(pad, NEG_INF32, dtype=np.int64)]))
        e = fp_exp(F32, fp_add(F32, xb, np.full_like(xb, m_b), subtract=True))
        s_b = _tree_sum(np.concatenate([e, np.zeros(pad, dtype=np.int64)]))
        blocks.append((m_b, s_b))
        if m is None:
            m, z = m_b, s_b
        elif greater(m_b, m, FP32):
            g = fp_exp(F32, fp_add(F32, np.array([m]), np.array([m_b]), subtract=True))
            z = int(fp_fma(F32, np.array([z]), g, np.array([s_b]))[0])
            m = m_b
        else:
            g = fp_exp(F32, fp_add(F32, np.array([m_b]), np.array([m]), subtract=True))
            z = int(fp_fma(F32, np.array([s_b]), g, np.array([z]))[0])
    r = fp_recip(F32, np.array([z], dtype=np.int64))
    e = fp_exp(F32, fp_add(F32, x, np.full_like(x, m), subtract=True))
    y = _convert(FP32, FP16, fp_mul(F32, e, np.full_like(e, r[0])))
    y = np.where(mask, 0, y)
    return {"y": y, "m": m, "Z": z, "blocks": blocks}


def sv_output(y16, v16, mask=None) -> np.ndarray:
    """fp16 output bits: ``O = fma(y_j, v_j, O)`` over unmasked tokens in order, fp32.  ``y16``
    (n,) gives O (d,); (G, n) gives (G, d)."""
    y = _convert(FP16, FP32, np.asarray(y16, dtype=np.int64))
    yy = np.atleast_2d(y)
    v = _convert(FP16, FP32, np.asarray(v16, dtype=np.int64))
    mask = np.zeros(yy.shape[1], dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
    o = np.zeros((len(yy), v.shape[1]), dtype=np.int64)
    for j in np.nonzero(~mask)[0]:
        o = fp_fma(F32, np.broadcast_to(yy[:, j:j + 1], o.shape), np.broadcast_to(v[j], o.shape),
                   o)
    o = _convert(FP32, FP16, o)
    return o if y.ndim == 2 else o[0]


def mask_bits(mask_value: float) -> int:
    """The fp32 bit pattern a masked score becomes (round to nearest even)."""
    return int(float_bits(FP32, [mask_value])[0])


def group_scores(q16, k16, scale: float, score_fmt=FP32, pre=None) -> np.ndarray:
    """Scores (G, n_k + c) of a query group: ``qk_scores`` of each query against K, then the
    host-precomputed scalars ``pre`` (G, c) (score_fmt bits) of the most recent tokens."""
    q16 = np.atleast_2d(np.asarray(q16, dtype=np.int64))
    s = qk_scores(q16, k16, scale, score_fmt) if len(k16) else \
        np.zeros((len(q16), 0), dtype=np.int64)
    if pre is not None and np.size(pre):
        s = np.concatenate([s, np.asarray(pre, dtype=np.int64).reshape(len(q16), -1)], axis=1)
    return s


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
