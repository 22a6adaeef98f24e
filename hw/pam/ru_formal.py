"""Input-side response of ``pam_ru`` (:mod:`pimforge.hw.pam.ru`), a job unit.

A request is whole partials of ``Bw = head_dim / W`` beats each on ``i``, its final beat
carrying ``last``; it is answered by the ``Bw`` beats of its merged partial on ``o``.  The
tracked transfer is a request's ``last`` beat: its ``Bw`` outputs owed, and every output owed
before them, leave within the cycle model's latency (:func:`~pimforge.hw.pam.ru_timing.ru_latency`
to the first output beat, then one beat a cycle).  A ``last`` that does not end a partial (the
RU takes ``m`` and ``l`` from each partial's beat 0, so a shorter request is outside its
contract) voids the check.  The RU blocks ``i`` from a ``last`` beat until its reader starts: a
unit that takes the next request's ``last`` before that answers two requests with one.
"""
from __future__ import annotations

from amaranth.hdl import Mux, Signal

from pimforge.hw.core.formal import Owed, Response
from pimforge.hw.pam.config import PamRuConfig
from pimforge.hw.pam.ru_timing import ru_latency

__all__ = ["request_latency", "ru_response"]


def request_latency(cfg: PamRuConfig) -> int:
    """Cycles from a request's last input beat to its last output beat, no stalls."""
    return ru_latency(cfg) + cfg.beats - 1


def ru_response(cfg: PamRuConfig) -> Response:
    """``Bw`` output beats per request, owed at its ``last`` beat: module docstring."""
    bw = cfg.beats

    def owed(m, ports):
        i = ports.i
        take = i.valid & i.ready
        beat = Signal(range(bw), name="resp_beat")
        with m.If(take):
            m.d.sync += beat.eq(Mux(i.payload.last | (beat == bw - 1), 0, beat + 1))
        end = take & i.payload.last
        return [Owed(Mux(end, bw, 0), request_latency(cfg))], ~(end & (beat != bw - 1))
    return Response("o", owed)
