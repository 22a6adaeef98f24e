"""Bench of ``pamif_receiver``: a random migration's released words in, destination writes out
(addresses of the destination layout, data of the golden re-layout's destination image), with
and without random stalls on both sides."""
from __future__ import annotations

from pimforge.sim.benches.pamif.common import drain_beats, make_migration
from pimforge.sim.harness.job import Job, Phase
from pimforge.sim.harness.stall import StallPattern

__all__ = ["receiver_job"]


def receiver_job(cfg, rng, seed: int = 1, n: int | None = None, stall_p: float = 0.3,
                 stalls: bool = True) -> Job:
    n = min(cfg.capacity, cfg.dst_slots) if n is None else n
    mig = make_migration(cfg, rng, n)
    ins = {"i": drain_beats(cfg, mig)}
    outs = {"o_wr": {"addr": [a for a, _ in mig.writes], "data": [d for _, d in mig.writes]}}
    phases = [Phase("no stalls", ins, outs)]
    if stalls:
        phases.append(Phase(f"random stalls p={stall_p}", ins, outs,
                            valid_stall={"i": StallPattern.random(stall_p, seed)},
                            ready_stall={"o_wr": StallPattern.random(stall_p, seed + 1)}))
    return Job(phases)


BENCHES = {"pamif_receiver": receiver_job}
