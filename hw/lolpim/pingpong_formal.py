"""Input-side response of ``lolpim_pingpong`` (:mod:`pimforge.hw.lolpim.pingpong`), a job unit.

What a tile owes, kept in shadow registers from its command (``i_mac``): the last bank beat on
``i_bank`` of a tile with ``drain`` (its ``last_step + 1``-th beat) owes one output beat on ``o``
(RD-MAC of the accumulation it ends).  Its latency is the cycle model's
(:func:`~pimforge.hw.lolpim.pingpong_timing.schedule`): the last bank beat to the output of a
lone drained tile, plus the bus engine's time for a full WR-GB that began just before the result
was ready, plus, with ping-pong, the drain of the other output-register set ahead of it.

Contract: while a drain is owed, a WR-GB the bus engine has taken gets its beats on ``i_gb``
without a gap (the one data bus waits for them, and a drain queued behind a load the host never
feeds would wait for ever); a trace where the host holds them back, sends a bank beat outside a
tile, or sends a command out of range voids the check.  A tile that waits for more bank beats
than its command says never drains: its output is never sent.
"""
from __future__ import annotations

from amaranth.hdl import Signal

from pimforge.hw.core.formal import Owed, Response
from pimforge.hw.lolpim.aim import GDDR6
from pimforge.hw.lolpim.config import PingpongConfig
from pimforge.hw.lolpim.pingpong_timing import Tile, pingpong_timing, schedule

__all__ = ["drain_latency", "pingpong_response"]


def drain_latency(cfg: PingpongConfig) -> int:
    """Cycles from a drained tile's last bank beat to its output beat, the most the bus engine
    can make it wait (module docstring)."""
    n = cfg.gb_beats
    s = schedule(cfg, [n], [Tile(1)], GDDR6)
    lone = s["o"][0] - s["bank_last"][0]
    load = s["gb"][-1] + 1 - s["ld"][0]          # the bus engine's time for a full WR-GB
    drain = lone - pingpong_timing(cfg)["done"] + 1   # a drain's wait, its beat, the bus freed
    return lone + load + (cfg.sets - 1) * drain


def pingpong_response(cfg: PingpongConfig) -> Response:
    """One output per drained tile's last bank beat (module docstring)."""
    lat = drain_latency(cfg)
    n = cfg.gb_beats

    def owed(m, ports):
        ld, gb, mac, bank, o = ports.i_ld, ports.i_gb, ports.i_mac, ports.i_bank, ports.o
        p = mac.payload
        bits = 12
        tile = Signal(name="resp_tile_open")
        last = Signal(len(p.last_step), name="resp_tile_last")
        drain = Signal(name="resp_tile_drain")
        k = Signal(len(p.last_step) + 1, name="resp_tile_step")
        gb_owed = Signal(bits, name="resp_gb_owed")
        drains = Signal(bits, name="resp_drains_pending")
        take_mac, take_bank = mac.valid & mac.ready, bank.valid & bank.ready
        take_ld, take_gb = ld.valid & ld.ready, gb.valid & gb.ready
        take_o = o.valid & o.ready
        tile_end = take_bank & tile & (k == last)
        answered = tile_end & drain
        with m.If(take_mac):
            m.d.sync += [tile.eq(1), last.eq(p.last_step), drain.eq(p.drain), k.eq(0)]
        with m.Elif(take_bank):
            m.d.sync += k.eq(k + 1)
            with m.If(tile_end):
                m.d.sync += tile.eq(0)
        m.d.sync += [gb_owed.eq(gb_owed + (ld.payload.last_beat + 1) * take_ld - take_gb),
                     drains.eq(drains + answered - take_o)]
        lazy_gb = (drains != 0) & (gb_owed != 0) & ~gb.valid
        stray = take_bank & ~tile
        wide = (take_mac & (p.last_step >= n)) | (take_ld & (ld.payload.last_beat >= n))
        return [Owed(answered, lat)], ~(lazy_gb | stray | wide)
    return Response("o", owed)
