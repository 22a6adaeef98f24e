"""Bit-exact golden model of ``fp_exp`` (mirrors hw/fp/exp.py step by step)."""
from __future__ import annotations

import numpy as np

from pimforge.hw.fp.func_tables import exp_params
from pimforge.sim.golden.fp import core as fc
from pimforge.sim.golden.fp.func_common import quad_eval

__all__ = ["fp_exp"]


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
