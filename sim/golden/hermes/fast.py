"""Vectorized fast paths of the Hermes golden models, bit-exact with them on finite values.

:mod:`pimforge.sim.golden.hermes.gemv` and :mod:`pimforge.sim.golden.hermes.act` emulate every
float operation on bit patterns, beat by beat; a whole LLM needs thousands of GEMVs a token.  The
functions here do the same operations in the same order on float16 / float32 arrays through
:mod:`pimforge.sim.golden.fp.fast` (NumPy's IEEE arithmetic where it is exact, the units' own
exp and reciprocal), vectorized over rows, vectors and any leading axes (heads):

* :func:`rows`: per beat of ``E`` elements the pairwise tree of the products, beat ``k`` into
  partial ``k mod Q`` from +0 (a partial that started at +0 is never -0, so the beats are padded
  with +0 to whole rounds of Q), the pairwise tree of the Q partials, the merge, fp16;
* :func:`cols`: ``y = +0``, then ``y += x_c w_c`` column by column (the only loop left: over the
  columns, each step a whole (b, d_out) array), the merge, fp16;
* :func:`softmax`: the maximum (with -0 < +0: the one value the comparator tree finds when no
  input is a NaN), ``exp(acc(x) - acc(m))``, the lane trees, the Q partial sums from -0, Z's tree,
  ``1/Z`` and ``fp16(e * r)``.

``acc(x) - acc(m)`` is ``acc(x) + (-acc(m))``, which IEEE makes the same operation.  When an
input or the result is not finite, the golden model computes it instead (NaN payloads and the
infinities' corner cases are its to decide), head by head.  :func:`gemv_rows`, :func:`gemv_cols`
and :func:`act_softmax` take and return bit patterns, as the golden functions do.
``tests/hermes/test_fast.py`` holds them to the golden models bit for bit.
"""
from __future__ import annotations

import numpy as np

from pimforge.base.formats import FP16
from pimforge.sim.golden.fp import fast
from pimforge.sim.golden.hermes import act as act_golden
from pimforge.sim.golden.hermes import gemv as gemv_golden

__all__ = ["rows", "cols", "softmax", "RowMatrix", "gemv_rows", "gemv_cols", "act_softmax"]

F16 = np.float16


def _tree(fmt, x):
    """Pairwise tree over the last axis (a power of two), adjacent pairs first."""
    while x.shape[-1] > 1:
        x = fast.add(fmt, x[..., 0::2], x[..., 1::2])
    return x[..., 0]


def _acc(fmt, x16):
    """fp16 values in ``fmt`` (exact)."""
    return np.asarray(x16, F16).astype(fast.dtype(fmt))


def _finish(fmt, y, p16):
    if p16 is not None:
        y = fast.add(fmt, y, _acc(fmt, p16))
    with np.errstate(over="ignore"):
        return y.astype(F16)


def _rows(cfg, w16, x16, p16=None) -> np.ndarray:
    """Row mode on float16 arrays: ``w16`` (..., n, d) with d a whole number of beats,
    ``x16`` (..., b, d), ``p16`` (..., n, b) or None.  Returns float16 (..., n, b)."""
    acc, E, Q = cfg.acc, cfg.beat_elems, cfg.partials
    w = _acc(acc, w16)
    x = _acc(acc, x16)
    *lead, n, d = w.shape
    b = x.shape[-2]
    beats = d // E
    if beats * E != d:
        raise ValueError(f"hermes_gemv rows: d_in = {d} is not a whole number of {E}-element "
                         f"beats")
    prod = fast.mul(acc, w[..., :, None, :], x[..., None, :, :])      # (..., n, b, d)
    t = _tree(acc, prod.reshape(*prod.shape[:-1], beats, E))          # (..., n, b, beats)
    rounds = -(-beats // Q)
    grid = np.zeros((*t.shape[:-1], rounds * Q), dtype=t.dtype)
    grid[..., :beats] = t
    grid = grid.reshape(*t.shape[:-1], rounds, Q)
    parts = np.zeros((*t.shape[:-1], Q), dtype=t.dtype)
    for r in range(rounds):
        parts = fast.add(acc, parts, grid[..., r, :])
    return _finish(acc, _tree(acc, parts), p16)


def _cols(cfg, w16, xc16, p16=None) -> np.ndarray:
    """Column mode on float16 arrays: ``w16`` (..., n, d_out) the active columns, ``xc16``
    (..., n, b) their x values, ``p16`` (..., b, d_out) or None.  Returns float16
    (..., b, d_out)."""
    acc = cfg.acc
    w = _acc(acc, w16)
    xc = _acc(acc, xc16)
    y = np.zeros((*w.shape[:-2], xc.shape[-1], w.shape[-1]), dtype=fast.dtype(acc))
    for i in range(w.shape[-2]):
        y = fast.add(acc, y, fast.mul(acc, w[..., i, None, :], xc[..., i, :, None]))
    return _finish(acc, y, p16)


def _max(x16):
    """The maximum over the last axis with -0 < +0 (inputs finite)."""
    m = x16.max(axis=-1)
    pos0 = (x16.view(np.uint16) == 0).any(axis=-1)
    return np.where(m == 0, np.where(pos0, F16(0.0), F16(-0.0)), m)


def _softmax(x16, lanes: int, acc, partials: int = 4) -> np.ndarray:
    """Softmax over the last axis of float16 ``x16`` (..., n), as
    :func:`~pimforge.sim.golden.hermes.act.act_softmax` computes it.  Returns float16
    (..., n)."""
    x16 = np.asarray(x16, F16)
    n = x16.shape[-1]
    lead = x16.shape[:-1]
    B = -(-n // lanes)
    m = _acc(acc, _max(x16))
    d = fast.add(acc, _acc(acc, x16), -m[..., None])
    e = fast.exp(acc, d)
    padded = np.zeros((*lead, B * lanes), dtype=e.dtype)
    padded[..., :n] = e
    sums = _tree(acc, padded.reshape(*lead, B, lanes))            # (..., B)
    Q = partials
    rounds = -(-B // Q)
    grid = np.zeros((*lead, rounds * Q), dtype=e.dtype)
    grid[..., :B] = sums
    grid = grid.reshape(*lead, rounds, Q)
    used = (np.arange(rounds * Q) < B).reshape(rounds, Q)
    parts = np.full((*lead, Q), -0.0, dtype=e.dtype)
    for r in range(rounds):
        parts = np.where(used[r], fast.add(acc, parts, grid[..., r, :]), parts)
    z = _tree(acc, parts)
    rz = fast.recip(acc, z)
    y = fast.mul(acc, e, rz[..., None])
    with np.errstate(over="ignore"):
        return y.astype(F16)


def _checked(fast_fn, slow_fn, ins, lead_nd):
    """``fast_fn(*ins)`` when the inputs and the result are finite, else ``slow_fn`` (the golden
    model on bit patterns) over every index of the ``lead_nd`` leading axes."""
    if fast.finite(*[a for a in ins if a is not None]):
        with np.errstate(over="ignore", invalid="ignore"):
            y = fast_fn(*ins)
        if fast.finite(y):
            return y
    lead = ins[0].shape[:lead_nd]
    out = None
    for ix in np.ndindex(*lead):
        bits = [None if a is None else fast.to_bits(FP16, a[ix]) for a in ins]
        y = _f16(slow_fn(*bits))
        if out is None:
            out = np.empty(lead + y.shape, F16)
        out[ix] = y
    return out


def rows(cfg, w16, x16, p16=None) -> np.ndarray:
    """Row mode on float16 arrays: ``w16`` (..., n, d) with d a whole number of beats (pad with
    zeros), ``x16`` (..., b, d), ``p16`` (..., n, b) or None.  Returns float16 (..., n, b)."""
    ins = [np.asarray(w16, F16), np.asarray(x16, F16),
           None if p16 is None else np.asarray(p16, F16)]
    return _checked(lambda w, x, p: _rows(cfg, w, x, p),
                    lambda w, x, p: gemv_golden.gemv_rows(cfg, w, x, p), ins, ins[0].ndim - 2)


def cols(cfg, w16, xc16, p16=None) -> np.ndarray:
    """Column mode on float16 arrays: ``w16`` (..., n, d_out) the active columns, ``xc16``
    (..., n, b) their x values, ``p16`` (..., b, d_out) or None.  Returns float16
    (..., b, d_out)."""
    ins = [np.asarray(w16, F16), np.asarray(xc16, F16),
           None if p16 is None else np.asarray(p16, F16)]
    d_out = ins[0].shape[-1]
    return _checked(lambda w, x, p: _cols(cfg, w, x, p),
                    lambda w, x, p: gemv_golden.gemv_cols(cfg, w, x, d_out, p), ins,
                    ins[0].ndim - 2)


def softmax(x16, lanes: int, acc, partials: int = 4) -> np.ndarray:
    """Softmax over the last axis of float16 ``x16`` (..., n), as
    :func:`~pimforge.sim.golden.hermes.act.act_softmax` computes it.  Returns float16
    (..., n)."""
    x = np.asarray(x16, F16)
    return _checked(lambda v: _softmax(v, lanes, acc, partials),
                    lambda v: act_golden.act_softmax(v, lanes, acc, partials)["y"], [x],
                    x.ndim - 1)


def _bitrev(n: int) -> np.ndarray:
    """The bit-reversal permutation of 0..n-1 (n a power of two)."""
    bits = n.bit_length() - 1
    i = np.arange(n)
    return np.array([int(format(v, f"0{bits}b")[::-1], 2) if bits else 0 for v in i])


class RowMatrix:
    """A matrix's rows prepared once for many row-mode GEMVs (the LLM's weights).

    The pairwise tree of a beat over adjacent pairs is the tree over halves of the beat's
    elements in bit-reversed order (level one adds elements ``p`` and ``p + E/2``, which hold
    ``2j`` and ``2j + 1``; the results are again in bit-reversed order), so the rows are held as
    ``(E, beats, n)`` float32 in that order and every tree level adds two contiguous halves:
    the same additions as :func:`rows`, in the same order.  ``w16``: float16 (n, d), d a whole
    number of beats."""

    def __init__(self, cfg, w16):
        w16 = np.asarray(w16, F16)
        n, d = w16.shape
        E = cfg.beat_elems
        if d % E:
            raise ValueError(f"hermes_gemv rows: d_in = {d} is not a whole number of {E}-element "
                             f"beats")
        self.cfg, self.n, self.d, self.perm = cfg, n, d, _bitrev(E)
        self.finite = fast.finite(w16)
        t = w16.reshape(n, d // E, E)[:, :, self.perm].transpose(2, 1, 0)
        self.t = np.ascontiguousarray(_acc(cfg.acc, t))

    def rows16(self, idx=None) -> np.ndarray:
        """The float16 rows (n, d) back (the golden model's input)."""
        t = self.t if idx is None else self.t[:, :, idx]
        inv = np.argsort(self.perm)
        return t.transpose(2, 1, 0)[:, :, inv].reshape(t.shape[2], self.d).astype(F16)

    def __call__(self, x16, idx=None) -> np.ndarray:
        """Row mode over the rows ``idx`` (all when None) for ``x16`` float16 (b, d): float16
        (len(idx), b), as :func:`rows` gives it."""
        cfg = self.cfg
        acc, E, Q = cfg.acc, cfg.beat_elems, cfg.partials
        x16 = np.asarray(x16, F16)
        w = self.t if idx is None else self.t[:, :, idx]
        if not (self.finite and fast.finite(x16)):
            return rows(cfg, self.rows16(idx), x16)
        b = x16.shape[0]
        beats = self.d // E
        xp = _acc(acc, x16.reshape(b, beats, E)[:, :, self.perm].transpose(2, 1, 0))
        with np.errstate(over="ignore", invalid="ignore"):
            prod = fast.mul(acc, w[..., None], xp[:, :, None, :])       # (E, beats, n, b)
            while prod.shape[0] > 1:
                h = prod.shape[0] // 2
                prod = fast.add(acc, prod[:h], prod[h:])
            t = prod[0]                                                 # (beats, n, b)
            rounds = -(-beats // Q)
            grid = np.zeros((rounds * Q, *t.shape[1:]), dtype=t.dtype)
            grid[:beats] = t
            grid = grid.reshape(rounds, Q, *t.shape[1:])
            parts = np.zeros(grid.shape[1:], dtype=t.dtype)
            for r in range(rounds):
                parts = fast.add(acc, parts, grid[r])
            while parts.shape[0] > 1:
                parts = fast.add(acc, parts[0::2], parts[1::2])
            y = parts[0].astype(F16)
        if fast.finite(y):
            return y
        return rows(cfg, self.rows16(idx), x16)


def _f16(bits):
    return fast.to_float(FP16, bits)


def gemv_rows(cfg, w16, x16, p16=None) -> np.ndarray:
    """:func:`~pimforge.sim.golden.hermes.gemv.gemv_rows` (fp16 bits in and out), fast."""
    return fast.to_bits(FP16, rows(cfg, _f16(w16), _f16(x16), None if p16 is None else _f16(p16)))


def gemv_cols(cfg, w16, xc16, d_out: int, p16=None) -> np.ndarray:
    """:func:`~pimforge.sim.golden.hermes.gemv.gemv_cols` (fp16 bits in and out), fast."""
    w = _f16(np.asarray(w16).reshape(-1, d_out))
    return fast.to_bits(FP16, cols(cfg, w, _f16(xc16), None if p16 is None else _f16(p16)))


def act_softmax(x16, lanes: int, acc, partials: int = 4) -> np.ndarray:
    """The ``y`` of :func:`~pimforge.sim.golden.hermes.act.act_softmax` (fp16 bits), fast."""
    return fast.to_bits(FP16, softmax(_f16(x16), lanes, acc, partials))
