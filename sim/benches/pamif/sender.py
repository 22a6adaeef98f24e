"""Bench of ``pamif_sender`` alone: it plays an ideal source memory (each read answered the
cycle after its request, with its tag) and the buffer's releases (region j released
``FREE_DELAY`` cycles after the fill of entry j's last word).  Expected: the read requests in
the sender's order (:func:`~pimforge.hw.pamif.migration.read_order`), the fill words (region,
word, destination slot, data) and the status.  Phases: one random list (the cycle model's
case, :func:`~pimforge.hw.pamif.sender_timing.sender_schedule`), another with random stalls on every
stream, and the bad-list session (:func:`~pimforge.sim.benches.pamif.common.bad_lists`).
"""
from __future__ import annotations

from pimforge.hw.pamif.sender_timing import FREE_DELAY, last_fill_index
from pimforge.sim.benches.pamif.common import FreeOffer, ReadOffer, fill_beats, list_job
from pimforge.sim.harness.job import Job, Phase, concat_fields
from pimforge.sim.harness.stall import StallPattern

__all__ = ["sender_job"]


def _streams(cfg, migs, cmds, status):
    rd = concat_fields([{"addr": [a for a, _, _, _ in m.reads],
                         "entry": [j for _, j, _, _ in m.reads],
                         "word": [w for _, _, w, _ in m.reads]} for m in migs]) or \
        {"addr": [], "entry": [], "word": []}
    i_rd = {"data": [d for m in migs for *_, d in m.reads], "entry": rd["entry"],
            "word": rd["word"]}
    fill = concat_fields([fill_beats(cfg, m) for m in migs]) or \
        {"region": [], "word": [], "slot": [], "data": []}
    free = {"region": [j % cfg.regions for m in migs for j in range(len(m.entries))]}
    last, base, off = [], 0, 0
    for m in migs:
        last += [base + k for k in last_fill_index(cfg, m.entries)]
        base += len(m.reads)
        off += len(m.entries)
    ins = {"i_cmd": cmds, "i_rd": i_rd, "i_free": free}
    return ins, {"o_rd": rd, "o_fill": fill, "o_status": status}, last


def _phase(cfg, name, migs, cmds, status, stall_p=0.0, seed=0) -> Phase:
    ins, outs, last = _streams(cfg, migs, cmds, status)
    kw = {}
    if stall_p:
        kw = {"valid_stall": {s: StallPattern.random(stall_p, seed + k)
                              for k, s in enumerate(("i_cmd", "i_rd", "i_free"))},
              "ready_stall": {s: StallPattern.random(stall_p, seed + 5 + k)
                              for k, s in enumerate(("o_rd", "o_fill", "o_status"))}}
    return Phase(name, ins, outs, offer_at={"i_rd": ReadOffer(None, [], ideal=True),
                                            "i_free": FreeOffer(last, FREE_DELAY)}, **kw)


def sender_job(cfg, rng, seed: int = 1, n: int | None = None, stall_p: float = 0.3,
               stalls: bool = True, errors: bool = True) -> Job:
    return list_job(cfg, rng, _phase, "ideal memory", seed, n, stall_p, stalls, errors)


BENCHES = {"pamif_sender": sender_job}
