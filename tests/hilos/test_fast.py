"""The vectorized HILOS kernel model equals the golden one (``hilos_group`` per KV head) bit for
bit: the golden model is the one the RTL benches check, so the equality carries over."""
import numpy as np
import pytest

from pimforge.base.formats import FP16, FP32
from pimforge.base.numerics import float_bits
from pimforge.sim.golden.hilos.attention import hilos_group
from pimforge.sim.golden.hilos.fast import greater, hilos_groups, tree_max


def _inputs(seed, hkv, g, d, n_k, c, spread=1.0, score_fmt=FP32, zeros=False):
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((hkv, g, d)) * spread
    k = rng.standard_normal((hkv, n_k, d)) * spread
    v = rng.standard_normal((hkv, n_k + c, d))
    if zeros:
        # whole zero rows and signed zeros among the values
        q[0, 0] = 0.0
        k[:, ::3] = -0.0
        v[:, ::4, ::2] = -0.0
    pre = None
    if c:
        p = rng.standard_normal((hkv, g, c)) * 4 * spread
        if zeros:
            p[:, :, ::2] = np.where(rng.random((hkv, g, (c + 1) // 2)) < 0.5, -0.0, 0.0)
        pre = float_bits(score_fmt, p)
    return (float_bits(FP16, q), float_bits(FP16, k), float_bits(FP16, v), pre)


def _golden(q16, k16, v16, block, mask, scale, score_fmt, pre):
    out = []
    for h in range(len(q16)):
        out.append(hilos_group(q16[h], k16[h], v16[h], block, None if mask is None else mask[h],
                               scale, score_fmt, pre=None if pre is None else pre[h]))
    return out


def _check(res, gold):
    for h, g in enumerate(gold):
        for key in ("O", "s", "y"):
            assert np.array_equal(res[key][h], g[key]), (key, h)
        assert [int(x) for x in res["m"][h]] == [int(x) for x in g["m"]], ("m", h)
        assert [int(x) for x in res["Z"][h]] == [int(x) for x in g["Z"]], ("Z", h)
        assert list(res["segments"]) == list(g["segments"])


# (hkv, d_group, d, n_k, precomputed, block, score format, masked fraction, spread, zeros)
CASES = [
    (3, 3, 64, 20, 0, 32, FP32, 0.0, 1.0, False),        # one short block, nothing precomputed
    (3, 3, 64, 45, 0, 32, FP32, 0.0, 1.0, False),        # n_k not a multiple of the block
    (3, 3, 64, 45, 1, 32, FP32, 0.0, 1.0, False),        # one precomputed token
    (3, 3, 64, 37, 16, 32, FP16, 0.0, 1.0, False),       # fp16 scores, the spill interval's c
    (3, 3, 64, 70, 40, 32, FP32, 0.0, 1.0, False),       # the precomputed segment spans blocks
    (3, 3, 64, 50, 7, 64, FP32, 0.3, 1.0, False),        # masked tokens, per head
    (3, 3, 64, 50, 7, 64, FP16, 0.3, 2.0, False),        # masks with fp16 scores, wider scores
    (3, 3, 64, 30, 5, 32, FP32, 0.0, 1.0, True),         # zero rows, signed zeros in pre and V
    (3, 3, 64, 30, 5, 32, FP16, 0.0, 1.0, True),
    (2, 4, 128, 33, 3, 128, FP32, 0.1, 1.5, False),      # d 128, another d_group
    (1, 1, 64, 9, 0, 32, FP16, 0.0, 3.0, False),         # d_group 1, large scores in fp16
    (3, 3, 64, 112, 16, 128, FP32, 0.0, 1.0, False),     # the LLM's shape at a 128 context
]


@pytest.mark.parametrize("case", CASES, ids=[f"c{i}" for i in range(len(CASES))])
def test_fast_equals_golden(case):
    hkv, g, d, n_k, c, block, fmt, masked, spread, zeros = case
    seed = CASES.index(case)
    q16, k16, v16, pre = _inputs(seed, hkv, g, d, n_k, c, spread, fmt, zeros)
    mask = None
    if masked:
        mask = np.random.default_rng(100 + seed).random((hkv, n_k + c)) < masked
    scale = 1.0 / np.sqrt(d)
    res = hilos_groups(q16, k16, v16, block, mask, scale, fmt, pre=pre)
    assert res["fast"]
    _check(res, _golden(q16, k16, v16, block, mask, scale, fmt, pre))


def test_one_mask_for_every_head():
    """A (n,) mask applies to every head, as ``hilos_group``'s mask does to its job."""
    q16, k16, v16, pre = _inputs(7, 3, 3, 64, 25, 4)
    mask = np.zeros(29, dtype=bool)
    mask[[0, 5, 27]] = True
    res = hilos_groups(q16, k16, v16, 32, mask, 0.125, FP32, pre=pre)
    _check(res, _golden(q16, k16, v16, 32, np.broadcast_to(mask, (3, 29)), 0.125, FP32, pre))


def test_negative_precomputed_block():
    """Blocks whose scores are all negative (q > 0, k < 0, negative host scores): each max
    comes from the scores, not the padding (a short block is padded with -inf for the max
    tree)."""
    q16, k16, v16, _ = _inputs(9, 3, 3, 64, 40, 5)
    q16, k16 = q16 & 0x7FFF, k16 | 0x8000
    pre = float_bits(FP32, -np.abs(np.random.default_rng(9).standard_normal((3, 3, 5))) - 1.0)
    res = hilos_groups(q16, k16, v16, 32, None, 0.125, FP32, pre=pre)
    _check(res, _golden(q16, k16, v16, 32, None, 0.125, FP32, pre))


def test_fp16_score_overflow_falls_back():
    """Scores beyond fp16's range become inf in the score format: the golden model runs."""
    q16, k16, v16, pre = _inputs(3, 3, 3, 64, 12, 0, spread=100.0, score_fmt=FP16)
    res = hilos_groups(q16, k16, v16, 32, None, 1.0, FP16)
    assert not res["fast"]
    _check(res, _golden(q16, k16, v16, 32, None, 1.0, FP16, None))


def test_non_finite_input_falls_back():
    q16, k16, v16, pre = _inputs(4, 3, 3, 64, 12, 2)
    v16 = v16.copy()
    v16[1, 3, 5] = 0x7C00           # +inf
    res = hilos_groups(q16, k16, v16, 32, None, 0.125, FP32, pre=pre)
    assert not res["fast"]
    _check(res, _golden(q16, k16, v16, 32, None, 0.125, FP32, pre))


def test_comparator_orders_signed_zeros():
    """-0 is below +0 for the max tree (the units' comparator), whichever side it is on."""
    z = np.array([-0.0, 0.0], dtype=np.float32)
    assert greater(z[1:], z[:1])[0] and not greater(z[:1], z[1:])[0]
    for row in ([-0.0, 0.0], [0.0, -0.0]):
        m = tree_max(np.array([row], dtype=np.float32))[0]
        assert m == 0 and not np.signbit(m)
