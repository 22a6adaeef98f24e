"""The cycle model of ``pamif_receiver`` (:mod:`pimforge.hw.pamif.receiver`)."""
from __future__ import annotations

from pimforge.hw.pamif.config import PamifConfig

__all__ = ["receiver_cycles"]


def receiver_cycles(cfg: PamifConfig, n_words: int) -> int:
    """``n_words`` back to back, ``o_wr`` always ready: the last leaves one cycle after it
    enters (cycles from reset, inclusive)."""
    return n_words + 1 if n_words else 0
