"""Input-side response of ``hermes_gemv`` (:mod:`pimforge.hw.hermes.gemv`), a job unit.

What a job owes, kept in shadow registers from the command (``i_cmd``): a row-mode job owes
``G = ceil(batch / V)`` output beats per row, each answering the row's last weight beat on
``i_w`` (every ``beats``-th weight beat of the job); a column-mode job owes ``beats x batch``
output beats (the drain), counted as owed at its command.  The tracked transfer is a row's last
weight beat (column outputs follow the whole job, so their latency is the job's, not a beat's):
its outputs, and every output owed before them, leave within the row latency of the cycle
model (:func:`~pimforge.hw.hermes.gemv_timing.gemv_schedule` of a one-row job: the last beat's
transfer to its last output beat), or one cycle per output still owed if more are owed.  A
command outside the unit's range (``batch`` or ``beats`` 0 or above the config's maximum) voids
the check.  A weight beat taken while the issue holds it back (an ``i_w`` ready without the
issue's conditions) is lost: its row never finishes.
"""
from __future__ import annotations

from amaranth.hdl import Const, Mux, Signal

from pimforge.base.numerics import log2_exact
from pimforge.hw.core.formal import Owed, Response
from pimforge.hw.hermes.config import HermesGemvConfig
from pimforge.hw.hermes.gemv_timing import GemvJob, gemv_schedule

__all__ = ["row_latency", "gemv_response"]


def row_latency(cfg: HermesGemvConfig) -> int:
    """Cycles from a row's last weight-beat transfer to its last output beat, the largest over
    the batch sizes (the beat transfers in the last of its G issue cycles)."""
    worst = 0
    for batch in range(1, cfg.max_batch + 1):
        s = gemv_schedule(cfg, [GemvJob("rows", batch, 1, 1)])[0]
        taken = s["issues"][-1] + cfg.groups(batch) - 1
        worst = max(worst, s["outputs"][-1] - taken)
    return worst


def gemv_response(cfg: HermesGemvConfig) -> Response:
    """Outputs owed per row (row mode) and per job (column mode): module docstring."""
    lat = row_latency(cfg)

    def owed(m, ports):
        cmd, iw = ports.i_cmd, ports.i_w
        p = cmd.payload
        cols = Signal(name="resp_job_cols")
        beats = Signal(len(p.beats), name="resp_job_beats")
        groups = Signal(range(cfg.max_groups + 1), name="resp_job_groups")
        k = Signal(len(p.beats), name="resp_beat")
        take_cmd = cmd.valid & cmd.ready
        take_w = iw.valid & iw.ready
        lg_v = log2_exact(cfg.vec_lanes)
        with m.If(take_cmd):
            m.d.sync += [cols.eq(p.mode), beats.eq(p.beats), k.eq(0),
                         groups.eq((p.batch + cfg.vec_lanes - 1) >> lg_v)]
        row_end = take_w & ~cols & (k == beats - 1)
        with m.If(take_w & ~cols):
            m.d.sync += k.eq(Mux(k == beats - 1, 0, k + 1))
        legal = (p.batch >= 1) & (p.batch <= cfg.max_batch) & (p.beats >= 1) & \
            (p.beats <= cfg.max_beats)
        return ([Owed(Mux(take_cmd & p.mode, p.beats * p.batch, 0), 0, Const(0)),
                 Owed(Mux(row_end, groups, 0), lat)], ~(take_cmd & ~legal))
    return Response("o", owed)
