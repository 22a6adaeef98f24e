"""The cycle model of ``pamif_sender`` alone (:mod:`pimforge.hw.pamif.sender`), with the standalone
bench's surroundings; the unit's cycle model is :func:`sender_cycles`."""
from __future__ import annotations

from pimforge.hw.pamif.config import PamifConfig
from pimforge.hw.pamif.migration import read_order

__all__ = ["LOAD_TO_ISSUE", "FREE_DELAY", "last_fill_index", "sender_schedule", "sender_cycles"]


LOAD_TO_ISSUE = 2       # the last entry's cycle to the first read: DECIDE, then ISSUE


FREE_DELAY = 2          # the standalone sender bench: a region's release after its last fill


def last_fill_index(cfg, entries) -> list:
    """Per entry, the index in the read order of its last word."""
    last = [0] * len(entries)
    for k, (j, w) in enumerate(read_order(cfg, entries)):
        if w == cfg.src_words - 1:
            last[j] = k
    return last


def sender_schedule(cfg, entries, free_delay: int = FREE_DELAY) -> dict:
    """Cycle stamps of ``pamif_sender`` alone on one accepted list, with the standalone bench's
    surroundings: the memory answers each read the cycle after its request, ``o_fill`` is always
    ready, and region ``j`` is released (``i_free``) ``free_delay`` cycles after the fill of
    entry j's last word, in list order.  Returns ``rd``, ``fill``, ``free``, ``status``,
    ``cycles``."""
    n = len(entries)
    order = read_order(cfg, entries)
    last = last_fill_index(cfg, entries)
    req, fill, free = [], [], []
    t = n - 1 + LOAD_TO_ISSUE
    while True:
        freed = sum(1 for f in free if f < t)
        if freed == n:
            break
        if len(req) < len(order) and order[len(req)][0] < freed + cfg.regions:
            req.append(t)
        if len(fill) < len(req) and t >= req[len(fill)] + 1:
            fill.append(t)
        while len(free) < n and last[len(free)] < len(fill):
            prev = free[-1] + 1 if free else 0
            free.append(max(fill[last[len(free)]] + free_delay, prev))
        t += 1
    return {"rd": req, "fill": fill, "free": free, "status": t + 1, "cycles": t + 2}


def sender_cycles(cfg: PamifConfig, n_entries: int) -> int:
    """Cycles of a list of entries 0 .. n-1 (source and destination slot = entry) on the
    standalone sender: :func:`pimforge.hw.pamif.sender_timing.sender_schedule`."""
    return sender_schedule(cfg, [(j, j, j) for j in range(n_entries)])["cycles"]
