"""Shared stimulus of the PAM interface benches: a random migration and its golden beats."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pimforge.hw.pamif.memory import ReadModel, WriteModel
from pimforge.hw.pamif.migration import write_order
from pimforge.sim.golden.pamif.relayout import (
    list_status, random_image, random_list, read_beats, relayout, write_beats
)
from pimforge.sim.harness.job import Job, concat_fields

__all__ = ["list_job", "Migration", "make_migration", "fill_beats", "drain_beats", "cmd_beats",
           "list_lengths", "ReadOffer", "WriteAccept", "FreeOffer", "Session", "bad_lists"]


@dataclass
class Migration:
    """One accepted list: its entries, the source image, the golden destination image (from a
    zero destination), the golden reads ``(addr, entry, word, data)`` and writes
    ``(addr, data)``."""

    entries: list
    src: np.ndarray
    dst: np.ndarray
    reads: list
    writes: list


def make_migration(cfg, rng, n: int, occupied=(), src=None) -> Migration:
    entries = random_list(rng, cfg, n, occupied)
    src = random_image(rng, cfg.src_tier) if src is None else src
    dst = relayout(cfg, src, entries)
    return Migration(entries, src, dst, read_beats(cfg, src, entries),
                     write_beats(cfg, dst, entries))


def fill_beats(cfg, mig: Migration, order=None) -> dict:
    """The buffer's ``i`` beats: the reads in the sender's order (or ``order``, a list of
    ``(entry, word)``), tagged with region, word and destination slot."""
    data = {(j, w): d for _, j, w, d in mig.reads}
    order = [(j, w) for _, j, w, _ in mig.reads] if order is None else order
    return {"region": [j % cfg.regions for j, _ in order], "word": [w for _, w in order],
            "slot": [mig.entries[j][2] for j, _ in order], "data": [data[k] for k in order]}


def drain_beats(cfg, mig: Migration) -> dict:
    """The buffer's ``o`` beats: every token's destination words in list order, the data read
    from the golden destination image."""
    order = write_order(cfg, mig.entries)
    return {"slot": [mig.entries[j][2] for j, _ in order], "word": [w for _, w in order],
            "data": [d for _, d in mig.writes],
            "last": [int(w == cfg.dst_words - 1) for _, w in order]}


def cmd_beats(entries) -> dict:
    """``i_cmd`` beats of one list (``last`` on its final entry)."""
    n = len(entries)
    return {"token": [e[0] for e in entries], "src_slot": [e[1] for e in entries],
            "dst_slot": [e[2] for e in entries], "last": [int(k == n - 1) for k in range(n)]}


def list_lengths(cmds: dict) -> list:
    """The entry counts of the lists in ``i_cmd`` beats (each list ends at a ``last`` beat)."""
    ends = [k + 1 for k, last in enumerate(cmds["last"]) if last]
    return [b - a for a, b in zip([0] + ends, ends)]


class ReadOffer:
    """``Phase.offer_at`` of the source data stream: the source memory model answers read k
    (requested on ``req_stream``) no sooner than :meth:`~pimforge.hw.pamif.memory.ReadModel.ready`; ``ideal``: the cycle
    after the request.  Picklable (the job crosses into the cocotb process)."""

    def __init__(self, tier, addrs, req_stream: str = "o_rd", ideal: bool = False):
        self.model = None if ideal else ReadModel(tier, addrs)
        self.req_stream = req_stream

    def __call__(self, k, stamps):
        reqs = stamps[self.req_stream]
        if len(reqs) <= k:
            return None
        if self.model is None:
            return reqs[k] + 1
        while len(self.model.out) <= k:
            i = len(self.model.out)
            self.model.ready(i, reqs[i])
        return self.model.out[k]


class WriteAccept:
    """``Phase.ready_at`` of the destination write stream: the destination memory model
    accepts write k no sooner than :meth:`~pimforge.hw.pamif.memory.WriteModel.earliest`."""

    def __init__(self, tier, addrs, stream: str = "o_wr"):
        self.model = WriteModel(tier, addrs)
        self.stream = stream

    def __call__(self, k, stamps):
        done = stamps[self.stream]
        if k >= len(self.model.addrs):
            return 0                       # an extra write: accept it, the checker reports it
        while self.model.n < k:
            self.model.commit(self.model.n, done[self.model.n])
        return self.model.earliest(k)


class FreeOffer:
    """``Phase.offer_at`` of a standalone sender's ``i_free``: region j is released ``delay``
    cycles after the fill (``o_fill``) of entry j's last word."""

    def __init__(self, last_fill: list, delay: int):
        self.last, self.delay = list(last_fill), delay

    def __call__(self, k, stamps):
        fills = stamps["o_fill"]
        return fills[self.last[k]] + self.delay if len(fills) > self.last[k] else None


@dataclass
class Session:
    """Several lists back to back (one phase): the ``i_cmd`` beats, the expected statuses, and
    the accepted lists' migrations (reads and writes in order)."""

    cmds: dict
    status: dict
    accepted: list


def bad_lists(cfg, rng) -> Session:
    """A good list, then one bad list per error kind (each would mark slots before its error),
    then a good list that reuses those slots: the rejected lists must leave the occupancy
    bitmap as it was.  Expected statuses from the golden checks."""
    src = random_image(rng, cfg.src_tier)
    n = max(2, min(4, cfg.capacity))
    first = make_migration(cfg, rng, n, src=src)
    occ = {e[2] for e in first.entries}
    free = [s for s in range(cfg.dst_slots) if s not in occ]
    tok = [t for t in range(cfg.tokens) if t not in {e[0] for e in first.entries}]
    good = [(tok[k], k, free[k]) for k in range(3)]
    lists = [first.entries,
             good[:1] + [(cfg.tokens + 1, 5, free[4])],                # token out of range
             good[:2] + [(tok[5], cfg.src_slots, free[5])],            # source slot
             good[:1] + [(tok[6], 6, cfg.dst_slots)],                  # destination slot
             good[:2] + [(tok[7], 7, first.entries[0][2])],            # occupied (earlier)
             good[:2] + [(tok[8], 8, free[1])],                        # occupied (this list)
             good[:2] + [(tok[0], 9, free[9])],                        # duplicate token
             [(tok[10 + k], 10 + k, free[10 + k]) for k in range(cfg.capacity)]
             + [(tok[9], 9, free[9])],                                 # too long
             good]                                                     # the slots are free
    parts, codes, index, accepted = [], [], [], []
    occ = set()
    for entries in lists:
        parts.append(cmd_beats(entries))
        code, idx = list_status(cfg, entries, occ)
        codes.append(code)
        index.append(idx)
        if code == 0:
            occ |= {e[2] for e in entries}
            dst = relayout(cfg, src, entries)
            accepted.append(Migration(entries, src, dst, read_beats(cfg, src, entries),
                                      write_beats(cfg, dst, entries)))
    return Session(concat_fields(parts), {"code": codes, "index": index}, accepted)


def list_job(cfg, rng, phase, first: str, seed: int = 1, n: int | None = None,
             stall_p: float = 0.3, stalls: bool = True, errors: bool = True) -> Job:
    """The benches of the units that take migration lists (``pamif_sender``, ``pam_interface``):
    one random list named ``first``, one with random stalls (``stalls``), then a session of bad
    lists (``errors``).  ``phase(cfg, name, migrations, cmds, status, stall_p=0, seed=1)``
    builds one phase."""
    n = min(cfg.capacity, cfg.dst_slots) if n is None else n
    mig = make_migration(cfg, rng, n)
    status = {"code": [0], "index": [n]}
    phases = [phase(cfg, first, [mig], cmd_beats(mig.entries), status)]
    if stalls:
        mig2 = make_migration(cfg, rng, n)
        phases.append(phase(cfg, f"random stalls p={stall_p}", [mig2], cmd_beats(mig2.entries),
                            status, stall_p, seed))
    if errors:
        ses = bad_lists(cfg, rng)
        phases.append(phase(cfg, "bad lists", ses.accepted, ses.cmds, ses.status,
                            stall_p if stalls else 0.0, seed + 20))
    return Job(phases)
