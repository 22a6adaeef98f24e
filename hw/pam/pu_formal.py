"""Formal environment of ``pam_pu``: its K/V job format (``FormalTop``'s ``extra``).

``pam_pu`` takes a token set as (:mod:`pimforge.hw.pam.pu`, ``pu_beats`` in
:mod:`pimforge.sim.benches.pam.beats`): the query in B beats on ``i_q``, then on ``i_kv`` per tile
of up to T tokens its K rows, then its V rows, B beats a row, ``last`` on the set's final V beat;
only a set's last tile may have fewer than T tokens.  The unit relies on this format and does
not check it: a tile ends at the first V beat after K beats, and its descriptor (row max, score
count) enters the two-entry tile FIFO once the tile's scores are through the score path.

Under the stream rules alone (any K/V sequence), a bmc finds ``tile_fifo_no_overflow`` failing at
step 48 (``lanes=2, head_dim=64, tile_tokens=1, op_depth=1``): the input alternates single K and
V beats, so every V beat ends a "tile" with no whole K row and no score (count 0); the P
sequencer takes the first such descriptor and, with a count of 0, never finishes it
(``pseq_j == pseq_n - 1`` is never true), so the next descriptors fill the FIFO and the third is
written into a full FIFO.  No legal job does this (a tile needs whole K rows before its first V
beat), so the format is assumed here, as the environment's contract:

* a K beat only before the tile's first V beat, at most T rows (T * B beats) per tile, and not
  ``last``;
* a V beat only after whole K rows (a multiple of B K beats, at least one row) and only as many
  V beats as K beats;
* ``last`` exactly on a tile's final V beat when the tile is short (fewer than T rows), and
  only on a tile's final V beat otherwise; after a tile's final V beat the next tile begins.
"""
from __future__ import annotations

from amaranth.hdl import Assume, Signal

__all__ = ["pu_environment"]


def pu_environment(m, dut, dut_module, ports, active) -> None:
    """The job-format assumptions of the module docstring, on ``ports.i_kv``."""
    cfg = dut.cfg
    B, T = cfg.beats, cfg.tile_tokens
    kv = ports.i_kv
    tile = T * B
    k_cnt = Signal(range(tile + 1), name="env_tile_k_beats")
    v_cnt = Signal(range(tile + 1), name="env_tile_v_beats")
    is_v, last = kv.payload.is_v, kv.payload.last
    row_bits = (B - 1).bit_length()              # B is a power of two (head_dim / lanes)
    whole_rows = (k_cnt[:row_bits] == 0) if row_bits else True
    tile_final = v_cnt + 1 == k_cnt
    with m.If(kv.valid & ~is_v):
        m.d.comb += Assume((v_cnt == 0) & (k_cnt < tile) & ~last, "env_k_rows_before_v_rows")
    with m.If(kv.valid & is_v):
        m.d.comb += [Assume((k_cnt != 0) & whole_rows & (v_cnt < k_cnt),
                            "env_v_rows_follow_whole_k_rows"),
                     Assume(~last | tile_final, "env_last_on_a_tile_final_v_beat"),
                     Assume(~(tile_final & (k_cnt < tile)) | last,
                            "env_short_tile_ends_the_set")]
    with m.If(kv.valid & kv.ready):
        with m.If(~is_v):
            m.d.sync += k_cnt.eq(k_cnt + 1)
        with m.Elif(tile_final):
            m.d.sync += [k_cnt.eq(0), v_cnt.eq(0)]
        with m.Else():
            m.d.sync += v_cnt.eq(v_cnt + 1)
