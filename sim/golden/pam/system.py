"""Bit-exact golden model of ``pam_system`` (PAMattention for one head, PAM Alg. 1), and the
float64 reference it is checked against."""
from __future__ import annotations

import numpy as np

from pimforge.base.numerics import spread
from pimforge.sim.golden.pam.device import device_attention
from pimforge.sim.golden.pam.ru import ru_reduce

__all__ = ["system_attention", "attention_f64"]


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
