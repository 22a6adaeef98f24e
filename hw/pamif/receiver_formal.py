"""Input-side response of ``pamif_receiver`` (:mod:`pimforge.hw.pamif.receiver`): every drain
word taken on ``i`` leaves as one write on ``o_wr``, within the latency of its cycle model
(:func:`~pimforge.hw.pamif.receiver_timing.receiver_cycles` of one word, less the cycle it
enters).  A word taken and not written (its output register overwritten or never loaded) is
never answered."""
from __future__ import annotations

from pimforge.hw.core.formal import Response, per_transfer
from pimforge.hw.pamif.config import PamifConfig
from pimforge.hw.pamif.receiver_timing import receiver_cycles

__all__ = ["receiver_response"]


def receiver_response(cfg: PamifConfig) -> Response:
    """One write per drain word."""
    return per_transfer({"i": receiver_cycles(cfg, 1) - 1}, "o_wr")
