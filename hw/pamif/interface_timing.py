"""The exact cycle model of ``pam_interface`` (:mod:`pimforge.hw.pamif.interface`): a Python twin
of the RTL's registers, stepped per cycle, that jumps over stretches where every unit only waits
for a memory (SSD reads and programs take tens of thousands of cycles).

The memories are the bench's (:mod:`pimforge.hw.pamif.memory`): the source answers read ``k`` no
sooner than :meth:`~pimforge.hw.pamif.memory.ReadModel.ready`, the destination accepts write
``k`` no sooner than :meth:`~pimforge.hw.pamif.memory.WriteModel.earliest`.  Every other stream
is free of stalls (the bench's no-stall phase): ``i_cmd`` offers the list from cycle 0,
``o_rd`` and ``o_status`` are always ready.  ``tests/pamif/test_interface.py`` checks every
read request, fill, write and the status against the RTL's cycle stamps.

Register semantics mirrored (one line each in the RTL):

* sender: the list loads one entry per cycle, DECIDE takes one cycle, then each cycle at most
  one read (:func:`~pimforge.hw.pamif.migration.read_order`), only if its entry is inside the
  window ``entry < freed + regions`` (``freed`` counts releases up to the previous cycle); the
  OK status is raised the cycle after ``freed == n`` with nothing left downstream;
* read data passes through to the buffer in the cycle it is offered;
* buffer: a region whose last word was filled at cycle c may be read from c + 1; a read sets
  the output register for the next cycle; the last read of a region releases it, seen by the
  sender two cycles later;
* receiver: one register between the buffer and ``o_wr``.
"""
from __future__ import annotations

from collections import Counter

from pimforge.hw.pamif.buffer_timing import buffer_activity
from pimforge.hw.pamif.config import PamifConfig
from pimforge.hw.pamif.memory import ReadModel, WriteModel
from pimforge.hw.pamif.migration import read_addresses, read_order, write_addresses
from pimforge.hw.pamif.receiver_timing import receiver_activity
from pimforge.hw.pamif.sender_timing import LOAD_TO_ISSUE, sender_activity

__all__ = ["interface_schedule", "migration_cycles", "interface_cycles", "interface_activity"]


class _Twin:
    """The RTL's state during one accepted list."""

    def __init__(self, cfg, entries, reads: ReadModel, writes: WriteModel):
        self.cfg = cfg
        self.n = len(entries)
        self.order = read_order(cfg, entries)
        self.reads, self.writes = reads, writes
        self.req, self.fill, self.wr, self.free = [], [], [], []
        self.ready = []                     # data-ready cycle of each requested read
        self.count = [0] * cfg.regions
        self.head, self.rw = 0, 0
        self.ovalid = False                 # the buffer's output register
        self.wvalid = False                 # the receiver's output register
        self.freed = 0                      # as the sender sees it this cycle
        self.free_at = []                   # cycles the sender's freed count steps

    def step(self, t: int) -> bool:
        """Cycle ``t``; returns whether anything moved."""
        cfg, moved = self.cfg, False
        # ---- the destination write (the receiver's register)
        k_w = len(self.wr)
        wready = self.wvalid and t >= self.writes.earliest(k_w)
        # ---- the buffer's read and output register
        oready = (not self.wvalid) or wready
        advance = self.count[self.head] == cfg.src_words and ((not self.ovalid) or oready)
        take = self.ovalid and oready       # buffer -> receiver
        # ---- the sender: a read request
        k_r = len(self.req)
        if k_r < len(self.order):
            j = self.order[k_r][0]
            if j < self.freed + cfg.regions:
                self.req.append(t)
                self.ready.append(self.reads.ready(k_r, t))
                moved = True
        # ---- read data into the buffer
        k_f = len(self.fill)
        if k_f < len(self.req) - (1 if self.req and self.req[-1] == t else 0) and \
                t >= self.ready[k_f]:
            self.fill.append(t)
            region = self.order[k_f][0] % cfg.regions
            self.count[region] += 1
            moved = True
        # ---- register updates at the edge
        if wready:
            self.writes.commit(k_w, t)
            self.wr.append(t)
            moved = True
        if advance:
            moved = True
            if self.rw == cfg.dst_words - 1:
                self.count[self.head] = 0
                self.head = (self.head + 1) % cfg.regions
                self.rw = 0
                self.free.append(t + 1)          # o_free transfers the next cycle
                self.free_at.append(t + 2)       # the sender counts it the cycle after
            else:
                self.rw += 1
        self.wvalid = take or (self.wvalid and not wready)
        self.ovalid = advance or (self.ovalid and not oready)
        return moved

    def sync_freed(self, t: int) -> None:
        """The sender's release count as cycle ``t`` sees it."""
        while len(self.free_at) > self.freed and self.free_at[self.freed] <= t:
            self.freed += 1

    def next_event(self, t: int) -> int:
        """The next cycle anything can move, after an idle cycle ``t``."""
        cands = []
        k_f = len(self.fill)
        if k_f < len(self.req):
            cands.append(self.ready[k_f])
        if self.wvalid:
            cands.append(self.writes.earliest(len(self.wr)))
        if self.freed < len(self.free_at):
            cands.append(self.free_at[self.freed])
        later = [c for c in cands if c > t]
        return min(later) if later else t + 1

    def done(self) -> bool:
        return self.freed == self.n and not self.ovalid and not self.wvalid


def interface_schedule(cfg, entries, src_addrs=None, dst_addrs=None) -> dict:
    """Cycle stamps of one accepted list on ``pam_interface`` from reset: ``cmd`` (each entry),
    ``rd`` (each read request), ``fill`` (each read answer), ``wr`` (each destination write),
    ``status`` (the OK status's transfer), ``cycles`` (status + 1, the RTL's count) and
    ``complete`` (the cycle the destination memory holds every write: an SSD's last program)."""
    n = len(entries)
    reads = ReadModel(cfg.src_tier, read_addresses(cfg, entries) if src_addrs is None
                      else src_addrs)
    writes = WriteModel(cfg.dst_tier, write_addresses(cfg, entries) if dst_addrs is None
                        else dst_addrs)
    tw = _Twin(cfg, entries, reads, writes)
    t = n - 1 + LOAD_TO_ISSUE
    while n:
        tw.sync_freed(t)
        if tw.done():
            break
        t = t + 1 if tw.step(t) else tw.next_event(t)
    status = t + 1 if n else 2          # ISSUE sees done at t, STATUS at t + 1
    return {"cmd": list(range(n)), "rd": tw.req, "fill": tw.fill, "wr": tw.wr,
            "free": tw.free, "status": status, "cycles": status + 1,
            "complete": max(status, writes.finish())}


def migration_cycles(cfg, entries) -> int:
    """Cycles from reset until the destination holds the migration (``complete``)."""
    return interface_schedule(cfg, entries)["complete"]


def interface_cycles(cfg: PamifConfig, n_entries: int) -> int:
    """Cycles (the RTL's count, to the OK status) of a list of entries 0 .. n-1 (source and
    destination slot = entry) with the bench's memory models: the exact cycle model
    :func:`~pimforge.hw.pamif.interface_timing.interface_schedule`."""
    return interface_schedule(cfg, [(j, j, j) for j in range(n_entries)])["cycles"]


def interface_activity(cfg: PamifConfig, *accepted: int, rejected=()) -> dict:
    """Memory accesses of lists run back to back, ``accepted`` (entry counts of the lists
    answered OK) and ``rejected`` (those answered with an error), with any memory timing and
    stalls.  The sender stores every list
    (:func:`~pimforge.hw.pamif.sender_timing.sender_activity`); the buffer moves every token of
    the accepted ones (:func:`~pimforge.hw.pamif.buffer_timing.buffer_activity`), a rejected
    list none; the receiver counts nothing
    (:func:`~pimforge.hw.pamif.receiver_timing.receiver_activity`)."""
    counts = Counter(sender_activity(cfg, *accepted, *rejected))
    counts.update(buffer_activity(cfg, sum(accepted)))
    counts.update(receiver_activity(cfg, sum(accepted) * cfg.dst_words))
    return dict(counts)
