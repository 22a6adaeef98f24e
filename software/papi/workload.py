"""Dolly request traces for static batching (§7.1) and the arithmetic intensities of §3 and
§5.1 (eqs. 1-2)."""
from __future__ import annotations

import numpy as np

from pimforge.software.papi.config import TASKS

__all__ = ["sample_requests", "fc_intensity", "fc_intensity_estimate", "attention_intensity",
           "AI_CONTEXT"]

AI_CONTEXT = 128     # assumed context of §3's Fig. 2 attention point (not given; AttAcc's 128)


def _lognormal(rng, mean: float, std: float, n: int) -> np.ndarray:
    s2 = np.log1p((std / mean) ** 2)
    return rng.lognormal(np.log(mean) - s2 / 2, np.sqrt(s2), n)


def sample_requests(task: str, n: int, seed: int = 0) -> tuple:
    """``n`` requests of a Dolly category: (input, output) token counts, lognormal with the
    category's mean and std clipped to its range, deterministic for a seed."""
    t = TASKS[task]
    rng = np.random.default_rng([seed, sum(map(ord, task))])
    inp = _lognormal(rng, t.in_mean, t.in_std, n).clip(t.lo, t.hi)
    out = _lognormal(rng, t.out_mean, t.out_std, n).clip(t.lo, t.hi)
    return np.rint(inp).astype(np.int64), np.rint(out).astype(np.int64)


def fc_intensity(rlp: int, tlp: int, h: int) -> float:
    """Eq. 1: FLOPs over bytes of an h x h FC on RLP x TLP tokens (fp16 weights, X and Y)."""
    n = rlp * tlp
    return n * h * h * 2 / ((2 * n * h + h * h) * 2)


def fc_intensity_estimate(rlp: int, tlp: int) -> int:
    """Eq. 2: AI ~ RLP x TLP."""
    return rlp * tlp


def attention_intensity(tlp: int, head_dim: int, context: int = AI_CONTEXT) -> float:
    """One head's attention for TLP query tokens over ``context`` tokens: QK^T and SV
    (4 TLP L d FLOPs) over K, V, Q, the output and the scores written and read back (fp16).
    Batching adds no reuse (§3.1); it does not depend on RLP."""
    flops = 4.0 * tlp * context * head_dim
    bytes_ = 2.0 * (2 * context * head_dim + 2 * tlp * head_dim + 2 * tlp * context)
    return flops / bytes_
