"""The HILOS stream formats as beat lists (see :mod:`pimforge.hw.hilos.streams`).

One encoder for everything that drives or checks a HILOS unit: the benches of ``qk_gemv``,
``two_pass_softmax``, ``sv_gemv`` and ``hilos_attention``, and the rtl backend of
``run hilos-attention``.
"""
from __future__ import annotations

import numpy as np

from pimforge.base.numerics import block_starts
from pimforge.sim.benches.pam.beats import pack_rows, unpack_rows

__all__ = ["q_beats", "k_beats", "v_beats", "row_block_beats", "o_beats", "unpack_o",
           "pack_rows", "unpack_rows"]


def _rows(x) -> np.ndarray:
    return np.atleast_2d(np.asarray(x, dtype=np.int64))


def q_beats(cfg, q16) -> dict:
    """``i_q`` of one job: the d_group queries (G, d) in beats of E."""
    return {"data": pack_rows(_rows(q16).reshape(-1, cfg.beat_elems), 16)}


def o_beats(cfg, o16) -> dict:
    """``o`` of one job: O (G, d) fp16 bits in beats of E (same order as Q)."""
    return q_beats(cfg, o16)


def unpack_o(cfg, data) -> np.ndarray:
    """``o`` data words of one job back to (G, d) fp16 bits."""
    return unpack_rows(data, 16, cfg.beat_elems).reshape(cfg.d_group, cfg.head_dim)


def k_beats(cfg, k16, mask=None) -> dict:
    """``i_k`` of one job: rows (n, d) in beats of E, the row's mask on each of its beats."""
    k16 = _rows(k16)
    n, rb = len(k16), cfg.row_beats
    mask = np.zeros(n, dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
    last = [0] * (n * rb)
    last[-1] = 1
    return {"data": pack_rows(k16.reshape(-1, cfg.beat_elems), 16),
            "mask": np.repeat(mask.astype(np.int64), rb).tolist(), "last": last}


def v_beats(cfg, v16) -> dict:
    kb = k_beats(cfg, v16)
    return {"data": kb["data"], "last": kb["last"]}


def row_block_beats(cfg, values, mask, width: int, segments=None) -> dict:
    """Score (``width`` 32 or 16) or softmax-output (16) beats of one job in the row-block order:
    ``values`` (G, n) bit patterns, ``mask`` (n,) bool; blocks of ``block`` positions inside each
    segment, each query's ``block / U`` beats in turn, padding with keep = 0 (data and mask 0)."""
    values = _rows(values)
    G, n = values.shape
    U, blk = cfg.lanes, cfg.block
    mask = np.zeros(n, dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
    data, keep, msk = [], [], []
    for a, e in block_starts(n, blk, segments):
        pos = np.arange(a, a + blk)
        real = pos < e
        idx = np.where(real, pos, 0)
        m = np.where(real, mask[idx], False)
        for g in range(G):
            vals = np.where(real, values[g][idx], 0)
            data += pack_rows(vals.reshape(-1, U), width)
            keep += _bits_per_beat(real, U)
            msk += _bits_per_beat(m, U)
    last = [0] * len(data)
    last[-1] = 1
    return {"data": data, "keep": keep, "mask": msk, "last": last}


def _bits_per_beat(flags, U: int) -> list:
    f = np.asarray(flags, dtype=np.int64).reshape(-1, U)
    return (f << np.arange(U)).sum(axis=1).tolist()
