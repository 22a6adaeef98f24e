"""Bit-exact golden model of ``fp_log`` (mirrors hw/fp/log.py step by step)."""
from __future__ import annotations

import numpy as np

from pimforge.hw.fp.func_tables import log_params
from pimforge.sim.golden.fp import core as fc
from pimforge.sim.golden.fp.func_common import normalize, quad_eval

__all__ = ["fp_log"]


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
