"""The one coupling of the PAPI system model to the scheduler's golden model (§5.2,
``pimforge.sim.golden.papi.scheduler.schedule``): where FC runs in every decoding iteration of
a static batch, from the batch size, TLP, alpha and the per-iteration <eos> counts."""
from __future__ import annotations

import math

from pimforge.sim.golden.papi.scheduler import schedule

__all__ = ["placements"]


def placements(batch: int, tlp: int, alpha: float, eos, mode: str) -> list:
    """'gpu' or 'pim' per decoding iteration: ``mode`` gpu / pim (the static systems) or
    dynamic (§5: the golden model's decisions; decision k places iteration k + 1's FC)."""
    if mode in ("gpu", "pim"):
        return [mode] * len(eos)
    ds = schedule(int(batch), int(tlp), int(math.floor(alpha)), [int(e) for e in eos])
    return [d.placement for d in ds[:len(eos)]]
