"""The cycle model of ``pamif_buffer`` (:mod:`pimforge.hw.pamif.buffer`)."""
from __future__ import annotations

from pimforge.hw.pamif.config import PamifConfig

__all__ = ["buffer_cycles"]


def buffer_cycles(cfg: PamifConfig, n_tokens: int) -> int:
    """Cycles from reset to the last drain transfer (inclusive) for ``n_tokens`` tokens whose
    fill words are offered back to back token by token, the drain always ready.  A token's
    words wait while its region still holds the token ``regions`` earlier (``i`` not ready
    until that one's last word was read); a region's first word is read the cycle after its
    last fill and leaves the next cycle; the drain reads one word per cycle."""
    Ns, Nd, R = cfg.src_words, cfg.dst_words, cfg.regions
    fill_end, read_end, freed = -1, -1, []
    for j in range(n_tokens):
        start = fill_end + 1 if j < R else max(fill_end + 1, freed[j - R] + 1)
        fill_end = start + Ns - 1
        read_end = max(fill_end + 1, read_end + 1) + Nd - 1
        freed.append(read_end)
    return read_end + 2 if n_tokens else 0
