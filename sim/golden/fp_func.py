"""Bit-exact golden models of ``fp_exp``, ``fp_log`` and ``fp_recip``.

They mirror hw/fp/exp.py, hw/fp/log.py and hw/fp/recip.py step by step, with the tables and
shift amounts of :mod:`pimforge.hw.fp.func_tables`.  Every intermediate stays below 2**62.
"""
from __future__ import annotations

import numpy as np

from pimforge.hw.fp.func_tables import exp_params, log_params, recip_params
from pimforge.sim.golden import fp_core as fc

__all__ = ["fp_exp", "fp_log", "fp_recip", "quad_eval", "normalize"]


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


def fp_exp(cfg, a) -> np.ndarray:
    """Bit patterns of ``exp(a)`` for an array of bit patterns ``a``."""
    fmt, ftz = cfg.fmt, cfg.ftz
    par = exp_params(fmt)
    tab = par.table
    u = fc.unpack(fmt, a, ftz)
    # |x| * log2(e) with y_frac fraction bits, truncated
    prod = u["sig"] * par.log2e
    shift = np.clip(fmt.frac_bits + par.log2e_frac - par.y_frac - u["exp"], 0, 62)
    y = prod >> shift
    t = np.where(u["sign"] == 1, -y, y)
    n = t >> par.y_frac
    f = t & ((1 << par.y_frac) - 1)
    g = quad_eval(tab, f)   # 2**f with out_frac fraction bits, in [1, 2]
    rounded = fc.round_pack(fmt, 0, n + 1, g, tab.out_frac + 2, ftz)
    big = u["exp"] >= par.sat_exp           # includes Inf and NaN
    overflow = big & (u["sign"] == 0)
    underflow = big & (u["sign"] == 1) & ~u["nan"]
    out = np.where(underflow, 0, rounded)
    return fc.special_result(fmt, u["nan"], overflow & ~u["nan"], 0, out)


def fp_log(cfg, a) -> np.ndarray:
    """Bit patterns of ``log(a)`` (natural logarithm)."""
    fmt, ftz = cfg.fmt, cfg.ftz
    par = log_params(fmt)
    tab = par.table
    w = fmt.frac_bits + 1
    u = fc.unpack(fmt, a, ftz)
    e, sig = normalize(fmt, u)
    # mantissas of 1.5 and above are halved so that 1 + t lies in [0.75, 1.5)
    hi = (sig >> (fmt.frac_bits - 1)) & 1
    m = np.where(hi == 1, sig, sig << 1)          # 1 + t with w fraction bits
    e = e + hi
    t = m - (1 << w)
    # w-bit wrap as in the RTL (only zero inputs wrap, and their result is replaced)
    g = quad_eval(tab, (m - (3 << (w - 2))) & ((1 << w) - 1))   # log1p(t) / t
    s = e * par.ln2 + ((t * g) >> par.tg_shift)
    sign = (s < 0).astype(np.int64)
    rounded = fc.round_pack(fmt, sign, par.sum_bits - par.sum_frac - 1, np.abs(s), par.sum_bits,
                            ftz)
    nan = u["nan"] | ((u["sign"] == 1) & ~u["zero"])
    inf = u["zero"] | u["inf"]
    return fc.special_result(fmt, nan, inf, u["zero"].astype(np.int64), rounded)


def fp_recip(cfg, a) -> np.ndarray:
    """Bit patterns of ``1 / a``."""
    fmt, ftz = cfg.fmt, cfg.ftz
    tab = recip_params(fmt).table
    u = fc.unpack(fmt, a, ftz)
    e, sig = normalize(fmt, u)
    g = quad_eval(tab, sig & ((1 << fmt.frac_bits) - 1))   # 1 / m with out_frac fraction bits
    rounded = fc.round_pack(fmt, u["sign"], -e, g, tab.out_frac + 1, ftz)
    out = np.where(u["inf"], u["sign"] << (fmt.width - 1), rounded)
    return fc.special_result(fmt, u["nan"], u["zero"], u["sign"], out)
