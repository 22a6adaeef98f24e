"""The cycle and activity models of ``pamif_buffer`` (:mod:`pimforge.hw.pamif.buffer`)."""
from __future__ import annotations

from pimforge.hw.core.activity import mem_action
from pimforge.hw.pamif.config import PamifConfig

__all__ = ["buffer_cycles", "buffer_memory", "buffer_activity"]


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


def buffer_memory(cfg: PamifConfig) -> tuple:
    """``(depth, width)`` of the buffer's memory: ``regions`` tokens of the wider side's words."""
    return cfg.regions * cfg.token_bytes * 8 // cfg.wide_bits, cfg.wide_bits


def buffer_activity(cfg: PamifConfig, n_tokens: int) -> dict:
    """Memory accesses of ``n_tokens`` tokens through the buffer, in any fill order and with any
    stalls: each source word is one write (a narrow source writes one lane of a wide word, still
    one access), each destination word one read of the wide word that holds it (a narrow
    destination reads the same wide word once per lane, selecting the lane after the read).  The
    read port is enabled only when a word advances to the output, so a stalled drain reads
    nothing more."""
    depth, width = buffer_memory(cfg)
    counts = {mem_action("write", depth, width): n_tokens * cfg.src_words,
              mem_action("read", depth, width): n_tokens * cfg.dst_words}
    return {k: v for k, v in counts.items() if v}
