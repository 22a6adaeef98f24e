"""Bit-exact golden model of ``two_pass_softmax`` (HILOS Alg. 1; see :mod:`~pimforge.sim.golden.hilos.common`)."""
from __future__ import annotations

import numpy as np

from pimforge.base.formats import FP16, FP32
from pimforge.base.numerics import block_starts, mask_bits, next_pow2
from pimforge.sim.golden.fp.add import fp_add
from pimforge.sim.golden.fp.exp import fp_exp
from pimforge.sim.golden.fp.fma import fp_fma
from pimforge.sim.golden.fp.mul import fp_mul
from pimforge.sim.golden.fp.recip import fp_recip
from pimforge.sim.golden.hilos.common import F32, MASK_VALUE, NEG_INF32
from pimforge.sim.golden.pam.common import convert, greater

__all__ = ["two_pass_softmax"]


def _tree(values, op):
    x = np.asarray(values, dtype=np.int64)
    while len(x) > 1:
        x = op(x[0::2], x[1::2])
    return int(x[0])


def _tree_max(x):
    return _tree(x, lambda a, b: np.where(greater(b, a, FP32), b, a))


def _tree_sum(x):
    return _tree(x, lambda a, b: fp_add(F32, a, b))


def two_pass_softmax(x, block: int, mask=None, score_fmt=FP32, mask_value=MASK_VALUE,
                     segments=None) -> dict:
    """Alg. 1 on one row of scores ``x`` (score_fmt bits).  ``mask`` (bool, True = masked).
    Returns ``y`` (fp16 bits), ``m`` and ``Z`` (fp32 bits) and the per-block ``m_B``, ``S_B``."""
    x = convert(score_fmt, FP32, np.asarray(x, dtype=np.int64))
    n = len(x)
    mask = np.zeros(n, dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
    x = np.where(mask, mask_bits(mask_value), x)
    width = next_pow2(block)
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
    y = convert(FP32, FP16, fp_mul(F32, e, np.full_like(e, r[0])))
    y = np.where(mask, 0, y)
    return {"y": y, "m": m, "Z": z, "blocks": blocks}
