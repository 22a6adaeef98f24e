"""Bit-exact golden model of ``pam_pu``: tiles of a token set, each merged into the running
state (PAM Alg. 1 ``Local_Attention``; see :mod:`~pimforge.sim.golden.pam.common`)."""
from __future__ import annotations

import numpy as np

from pimforge.sim.golden.fp.add import fp_add
from pimforge.sim.golden.fp.fma import fp_fma
from pimforge.sim.golden.pam.common import OpCfg, exp_diff, scores, to_acc
from pimforge.sim.golden.pam.softmax import merge, running_max

__all__ = ["tile_stats", "pu_local_attention"]


def tile_stats(acc, s, v_acc) -> dict:
    """One tile of the PU: row max ``m``, ``p = expd(s, m)``, ``l`` and ``O`` (module docstring)."""
    c = OpCfg(acc)
    m = int(running_max(s, np.zeros(len(s), dtype=bool))[-1])
    p = exp_diff(acc, s, np.int64(m))
    l = 0
    o = np.zeros(v_acc.shape[1], dtype=np.int64)
    for j in range(len(s)):
        l = int(fp_add(c, np.array([l]), p[j:j + 1])[0])
        o = fp_fma(c, np.full_like(o, p[j]), v_acc[j], o)
    return {"m": m, "l": l, "O": o, "p": p}


def pu_local_attention(acc, scale: float, q16, k16, v16, tile: int = 16) -> dict:
    """``pam_pu`` on one token set: tiles of ``tile`` tokens merged in order.  Returns the partial
    ``O`` (d,), ``l`` (acc bits), ``m`` (score-format bits), the scores ``s`` and the per-tile
    statistics."""
    k16 = np.asarray(k16, dtype=np.int64)
    if len(k16) == 0:
        raise ValueError("a PU partial needs at least one token")
    s = scores(scale, q16, k16)
    v_acc = to_acc(acc, v16)
    tiles = [tile_stats(acc, s[a:a + tile], v_acc[a:a + tile]) for a in range(0, len(s), tile)]
    r = merge(acc, [t["m"] for t in tiles], [t["l"] for t in tiles],
              np.stack([t["O"] for t in tiles]))
    return {"O": r["O"], "m": int(r["m"][-1]), "l": int(r["l"][-1]), "s": s, "tiles": tiles}
