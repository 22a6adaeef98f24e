"""Shared steps of the special-function golden models (``fp_exp``, ``fp_log``, ``fp_recip``).

They mirror hw/fp/func_common.py; each function's own model is in its module beside this one,
with the tables and shift amounts of :mod:`pimforge.hw.fp.func_tables`.  Every intermediate stays
below 2**62.
"""
from __future__ import annotations

import numpy as np

from pimforge.sim.golden.fp import core as fc

__all__ = ["quad_eval", "normalize"]


def quad_eval(tab, u) -> np.ndarray:
    """The :class:`~pimforge.hw.fp.func_tables.QuadTable` kernel on an array of ``u``."""
    u = np.asarray(u, dtype=np.int64)
    i = u >> tab.d_bits
    d = u & ((1 << tab.d_bits) - 1)
    a = d >> tab.sq_pre
    sq = (a * a) >> tab.sq_post
    c0 = np.asarray(tab.c0, dtype=np.int64)[i]
    c1 = np.asarray(tab.c1, dtype=np.int64)[i]
    c2 = np.asarray(tab.c2, dtype=np.int64)[i]
    return c0 + ((c1 * d) >> tab.t1_shift) + ((c2 * sq) >> tab.t2_shift)


def normalize(fmt, u: dict) -> tuple:
    """Shift a subnormal significand up to a leading one: ``(exp, sig)`` with ``sig`` in
    [2**frac_bits, 2**precision) for every nonzero input."""
    lz = fmt.precision - fc.bit_length(u["sig"])
    return u["exp"] - lz, (u["sig"] << lz) & ((1 << fmt.precision) - 1)
