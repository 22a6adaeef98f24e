"""Bit-exact golden models of the PAM units and of the whole PAMattention flow (PAM Alg. 1).

Everything works on bit patterns (int64 arrays) in three formats:

* fp16 for Q, K, V and the normalized output;
* the **score format** :data:`~pimforge.base.numerics.SCORE` (fp32, whatever the accumulator) for the scores ``s``, the
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

from dataclasses import dataclass

import numpy as np

from pimforge.base.formats import FP16
from pimforge.base.numerics import SCORE, scale_bits
from pimforge.sim.golden.fp.add import fp_add
from pimforge.sim.golden.fp.convert import fp_convert
from pimforge.sim.golden.fp.exp import fp_exp
from pimforge.sim.golden.fp.mul import fp_mul

__all__ = ["OpCfg", "ConvCfg", "to_acc", "convert", "exp_diff", "tree_sum", "greater", "is_nan",
           "scores"]


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


def to_acc(acc, x16) -> np.ndarray:
    """fp16 bit patterns converted (exactly) to the accumulator format."""
    return convert(FP16, acc, x16)


def convert(src, dst, x) -> np.ndarray:
    """Bit patterns ``x`` of format ``src`` converted to ``dst`` (rounded to nearest even); the
    formats here differ in width when they differ at all, so equal widths pass unchanged."""
    x = np.asarray(x, dtype=np.int64)
    if src.width == dst.width:
        return x
    return fp_convert(ConvCfg(src, dst), x)


def exp_diff(acc, a, b) -> np.ndarray:
    """``exp(a - b)`` as the hardware computes it: the difference of two score-format values in
    fp32, rounded to ``acc``, then the ``acc`` exponential."""
    d = fp_add(OpCfg(SCORE), np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64),
               subtract=True)
    return fp_exp(OpCfg(acc), convert(SCORE, acc, d))


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
    prods = fp_mul(c, convert(FP16, SCORE, q16)[None, :], convert(FP16, SCORE, k16))
    return fp_mul(c, tree_sum(SCORE, prods), scale_bits(scale))


def _order_key(fmt, bits):
    """Integers in the comparator's order (-0 below +0); NaN handled by the caller."""
    mag = bits & (fmt.sign_bit - 1)
    return np.where(bits & fmt.sign_bit, -mag - 1, mag)


def is_nan(fmt, bits):
    """True where the bit patterns ``bits`` of format ``fmt`` are NaN."""
    return (np.asarray(bits) & (fmt.sign_bit - 1)) > fmt.inf


def greater(a, b, fmt=SCORE) -> np.ndarray:
    """The comparator's ``greater`` (-0 < +0; false when either side is NaN)."""
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    return (_order_key(fmt, a) > _order_key(fmt, b)) & ~is_nan(fmt, a) & ~is_nan(fmt, b)
