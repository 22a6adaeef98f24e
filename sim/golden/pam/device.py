"""Bit-exact golden model of ``pam_device``: the PUs' partials merged by the device's RU."""
from __future__ import annotations

from pimforge.base.numerics import spread
from pimforge.sim.golden.pam.pu import pu_local_attention
from pimforge.sim.golden.pam.ru import ru_reduce

__all__ = ["device_attention"]


def device_attention(acc, scale: float, q16, k16, v16, pus: int, tile: int = 16) -> dict | None:
    """``pam_device``: tokens spread evenly (contiguously) over ``pus`` PUs, local attention on
    each, and the intra-device RU merge in PU order.  ``None`` when the device has no tokens."""
    counts = spread(len(k16), [1] * pus)
    partials, start = [], 0
    for c in counts:
        if c:
            partials.append(pu_local_attention(acc, scale, q16, k16[start:start + c],
                                               v16[start:start + c], tile))
        start += c
    if not partials:
        return None
    res = ru_reduce(acc, partials)
    res["pu_partials"] = partials
    res["pu_counts"] = counts
    return res
