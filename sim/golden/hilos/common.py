"""Bit-exact golden models of the HILOS near-storage attention kernel (HILOS §4.4, Alg. 1,
Fig. 7): the spec the units of :mod:`pimforge.hw.hilos` follow bit for bit.

Formats: Q, K, V and the output are fp16; MACs, exponentials and sums are fp32 (``F32``).
Scores are kept in ``score_fmt`` (fp32 by default; fp16 is the paper's storage format).

* ``qk_scores``: MAC j accumulates ``acc = fma(q_i, k_ji, acc)`` over i = 0..d-1 from +0 in
  fp32, then ``s_j = acc * scale`` (fp32), rounded to ``score_fmt``.  With ``partials`` Q > 1
  (``qk_gemv`` only), dim i goes into partial ``i mod Q`` and the Q partials are summed pairwise,
  adjacent pairs first, before the scale.
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

from pimforge.base.formats import FP32
from pimforge.hw.hilos.config import MASK_VALUE
from pimforge.sim.golden.pam.common import OpCfg

__all__ = ["F32", "MASK_VALUE", "NEG_INF32"]


F32 = OpCfg(FP32)


NEG_INF32 = 0xFF800000
