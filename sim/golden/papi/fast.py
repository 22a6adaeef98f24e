"""A vectorized ``papi_pu`` golden model, bit-exact on finite values with
:func:`~pimforge.sim.golden.papi.pu.pu_gemv`.

:func:`~pimforge.sim.golden.papi.pu.pu_gemv` emulates every fp16/fp32 operation on integer bit
patterns, beat by beat; a decoder layer's GEMVs need it in milliseconds.  This model does the same
operations in the same order on NumPy float arrays through the float library's fast paths
(:mod:`pimforge.sim.golden.fp.fast`: its add and mul are the golden operators on finite values):

* products ``w x`` in ``cfg.acc`` (fp16: rounded once; fp32: exact);
* per beat of ``lanes`` products a pairwise tree, adjacent pairs first;
* beat k into partial ``k mod partials``, each partial's chain in beat order from +0 (the beats
  past the last are +0, which leaves a partial unchanged: a partial is never -0, since
  ``+0 + -0 = +0``);
* the pairwise tree of the partials, then fp16 (round to nearest even).

Leading axes are independent jobs (``w`` (..., rows, cols) and ``x`` (..., reuse, cols)), so a
system that splits a matrix over many PUs runs every block in one call.

Non-finite values: every intermediate of an output feeds that output, and an infinite or NaN
intermediate never gives back a finite result, so a finite output proves the fast arithmetic
stayed on finite values and equals the golden one.  :func:`pu_gemv_fast` therefore uses the fast
arithmetic when the inputs and every output are finite, and otherwise calls the golden model
(which returns the unit's canonical NaN, where NumPy would propagate payloads).  Tests:
``tests/papi/test_fast.py``.
"""
from __future__ import annotations

import numpy as np

from pimforge.base.formats import FP16, FP32
from pimforge.sim.golden.fp import fast
from pimforge.sim.golden.papi.pu import pu_gemv

__all__ = ["pu_weights", "pu_gemv_prepared", "pu_gemv_float", "pu_gemv_fast", "pu_gemv_golden",
           "pu_gemv_one_column"]


def _tree(fmt, x, axis: int):
    """Pairwise sum over ``axis`` (a power of two long), adjacent pairs first."""
    x = np.moveaxis(x, axis, 0)
    while x.shape[0] > 1:
        x = fast.add(fmt, x[0::2], x[1::2])
    return x[0]


def _lanes(cfg, a, name: str) -> np.ndarray:
    """(..., n, cols) float16 -> float32 (lanes, ..., beats, n): lane-major, so that every tree
    level adds whole contiguous blocks."""
    a = np.asarray(a, np.float16)
    cols = a.shape[-1]
    if cols % cfg.lanes:
        raise ValueError(f"papi_pu: {name} has {cols} columns, not a multiple of lanes "
                         f"{cfg.lanes}")
    a = a.reshape(a.shape[:-1] + (cols // cfg.lanes, cfg.lanes))
    return np.ascontiguousarray(np.moveaxis(a, (-1, -3), (0, -1)), dtype=np.float32)


def pu_weights(cfg, w) -> np.ndarray:
    """The weights ``w`` (..., rows, cols) float16 laid out for :func:`pu_gemv_prepared` (a
    system keeps this per matrix)."""
    return _lanes(cfg, w, "w")


def pu_gemv_prepared(cfg, wl, x) -> np.ndarray:
    """:func:`pu_gemv_float` with the weights from :func:`pu_weights`."""
    acc = FP32 if cfg.acc.width == 32 else FP16
    Q = cfg.partials
    xl = _lanes(cfg, x, "x")
    if xl.shape[0] != wl.shape[0] or xl.shape[-2] != wl.shape[-2]:
        raise ValueError(f"papi_pu: x has {xl.shape[-2]} beats of {xl.shape[0]}, the weights "
                         f"{wl.shape[-2]} of {wl.shape[0]}")
    # products (lanes, ..., beats, reuse, rows); an fp16 x fp16 product is exact in fp32, so
    # the fp16 accumulator's product is that fp32 product rounded once to fp16
    with np.errstate(over="ignore", invalid="ignore"):
        return _gemv(acc, Q, wl, xl)


def _gemv(acc, Q, wl, xl) -> np.ndarray:
    """The PU's order on lane-major weights and inputs (module docstring)."""
    p = fast.mul(FP32, wl[..., None, :], xl[..., :, None])
    if acc is FP16:
        p = p.astype(np.float16)
    beat = _tree(acc, p, 0)                                   # (..., beats, reuse, rows)
    nb = beat.shape[-3]
    m = -(-nb // Q)
    if m * Q != nb:
        pad = np.zeros(beat.shape[:-3] + (m * Q - nb,) + beat.shape[-2:], beat.dtype)
        beat = np.concatenate([beat, pad], axis=-3)
    beat = beat.reshape(beat.shape[:-3] + (m, Q) + beat.shape[-2:])
    parts = np.zeros(beat.shape[:-4] + beat.shape[-3:], beat.dtype)
    for i in range(m):
        parts = fast.add(acc, parts, beat[..., i, :, :, :])
    y = _tree(acc, parts, -3)                                 # (..., reuse, rows)
    return np.swapaxes(y, -1, -2).astype(np.float16)


def pu_gemv_one_column(cfg, w, x) -> np.ndarray:
    """Jobs of a single matrix column (a system that spreads a GEMV's columns one per PU):
    ``w`` (..., rows) and ``x`` (..., reuse) float16 stand for one beat whose lanes past the
    first are zero.  The unit's tree then adds the product to +0 products and the partials to
    +0, which changes nothing but the sign of a zero product (``-0 + +0 = +0``); so the result
    is the product in ``cfg.acc`` plus +0, in fp16.  Returns float16 (..., rows, reuse); equal
    to the golden model when finite (tests/papi/test_fast.py)."""
    acc = FP32 if cfg.acc.width == 32 else FP16
    t = fast.dtype(acc)
    w = np.asarray(w, np.float16).astype(t)[..., :, None]
    x = np.asarray(x, np.float16).astype(t)[..., None, :]
    with np.errstate(over="ignore", invalid="ignore"):
        p = fast.mul(FP32, w, x)
        if acc is FP16:
            p = p.astype(np.float16)
        return fast.add(acc, p, np.zeros((), t)).astype(np.float16)


def pu_gemv_float(cfg, w, x) -> np.ndarray:
    """``Y = W X`` in the PU's order on float16 arrays: ``w`` (..., rows, cols), ``x`` (...,
    reuse, cols), cols a multiple of ``cfg.lanes``.  Returns float16 (..., rows, reuse).  Equal
    to the golden model only when the result is finite (:func:`pu_gemv_fast` checks)."""
    return pu_gemv_prepared(cfg, pu_weights(cfg, w), x)


def pu_gemv_fast(cfg, w16, x16) -> np.ndarray:
    """:func:`~pimforge.sim.golden.papi.pu.pu_gemv`'s contract (fp16 bits in, fp16 bits
    (rows, reuse) out), with leading job axes allowed; the golden model where a value is not
    finite."""
    w16 = np.asarray(w16, np.int64)
    x16 = np.asarray(x16, np.int64)
    w, x = fast.to_float(FP16, w16), fast.to_float(FP16, x16)
    if fast.finite(w, x):
        y = pu_gemv_float(cfg, w, x)
        if fast.finite(y):
            return fast.to_bits(FP16, y)
    return pu_gemv_golden(cfg, w16, x16)


def pu_gemv_golden(cfg, w16, x16) -> np.ndarray:
    """The golden model job by job over the leading axes (the fallback)."""
    w16 = np.asarray(w16, np.int64)
    x16 = np.asarray(x16, np.int64)
    lead = np.broadcast_shapes(w16.shape[:-2], x16.shape[:-2])
    wb = np.broadcast_to(w16, lead + w16.shape[-2:])
    xb = np.broadcast_to(x16, lead + x16.shape[-2:])
    out = np.empty(lead + (w16.shape[-2], x16.shape[-2]), np.int64)
    for idx in np.ndindex(*lead):
        out[idx] = pu_gemv(cfg, wb[idx], xb[idx])
    return out
