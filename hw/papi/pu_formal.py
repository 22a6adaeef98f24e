"""Input-side response of ``papi_pu`` (:mod:`pimforge.hw.papi.pu`), a job unit.

What a job owes, kept in shadow registers from the command (``i_cmd``): each row's last weight
beat on ``i_w`` (every ``beats``-th beat of the job) owes ``B x G`` output beats on ``o``
(``G = ceil(reuse / fpus)`` per bank, B banks a beat).  Its latency is the cycle model's
(:mod:`~pimforge.hw.papi.pu_timing`): from the beat's entry into the column buffer to its last
issue, the largest over the recurrence with the buffer full (the ``wbuf - 1`` beats ahead of it
each held ``B G`` cycles), then :func:`~pimforge.hw.papi.pu_timing.pu_latency` to its last
output beat.  Only a beat taken after the job's input vectors are all loaded is tracked (before
that the unit waits for ``i_x``, which the environment may hold back as it likes); earlier beats
still count as owed.  A command outside the unit's range (``reuse`` or ``beats`` 0 or above the
config's maximum) or a weight beat beyond the job's ``rows x beats`` voids the check.  A weight
beat taken while the column buffer is full is lost: its row never finishes.
"""
from __future__ import annotations

from fractions import Fraction

from amaranth.hdl import Mux, Signal

from pimforge.hw.core.formal import Owed, Response
from pimforge.hw.papi.config import PapiPuConfig
from pimforge.hw.papi.hbm import Hbm3Timing
from pimforge.hw.papi.pu_timing import pu_latency, pu_schedule
from pimforge.hw.papi.streams import ROW_BITS

__all__ = ["row_latency", "pu_response"]

# banks that offer every column at once: the buffer, not the DRAM, sets a beat's wait
_UNTHROTTLED = Hbm3Timing(tRCD=0, tRP=0, tRAS=0, tRTP=0, tCCD=Fraction(0))


def row_latency(cfg: PapiPuConfig) -> int:
    """Cycles from a row's last weight-beat transfer to its last output beat, the largest over
    the vector-group counts: the cycle model's entry-to-last-issue ``a - w`` with the column
    buffer kept full, plus the pipeline's latency."""
    worst = 0
    for groups in range(1, cfg.max_groups + 1):
        s = pu_schedule(2 * cfg.wbuf + 2, cfg.banks, groups, cfg.wbuf, _UNTHROTTLED)
        worst = max(worst, max(a - w for _, w, _, a in s))
    return worst + pu_latency(cfg.lanes, cfg.op_depth, cfg.acc.width, cfg.partials)


def pu_response(cfg: PapiPuConfig) -> Response:
    """``B x G`` outputs owed per row's last weight beat (module docstring)."""
    lat = row_latency(cfg)
    P = cfg.fpus

    def owed(m, ports):
        cmd, ix, iw = ports.i_cmd, ports.i_x, ports.i_w
        p = cmd.payload
        beats = Signal(len(p.beats), name="resp_job_beats")
        rows = Signal(ROW_BITS, name="resp_job_rows")
        groups = Signal(range(cfg.max_groups + 1), name="resp_job_groups")
        x_owed = Signal(range(cfg.max_reuse * cfg.max_beats + 1), name="resp_x_left")
        k = Signal(len(p.beats), name="resp_beat")
        q = Signal(ROW_BITS, name="resp_rows_in")
        take_cmd = cmd.valid & cmd.ready
        take_x = ix.valid & ix.ready
        take_w = iw.valid & iw.ready
        with m.If(take_cmd):
            m.d.sync += [beats.eq(p.beats), rows.eq(p.rows), k.eq(0), q.eq(0),
                         groups.eq((p.reuse + P - 1) >> (P.bit_length() - 1)),
                         x_owed.eq(p.reuse * p.beats)]
        with m.Elif(take_x & (x_owed != 0)):
            m.d.sync += x_owed.eq(x_owed - 1)
        row_end = take_w & (k == beats - 1)
        with m.If(take_w):
            m.d.sync += k.eq(Mux(k == beats - 1, 0, k + 1))
            with m.If(row_end):
                m.d.sync += q.eq(q + 1)
        legal = (p.reuse >= 1) & (p.reuse <= cfg.max_reuse) & (p.beats >= 1) & \
            (p.beats <= cfg.max_beats)
        extra_w = take_w & (q == rows)   # before any command, or beyond the job's rows
        in_contract = ~(take_cmd & ~legal) & ~extra_w
        return [Owed(Mux(row_end, groups * cfg.banks, 0), lat, x_owed == 0)], in_contract
    return Response("o", owed)
