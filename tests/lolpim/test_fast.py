"""The vectorized ping-pong PU model (sim/golden/lolpim/fast.py) against the golden model
(sim/golden/lolpim/pingpong.py, itself checked against the RTL by the unit's bench), bit for bit:
random programs (accumulations over several tiles and GB sets), AiM GEMV kernels of the shapes
SmolLM2 gives one channel, values chosen to hit the rounding's corners (signed zeros,
subnormals, products that underflow, cancellation), non-finite inputs (the fallback), a GB per
bank and a module of several channels side by side."""
import numpy as np
import pytest

from pimforge.base.formats import BF16, FP32
from pimforge.hw.lolpim.config import PingpongConfig, pingpong_preset
from pimforge.hw.lolpim.pingpong_timing import Tile
from pimforge.sim.benches.lolpim.pingpong import Program, bf16, kernel_program, random_program
from pimforge.sim.golden.lolpim import fast
from pimforge.sim.golden.lolpim import pingpong as golden
from pimforge.sim.golden.pam.common import convert

CONFIGS = [PingpongConfig(), pingpong_preset("aim"),
           PingpongConfig(banks=4, lanes=8, gb_elems=64, partials=4, op_depth=2),
           PingpongConfig(banks=8, lanes=4, gb_elems=32, partials=8)]


def _same(cfg, prog):
    want = golden.run_program(cfg, prog.loads, prog.tiles, prog.bank)
    got = fast.run_program(cfg, prog.loads, prog.tiles, prog.bank)
    assert got.dtype == want.dtype and np.array_equal(got, want)
    return want


def _fast_path_taken(cfg, prog):
    """The program's values are finite and so are its partials: the fast path answered."""
    lm = [fast.lane_major(fast.bf16_values(x)) for x in prog.loads]
    bm = [fast.lane_major(np.swapaxes(fast.bf16_values(x), 0, 1)) for x in prog.bank]
    return fast.run_values(cfg.partials, lm, prog.tiles, bm)[1]


def _wide(rng, prog):
    """The program's values spread over 2**-24 .. 2**24: bf16 products of 16 bits then round
    in fp32 sums, so every order of addition shows (values of one scale mostly add exactly)."""
    def spread(a):
        return bf16(fast.bf16_values(a).astype(np.float64) * 2.0 ** rng.integers(-24, 25, a.shape))
    return Program([spread(x) for x in prog.loads], prog.tiles, [spread(x) for x in prog.bank])


@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: f"b{c.banks}l{c.lanes}q{c.partials}")
def test_random_programs(cfg):
    rng = np.random.default_rng(cfg.banks * 100 + cfg.lanes)
    big = cfg.banks * cfg.lanes > 64          # the golden model is slow on AiM's 256 MACs
    for _ in range(4 if big else 15):
        prog = random_program(cfg, rng, chunks=int(rng.integers(1, 4 if big else 6)))
        for p in (prog, _wide(rng, prog)):
            _same(cfg, p)
            assert _fast_path_taken(cfg, p)


# corner values as bf16 bits: signed zeros, the smallest and largest subnormals, the smallest
# normal, values whose products underflow fp32 or lose bits to subnormals, 1 and -1 for exact
# cancellation, large values whose products stay finite
CORNERS = np.array([0x0000, 0x8000, 0x0001, 0x8001, 0x007F, 0x807F, 0x0080, 0x8080,
                    0x1F80, 0x9F80, 0x2000, 0x3F80, 0xBF80, 0x3F81, 0xBF81, 0x4F00, 0xCF00,
                    0x4000, 0xC000, 0x1000, 0x0F00], np.int64)


def _corner_program(cfg, rng, chunks=4):
    prog = random_program(cfg, rng, chunks=chunks)

    def pick(a):
        return np.where(rng.random(a.shape) < 0.7, rng.choice(CORNERS, a.shape), a)
    return Program([pick(x) for x in prog.loads], prog.tiles, [pick(x) for x in prog.bank])


@pytest.mark.parametrize("cfg", CONFIGS[:3], ids=lambda c: f"b{c.banks}l{c.lanes}q{c.partials}")
def test_corner_values(cfg):
    rng = np.random.default_rng(7)
    n = 6 if cfg.banks * cfg.lanes > 64 else 30
    fast_taken = 0
    for _ in range(n):
        prog = _corner_program(cfg, rng, chunks=2 if n == 6 else 4)
        _same(cfg, prog)
        fast_taken += _fast_path_taken(cfg, prog)
    assert fast_taken >= n // 2      # most corner programs stay finite: the fast path is tested


def _cancelling(rng, prog):
    """GB beats of ones and bank columns of small integers (|x| <= 64) where, per bank and
    step, two lanes hold +2**24 and -2**24 (half the time) or one lane holds +-2**24 (30 %):
    the exact sums are small, and any other order of additions (lanes or steps) rounds a small
    term away against 2**24 and shows in the bf16 output (ordinary values rarely do: bf16
    hides most last-bit differences of fp32 sums)."""
    def columns(a):
        v = rng.integers(-64, 65, a.shape).astype(np.float64)
        L = a.shape[-1]
        r = rng.random(a.shape[:-1])[..., None]
        i = rng.integers(L, size=a.shape[:-1])[..., None]
        j = (i + rng.integers(1, L, size=i.shape)) % L
        big = np.where(rng.random(i.shape) < 0.5, 2.0 ** 24, -2.0 ** 24)
        np.put_along_axis(v, i, np.where(r < 0.5, 2.0 ** 24, np.where(
            r < 0.8, big, np.take_along_axis(v, i, -1))), -1)
        np.put_along_axis(v, j, np.where(r < 0.5, -2.0 ** 24, np.take_along_axis(v, j, -1)), -1)
        return bf16(v)
    return Program([bf16(np.ones(x.shape)) for x in prog.loads], prog.tiles,
                   [columns(x) for x in prog.bank])


@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: f"b{c.banks}l{c.lanes}q{c.partials}")
def test_order_of_additions(cfg):
    rng = np.random.default_rng(cfg.lanes + 3)
    for _ in range(4 if cfg.banks * cfg.lanes > 64 else 12):
        prog = _cancelling(rng, random_program(cfg, rng, chunks=3))
        _same(cfg, prog)
        assert _fast_path_taken(cfg, prog)


def test_signed_zeros():
    """Partials start at +0: steps of -0 products leave them +0; exact cancellation is +0."""
    cfg = PingpongConfig(banks=2, lanes=2, gb_elems=4)
    load = np.array([[0x3F80, 0x3F80], [0x3F80, 0x3F80]])
    # bank 0: every product -0 (both steps' sums -0); bank 1: 1 - 1 = +0, then -0
    bank = [np.array([[[0x8000, 0x8000], [0x3F80, 0xBF80]],
                      [[0x8000, 0x8000], [0x8000, 0x8000]]])]
    prog = Program([load], [Tile(2)], bank)
    assert list(_same(cfg, prog)[0]) == [0x0000, 0x0000]
    assert _fast_path_taken(cfg, prog)


def test_non_finite_inputs_fall_back():
    cfg = PingpongConfig()
    rng = np.random.default_rng(3)
    for _ in range(10):
        _same(cfg, random_program(cfg, rng, chunks=3, kind="extreme"))
    # finite inputs whose products overflow fp32: the partials are not finite, the golden answers
    load = np.full((2, 2), 0x7F00)
    prog = Program([load], [Tile(2)], [np.full((2, 2, 2), 0x7F00)])
    assert not _fast_path_taken(cfg, prog)
    assert _same(cfg, prog)[0, 0] == 0x7F80           # +inf


@pytest.mark.parametrize("rows, cols", [(36, 576), (12, 576), (16, 64), (16, 256), (40, 1536)])
def test_llm_kernels(rows, cols):
    """One channel's share of SmolLM2's GEMVs (Q/O: 576 rows over 16 channels; K/V: 192;
    FFN down: 1,536 columns, two GB chunks), QK^T (16 tokens x 64) and SV (64 x 256)."""
    cfg = pingpong_preset("aim")
    prog, _, _ = kernel_program(cfg, np.random.default_rng(rows + cols), rows, cols)
    _same(cfg, prog)


def test_module_of_channels_and_a_gb_per_bank():
    """Several channels side by side, each with its own GB (the SV passes), equal the golden
    model run on each channel alone."""
    cfg = PingpongConfig(banks=4, lanes=4, gb_elems=32)
    rng = np.random.default_rng(11)
    base = random_program(cfg, rng, chunks=4)
    chans = [Program([bf16(rng.standard_normal(x.shape)) for x in base.loads], base.tiles,
                     [bf16(rng.standard_normal(x.shape)) for x in base.bank]) for _ in range(3)]
    loads = [np.repeat(np.stack([c.loads[i] for c in chans], 1), cfg.banks, axis=1)
             for i in range(len(base.loads))]
    bank = [np.concatenate([c.bank[i] for c in chans], axis=1) for i in range(len(base.tiles))]
    got = fast.run_program(cfg, loads, base.tiles, bank)
    for k, c in enumerate(chans):
        want = golden.run_program(cfg, c.loads, c.tiles, c.bank)
        assert np.array_equal(got[:, k * cfg.banks:(k + 1) * cfg.banks], want), k


def test_bf16_rounding_and_lane_order():
    rng = np.random.default_rng(5)
    bits = np.concatenate([rng.integers(0, 0x7F800000, 20000), rng.integers(0, 0x800000, 2000),
                           [0, 0x7F7FFFFF, 0x7F7F8000, 0x7F7F7FFF, 0x00008000, 0x00018000,
                            0x3F808000, 0x3F818000]]).astype(np.int64)
    bits = np.concatenate([bits, bits | 0x80000000])
    x = bits.astype(np.uint32).view(np.float32)
    want = convert(FP32, BF16, bits)
    assert np.array_equal(fast.bf16_bits(fast.bf16_round(x)), want)
    assert np.array_equal(fast.bf16_bits(fast.bf16_values(want)), want)
    for lanes in (2, 4, 8, 16):
        p = fast.lane_order(lanes)
        assert sorted(p) == list(range(lanes)) and np.array_equal(p[p], np.arange(lanes))
    assert list(fast.lane_order(8)) == [0, 4, 2, 6, 1, 5, 3, 7]
