"""The cycle and activity models of ``pamif_receiver`` (:mod:`pimforge.hw.pamif.receiver`)."""
from __future__ import annotations

from pimforge.hw.pamif.config import PamifConfig

__all__ = ["receiver_cycles", "receiver_activity"]


def receiver_cycles(cfg: PamifConfig, n_words: int) -> int:
    """``n_words`` back to back, ``o_wr`` always ready: the last leaves one cycle after it
    enters (cycles from reset, inclusive)."""
    return n_words + 1 if n_words else 0


def receiver_activity(cfg: PamifConfig, n_words: int) -> dict:
    """No counted actions: the address of a word is a bit permutation of its slot and word
    index into one output register, with no memory and no float operation.  (The register's
    own switching is the energy model's toggle term, not an action.)"""
    return {}
