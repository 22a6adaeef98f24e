"""A vectorized, bit-exact equivalent of :mod:`pimforge.sim.golden.lolpim.pingpong` for finite
values, for whole GEMVs (an LLM's layers) instead of one program's test vectors.

The golden model emulates every fp32 operation on integer bit patterns.  NumPy's float32
arithmetic gives the same bits wherever IEEE 754 fixes them, which is everywhere here:

* a bf16 value is an fp32 value with 16 zero low bits, so converting bf16 to fp32 is a shift;
* the fp32 product of two bf16 values is NumPy's float32 multiply, the correctly rounded product
  (exact unless it leaves fp32's range: the golden model rounds the same product the same way);
* the pairwise lane tree and the ``k mod Q`` partial sums are NumPy float32 adds (IEEE
  round-to-nearest-even), in the golden model's order: the tree adjacent pairs first, the
  partials step after step, the drain the pairwise tree of the ``Q`` partials;
* fp32 -> bf16 is round-to-nearest-even on the bit pattern.

The arrays are **lane-major**: a tile's columns are ``(lanes, banks, steps)`` with the lanes in
bit-reversed order (:func:`lane_order`), so each level of the adjacent-pairs tree is the sum of
the two contiguous halves of the lane axis (lanes ``2i`` and ``2i + 1`` sit ``lanes / 2`` apart;
IEEE addition commutes).  A tile's step sums are one multiply and ``log2(lanes)`` adds over the
whole tile.  The partial sums of all accumulations are then taken together: accumulations
shorter than the longest are padded with +0 step sums, and partial ``q`` is the sequential
running sum (``numpy.add.accumulate``, a left fold in float32) of steps ``q, q + Q, ...``.  The
fold starts at the first step instead of at +0, which changes at most the sign of a zero; a
partial that starts at +0 is never -0 under round-to-nearest-even (``x + -x = +0``), so adding
+0 at the end restores it, and +0 padding changes no partial (``p + (+0) = p``).

NaN payloads and infinities are where NumPy and the units may differ (the units return their
canonical NaN), so :func:`run_program` checks that every input and every partial sum is finite
and otherwise runs the golden model.  The fast path also accepts what the golden model's
signature cannot express: any number of banks (a module's channels side by side, each
channel's banks independent) and a GB load per bank (``(beats, banks, lanes)``: each channel's
own GB); a channel's outputs equal the golden model run on that channel alone
(``tests/lolpim/test_fast.py``).
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from pimforge.sim.golden.lolpim import pingpong as golden

__all__ = ["lane_order", "lane_major", "bf16_round", "bf16_values", "bf16_bits", "tree",
           "run_values", "run_program"]


@lru_cache(maxsize=None)
def _order(lanes: int) -> tuple:
    bits = lanes.bit_length() - 1
    return tuple(int(format(p, f"0{bits}b")[::-1], 2) if bits else 0 for p in range(lanes))


def lane_order(lanes: int) -> np.ndarray:
    """The bit-reversed lane order of the lane-major layout: position p holds lane
    ``bitrev(p)`` (its own inverse: lane l sits at position ``bitrev(l)``)."""
    return np.array(_order(lanes))


def lane_major(x) -> np.ndarray:
    """``(..., lanes)`` -> ``(lanes, ...)`` in :func:`lane_order`: the layout of
    :func:`run_values`."""
    x = np.asarray(x)
    return np.ascontiguousarray(np.moveaxis(x[..., lane_order(x.shape[-1])], -1, 0))


def bf16_round(x) -> np.ndarray:
    """float32 values rounded to bf16 (round to nearest even), as float32 (finite inputs)."""
    b = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    r = (b + np.uint32(0x7FFF) + ((b >> np.uint32(16)) & np.uint32(1))) & np.uint32(0xFFFF0000)
    return r.view(np.float32)


def bf16_values(bits) -> np.ndarray:
    """bf16 bit patterns (any integer array) as float32 values (exact)."""
    return (np.asarray(bits).astype(np.uint32) << np.uint32(16)).view(np.float32)


def bf16_bits(x) -> np.ndarray:
    """float32 values that are bf16 values, as int64 bf16 bit patterns."""
    return (np.ascontiguousarray(x, dtype=np.float32).view(np.uint32) >> np.uint32(16)
            ).astype(np.int64)


def tree(x) -> np.ndarray:
    """Pairwise float32 tree over the last axis (a power of two), adjacent pairs first."""
    while x.shape[-1] > 1:
        x = x[..., 0::2] + x[..., 1::2]
    return x[..., 0]


def _halves(x) -> np.ndarray:
    """The lane tree over the first axis of a lane-major array."""
    while x.shape[0] > 1:
        h = x.shape[0] // 2
        x = x[:h] + x[h:]
    return x[0]


def run_values(partials: int, loads, tiles, bank) -> tuple:
    """The drained outputs of a program as bf16-valued float32 (n_drains, banks), and whether
    every partial sum stayed finite.  Lane-major float32 values: ``loads`` per WR-GB
    ``(lanes, beats)`` (one GB for all banks) or ``(lanes, banks, beats)`` (a GB per bank);
    ``bank`` per tile ``(lanes, banks, steps)``; ``tiles`` as the golden model's."""
    with np.errstate(over="ignore", invalid="ignore"):      # non-finite: reported, not warned
        return _values(partials, loads, tiles, bank)


def _values(partials, loads, tiles, bank):
    sums, spans = [], []
    used, start, n = 0, None, 0
    for tile, c in zip(tiles, bank):
        s = tile.steps
        g = loads[used]
        g = g[:, None, :s] if g.ndim == 2 else g[:, :, :s]
        c = c[:, :, :s]
        if c.shape[0] > 1:                      # the tree's first level with the products
            h = c.shape[0] // 2
            x = c[:h] * g[:h]
            x += c[h:] * g[h:]
        else:
            x = c * g
        sums.append(_halves(x))                                     # (banks, steps)
        if start is None:
            start = len(sums) - 1, n
        n += s
        if tile.release:
            used += 1
        if tile.drain:
            spans.append((start[0], len(sums), n - start[1]))
            start = None
    if not spans:
        return np.zeros((0, 0), np.float32), True
    Q, B = partials, sums[0].shape[0]
    kmax = -(-max(k for _, _, k in spans) // Q) * Q
    acc = np.zeros((len(spans), B, kmax), np.float32)
    for i, (a, b, _) in enumerate(spans):
        k = 0
        for t in range(a, b):
            acc[i, :, k:k + sums[t].shape[1]] = sums[t]
            k += sums[t].shape[1]
    parts = np.add.accumulate(acc.reshape(len(spans), B, kmax // Q, Q), axis=2)[:, :, -1]
    parts = parts + np.float32(0)                 # a partial starts at +0: never -0
    ok = bool(np.isfinite(parts).all())
    return bf16_round(tree(parts)), ok


def run_program(cfg, loads, tiles, bank) -> np.ndarray:
    """:func:`pimforge.sim.golden.lolpim.pingpong.run_program`, vectorized, in its convention:
    the drained outputs (n_drains, banks) as bf16 bits.  ``loads`` per WR-GB (beats, lanes) or,
    beyond the golden model, (beats, banks, lanes) (a GB per bank) bf16 bits; ``bank`` per tile
    (steps, banks, lanes) bf16 bits; the banks may exceed ``cfg.banks`` (independent banks side
    by side).  Falls back to the golden model when a value is not finite (only for loads shared
    by all banks and ``cfg.banks`` banks)."""
    lf = [bf16_values(x) for x in loads]
    bf = [bf16_values(x) for x in bank]
    if all(np.isfinite(x).all() for x in lf + bf):
        lm = [lane_major(x) if x.ndim == 2 else lane_major(np.swapaxes(x, 0, 1)) for x in lf]
        bm = [lane_major(np.swapaxes(x, 0, 1)) for x in bf]
        out, ok = run_values(cfg.partials, lm, tiles, bm)
        if ok:
            return bf16_bits(out)
    return golden.run_program(cfg, loads, tiles, bank)
