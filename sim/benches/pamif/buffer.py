"""Bench of ``pamif_buffer``: a random migration's source words in, destination words out.

Phase 1 offers the fill words token by token (the cycle model's case,
:func:`~pimforge.hw.pamif.buffer_timing.buffer_cycles`); phase 2 in the sender's interleaved
read order (:func:`~pimforge.hw.pamif.migration.read_order`) with random stalls on every stream
(the releases wait in the buffer's counter).  The expected drain words come from the golden
re-layout's destination image, the expected releases are the regions in list order.
"""
from __future__ import annotations

from pimforge.sim.benches.pamif.common import drain_beats, fill_beats, make_migration
from pimforge.sim.harness.job import Job, Phase
from pimforge.sim.harness.stall import StallPattern

__all__ = ["buffer_job"]


def buffer_job(cfg, rng, seed: int = 1, n: int | None = None, stall_p: float = 0.3,
               stalls: bool = True) -> Job:
    n = min(cfg.capacity, cfg.dst_slots, 3 * cfg.regions + 1) if n is None else n
    mig = make_migration(cfg, rng, n)
    token_order = [(j, w) for j in range(n) for w in range(cfg.src_words)]
    expected = {"o": drain_beats(cfg, mig), "o_free": {"region": [j % cfg.regions
                                                                  for j in range(n)]}}
    phases = [Phase("token order", {"i": fill_beats(cfg, mig, token_order)}, expected)]
    if stalls:
        phases.append(Phase(f"read order, random stalls p={stall_p}",
                            {"i": fill_beats(cfg, mig)}, expected,
                            valid_stall={"i": StallPattern.random(stall_p, seed)},
                            ready_stall={"o": StallPattern.random(stall_p, seed + 1),
                                         "o_free": StallPattern.random(stall_p, seed + 2)}))
    return Job(phases)


BENCHES = {"pamif_buffer": buffer_job}
