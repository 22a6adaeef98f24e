"""The vectorized papi_pu model (sim/golden/papi/fast.py) against the golden model, bit for bit:
random data in both accumulator formats, every partials count, reuse above one, beat counts that
are and are not multiples of the partials, leading job axes, the LLM's blocked shapes, signed
zeros and subnormals, and non-finite inputs and overflowing sums (the golden fallback).  The
golden model itself is held to the RTL by tests/papi/test_pu.py, so the equality carries over.
"""
import numpy as np
import pytest

from pimforge.base.formats import FP16
from pimforge.base.numerics import float_bits
from pimforge.hw.papi.config import PapiPuConfig, pu_preset
from pimforge.sim.golden.papi.fast import (
    pu_gemv_fast, pu_gemv_float, pu_gemv_one_column, pu_gemv_prepared, pu_weights
)
from pimforge.sim.golden.papi.pu import pu_gemv


def _bits(a):
    return np.asarray(float_bits(FP16, a), np.int64)


def _data(rng, rows, reuse, cols, scale=1.0):
    return (_bits(rng.standard_normal((rows, cols)) * scale),
            _bits(rng.standard_normal((reuse, cols)) * scale))


@pytest.mark.parametrize("acc", ["fp16", "fp32"])
@pytest.mark.parametrize("partials,lanes,beats,reuse", [
    (4, 16, 9, 1), (4, 16, 4, 5), (4, 4, 7, 3), (8, 16, 13, 2), (16, 8, 20, 4), (4, 16, 1, 2),
    (4, 16, 96, 2), (4, 4, 64, 3)])
def test_random_equals_golden(acc, partials, lanes, beats, reuse):
    """Long rows (96 beats: ffn_down's 1,536 columns in one job) chain many beats into each
    partial, where the order of the chain shows."""
    cfg = PapiPuConfig(lanes=lanes, acc=acc, partials=partials, max_beats=64)
    rng = np.random.default_rng(beats * 31 + reuse)
    w, x = _data(rng, 11, reuse, beats * lanes)
    assert (pu_gemv_fast(cfg, w, x) == pu_gemv(cfg, w, x)).all()


@pytest.mark.parametrize("acc", ["fp16", "fp32"])
def test_wide_range_signed_zeros_subnormals(acc):
    """Magnitudes from fp16 subnormals to near its largest, exact zeros of both signs (products
    -0 and sums that cancel to zero), so rounding, underflow and the +0 of the partials show."""
    cfg = PapiPuConfig(lanes=16, acc=acc, max_beats=64)
    rng = np.random.default_rng(5)
    mag = 2.0 ** rng.integers(-24, 7, size=(9, 6 * 16)) * rng.choice([-1, 1], size=(9, 96))
    w = _bits(mag * rng.random((9, 96)))
    x = _bits(2.0 ** rng.integers(-12, 3, size=(4, 96)) * rng.choice([-1, 1], size=(4, 96)))
    w[:, :20] = np.where(rng.random((9, 20)) < 0.5, 0x8000, 0x0000)      # -0 / +0 weights
    x[1] = x[0] ^ 0x8000                                                 # the negated vector
    w[3] = 0x8000                                                        # a row of -0
    x[2, :] = 0x0001                                                     # the smallest subnormal
    assert (pu_gemv_fast(cfg, w, x) == pu_gemv(cfg, w, x)).all()


def test_cancelling_rows():
    """A row and its negation side by side in one beat: every tree level sums to +0."""
    cfg = PapiPuConfig(lanes=16, max_beats=64)
    rng = np.random.default_rng(2)
    half = _bits(rng.standard_normal((3, 8 * 8)))
    w = np.stack([half, half ^ 0x8000], axis=-1).reshape(3, 128)
    x = np.full((2, 128), _bits(1.0), np.int64)
    out = pu_gemv_fast(cfg, w, x)
    assert (out == pu_gemv(cfg, w, x)).all() and (out == 0).all()


@pytest.mark.parametrize("name", ["fc_pim", "attn_pim"])
def test_llm_block_shapes(name):
    """The shapes the LLM system hands the unit: FC blocks (cs, rows, 64) and (cs, rows, 80)
    with a batch of identical vectors, attention (KV heads, tokens, 64) with the GQA group as
    reuse; leading axes are independent jobs."""
    cfg = pu_preset(name)
    rng = np.random.default_rng(9)
    if name == "fc_pim":
        shapes = [((9, 64, 64), (9, 3, 64)), ((8, 40, 80), (8, 2, 80))]
    else:
        shapes = [((3, 37, 64), (3, 3, 64)), ((3, 2, 64, 16), (3, 2, 3, 16))]
    for ws, xs in shapes:
        w = _bits(rng.standard_normal(ws) * 0.1)
        x = _bits(rng.standard_normal(xs))
        if name == "fc_pim":
            x[:] = x[:, :1]                            # identical columns, as the batch is
        got = pu_gemv_fast(cfg, w, x)
        for idx in np.ndindex(*ws[:-2]):
            assert (got[idx] == pu_gemv(cfg, w[idx], x[idx])).all(), (ws, idx)


def test_prepared_weights_and_float_api():
    cfg = pu_preset("fc_pim")
    rng = np.random.default_rng(4)
    w, x = _data(rng, 20, 3, 96)
    wf, xf = w.astype(np.uint16).view(np.float16), x.astype(np.uint16).view(np.float16)
    ref = pu_gemv(cfg, w, x)
    for y in (pu_gemv_float(cfg, wf, xf), pu_gemv_prepared(cfg, pu_weights(cfg, wf), xf)):
        assert y.dtype == np.float16
        assert (y.view(np.uint16).astype(np.int64) == ref).all()


@pytest.mark.parametrize("acc", ["fp16", "fp32"])
def test_non_finite_falls_back(acc):
    """Inf and NaN inputs, and finite inputs whose sums overflow fp16: the golden model's
    answer (its canonical NaN included)."""
    cfg = PapiPuConfig(lanes=16, acc=acc, max_beats=64)
    rng = np.random.default_rng(8)
    w, x = _data(rng, 6, 2, 64)
    w[0, 3], w[1, 5], x[1, 7] = 0x7C00, 0x7E01, 0xFC00         # +Inf, a NaN payload, -Inf
    assert (pu_gemv_fast(cfg, w, x) == pu_gemv(cfg, w, x)).all()
    big_w, big_x = _data(rng, 4, 2, 64, scale=0.0)
    big_w[:] = _bits(60000.0)
    big_x[:] = _bits(2.0)
    big_x[1, ::2] = _bits(-2.0)                                   # row sums cancel, partials don't
    out = pu_gemv_fast(cfg, big_w, big_x)
    assert (out == pu_gemv(cfg, big_w, big_x)).all()
    assert (out[:, 0] == 0x7C00).all()


@pytest.mark.parametrize("acc", ["fp16", "fp32"])
def test_one_column_jobs(acc):
    """A column per job, lanes past the first zero: signed zeros, subnormal products (fp16
    underflow), large and ordinary values, against the golden model on the padded beat."""
    cfg = PapiPuConfig(lanes=16, acc=acc, max_beats=64, max_reuse=8)
    rng = np.random.default_rng(6)
    w = rng.standard_normal((5, 7)) * 2.0 ** rng.integers(-14, 8, size=(5, 7))
    x = rng.standard_normal((5, 3)) * 2.0 ** rng.integers(-14, 4, size=(5, 3))
    w[0, :3], w[1, :3], x[2, 0] = 0.0, -0.0, -0.0
    w16, x16 = _bits(w), _bits(x)
    got = pu_gemv_one_column(cfg, w16.astype(np.uint16).view(np.float16),
                             x16.astype(np.uint16).view(np.float16))
    for j in range(5):
        wp = np.zeros((7, 16), np.int64)
        xp = np.zeros((3, 16), np.int64)
        wp[:, 0], xp[:, 0] = w16[j], x16[j]
        assert (got[j].view(np.uint16).astype(np.int64) == pu_gemv(cfg, wp, xp)).all(), j


def test_shape_errors():
    cfg = pu_preset("fc_pim")
    with pytest.raises(ValueError, match="multiple of lanes"):
        pu_gemv_float(cfg, np.zeros((2, 24), np.float16), np.zeros((1, 24), np.float16))
