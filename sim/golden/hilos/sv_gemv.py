"""Bit-exact golden model of ``sv_gemv``: ``O = sum_j y_j V_j`` (see :mod:`~pimforge.sim.golden.hilos.common`)."""
from __future__ import annotations

import numpy as np

from pimforge.base.formats import FP16, FP32
from pimforge.sim.golden.fp.fma import fp_fma
from pimforge.sim.golden.hilos.common import F32
from pimforge.sim.golden.pam.common import convert

__all__ = ["sv_output"]


def sv_output(y16, v16, mask=None) -> np.ndarray:
    """fp16 output bits: ``O = fma(y_j, v_j, O)`` over unmasked tokens in order, fp32.  ``y16``
    (n,) gives O (d,); (G, n) gives (G, d)."""
    y = convert(FP16, FP32, np.asarray(y16, dtype=np.int64))
    yy = np.atleast_2d(y)
    v = convert(FP16, FP32, np.asarray(v16, dtype=np.int64))
    mask = np.zeros(yy.shape[1], dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
    o = np.zeros((len(yy), v.shape[1]), dtype=np.int64)
    for j in np.nonzero(~mask)[0]:
        o = fp_fma(F32, np.broadcast_to(yy[:, j:j + 1], o.shape), np.broadcast_to(v[j], o.shape),
                   o)
    o = convert(FP32, FP16, o)
    return o if y.ndim == 2 else o[0]
