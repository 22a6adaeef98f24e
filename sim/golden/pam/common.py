"""Bit-exact golden models of the PAM units and of the whole PAMattention flow (PAM Alg. 1).

Everything works on bit patterns (int64 arrays) in three formats:

* fp16 for Q, K, V and the normalized output;
* the **score format** :data:`SCORE` (fp32, whatever the accumulator) for the scores ``s``, the
  maxima ``m``, their differences and the log-sum-exp;
* the accumulator format ``acc`` (fp16, as in the paper, or fp32) for the exponentials ``p`` and
  ``g``, the sums ``l`` and the output accumulators ``O``.

Scores keep fp32 because an exponential turns the *absolute* error of its argument into a
*relative* error: an fp16 score of 300 is only resolved to 1/4, so ``exp(s - m)`` would be off by
up to 13 %.  In fp32 the products of two fp16 numbers are exact and a score of 300 is resolved to
2^-15.  The difference ``s - m`` (which is at most 0 and small for the tokens that matter) is
rounded to ``acc`` before the exponential unit.

Each step is one IEEE operation of the foundation float library, in the order the RTL performs it:

* **score** (``pam_pu``): ``s_j = scale * tree(q * k_j)`` where the products are taken in fp32 and
  ``tree`` is the pairwise binary tree over the d elements in index order (the lane tree of a
  beat, then the streaming tree across the beats of the row), all in fp32.
* **row max** (``pam_pu``): tokens go in tiles of ``tile`` tokens (PAM Alg. 1 lines 9-12,
  the tile form); ``m_t`` is the IEEE maximum (-0 < +0) of the tile's scores.
* **exponential** (everywhere): ``expd(a, b) = exp_acc(acc(a - b))``: the fp32 difference,
  converted to ``acc`` (a no-op for fp32), then the ``acc`` exponential unit.
* **tile** (``pam_pu``): ``p_j = expd(s_j, m_t)``; ``l_t = ((+0 + p_0) + p_1) + ...`` and, per
  element, ``O_t = fma(p_j, v_j, O_t)`` starting from +0, token after token.
* **merge** (``online_softmax``; PAM eqs. 3-5): a running state (m, l, O) absorbs an input
  (m_j, l_j, X_j).  One of the two exponentials of eq. 5 is always exp(0) = 1, so the merge scales
  only the side with the smaller maximum and uses one exponential and one fused multiply-add::

      first:  m' = m_j,  l' = fma(l_j, 1, +0),  O' = fma(X_j, 1, +0)
      else:   m' = max(m, m_j)                  (IEEE maximum, -0 < +0)
              g  = expd(min, m')                (min = the other of m, m_j)
              swap = m_j > m                    (the running state is the smaller side)
              l' = swap ? fma(l, g, l_j) : fma(l_j, g, l)
              O' = swap ? fma(O, g, X_j) : fma(X_j, g, O)       (element-wise)

  The PU merges each tile (m_t, l_t, O_t) into its running state; the RU merges partials.  Two
  accumulation levels (inside a tile, then across tiles) keep fp16 accumulation accurate: with
  one token per step the fp16 error at N = 8192 is about 6e-3, with 16-token tiles about 1.5e-3.
* **final** (``pam_ru`` final stage; Alg. 1 line 21): ``O / l`` as ``fp16(O * recip(l))`` and
  ``lse = m + fp32(log(l))`` (the logarithm in ``acc``, the sum in fp32).
* **device** (``pam_device``): PUs get contiguous token ranges; the RU merges the partials of the
  PUs that received tokens, in PU order.  **system** (``pam_system``): the HBM tier's final RU
  merges the device partials of the tiers that received tokens, in the order HBM, DDR, SSD.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from pimforge.base.formats import FP16, FP32
from pimforge.sim.golden.fp.add import fp_add
from pimforge.sim.golden.fp.convert import fp_convert
from pimforge.sim.golden.fp.fma import fp_fma
from pimforge.sim.golden.fp.exp import fp_exp
from pimforge.sim.golden.fp.log import fp_log
from pimforge.sim.golden.fp.recip import fp_recip
from pimforge.sim.golden.fp.mul import fp_mul

__all__ = ["SCORE", "OpCfg", "ConvCfg", "to_acc", "exp_diff", "float_bits", "bits_float",
           "scale_bits", "tree_sum", "greater", "tile_stats",
           "scores", "running_max", "merge", "pu_local_attention", "ru_reduce", "ru_final",
           "spread", "device_attention", "system_attention", "attention_f64"]


SCORE = FP32
"""The score format: scores, maxima, their differences and the log-sum-exp (module docstring)."""


@dataclass(frozen=True)
class OpCfg:
    """What the float golden functions need: a format and the flush-to-zero flag (always off)."""
    fmt: object
    ftz: bool = False


@dataclass(frozen=True)
class ConvCfg:
    src: object
    dst: object
    ftz: bool = False


def _np_types(fmt):
    if fmt.width == 16:
        return np.float16, np.uint16
    if fmt.width == 32:
        return np.float32, np.uint32
    raise ValueError(f"only fp16 and fp32 have NumPy types, not {fmt.name}")


def float_bits(fmt, values) -> np.ndarray:
    """Bit patterns of ``values`` rounded to ``fmt`` (fp16 or fp32; NumPy rounds to nearest even)."""
    ftype, itype = _np_types(fmt)
    return np.asarray(values, dtype=np.float64).astype(ftype).view(itype).astype(np.int64)


def bits_float(fmt, bits) -> np.ndarray:
    """float64 values of ``fmt`` bit patterns."""
    ftype, itype = _np_types(fmt)
    return np.asarray(bits, dtype=np.int64).astype(itype).view(ftype).astype(np.float64)


def to_acc(acc, x16) -> np.ndarray:
    """fp16 bit patterns converted (exactly) to the accumulator format."""
    return _convert(FP16, acc, x16)


def _convert(src, dst, x) -> np.ndarray:
    x = np.asarray(x, dtype=np.int64)
    if src.width == dst.width:
        return x
    return fp_convert(ConvCfg(src, dst), x)


def exp_diff(acc, a, b) -> np.ndarray:
    """``exp(a - b)`` as the hardware computes it: the difference of two score-format values in
    fp32, rounded to ``acc``, then the ``acc`` exponential."""
    d = fp_add(OpCfg(SCORE), np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64),
               subtract=True)
    return fp_exp(OpCfg(acc), _convert(SCORE, acc, d))


def scale_bits(scale: float) -> int:
    """The score scale as a score-format constant."""
    return int(float_bits(SCORE, [scale])[0])


def tree_sum(acc, x) -> np.ndarray:
    """Pairwise binary-tree sum over the last axis (length a power of two), adjacent pairs first."""
    c = OpCfg(acc)
    x = np.asarray(x, dtype=np.int64)
    while x.shape[-1] > 1:
        x = fp_add(c, x[..., 0::2], x[..., 1::2])
    return x[..., 0]


def scores(scale: float, q16, k16) -> np.ndarray:
    """Scaled scores ``s_j`` (score-format bits) of fp16 ``q`` (d,) against fp16 rows ``k``
    (n, d)."""
    c = OpCfg(SCORE)
    prods = fp_mul(c, _convert(FP16, SCORE, q16)[None, :], _convert(FP16, SCORE, k16))
    return fp_mul(c, tree_sum(SCORE, prods), scale_bits(scale))


def _order_key(fmt, bits):
    """Integers in the comparator's order (-0 below +0); NaN handled by the caller."""
    mag = bits & (fmt.sign_bit - 1)
    return np.where(bits & fmt.sign_bit, -mag - 1, mag)


def _is_nan(fmt, bits):
    return (np.asarray(bits) & (fmt.sign_bit - 1)) > fmt.inf


def greater(a, b, fmt=SCORE) -> np.ndarray:
    """The comparator's ``greater`` (-0 < +0; false when either side is NaN)."""
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    return (_order_key(fmt, a) > _order_key(fmt, b)) & ~_is_nan(fmt, a) & ~_is_nan(fmt, b)


def running_max(m_in, first) -> np.ndarray:
    """The ``m'`` sequence: ``m' = first ? x : (x > m ? x : m)`` with the comparator's ``greater``
    (so a NaN never replaces a number, and a NaN first value stays)."""
    m_in = np.asarray(m_in, dtype=np.int64)
    out = np.empty_like(m_in)
    cur = 0
    for i in range(len(m_in)):
        if i == 0 or first[i] or greater(m_in[i], cur):
            cur = int(m_in[i])
        out[i] = cur
    return out


def merge(acc, m_in, l_in, x_in, first=None) -> dict:
    """Run the merge recurrence (module docstring) over a sequence of inputs.

    ``m_in`` (n,) are score-format bit patterns, ``l_in`` (n,) and ``x_in`` (n, w) acc bit
    patterns (``x_in`` may be None for the statistics alone).  ``first`` (n,) restarts the state;
    the first input always does.  Returns the per-step ``m``, ``l``, ``g`` (the exponential) and
    ``swap`` arrays and, with ``x_in``, the final ``O``.
    """
    c = OpCfg(acc)
    m_in = np.asarray(m_in, dtype=np.int64)
    l_in = np.asarray(l_in, dtype=np.int64)
    n = len(m_in)
    first = np.zeros(n, dtype=bool) if first is None else np.asarray(first, dtype=bool).copy()
    first[0] = True
    m_new = running_max(m_in, first)
    m_prev = np.concatenate([[0], m_new[:-1]])
    swap = ~first & greater(m_in, m_prev)
    lo = np.where(swap, m_prev, m_in)
    g = np.where(first, acc.one, exp_diff(acc, lo, m_new))
    l_out = np.empty(n, dtype=np.int64)
    o = None
    if x_in is not None:
        x_in = np.asarray(x_in, dtype=np.int64)
        o = np.zeros(x_in.shape[1], dtype=np.int64)
    l = 0
    for j in range(n):
        if first[j]:
            a_l, c_l = l_in[j], 0
        elif swap[j]:
            a_l, c_l = l, l_in[j]
        else:
            a_l, c_l = l_in[j], l
        l = int(fp_fma(c, np.array([a_l]), g[j:j + 1], np.array([c_l]))[0])
        l_out[j] = l
        if o is not None:
            if first[j]:
                o = fp_fma(c, x_in[j], g[j], np.zeros_like(o))
            elif swap[j]:
                o = fp_fma(c, o, g[j], x_in[j])
            else:
                o = fp_fma(c, x_in[j], g[j], o)
    res = {"m": m_new, "l": l_out, "g": g, "swap": swap.astype(np.int64)}
    if o is not None:
        res["O"] = o
    return res


def tile_stats(acc, s, v_acc) -> dict:
    """One tile of the PU: row max ``m``, ``p = expd(s, m)``, ``l`` and ``O`` (module docstring)."""
    c = OpCfg(acc)
    m = int(running_max(s, np.zeros(len(s), dtype=bool))[-1])
    p = exp_diff(acc, s, np.int64(m))
    l = 0
    o = np.zeros(v_acc.shape[1], dtype=np.int64)
    for j in range(len(s)):
        l = int(fp_add(c, np.array([l]), p[j:j + 1])[0])
        o = fp_fma(c, np.full_like(o, p[j]), v_acc[j], o)
    return {"m": m, "l": l, "O": o, "p": p}


def pu_local_attention(acc, scale: float, q16, k16, v16, tile: int = 16) -> dict:
    """``pam_pu`` on one token set: tiles of ``tile`` tokens merged in order.  Returns the partial
    ``O`` (d,), ``l`` (acc bits), ``m`` (score-format bits), the scores ``s`` and the per-tile
    statistics."""
    k16 = np.asarray(k16, dtype=np.int64)
    if len(k16) == 0:
        raise ValueError("a PU partial needs at least one token")
    s = scores(scale, q16, k16)
    v_acc = to_acc(acc, v16)
    tiles = [tile_stats(acc, s[a:a + tile], v_acc[a:a + tile]) for a in range(0, len(s), tile)]
    r = merge(acc, [t["m"] for t in tiles], [t["l"] for t in tiles],
              np.stack([t["O"] for t in tiles]))
    return {"O": r["O"], "m": int(r["m"][-1]), "l": int(r["l"][-1]), "s": s, "tiles": tiles}


def ru_reduce(acc, partials, final: bool = False) -> dict:
    """``pam_ru`` on one request: merge ``partials`` (list of dicts with ``O``, ``m``, ``l``) in
    the order given.  With ``final`` also ``norm`` (fp16 O/l) and ``lse``."""
    if not partials:
        raise ValueError("the RU needs at least one partial")
    m_in = np.array([p["m"] for p in partials], dtype=np.int64)
    l_in = np.array([p["l"] for p in partials], dtype=np.int64)
    x_in = np.stack([np.asarray(p["O"], dtype=np.int64) for p in partials])
    r = merge(acc, m_in, l_in, x_in)
    out = {"O": r["O"], "m": int(r["m"][-1]), "l": int(r["l"][-1])}
    if final:
        out.update(ru_final(acc, out["O"], out["m"], out["l"]))
    return out


def ru_final(acc, o, m, l) -> dict:
    """Final stage: ``norm = fp16(O * recip(l))`` and ``lse = m + fp32(log(l))`` (in fp32)."""
    c = OpCfg(acc)
    r = fp_recip(c, np.array([l], dtype=np.int64))
    prod = fp_mul(c, np.asarray(o, dtype=np.int64), r)
    norm = _convert(acc, FP16, prod)
    log_l = _convert(acc, SCORE, fp_log(c, np.array([l], dtype=np.int64)))
    lse = int(fp_add(OpCfg(SCORE), np.array([m]), log_l)[0])
    return {"norm": norm, "lse": lse}


def spread(n: int, weights) -> list:
    """Split ``n`` tokens into contiguous counts in proportion to ``weights`` (largest remainder;
    ties go to the earlier part)."""
    w = [float(x) for x in weights]
    total = sum(w)
    if total <= 0 or any(x < 0 for x in w):
        raise ValueError("weights must be non-negative with a positive sum")
    exact = [n * x / total for x in w]
    counts = [int(math.floor(e)) for e in exact]
    rest = n - sum(counts)
    order = sorted(range(len(w)), key=lambda i: (-(exact[i] - counts[i]), i))
    for i in order[:rest]:
        counts[i] += 1
    return counts


def device_attention(acc, scale: float, q16, k16, v16, pus: int, tile: int = 16) -> dict | None:
    """``pam_device``: tokens spread evenly (contiguously) over ``pus`` PUs, local attention on
    each, and the intra-device RU merge in PU order.  ``None`` when the device has no tokens."""
    counts = spread(len(k16), [1] * pus)
    partials, start = [], 0
    for c in counts:
        if c:
            partials.append(pu_local_attention(acc, scale, q16, k16[start:start + c],
                                               v16[start:start + c], tile))
        start += c
    if not partials:
        return None
    res = ru_reduce(acc, partials)
    res["pu_partials"] = partials
    res["pu_counts"] = counts
    return res


def system_attention(acc, scale: float, q16, k16, v16, split, pus, tile: int = 16) -> dict:
    """PAMattention for one head (PAM Alg. 1): tokens split over the tiers HBM, DDR, SSD in the
    ratio ``split`` (contiguously, in that order), each tier's device partial, and the final RU in
    the HBM tier.  ``pus`` gives the PU count per tier.  Returns ``norm`` (fp16 O), ``O``, ``m``,
    ``l``, ``lse``, the tier token counts and the device partials."""
    k16 = np.asarray(k16, dtype=np.int64)
    v16 = np.asarray(v16, dtype=np.int64)
    counts = spread(len(k16), split)
    devices, start = [], 0
    for c, p in zip(counts, pus):
        dev = device_attention(acc, scale, q16, k16[start:start + c], v16[start:start + c], p,
                               tile) \
            if c else None
        devices.append(dev)
        start += c
    res = ru_reduce(acc, [d for d in devices if d is not None], final=True)
    res["tier_counts"] = counts
    res["devices"] = devices
    return res


def attention_f64(q, k, v, scale: float) -> np.ndarray:
    """float64 reference: softmax(q k^T * scale) v for one head (q (d,), k and v (n, d))."""
    q = np.asarray(q, dtype=np.float64)
    s = (np.asarray(k, dtype=np.float64) @ q) * scale
    p = np.exp(s - s.max())
    return (p / p.sum()) @ np.asarray(v, dtype=np.float64)
