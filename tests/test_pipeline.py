"""Register placement of :mod:`pimforge.hw.core.pipeline` (pure Python, no simulation): the
balanced cuts, and a stage whose register changes its cost (a ROM read that a block RAM
absorbs, issue 19)."""
from pimforge.hw.core.pipeline import levels, register_positions, segment_levels


def _stage(n, cut=None):
    @levels(n, cut=cut)
    def st(m, v):
        return v
    return st


def test_plain_levels_balance_the_deepest_segment():
    assert register_positions([4, 4, 4, 4], 1) == [0, 1, 0, 0]
    assert segment_levels([4, 4, 4, 4], 1) == [8, 8]
    # registers beyond the stage gaps go after the last stage, with empty segments
    assert register_positions([3, 5], 3) == [1, 2]
    assert segment_levels([3, 5], 3) == [3, 5, 0, 0]


def test_cut_levels_move_a_rom_read_into_the_next_segment():
    # a 20-level ROM as logic; registered, 2 levels of address before and 14 after the cut
    stages = [_stage(6), _stage(20, cut=(2, 14)), _stage(0), _stage(6)]
    # with no register after the ROM it counts in full
    assert segment_levels(stages, 0) == [32]
    # one register: after the ROM (6 + 2 | 14 + 0 + 6), not after the first stage (6 | 26)
    assert register_positions(stages, 1) == [0, 1, 0, 0]
    assert segment_levels(stages, 1) == [8, 20]
    # two: the second takes the RAM's output before any logic
    assert register_positions(stages, 2) == [0, 1, 1, 0]
    assert segment_levels(stages, 2) == [8, 14, 6]
