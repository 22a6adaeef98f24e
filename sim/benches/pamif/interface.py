"""Bench of ``pam_interface``: random migrations between two tiers with both memories' timing.

The bench plays the source memory (``o_rd`` requests, ``i_rd`` answers no sooner than
:class:`~pimforge.hw.pamif.memory.ReadModel` allows, with the request's tag) and the
destination (``o_wr`` accepted no sooner than :class:`~pimforge.hw.pamif.memory.WriteModel`
allows).  Expected: every read request in the sender's order, every write (address and data
from the golden re-layout's destination image) in list order, and the status.  Phases: one
random list with memory timing only (the cycle model's case), the same with random stalls on
every stream on top, and a session of bad lists between two good ones.
"""
from __future__ import annotations

from pimforge.hw.pamif.migration import read_addresses, write_addresses
from pimforge.sim.benches.pamif.common import (
    ReadOffer, WriteAccept, list_job
)
from pimforge.sim.harness.job import Job, Phase, concat_fields
from pimforge.sim.harness.stall import StallPattern

__all__ = ["interface_job", "migration_streams"]

STREAMS = ("i_cmd", "o_rd", "i_rd", "o_wr", "o_status")


def migration_streams(cfg, migs, cmds, status) -> tuple:
    """Inputs, expected outputs and the memory models of lists run back to back (``migs``: the
    accepted ones, in order)."""
    rd = concat_fields([{"addr": [a for a, _, _, _ in m.reads], "entry": [j for _, j, _, _ in m.reads],
                         "word": [w for _, _, w, _ in m.reads]} for m in migs])
    i_rd = concat_fields([{"data": [d for *_, d in m.reads], "entry": [j for _, j, _, _ in m.reads],
                           "word": [w for _, _, w, _ in m.reads]} for m in migs])
    wr = concat_fields([{"addr": [a for a, _ in m.writes], "data": [d for _, d in m.writes]}
                        for m in migs])
    for f in (rd, i_rd, wr):
        if not f:
            f.update({"addr": [], "data": [], "entry": [], "word": []})
    i_rd = {k: i_rd.get(k, []) for k in ("data", "entry", "word")}
    rd = {k: rd.get(k, []) for k in ("addr", "entry", "word")}
    wr = {k: wr.get(k, []) for k in ("addr", "data")}
    src = sum((read_addresses(cfg, m.entries) for m in migs), [])
    dst = sum((write_addresses(cfg, m.entries) for m in migs), [])
    return ({"i_cmd": cmds, "i_rd": i_rd}, {"o_rd": rd, "o_wr": wr, "o_status": status},
            (src, dst))


def _phase(cfg, name, migs, cmds, status, stall_p=0.0, seed=0) -> Phase:
    ins, outs, (src, dst) = migration_streams(cfg, migs, cmds, status)
    kw = {}
    if stall_p:
        kw = {"valid_stall": {s: StallPattern.random(stall_p, seed + k)
                              for k, s in enumerate(("i_cmd", "i_rd"))},
              "ready_stall": {s: StallPattern.random(stall_p, seed + 5 + k)
                              for k, s in enumerate(("o_rd", "o_wr", "o_status"))}}
    return Phase(name, ins, outs, offer_at={"i_rd": ReadOffer(cfg.src_tier, src)},
                 ready_at={"o_wr": WriteAccept(cfg.dst_tier, dst)}, **kw)


def interface_job(cfg, rng, seed: int = 1, n: int | None = None, stall_p: float = 0.3,
                  stalls: bool = True, errors: bool = True) -> Job:
    return list_job(cfg, rng, _phase, "memory timing", seed, n, stall_p, stalls, errors)


BENCHES = {"pam_interface": interface_job}
