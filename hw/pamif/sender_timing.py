"""The cycle model of ``pamif_sender`` alone (:mod:`pimforge.hw.pamif.sender`), with the standalone
bench's surroundings; the unit's cycle model is :func:`sender_cycles`, its activity model
:func:`sender_activity`."""
from __future__ import annotations

from collections import Counter

from pimforge.hw.core.activity import mem_action
from pimforge.hw.pamif.config import PamifConfig
from pimforge.hw.pamif.migration import read_order
from pimforge.hw.pamif.streams import bits

__all__ = ["LOAD_TO_ISSUE", "FREE_DELAY", "last_fill_index", "sender_schedule", "sender_cycles",
           "sender_activity"]


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


def sender_activity(cfg: PamifConfig, *list_lengths: int) -> dict:
    """Memory accesses of lists of ``list_lengths`` entries (accepted or not), with any stalls.

    The load stores each entry it takes, up to ``capacity`` per list, before any check decides
    (a rejected list's entries are stored too, and overwritten by the next list): one write of
    its source slot into the list memory of source slots, one of its destination slot into that
    of destination slots, and one of its index into its source group's queue (one queue per
    group, all of one shape).  Every read of these memories is combinational (the issue's and
    the fill's lookups), so the reads count nothing (:mod:`pimforge.hw.core.activity`)."""
    C = cfg.capacity
    stored = sum(min(n, C) for n in list_lengths)
    counts = Counter()
    for width in (bits(cfg.src_slots), bits(cfg.dst_slots), bits(C)):
        counts[mem_action("write", C, width)] += stored
    return {k: v for k, v in counts.items() if v}
