"""Input-side response of ``papi_scheduler`` (:mod:`pimforge.hw.papi.scheduler`): what its
decisions answer.

Each ``start`` write on ``i_host`` is answered by one decision on ``o`` (the batch's initial
one, iteration 0, or ``done`` for an empty batch), and each iteration's last token beat on ``i``
(``last``) by one decision; other host writes and the other beats owe none.  The latencies are
the cycle model's (:func:`~pimforge.hw.papi.scheduler_timing.scheduler_schedule`): a start's
decision and a last beat's, each measured on a one-event session.  A tracked start or last
beat that the scheduler takes while it cannot pass it on (an input ready without the pipeline's
enable) is never answered, which the stream rules alone do not see.
"""
from __future__ import annotations

from amaranth.hdl import Const

from pimforge.hw.core.formal import Response, per_transfer
from pimforge.hw.papi.config import HOST_KINDS, SchedulerConfig
from pimforge.hw.papi.scheduler_timing import scheduler_schedule

__all__ = ["scheduler_latencies", "scheduler_response"]


def scheduler_latencies(cfg: SchedulerConfig) -> dict:
    """``{"i_host": start -> its decision, "i": last beat -> its decision}`` in cycles, from
    the cycle model."""
    n = cfg.tokens_per_beat
    start = ("host", HOST_KINDS["start"], 1)
    s = scheduler_schedule(cfg, [start, ("beat", [0] * n, 1, True)])
    return {"i_host": s["o"][0] - s["i_host"][0], "i": s["o"][1] - s["i"][0]}


def scheduler_response(cfg: SchedulerConfig) -> Response:
    """One decision per start and per last beat (module docstring)."""
    return per_transfer(scheduler_latencies(cfg), "o", {
        "i_host": lambda p: p.payload.kind == HOST_KINDS["start"],
        "i": lambda p: p.payload.last | Const(0, 1)})
