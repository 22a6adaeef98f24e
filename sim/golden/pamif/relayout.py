"""Golden re-layout of the PAM interface (PAM §6.1, §6.2): a source memory image and a migration
list give the destination memory image, the read order, the write sequence and the list checks.

Images are NumPy ``uint8`` arrays of a tier's address range (byte ``a * word_bytes + i`` is byte
``i`` of word ``a``, little-endian), so words of any width (the 256-bit HBM word) convert
exactly.  The re-layout itself is a byte copy per token, independent of the word widths and of
the hardware's order: token ``j`` moves from its source slot's bytes to its destination slot's.
"""
from __future__ import annotations

import numpy as np

from pimforge.hw.pamif.config import STATUS
from pimforge.hw.pamif.layout import slot_address
from pimforge.hw.pamif.migration import list_error, read_order, write_order

__all__ = ["relayout", "image_words", "words_image", "random_image", "read_beats",
           "write_beats", "list_status", "random_list"]


def random_image(rng, t) -> np.ndarray:
    """Random bytes for the whole of tier ``t``'s address range."""
    return rng.integers(0, 256, t.words() * t.word_bytes, dtype=np.uint8)


def image_words(image: np.ndarray, word_bytes: int) -> list:
    """Image bytes to word ints (Python ints: words may be 256 bits)."""
    rows = np.asarray(image, dtype=np.uint8).reshape(-1, word_bytes)
    return [int.from_bytes(r.tobytes(), "little") for r in rows]


def words_image(words, word_bytes: int) -> np.ndarray:
    """Inverse of :func:`image_words`."""
    return np.frombuffer(b"".join(int(w).to_bytes(word_bytes, "little") for w in words),
                         dtype=np.uint8).copy()


def relayout(cfg, src_image, entries, dst_image=None) -> np.ndarray:
    """The destination image after migrating ``entries`` (an accepted list) from ``src_image``;
    ``dst_image`` is the destination before (zeros by default)."""
    s, d, tb = cfg.src_tier, cfg.dst_tier, cfg.token_bytes
    out = (np.zeros(d.words() * d.word_bytes, np.uint8) if dst_image is None
           else np.array(dst_image, dtype=np.uint8))
    for _, src, dst in entries:
        a = int(slot_address(s, tb, int(src))) * s.word_bytes
        b = int(slot_address(d, tb, int(dst))) * d.word_bytes
        out[b:b + tb] = src_image[a:a + tb]
    return out


def read_beats(cfg, src_image, entries) -> list:
    """``(address, entry, word, data)`` of every source read in the sender's order."""
    s = cfg.src_tier
    words = np.asarray(src_image, np.uint8).reshape(-1, s.word_bytes)
    out = []
    for j, w in read_order(cfg, entries):
        a = int(slot_address(s, cfg.token_bytes, int(entries[j][1]))) + w
        out.append((a, j, w, int.from_bytes(words[a].tobytes(), "little")))
    return out


def write_beats(cfg, dst_after, entries) -> list:
    """``(address, data)`` of every destination write, read back from the golden destination
    image ``dst_after`` at the receiver's addresses."""
    d = cfg.dst_tier
    words = np.asarray(dst_after, np.uint8).reshape(-1, d.word_bytes)
    out = []
    for j, w in write_order(cfg, entries):
        a = int(slot_address(d, cfg.token_bytes, int(entries[j][2]))) + w
        out.append((a, int.from_bytes(words[a].tobytes(), "little")))
    return out


def list_status(cfg, entries, occupied=()):
    """``(code, index)`` the hardware answers a list with (code 0 and the entry count on
    success)."""
    err = list_error(cfg, entries, occupied)
    return (0, len(entries)) if err is None else (STATUS[err[0]], err[1])


def random_list(rng, cfg, n, occupied=()) -> list:
    """``n`` entries of distinct random tokens, source slots and free destination slots."""
    free = np.setdiff1d(np.arange(cfg.dst_slots), np.asarray(list(occupied), dtype=np.int64))
    tokens = rng.choice(cfg.tokens, n, replace=False)
    src = rng.choice(cfg.src_slots, n, replace=False)
    dst = rng.choice(free, n, replace=False)
    return [(int(a), int(b), int(c)) for a, b, c in zip(tokens, src, dst)]
