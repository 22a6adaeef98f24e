"""The HILOS golden kernel against float64 attention, and masking."""
import numpy as np
import pytest

from pimforge.base import numerics as num
from pimforge.base.formats import FP16
from pimforge.sim.benches.pam.inputs import make_inputs
from pimforge.sim.golden.hilos import attention as h_att
from pimforge.sim.golden.pam import system as g_sys


def _bits(x):
    return num.float_bits(FP16, np.asarray(x, dtype=np.float64))


@pytest.mark.parametrize("kind", ["normal", "heavy", "dominant", "equal"])
@pytest.mark.parametrize("n", [1, 127, 128, 129, 1024])
def test_against_float64(kind, n):
    q, k, v = make_inputs(kind, 1, n, 64, np.random.default_rng(n))
    o = num.bits_float(FP16, h_att.hilos_attention(_bits(q[0]), _bits(k[0]), _bits(v[0])))
    f = [x[0].astype(np.float64) for x in (q, k, v)]
    ref = g_sys.attention_f64(*f, 1 / 8)
    assert np.abs(o - ref).max() / np.abs(ref).max() <= 1e-3


def test_masked_positions_do_not_matter():
    """Changing the K and V rows of masked tokens (even to Inf/NaN) leaves O bit-identical."""
    rng = np.random.default_rng(4)
    q, k, v = make_inputs("normal", 1, 300, 64, rng)
    mask = rng.random(300) < 0.3
    a = h_att.hilos_attention(_bits(q[0]), _bits(k[0]), _bits(v[0]), mask=mask)
    k2, v2 = k[0].astype(np.float64), v[0].astype(np.float64)
    k2[mask] = rng.standard_normal((mask.sum(), 64)) * 100
    v2[mask] = np.inf
    b = h_att.hilos_attention(_bits(q[0]), _bits(k2), _bits(v2), mask=mask)
    assert np.array_equal(a, b)


def test_short_block_of_large_negative_scores():
    """Five tokens whose scores (q k / 8) lie between -700 and -500, far apart: a short block
    padded to 128 with -inf gives O = the top token's V row, as float64 does (a padding of 0
    would make exp(600) overflow, and O NaN)."""
    rng = np.random.default_rng(9)
    q = rng.standard_normal(64)
    q = q / np.linalg.norm(q) * 8.0                   # |q|^2 = 64, so k = -c q scores -8 c
    c = np.array([62.5, 75.0, 87.5, 68.75, 81.25])    # scores -500 .. -700
    k = -c[:, None] * q[None, :]
    v = rng.standard_normal((5, 64))
    qb, kb, vb = _bits(q), _bits(k), _bits(v)
    o = num.bits_float(FP16, h_att.hilos_attention(qb, kb, vb))
    f = [num.bits_float(FP16, x).astype(np.float64) for x in (qb, kb, vb)]
    ref = g_sys.attention_f64(*f, 1 / 8)
    assert np.all(np.isfinite(o))
    assert np.abs(o - ref).max() <= 1e-3 * np.abs(ref).max()
    np.testing.assert_allclose(ref, f[2][0], rtol=1e-12)   # the top token's V row, one-hot
