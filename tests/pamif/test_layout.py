"""PAM interface data: the tier descriptors against Table 1, the §6.1 slot mapping against an
independent per-token walk, the golden re-layout against a word-level reference, the list
checks and their one-line errors, and the read order's properties (PAM §6.1, §6.2)."""
import numpy as np
import pytest

from pimforge.base.errors import UserError
from pimforge.hw.pamif.config import STATUS, PamifConfig, pair_preset
from pimforge.hw.pamif.layout import SMALL_TIERS, TIERS, side_bandwidth, slot_address, tier
from pimforge.hw.pamif.migration import list_error, read_order, validate_migration
from pimforge.sim.golden.pamif.relayout import (
    image_words, list_status, random_image, random_list, relayout, words_image
)

SMALL = [(a, b) for a in SMALL_TIERS for b in SMALL_TIERS if a != b]


def test_table1_values():
    h, d, s = TIERS["hbm3"], TIERS["ddr4"], TIERS["ssd"]
    assert (h.tRP, h.tRCD, h.tBL, h.tCCD_S, h.tCCD_L, h.tWR) == (19, 19, 4, 2, 4, 21)
    assert (h.groups, h.banks, h.word_bits) == (4, 4, 256)
    assert (d.tRCD, d.tCL, d.tRP, d.tBL, d.tCCD_S, d.tCCD_L) == (24, 24, 24, 4, 4, 8)
    assert (d.groups, d.banks, d.word_bits, d.tck_ps) == (2, 4, 256, 625)
    assert (s.banks, s.row_bytes, s.tR_ns) == (4, 16384, 30000)
    # 5.2 Gbps x 32 bits = 20.8 GB/s per pseudo-channel; DDR4-3200 x 64 bits = 25.6 GB/s
    assert h.mem_read_bw() == pytest.approx(20.8, rel=2e-3)
    assert d.mem_read_bw() == pytest.approx(25.6)
    # SSD reads: 4 dies x 16 KB per 30 us = 2.18 GB/s (under the 2.4 GB/s channel)
    assert s.mem_read_bw() == pytest.approx(4 * 16384 / 30000)
    # the 256-bit DDR port (32 GB/s at 1 GHz) keeps up with DDR4 itself: the memory binds
    assert side_bandwidth(d, "write") == pytest.approx(25.6)
    assert side_bandwidth(s, "read") == pytest.approx(4 * 16384 / 30000)


@pytest.mark.parametrize("name", list(TIERS) + list(SMALL_TIERS))
def test_slot_mapping_follows_6_1(name):
    """Walk the slots of one group in order: banks first, then aligned columns, then rows;
    every slot gets a distinct token-sized, token-aligned place."""
    t = tier(name)
    tb = 512 if name in TIERS else 8
    tw, tpr, spg = t.token_words(tb), t.tokens_per_row(tb), t.slots_per_group(tb)
    n = min(t.slots(tb), 4096)
    seen = set()
    for slot in range(0, n, max(1, n // 512)):
        g, idx = divmod(slot, spg)
        bank, pos = idx % t.banks, idx // t.banks
        want = ((g * t.banks + bank) * t.rows + pos // tpr) * t.row_words + pos % tpr * tw
        assert slot_address(t, tb, slot) == want
        assert want % tw == 0 and want not in seen
        seen.add(want)
    # consecutive slots of a group go to different banks at the same row and column
    a0, a1 = slot_address(t, tb, 0), slot_address(t, tb, 1)
    assert a1 - a0 == t.rows * t.row_words


@pytest.mark.parametrize("src,dst", SMALL)
def test_golden_relayout_against_word_reference(src, dst):
    """Word-level reference: each destination word is the concatenation (or a slice) of the
    source words of the same token bits; the rest of the destination stays zero."""
    cfg = PamifConfig(src=src, dst=dst)
    rng = np.random.default_rng(3)
    entries = random_list(rng, cfg, 12)
    image = random_image(rng, cfg.src_tier)
    got = image_words(relayout(cfg, image, entries), cfg.dst_tier.word_bytes)
    sw = image_words(image, cfg.src_tier.word_bytes)
    ws, wd = cfg.src_tier.word_bits, cfg.dst_tier.word_bits
    want = [0] * len(got)
    for _, s, d in entries:
        bits = 0
        for k in range(cfg.src_words):
            bits |= sw[slot_address(cfg.src_tier, 8, s) + k] << (k * ws)
        for k in range(cfg.dst_words):
            want[slot_address(cfg.dst_tier, 8, d) + k] = (bits >> (k * wd)) & ((1 << wd) - 1)
    assert got == want
    assert words_image(got, cfg.dst_tier.word_bytes).tobytes() == \
        relayout(cfg, image, entries).tobytes()


def test_list_checks_and_codes():
    cfg = PamifConfig()
    ok = [(1, 2, 3), (4, 5, 6)]
    assert list_status(cfg, ok) == (0, 2)
    cases = [([(64, 0, 0)], "token_range", 0), ([(1, 0, 0), (2, 32, 1)], "src_range", 1),
             ([(1, 0, 32)], "dst_range", 0), ([(1, 0, 7)], "dst_occupied", 0),
             ([(1, 0, 0), (2, 1, 0)], "dst_occupied", 1),
             ([(1, 0, 0), (1, 1, 1)], "duplicate_token", 1),
             ([(k, k, 8 + k) for k in range(17)], "too_long", 16),
             # the first error wins, within an entry too: range before occupancy
             ([(70, 0, 7), (1, 40, 0)], "token_range", 0)]
    for entries, code, idx in cases:
        assert list_status(cfg, entries, occupied={7}) == (STATUS[code], idx), (entries, code)


def test_validate_migration_messages():
    cfg = PamifConfig()
    validate_migration(cfg, [(1, 2, 3)])
    with pytest.raises(UserError, match=r"^migration list: entry 1: field 'dst_slot': got 40; "
                                        r"allowed: 0 <= dst_slot < 32$"):
        validate_migration(cfg, [(1, 2, 3), (2, 3, 40)])
    with pytest.raises(UserError, match=r"entry 0: field 'dst_slot': got 9; allowed: a free "):
        validate_migration(cfg, [(1, 2, 9)], occupied=[9])
    with pytest.raises(UserError, match=r"entry 1: field 'token': got 1; allowed: each token "
                                        r"once"):
        validate_migration(cfg, [(1, 2, 3), (1, 4, 5)])
    with pytest.raises(UserError, match=r"^migration list: 17 entries; allowed: at most "
                                        r"capacity = 16 entries$"):
        validate_migration(cfg, [(k, k, k) for k in range(17)])
    with pytest.raises(UserError, match="field 'src_slot': got 99; allowed: 0 <= src_slot < 32"):
        validate_migration(cfg, [(1, 99, 3)])


def test_read_order_interleaves_groups_and_keeps_tokens_whole():
    cfg = pair_preset("hbm3_to_ddr4")
    entries = [(j, j, j) for j in range(64)]          # slot j: group j % 4... of the §6.1 walk
    order = read_order(cfg, entries)
    assert sorted(order) == [(j, w) for j in range(64) for w in range(cfg.src_words)]
    spg = cfg.src_tier.slots_per_group(cfg.token_bytes)
    groups = [entries[j][1] // spg for j, _ in order]
    # each entry's words in order; consecutive reads change group whenever two have work
    for j in range(64):
        assert [w for e, w in order if e == j] == list(range(cfg.src_words))
    assert all(a != b for a, b in zip(groups, groups[1:]) if len(set(groups)) > 1) or \
        len(set(groups)) == 1


def test_read_order_window_and_spread():
    """Entries spread over the four HBM bank groups read round-robin, one word each; the window
    keeps every read within ``regions`` entries of the oldest unfinished one."""
    cfg = pair_preset("hbm3_to_ddr4")
    spg = cfg.src_tier.slots_per_group(cfg.token_bytes)
    entries = [(j, (j % 4) * spg + j // 4, j) for j in range(40)]
    order = read_order(cfg, entries)
    assert [entries[j][1] // spg for j, _ in order[:8]] == [0, 1, 2, 3, 0, 1, 2, 3]
    done, pending = set(), set(range(40))
    for j, w in order:
        assert j < min(pending) + cfg.regions
        if w == cfg.src_words - 1:
            pending.discard(j)
            done.add(j)
    # one group's entries only: the window still lets the list through, token by token
    one = [(j, j * 4, j) for j in range(20)]
    assert read_order(cfg, one) == [(j, w) for j in range(20) for w in range(cfg.src_words)]
    assert list_error(cfg, one) is None
