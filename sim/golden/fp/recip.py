"""Bit-exact golden model of ``fp_recip`` (mirrors hw/fp/recip.py step by step)."""
from __future__ import annotations

import numpy as np

from pimforge.hw.fp.func_tables import recip_params
from pimforge.sim.golden.fp import core as fc
from pimforge.sim.golden.fp.func_common import normalize, quad_eval

__all__ = ["fp_recip"]


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
