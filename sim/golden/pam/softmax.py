"""Bit-exact golden model of ``online_softmax``: the running maximum and the merge of PAM
eqs. 3-5 (see :mod:`~pimforge.sim.golden.pam.common` for the operation order)."""
from __future__ import annotations

import numpy as np

from pimforge.sim.golden.fp.fma import fp_fma
from pimforge.sim.golden.pam.common import OpCfg, exp_diff, greater

__all__ = ["running_max", "merge"]


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
