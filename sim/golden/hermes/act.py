"""Bit-exact golden model of ``hermes_act`` (Hermes §IV-A; the operation order of
:mod:`pimforge.hw.hermes.act`).

* :func:`act_relu`: ``x`` if its sign is clear or it is a NaN, else +0.
* :func:`act_softmax`: the maximum (a beat's lane tree, then a running maximum over the beats,
  in the comparator's order: -0 < +0, a NaN never wins), ``e = exp(acc(x) - acc(m))``, a beat's
  lane adder tree (padding +0), beat ``k`` into partial sum ``k mod Q`` (Q = ``partials``,
  starting at -0), Z the pairwise tree of the Q partials, adjacent pairs first (Q = 4:
  ``Z = (p0 + p1) + (p2 + p3)``), ``r = recip(Z)`` and ``y = fp16(e * r)``, all in ``acc``.
"""
from __future__ import annotations

import numpy as np

from pimforge.base.formats import FP16
from pimforge.hw.hermes.act import NEG_INF16, NEG_ZERO
from pimforge.hw.hermes.streams import ACT_OPS
from pimforge.sim.golden.fp.add import fp_add
from pimforge.sim.golden.fp.exp import fp_exp
from pimforge.sim.golden.fp.mul import fp_mul
from pimforge.sim.golden.fp.recip import fp_recip
from pimforge.sim.golden.pam.common import OpCfg, convert, greater, is_nan, tree_sum

__all__ = ["act_relu", "act_softmax", "act_golden"]


def act_relu(x16) -> np.ndarray:
    """ReLU of fp16 bit patterns: NaNs are kept as they are, relu(-0) = +0."""
    x = np.asarray(x16, dtype=np.int64)
    neg = (x & FP16.sign_bit) != 0
    return np.where(neg & ~is_nan(FP16, x), 0, x)


def _beats(x16, lanes: int, pad: int) -> np.ndarray:
    x = np.asarray(x16, dtype=np.int64)
    B = -(-len(x) // lanes)
    out = np.full(B * lanes, pad, dtype=np.int64)
    out[:len(x)] = x
    return out.reshape(B, lanes)


def _running_max(x16, lanes: int) -> int:
    """The lane comparator tree of each beat, then the running maximum over the beats."""
    t = _beats(x16, lanes, NEG_INF16)
    while t.shape[1] > 1:
        a, b = t[:, 0::2], t[:, 1::2]
        t = np.where(greater(b, a, FP16), b, a)
    m = int(t[0, 0])
    for v in t[1:, 0]:
        if greater(v, m, FP16):
            m = int(v)
    return m


def act_softmax(x16, lanes: int, acc, partials: int = 4) -> dict:
    """Softmax of fp16 bit patterns ``x16`` (n,) as the unit computes it with ``lanes`` lanes,
    internal format ``acc`` and ``partials`` running partial sums.  Returns ``y`` (fp16 bits),
    ``m`` (fp16), ``e`` (acc, (n,)), ``Z`` and ``r`` (acc)."""
    n = len(x16)
    c = OpCfg(acc)
    m = _running_max(x16, lanes)
    x = convert(FP16, acc, _beats(x16, lanes, 0))
    m_acc = int(convert(FP16, acc, np.array([m]))[0])
    e = fp_exp(c, fp_add(c, x, np.full_like(x, m_acc), subtract=True))
    keep = (np.arange(e.size) < n).reshape(e.shape)
    sums = tree_sum(acc, np.where(keep, e, 0))
    B = len(sums)
    Q = partials                     # beat k into partial k mod Q; a partial no beat reaches
    rows = -(-B // Q)                # stays -0
    grid = np.zeros(rows * Q, dtype=np.int64)
    grid[:B] = sums
    grid = grid.reshape(rows, Q)
    used = (np.arange(rows * Q) < B).reshape(rows, Q)
    parts = np.full(Q, NEG_ZERO[acc.width], dtype=np.int64)
    for row, ok in zip(grid, used):
        parts = np.where(ok, fp_add(c, parts, row), parts)
    z = tree_sum(acc, parts)
    r = fp_recip(c, np.array([z], dtype=np.int64))
    e = e.reshape(-1)[:n]
    y = convert(acc, FP16, fp_mul(c, e, np.full(n, r[0], dtype=np.int64)))
    return {"y": y, "m": m, "e": e, "Z": int(z), "r": int(r[0])}


def act_golden(cfg, op: str, x16) -> np.ndarray:
    """The unit's output (fp16 bits, (n,)) for one vector and op."""
    if op not in ACT_OPS:
        raise ValueError(f"hermes_act: op must be one of {ACT_OPS}, not {op!r}")
    if op == "relu":
        return act_relu(x16)
    return act_softmax(x16, cfg.lanes, cfg.acc, cfg.partials)["y"]
