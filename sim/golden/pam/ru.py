"""Bit-exact golden model of ``pam_ru``: merge a request's partials, and the final stage
(PAM Alg. 1 ``Reduction``, line 21)."""
from __future__ import annotations

import numpy as np

from pimforge.base.formats import FP16
from pimforge.base.numerics import SCORE
from pimforge.sim.golden.fp.add import fp_add
from pimforge.sim.golden.fp.log import fp_log
from pimforge.sim.golden.fp.mul import fp_mul
from pimforge.sim.golden.fp.recip import fp_recip
from pimforge.sim.golden.pam.common import OpCfg, convert
from pimforge.sim.golden.pam.softmax import merge

__all__ = ["ru_reduce", "ru_final"]


def ru_reduce(acc, partials, final: bool = False) -> dict:
    """``pam_ru`` on one request: merge ``partials`` (list of dicts with ``O``, ``m``, ``l``) in
    the order given.  With ``final`` also ``norm`` (fp16 O/l) and ``lse``."""
    if not partials:
        raise ValueError("the RU needs at least one partial")
    m_in = np.array([p["m"] for p in partials], dtype=np.int64)
    l_in = np.array([p["l"] for p in partials], dtype=np.int64)
    x_in = np.stack([np.asarray(p["O"], dtype=np.int64) for p in partials])
    r = merge(acc, m_in, l_in, x_in)
    out = {"O": r["O"], "m": int(r["m"][-1]), "l": int(r["l"][-1])}
    if final:
        out.update(ru_final(acc, out["O"], out["m"], out["l"]))
    return out


def ru_final(acc, o, m, l) -> dict:
    """Final stage: ``norm = fp16(O * recip(l))`` and ``lse = m + fp32(log(l))`` (in fp32)."""
    c = OpCfg(acc)
    r = fp_recip(c, np.array([l], dtype=np.int64))
    prod = fp_mul(c, np.asarray(o, dtype=np.int64), r)
    norm = convert(acc, FP16, prod)
    log_l = convert(acc, SCORE, fp_log(c, np.array([l], dtype=np.int64)))
    lse = int(fp_add(OpCfg(SCORE), np.array([m]), log_l)[0])
    return {"norm": norm, "lse": lse}
