"""The vectorized PAMattention (sim/golden/pam/fast.py) against the golden system model, bit for
bit: every head's fp16 output, O, l, m and the log-sum-exp, on random inputs and the edge cases
of the token distribution (a tier without tokens, PUs without tokens, partial tiles), both
accumulator formats, signed zeros, and the fallback to the golden model for non-finite values."""
import numpy as np
import pytest

from pimforge.base.formats import FP16, FP32
from pimforge.sim.golden.pam.fast import pu_token_sets, system_attention_heads
from pimforge.sim.golden.pam.system import system_attention

KEYS = ("norm", "O", "m", "l", "lse")


def _bits(x):
    return np.asarray(x, np.float16).view(np.uint16).astype(np.int64)


def _random(rng, heads, n, d=64, k_spread=2.0, v_spread=1.0):
    return (_bits(rng.normal(0, 1, (heads, d))), _bits(rng.normal(0, k_spread, (heads, n, d))),
            _bits(rng.normal(0, v_spread, (heads, n, d))))


def _check(acc, scale, q, k, v, counts, pus, tile):
    got = system_attention_heads(acc, scale, q, k, v, counts, pus, tile)
    for h in range(len(q)):
        ref = system_attention(acc, scale, q[h], k[h], v[h], counts, pus, tile)
        for key in KEYS:
            assert np.array_equal(np.asarray(ref[key]), np.asarray(got[key][h])), (key, h)
    return got


# (tokens, tier counts, PUs per tier, tile): a tier without tokens (HBM, DDR or SSD), PUs left
# empty (fewer tokens than PUs), N not a multiple of the tile, tiles of one token, one token
CASES = [
    (37, (20, 0, 17), (4, 3, 2), 16),
    (5, (1, 2, 2), (4, 4, 4), 4),
    (50, (30, 12, 8), (2, 5, 1), 7),
    (23, (0, 10, 13), (3, 1, 16), 16),
    (9, (9, 0, 0), (16, 1, 1), 1),
    (1, (0, 0, 1), (4, 4, 4), 16),
    (70, (33, 17, 20), (4, 4, 4), 16),
]


@pytest.mark.parametrize("acc", [FP16, FP32], ids=["fp16", "fp32"])
@pytest.mark.parametrize("case", CASES, ids=[f"n{c[0]}-{'-'.join(map(str, c[1]))}"
                                             for c in CASES])
def test_fast_equals_golden(acc, case):
    n, counts, pus, tile = case
    rng = np.random.default_rng(n * 7 + acc.width)
    got = _check(acc, 0.125, *_random(rng, 3, n), counts, pus, tile)
    assert got["fallback"] == []


@pytest.mark.parametrize("acc", [FP16, FP32], ids=["fp16", "fp32"])
def test_fast_equals_golden_llm_shape(acc):
    """The LLM's shape: 9 heads, head_dim 64, a 40-token context over the three tiers; large
    scores (exponentials underflowing inside a tile) in one head, small ones in another."""
    rng = np.random.default_rng(3)
    q, k, v = _random(rng, 9, 40)
    k[0] = _bits(rng.normal(0, 12, (40, 64)))
    k[1] = _bits(rng.normal(0, 0.01, (40, 64)))
    got = _check(acc, 0.125, q, k, v, (20, 10, 10), (4, 4, 4), 16)
    assert got["fallback"] == []


def test_signed_zeros():
    """Zero scores of both signs: a +0 query (scores +0 but for all-negative rows), a -0 query
    against positive keys (every score -0, so every maximum is -0) and against keys alternating
    in sign (tiles holding -0 and +0, whose maximum is +0); V with -0 elements."""
    rng = np.random.default_rng(5)
    q, k, v = _random(rng, 3, 12)
    q[0] = _bits(np.zeros(64))
    q[1:] = _bits(-np.zeros((2, 64)))
    k[1] = _bits(np.abs(rng.normal(0, 1, (12, 64))) + 0.1)
    k[2] = _bits(np.abs(rng.normal(0, 1, (12, 64))) * np.where(np.arange(12) % 2, 1, -1)[:, None])
    v[:, ::2] = _bits(-np.zeros((3, 6, 64)))
    for acc in (FP16, FP32):
        got = _check(acc, 0.125, q, k, v, (5, 4, 3), (2, 2, 2), 4)
        assert got["m"][1] == 0x80000000 and got["m"][2] == 0        # -0 and +0


@pytest.mark.parametrize("acc", [FP16, FP32], ids=["fp16", "fp32"])
def test_non_finite_inputs_fall_back(acc):
    """An infinity or a NaN in the inputs: every head runs through the golden model."""
    rng = np.random.default_rng(6)
    q, k, v = _random(rng, 3, 10)
    v[1, 3, 5] = _bits(np.inf)
    got = _check(acc, 0.125, q, k, v, (4, 3, 3), (2, 2, 2), 16)
    assert got["fallback"] == [0, 1, 2]
    k[2, 0, 0] = _bits(np.nan)
    _check(acc, 0.125, q, k, v, (4, 3, 3), (2, 2, 2), 16)


def test_accumulator_overflow_falls_back():
    """fp16 O overflowing inside a tile (large V): that head runs through the golden model, the
    others stay on the fast path."""
    rng = np.random.default_rng(8)
    q, k, v = _random(rng, 3, 16)
    k[1] = 0                          # equal scores: every p is 1
    v[1] = _bits(np.full((16, 64), 30000.0))
    got = _check(FP16, 0.125, q, k, v, (16, 0, 0), (1, 1, 1), 16)
    assert got["fallback"] == [1]


def test_token_sets_follow_the_golden_spread():
    """PU token sets: contiguous, tier after tier, even over the PUs (the first get the rest)."""
    assert pu_token_sets((5, 0, 2), (2, 1, 4)) == [[(0, 3), (3, 2)], [(5, 0)],
                                                   [(5, 1), (6, 1), (7, 0), (7, 0)]]


def test_counts_must_cover_the_tokens():
    rng = np.random.default_rng(9)
    with pytest.raises(ValueError, match="do not add up"):
        system_attention_heads(FP16, 0.125, *_random(rng, 1, 6), (3, 2, 0), (1, 1, 1))
