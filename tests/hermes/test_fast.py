"""The vectorized Hermes golden models (:mod:`pimforge.sim.golden.hermes.fast`) against the
bit-level ones (:mod:`pimforge.sim.golden.hermes.gemv`, :mod:`pimforge.sim.golden.hermes.act`),
bit for bit: both GEMV modes, with and without the merge partial, fp32 and fp16 inside, the
paper's engine and the small default one, the LLM's shapes (rows of 576 and 1536, attention
heads of 64), beats that do not fill a round of partials, zeros of both signs, subnormals,
values that overflow, and non-finite inputs (the fallback).  The bit-level models are checked
against the RTL by their own benches, so the equality carries over."""
import zlib

import numpy as np
import pytest

from pimforge.base.formats import FP16
from pimforge.base.numerics import float_bits
from pimforge.hw.hermes.config import (
    PAPER_GEMV, HermesActConfig, HermesGemvConfig, act_preset, gemv_preset
)
from pimforge.sim.benches.hermes.act import random_values
from pimforge.sim.benches.hermes.gemv import GemvSpec, make_data
from pimforge.sim.golden.fp import fast as fpfast
from pimforge.sim.golden.hermes import fast
from pimforge.sim.golden.hermes.act import act_softmax
from pimforge.sim.golden.hermes.gemv import gemv_cols, gemv_rows

PAPER = gemv_preset("hermes")
CFGS = {"paper": PAPER, "paper_fp16": HermesGemvConfig(**dict(PAPER_GEMV, acc="fp16")),
        "small": HermesGemvConfig()}


def _seed(*parts) -> int:
    return zlib.crc32(repr(parts).encode())


def _weights(rng, shape, kind, scale=0.05):
    """fp16 bits: ``normal`` N(0, scale); ``edge``: a tenth each +0, -0 and subnormals;
    ``big``: N(0, 300) (large sums, still finite); ``overflow``: near fp16's largest (the sums
    overflow: the golden model decides)."""
    w = rng.standard_normal(shape) * scale
    if kind == "edge":
        pick = rng.random(shape)
        w = np.where(pick < 0.1, 0.0, w)
        w = np.where((pick >= 0.1) & (pick < 0.2), -0.0, w)
        w = np.where((pick >= 0.2) & (pick < 0.3), rng.integers(-1023, 1024, shape) * 2.0 ** -24,
                     w)
    elif kind == "big":
        w = rng.standard_normal(shape) * 300.0
    elif kind == "overflow":
        w = np.clip(rng.standard_normal(shape) * 3e4, -65504, 65504)
    return np.asarray(float_bits(FP16, w), np.int64)


def _pad(a16, unit):
    pad = (-a16.shape[-1]) % unit
    return np.pad(a16, [(0, 0)] * (a16.ndim - 1) + [(0, pad)]) if pad else a16


@pytest.mark.parametrize("cfg", list(CFGS))
@pytest.mark.parametrize("kind", ["normal", "edge", "big", "overflow"])
@pytest.mark.parametrize("shape", [(96, 576, 1), (40, 1536, 1), (50, 64, 3), (7, 200, 5)])
def test_rows_equal_golden(cfg, kind, shape):
    """Row mode, with and without the merge partial; 200 elements are padded with +0 to whole
    beats, as the caller pads a neuron; 576 elements are 9 beats of 64 (a partial round left
    short)."""
    c = CFGS[cfg]
    n, d, b = shape
    rng = np.random.default_rng(_seed(cfg, kind, shape))
    w = _pad(_weights(rng, (n, d), kind), c.beat_elems)
    x = _pad(_weights(rng, (b, d), "edge" if kind == "edge" else "normal", 1.0), c.beat_elems)
    for p in (None, _weights(rng, (n, b), "normal", 4.0)):
        want = gemv_rows(c, w, x, p)
        got = fast.gemv_rows(c, w, x, p)
        assert got.dtype == np.int64 and np.array_equal(got, want), (cfg, kind, shape, p is None)


@pytest.mark.parametrize("cfg", list(CFGS))
@pytest.mark.parametrize("kind", ["normal", "edge", "big", "overflow"])
@pytest.mark.parametrize("shape", [(64, 576, 1), (100, 64, 3), (33, 128, 4)])
def test_cols_equal_golden(cfg, kind, shape):
    """Column mode (``y += x_c w_c`` column by column), with and without the merge."""
    c = CFGS[cfg]
    n, d_out, b = shape
    rng = np.random.default_rng(_seed("c", cfg, kind, shape))
    w = _weights(rng, (n, d_out), kind)
    xc = _weights(rng, (n, b), "edge" if kind == "edge" else "normal", 1.0)
    for p in (None, _weights(rng, (b, d_out), "normal", 4.0)):
        want = gemv_cols(c, w, xc, d_out, p)
        got = fast.gemv_cols(c, w, xc, d_out, p)
        assert np.array_equal(got, want), (cfg, kind, shape, p is None)


@pytest.mark.parametrize("mode", ["rows", "cols"])
def test_bench_extremes_fall_back(mode):
    """The bench's extreme jobs (Inf, NaN, subnormals, zeros of both signs) go through the
    golden model and give its bits; a job without them stays on the fast path and agrees."""
    c = CFGS["small"]
    for kind in ("extreme", "normal"):
        spec = GemvSpec(mode, 3, 64, 12, active=7, merge=True, kind=kind)
        d = make_data(np.random.default_rng(5), spec)
        w = d.neurons[d.active]
        if mode == "rows":
            p = d.p[:, d.active].T
            assert np.array_equal(fast.gemv_rows(c, w, d.x, p), gemv_rows(c, w, d.x, p))
        else:
            xc = d.x[:, d.active].T
            assert np.array_equal(fast.gemv_cols(c, w, xc, d.length, d.p),
                                  gemv_cols(c, w, xc, d.length, d.p))


def test_leading_axes_are_heads():
    """rows / cols / softmax over a leading (head) axis equal the golden model head by head."""
    c = PAPER
    a = act_preset("hermes")
    rng = np.random.default_rng(11)
    k = fpfast.to_float(FP16, _weights(rng, (3, 70, 64), "normal", 1.0))
    q = fpfast.to_float(FP16, _weights(rng, (3, 3, 64), "normal", 1.0))
    s = fast.rows(c, k, q)                                     # (3, 70, 3)
    for h in range(3):
        want = gemv_rows(c, fpfast.to_bits(FP16, k[h]), fpfast.to_bits(FP16, q[h]))
        assert np.array_equal(fpfast.to_bits(FP16, s[h]), want)
    pr = fast.softmax(s.transpose(0, 2, 1), a.lanes, a.acc, a.partials)    # (3, 3, 70)
    for h in range(3):
        for j in range(3):
            want = act_softmax(fpfast.to_bits(FP16, s[h, :, j]), a.lanes, a.acc, a.partials)["y"]
            assert np.array_equal(fpfast.to_bits(FP16, pr[h, j]), want)
    o = fast.cols(c, k, pr.transpose(0, 2, 1))                 # (3, 3, 64)
    for h in range(3):
        want = gemv_cols(c, fpfast.to_bits(FP16, k[h]),
                         fpfast.to_bits(FP16, pr[h].T), 64)
        assert np.array_equal(fpfast.to_bits(FP16, o[h]), want)
    # a head with a NaN takes the golden model; the others stay exact
    k2 = k.copy()
    k2[1, 3, 5] = np.nan
    s2 = fast.rows(c, k2, q)
    for h in range(3):
        want = gemv_rows(c, fpfast.to_bits(FP16, k2[h]), fpfast.to_bits(FP16, q[h]))
        assert np.array_equal(fpfast.to_bits(FP16, s2[h]), want)


ACTS = {"paper": act_preset("hermes"), "fp16": HermesActConfig(lanes=16, acc="fp16"),
        "l4p8": HermesActConfig(lanes=4, max_len=4096, partials=8)}


@pytest.mark.parametrize("act", list(ACTS))
@pytest.mark.parametrize("kind", ["normal", "zeros", "subnormal", "large", "negative",
                                  "positive", "special", "nan", "posinf", "neginf",
                                  "allneginf"])
def test_softmax_equal_golden(act, kind):
    """Softmax at lengths that fill no beat, one beat, some beats short of a round of partials
    and several rounds (the LLM's contexts), every value kind of the bench (the non-finite ones
    through the fallback)."""
    a = ACTS[act]
    rng = np.random.default_rng(_seed(act, kind))
    for n in (1, 3, a.lanes, a.lanes + 1, 5 * a.lanes - 2, 9 * a.lanes + 7, 300):
        x = random_values(rng, n, kind)
        want = act_softmax(x, a.lanes, a.acc, a.partials)["y"]
        got = fast.act_softmax(x, a.lanes, a.acc, a.partials)
        assert np.array_equal(got, want), (act, kind, n)


def test_softmax_zero_max_sign():
    """The maximum of -0 and +0 is +0 (the comparator's order); of -0s alone, -0."""
    a = ACTS["fp16"]
    for vals in ([-0.0, 0.0, -1.0], [-0.0, -0.0, -3.0], [0.0], [-0.0]):
        x = float_bits(FP16, np.array(vals))
        assert np.array_equal(fast.act_softmax(x, a.lanes, a.acc, a.partials),
                              act_softmax(x, a.lanes, a.acc, a.partials)["y"])


@pytest.mark.parametrize("cfg", list(CFGS))
@pytest.mark.parametrize("kind", ["normal", "edge", "big", "overflow"])
def test_row_matrix_equals_golden(cfg, kind):
    """The prepared rows (bit-reversed beats, trees over halves) give the golden model's bits:
    every row or a subset, one vector or a batch, the LLM's 576 and 1536-element rows; inputs
    that are not finite (a NaN in x, an Inf in W) go to the golden model."""
    c = CFGS[cfg]
    rng = np.random.default_rng(_seed("m", cfg, kind))
    for n, d, b in ((48, 576, 1), (20, 1536, 3), (9, 64, 5)):
        w = _weights(rng, (n, d), kind)
        x = _weights(rng, (b, d), "edge" if kind == "edge" else "normal", 1.0)
        m = fast.RowMatrix(c, fpfast.to_float(FP16, w))
        assert np.array_equal(fpfast.to_bits(FP16, m.rows16()), w)
        for idx in (None, np.sort(rng.choice(n, n // 3, replace=False))):
            sel = w if idx is None else w[idx]
            want = gemv_rows(c, sel, x)
            assert np.array_equal(fpfast.to_bits(FP16, m(fpfast.to_float(FP16, x), idx)),
                                  want), (n, d, b, idx is None)
    x = _weights(rng, (2, 64), "normal", 1.0)
    x[1, 7] = 0x7E00                                   # NaN
    w = _weights(rng, (6, 64), "normal")
    w[2, 3] = 0x7C00                                   # +Inf
    for ww, xx in ((w, _weights(rng, (2, 64), "normal", 1.0)), (_weights(rng, (6, 64), kind), x)):
        m = fast.RowMatrix(c, fpfast.to_float(FP16, ww))
        assert np.array_equal(fpfast.to_bits(FP16, m(fpfast.to_float(FP16, xx))),
                              gemv_rows(c, ww, xx))
