"""Bit-exact golden model of ``lolpim_pingpong`` (LoL-PIM §6; RTL:
:mod:`pimforge.hw.lolpim.pingpong`).

Bank columns and GB beats are bf16; products, tree sums and partial sums are fp32 (bf16 x bf16
is exact in fp32); outputs are bf16.  Every operation is a round-to-nearest-even operation of the
float library's golden models, in the RTL's order:

* per PU and column step: the ``lanes`` products, then a pairwise tree (adjacent pairs first);
* step k of an accumulation (counted over its tiles) adds into partial ``k mod Q`` (Q =
  ``cfg.partials``), all partials starting at +0;
* a drained accumulation is the pairwise tree of the Q partials, adjacent pairs first (Q = 2:
  ``p0 + p1``), converted to bf16.

Ping-pong changes only the timing, never a result: the model serves both settings.
"""
from __future__ import annotations

import numpy as np

from pimforge.base.formats import BF16, FP32
from pimforge.sim.golden.fp.add import fp_add
from pimforge.sim.golden.fp.mul import fp_mul
from pimforge.sim.golden.pam.common import OpCfg, convert, tree_sum

__all__ = ["column_products", "step_sums", "run_program"]

_C32 = OpCfg(FP32)


def column_products(bank16, gb16) -> np.ndarray:
    """bf16 x bf16 in fp32 (exact), broadcast: ``bank16`` (..., lanes), ``gb16`` (lanes,)."""
    return fp_mul(_C32, convert(BF16, FP32, bank16), convert(BF16, FP32, gb16))


def step_sums(bank16, gb16) -> np.ndarray:
    """One column step: per PU (bank) the pairwise fp32 tree of its ``lanes`` products.
    ``bank16`` (banks, lanes), ``gb16`` (lanes,); returns (banks,) fp32 bits."""
    return tree_sum(FP32, column_products(np.asarray(bank16, np.int64),
                                          np.asarray(gb16, np.int64)))


def run_program(cfg, loads, tiles, bank) -> np.ndarray:
    """The drained outputs of a program, in order: (n_drains, banks) bf16 bits.

    ``loads``: per WR-GB, (beats, lanes) bf16 bits, in the order the GB sets fill; ``tiles``:
    :class:`~pimforge.hw.lolpim.pingpong_timing.Tile` (``steps``, ``release``, ``drain``);
    ``bank``: per tile, (steps, banks, lanes) bf16 bits (bank b's column k in row k).  A tile
    uses the load after as many releases as came before it."""
    B, Q = cfg.banks, cfg.partials
    outs = []
    used = 0
    parts = None
    for tile, cols in zip(tiles, bank):
        gb = np.asarray(loads[used], np.int64)
        if parts is None:
            parts, k = np.zeros((B, Q), np.int64), 0      # an accumulation opens at +0
        for s in range(tile.steps):
            parts[:, k % Q] = fp_add(_C32, parts[:, k % Q], step_sums(cols[s], gb[s]))
            k += 1
        if tile.release:
            used += 1
        if tile.drain:
            outs.append(convert(FP32, BF16, tree_sum(FP32, parts)))
            parts = None
    return np.array(outs, dtype=np.int64).reshape(-1, B)

