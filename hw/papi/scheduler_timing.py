"""The cycle model of ``papi_scheduler`` (:mod:`pimforge.hw.papi.scheduler`): its fixed latencies
and the no-stall schedule of a session."""
from __future__ import annotations

from pimforge.hw.papi.config import HOST_KINDS, SchedulerConfig

__all__ = ["START_LATENCY", "BEAT_LATENCY", "scheduler_schedule", "scheduler_cycles",
           "scheduler_activity", "scheduler_unit_activity"]


START_LATENCY = 4          # start transfer -> D1 -> D2 -> D3 -> o


BEAT_LATENCY = 5           # last beat -> S1 -> (tree) -> D1 -> D2 -> D3 -> o


def scheduler_schedule(cfg: SchedulerConfig, events) -> dict:
    """Cycles (from the first transfer, at 0) of a session with ``o`` always ready, each beat
    offered the cycle after the one before it in ``events`` (the bench's order):
    ``{"i_host": [...], "i": [...], "o": [...]}``.

    ``events``: ``("host", kind, value)`` and ``("beat", tokens, keep, last)`` as for the golden
    model.  A non-start host write and a token beat transfer when offered; a start waits for the
    last decision of the batch before it to reach ``o``.  Decisions: a start's at
    ``START_LATENCY``, an iteration's ``BEAT_LATENCY + tree_stages`` after its last beat.
    """
    out = {"i_host": [], "i": [], "o": []}
    t, free = 0, 0                 # next offer cycle; when a start may transfer
    for ev in events:
        if ev[0] == "host":
            if ev[1] == HOST_KINDS["start"]:
                t = max(t, free)
                out["o"].append(t + START_LATENCY)
                free = t + START_LATENCY
            out["i_host"].append(t)
        else:
            out["i"].append(t)
            if ev[3]:
                free = t + BEAT_LATENCY + cfg.tree_stages
                out["o"].append(free)
        t += 1
    return out


def scheduler_cycles(cfg: SchedulerConfig, n_ops: int) -> int:
    """Cycles from a start to the last decision of a batch of ``n_ops`` requests, one beat per
    iteration and one request finishing per iteration (:func:`scheduler_schedule`)."""
    n = cfg.tokens_per_beat
    events = [("host", HOST_KINDS["start"], n_ops)]
    events += [("beat", [0] * n, 1, True) for _ in range(n_ops)]
    return scheduler_schedule(cfg, events)["o"][-1] + 1


def scheduler_activity(cfg: SchedulerConfig, events) -> dict:
    """The actions of a session (``events`` as :func:`scheduler_schedule` takes them): none.
    The scheduler keeps its state in registers (RLP, TLP, alpha, the <eos> id, the stage
    registers and the skid buffer) and computes with integer logic (the popcount tree, the
    RLP update, RLP x TLP, the compare); it has no memory, FIFO or float operation, the
    action classes the energy table prices per event, so its energy is the static power of
    its area (and the netlist's toggles, :mod:`pimforge.hw.core.energy`)."""
    return {}


def scheduler_unit_activity(cfg: SchedulerConfig, n_ops: int) -> dict:
    """``HwUnit.activity``: :func:`scheduler_activity` of :func:`scheduler_cycles`' batch."""
    return scheduler_activity(cfg, [])
