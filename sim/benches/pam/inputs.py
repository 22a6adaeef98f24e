"""Input distributions for PAMattention accuracy checks (PAM §5.1).

:func:`make_inputs` returns ``(q, k, v)`` as float16 arrays of shapes ``(heads, d)``,
``(heads, n, d)`` and ``(heads, n, d)``.  The score of token j is ``s_j = scale * q . k_j`` with
the usual ``scale = 1/sqrt(d)`` in mind.  The kinds:

``normal``
    q, k and v standard normal: scores are about N(0, 1), the softmax weights spread over many
    tokens (the common case, and the one where fp16 accumulation error grows with N).
``heavy``
    heavy-tailed scores: each K row is a standard normal row times ``|t|``, t from a Student-t
    distribution with 2 degrees of freedom (clipped to 1000 so that K stays far from the fp16
    range).  Given the row scale the score is Gaussian, so the scores inherit the power-law tail:
    most are of order 1, a few reach tens, and the exp() terms span many orders of magnitude.
``dominant``
    normal inputs, except that one token (at a random position) has the key ``c * q`` with ``c``
    chosen so that its score is 16 with ``scale = 1/sqrt(d)``: it carries nearly all of the
    softmax mass, and the output is close to its value row.
``equal``
    all K rows identical (one standard normal row), so every score is equal and the output is the
    mean of the V rows; q and v standard normal.
``large``
    q and k standard normal, scaled by a common factor so that the largest ``|q . k|`` (before the
    score scale) is 1e4.  Products and partial sums stay below 2e4, well inside fp16; the point is
    that the exp() arguments reach thousands (stress for the running maximum and underflow), not
    accuracy.
"""
from __future__ import annotations

import numpy as np

__all__ = ["KINDS", "make_inputs"]

KINDS = ("normal", "heavy", "dominant", "equal", "large")

DOMINANT_SCORE = 16.0
LARGE_RAW_SCORE = 1e4


def make_inputs(kind: str, heads: int, n: int, d: int, rng) -> tuple:
    """``(q, k, v)`` float16 arrays, shapes ``(heads, d)``, ``(heads, n, d)``, ``(heads, n, d)``,
    drawn from the distribution ``kind`` (one of :data:`KINDS`; see the module docstring)."""
    if kind not in KINDS:
        raise ValueError(f"unknown input kind {kind!r}; allowed: {', '.join(KINDS)}")
    q = rng.standard_normal((heads, d))
    k = rng.standard_normal((heads, n, d))
    v = rng.standard_normal((heads, n, d))
    if kind == "heavy":
        k *= np.minimum(np.abs(rng.standard_t(2, size=(heads, n, 1))), 1000.0)
    elif kind == "dominant":
        q = q.astype(np.float16).astype(np.float64)  # the key must align with the stored q
        j = rng.integers(n, size=heads)
        for h in range(heads):
            c = DOMINANT_SCORE * np.sqrt(d) / (q[h] @ q[h])
            k[h, j[h]] = c * q[h]
    elif kind == "equal":
        k[:] = rng.standard_normal((heads, 1, d))
    elif kind == "large":
        raw = np.abs(np.einsum("hd,hnd->hn", q, k)).max(axis=1)
        f = np.sqrt(LARGE_RAW_SCORE / raw)[:, None]
        q *= f
        k *= f[:, :, None]
    return tuple(x.astype(np.float16) for x in (q, k, v))
