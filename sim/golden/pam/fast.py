"""PAMattention (PAM Alg. 1) for many heads at once, bit-exact with
:func:`~pimforge.sim.golden.pam.system.system_attention` on finite values.

The golden models run one head at a time and, inside a tile, one token at a time on integer bit
patterns.  This model runs the same operations in the same order, through the float fast paths
(:mod:`pimforge.sim.golden.fp.fast`), on arrays that hold every head, every tier and every PU at
once:

* the scores of all heads and tokens in one product and one pairwise tree (fp32);
* the tiles: a loop over the tile index and over the tokens inside a tile, each step an
  element-wise operation over (heads, tiers, PUs, elements), masked where a PU has no token at
  that place;
* the merges of PAM eqs. 3-5 (:mod:`~pimforge.sim.golden.pam.common`): a tile into its PU's
  running state, the PUs of a tier into the tier's RU in PU order, the tiers into the HBM tier's
  final RU in the order HBM, DDR, SSD; each a loop over the merged inputs, vectorized over the
  rest;
* the final stage (``O / l`` in fp16 and the log-sum-exp).

Tokens reach the tiers as ``system_attention`` hands them out: tier ``t`` holds the ``counts[t]``
tokens that follow the previous tiers' (contiguous, in the order HBM, DDR, SSD), and each tier
spreads its tokens contiguously and evenly over its PUs.  A caller whose placement is not
contiguous orders the tokens tier by tier first (the units see a token set, not positions).

Non-finite inputs, or a non-finite result (an overflow inside the accumulators), make the heads
concerned run through the golden model instead (NaN payloads differ between NumPy and the units).
``tests/pam/test_fast.py`` holds this model to the golden one.
"""
from __future__ import annotations

import numpy as np

from pimforge.base.formats import FP16
from pimforge.base.numerics import SCORE, spread
from pimforge.sim.golden.fp import fast as ff
from pimforge.sim.golden.pam.system import system_attention

__all__ = ["pu_token_sets", "scores_fast", "system_attention_heads"]

_NONE = np.iinfo(np.int64).min      # order key of a masked-out score


def pu_token_sets(counts, pus) -> list:
    """Per tier, per PU: ``(first token, tokens)`` of the PU's contiguous token set, as
    ``system_attention`` and ``device_attention`` hand them out (a PU may get none)."""
    out, start = [], 0
    for c, p in zip(counts, pus):
        row = []
        for n in spread(c, [1] * p):
            row.append((start, n))
            start += n
        out.append(row)
    return out


def scores_fast(scale: float, q, k) -> np.ndarray:
    """Scaled scores in fp32 of fp16 values ``q`` (..., d) against ``k`` (..., N, d): the
    products (exact in fp32), the pairwise tree over d in index order, then the scale."""
    x = np.asarray(q, np.float32)[..., None, :] * np.asarray(k, np.float32)
    while x.shape[-1] > 1:
        x = ff.add(SCORE, x[..., 0::2], x[..., 1::2])
    return ff.mul(SCORE, x[..., 0], np.float32(scale))


def _key(s):
    """fp32 values as integers in the comparator's order (-0 below +0)."""
    b = np.asarray(s, np.float32).view(np.int32).astype(np.int64)
    return np.where(b < 0, -(b & 0x7FFFFFFF) - 1, b)


def _unkey(key):
    b = np.where(key < 0, (-key - 1) | 0x80000000, key)
    return b.astype(np.uint32).view(np.float32)


def _expd(acc, a, b):
    """``exp(a - b)``: the fp32 difference rounded to ``acc``, then the ``acc`` exponential."""
    d = ff.add(SCORE, a, np.negative(np.asarray(b, np.float32)))       # x - y = x + (-y)
    return ff.exp(acc, d.astype(ff.dtype(acc)))


def _absorb(acc, state, inp, first, valid):
    """One merge step (PAM eqs. 3-5, :mod:`~pimforge.sim.golden.pam.common`) of the running
    ``state`` = (m, l, O) with ``inp`` = (m_j, l_j, X_j), where ``valid``; ``first`` restarts."""
    m, l, o = state
    mj, lj, xj = inp
    t = ff.dtype(acc)
    swap = ~first & (_key(mj) > _key(m))
    m_new = np.where(first | swap, mj, m)
    lo = np.where(swap, m, mj)
    g = np.where(first, t(1), _expd(acc, lo, m_new))
    zero_l, zero_o = np.zeros_like(l), np.zeros_like(o)
    a_l = np.where(swap, l, lj)
    c_l = np.where(first, zero_l, np.where(swap, lj, l))
    sw, fi = swap[..., None], first[..., None]
    a_o = np.where(sw, o, xj)
    c_o = np.where(fi, zero_o, np.where(sw, xj, o))
    l_new = ff.fma(acc, a_l, g, c_l)
    o_new = ff.fma(acc, a_o, g[..., None], c_o)
    return (np.where(valid, m_new, m), np.where(valid, l_new, l),
            np.where(valid[..., None], o_new, o))


def _fast(acc, scale, q16, k16, v16, counts, pus, tile):
    """The vectorized flow on float arrays; returns the final (norm, O, m, l, lse)."""
    t = ff.dtype(acc)
    heads, _, d = k16.shape
    q = ff.to_float(FP16, q16)
    s = scores_fast(scale, q, ff.to_float(FP16, k16))                   # (H, N) fp32
    v = ff.to_float(FP16, v16).astype(t)                                # exact
    sets = pu_token_sets(counts, pus)
    n_tiers, n_pu = len(sets), max(len(r) for r in sets)
    start = np.zeros((n_tiers, n_pu), np.int64)
    count = np.zeros((n_tiers, n_pu), np.int64)
    for i, row in enumerate(sets):
        for p, (a, n) in enumerate(row):
            start[i, p], count[i, p] = a, n
    c_max = int(count.max())
    pos = np.arange(c_max)
    idx = np.minimum(start[..., None] + pos, max(len(s[0]) - 1, 0))     # (T, P, C)
    has = pos < count[..., None]
    s_pu, v_pu = s[:, idx], v[:, idx]                                   # (H, T, P, C[, d])
    shape = (heads, n_tiers, n_pu)
    state = (np.zeros(shape, np.float32), np.zeros(shape, t), np.zeros(shape + (d,), t))
    for a in range(0, c_max, tile):
        b = min(a + tile, c_max)
        ts, tv, th = s_pu[..., a:b], v_pu[..., a:b, :], np.broadcast_to(has[..., a:b],
                                                                       s_pu[..., a:b].shape)
        m_t = _unkey(np.where(th, _key(ts), _NONE).max(axis=-1))
        p = _expd(acc, ts, m_t[..., None])
        l_t, o_t = np.zeros(shape, t), np.zeros(shape + (d,), t)
        for j in range(b - a):
            hj = th[..., j]
            l_t = np.where(hj, ff.add(acc, l_t, p[..., j]), l_t)
            o_t = np.where(hj[..., None], ff.fma(acc, p[..., j, None], tv[..., j, :], o_t), o_t)
        valid = th[..., 0]
        state = _absorb(acc, state, (m_t, l_t, o_t), np.full(shape, a == 0), valid)
    # the tier's RU: its PUs' partials in PU order
    dshape = (heads, n_tiers)
    dev = (np.zeros(dshape, np.float32), np.zeros(dshape, t), np.zeros(dshape + (d,), t))
    seen = np.zeros(dshape, bool)
    for p in range(n_pu):
        valid = np.broadcast_to(count[:, p] > 0, dshape)
        dev = _absorb(acc, dev, tuple(x[:, :, p] for x in state), ~seen, valid)
        seen |= valid
    # the HBM tier's final RU: the tiers' partials in the order HBM, DDR, SSD
    fin = (np.zeros(heads, np.float32), np.zeros(heads, t), np.zeros((heads, d), t))
    seen = np.zeros(heads, bool)
    for i in range(n_tiers):
        valid = np.full(heads, counts[i] > 0)
        fin = _absorb(acc, fin, tuple(x[:, i] for x in dev), ~seen, valid)
        seen |= valid
    m, l, o = fin
    norm = ff.mul(acc, o, ff.recip(acc, l)[:, None]).astype(np.float16)
    lse = ff.add(SCORE, m, ff.log(acc, l).astype(np.float32))
    return norm, o, m, l, lse


def system_attention_heads(acc, scale: float, q16, k16, v16, counts, pus, tile: int = 16) -> dict:
    """PAMattention of every head: ``q16`` (H, d), ``k16`` and ``v16`` (H, N, d) fp16 bit
    patterns; ``counts`` the tokens of the tiers HBM, DDR, SSD (summing to N, contiguous in
    that order), ``pus`` the PUs per tier.  Returns ``norm`` (H, d) fp16 bits, ``O`` (H, d) and
    ``l`` (H,) ``acc`` bits, ``m`` and ``lse`` (H,) score-format bits, and ``fallback``, the heads
    that ran through the golden model; each head's values equal
    ``system_attention(acc, scale, q16[h], k16[h], v16[h], counts, pus, tile)``."""
    q16, k16, v16 = (np.asarray(x, np.int64) for x in (q16, k16, v16))
    counts = [int(c) for c in counts]
    if sum(counts) != k16.shape[1] or k16.shape[1] == 0:
        raise ValueError(f"tier counts {counts} do not add up to the {k16.shape[1]} tokens")
    heads = k16.shape[0]
    out = {"norm": None, "O": None, "m": None, "l": None, "lse": None}
    bad = np.ones(heads, bool)
    if ff.finite(ff.to_float(FP16, q16), ff.to_float(FP16, k16), ff.to_float(FP16, v16)):
        with np.errstate(over="ignore", invalid="ignore"):
            norm, o, m, l, lse = _fast(acc, scale, q16, k16, v16, counts, pus, tile)
        bad = ~(np.isfinite(norm).all(axis=1) & np.isfinite(o).all(axis=1) & np.isfinite(l)
                & np.isfinite(lse))
        out = {"norm": ff.to_bits(FP16, norm), "O": ff.to_bits(acc, o), "m": ff.to_bits(SCORE, m),
               "l": ff.to_bits(acc, l), "lse": ff.to_bits(SCORE, lse)}
    else:
        d = k16.shape[2]
        out = {"norm": np.zeros((heads, d), np.int64), "O": np.zeros((heads, d), np.int64),
               "m": np.zeros(heads, np.int64), "l": np.zeros(heads, np.int64),
               "lse": np.zeros(heads, np.int64)}
    for h in np.flatnonzero(bad):
        r = system_attention(acc, scale, q16[h], k16[h], v16[h], counts, pus, tile)
        for key in out:
            out[key][h] = r[key]
    out["fallback"] = [int(h) for h in np.flatnonzero(bad)]
    out["tier_counts"] = counts
    return out
