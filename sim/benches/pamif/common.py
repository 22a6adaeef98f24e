"""Shared stimulus of the PAM interface benches: a random migration and its golden beats."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pimforge.hw.pamif.migration import write_order
from pimforge.sim.golden.pamif.relayout import (
    random_image, random_list, read_beats, relayout, write_beats
)

__all__ = ["Migration", "make_migration", "fill_beats", "drain_beats"]


@dataclass
class Migration:
    """One accepted list: its entries, the source image, the golden destination image (from a
    zero destination), the golden reads ``(addr, entry, word, data)`` and writes
    ``(addr, data)``."""

    entries: list
    src: np.ndarray
    dst: np.ndarray
    reads: list
    writes: list


def make_migration(cfg, rng, n: int, occupied=(), src=None) -> Migration:
    entries = random_list(rng, cfg, n, occupied)
    src = random_image(rng, cfg.src_tier) if src is None else src
    dst = relayout(cfg, src, entries)
    return Migration(entries, src, dst, read_beats(cfg, src, entries),
                     write_beats(cfg, dst, entries))


def fill_beats(cfg, mig: Migration, order=None) -> dict:
    """The buffer's ``i`` beats: the reads in the sender's order (or ``order``, a list of
    ``(entry, word)``), tagged with region, word and destination slot."""
    data = {(j, w): d for _, j, w, d in mig.reads}
    order = [(j, w) for _, j, w, _ in mig.reads] if order is None else order
    return {"region": [j % cfg.regions for j, _ in order], "word": [w for _, w in order],
            "slot": [mig.entries[j][2] for j, _ in order], "data": [data[k] for k in order]}


def drain_beats(cfg, mig: Migration) -> dict:
    """The buffer's ``o`` beats: every token's destination words in list order, the data read
    from the golden destination image."""
    order = write_order(cfg, mig.entries)
    return {"slot": [mig.entries[j][2] for j, _ in order], "word": [w for _, w in order],
            "data": [d for _, d in mig.writes],
            "last": [int(w == cfg.dst_words - 1) for _, w in order]}
