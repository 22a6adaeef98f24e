"""``pamif_receiver``: the PAM interface's address generation unit (PAM §6.2, Fig. 8d).

::

    i (drain: dst slot, word, data, last) ─► address of the word in the destination layout
        ─► o_wr (addr, data)

Each released region is one token; its words go to the destination layout's addresses
(:mod:`pimforge.hw.pamif.layout`, §6.1): ``Cat(word, column, row, bank, group)`` of the slot,
a bit permutation, so the unit is one register stage.  Consecutive regions are consecutive
list entries, which the scheduler places in different bank groups and banks (§6.1's
interleave), so the destination's write queue opens the next token's row while the current
one's words are written: the writes proceed in parallel over the destination's banks.

Latency one cycle, throughput one word per cycle.

Parameters
----------
cfg : PamifConfig
"""
from __future__ import annotations

from amaranth.hdl import Module
from amaranth.lib.wiring import In, Out

from pimforge.hw.core.component import PimComponent
from pimforge.hw.core.unit import HwUnit
from pimforge.hw.pamif.config import IF_CLOCK, SIM_PRESETS, PamifConfig
from pimforge.hw.pamif.receiver_formal import receiver_response
from pimforge.hw.pamif.receiver_timing import receiver_activity, receiver_cycles
from pimforge.hw.pamif.sender import slot_word_address
from pimforge.hw.pamif.streams import drain_signature, wr_signature

__all__ = ["PamifReceiver"]


class PamifReceiver(PimComponent):
    """The address generation unit (module docstring): ``i`` drain words in, ``o_wr`` out."""

    UNIT = "pamif_receiver"

    def __init__(self, cfg: PamifConfig):
        super().__init__(cfg, {"i": In(drain_signature(cfg)), "o_wr": Out(wr_signature(cfg))})

    @property
    def latency(self) -> int:
        return 1

    @property
    def throughput(self) -> float:
        return 1.0

    def elaborate(self, platform):
        m = Module()
        cfg = self.cfg
        i, o = self.i, self.o_wr
        m.d.comb += i.ready.eq(~o.valid | o.ready)
        with m.If(i.valid & i.ready):
            m.d.sync += [o.valid.eq(1), o.payload.data.eq(i.payload.data),
                         o.payload.addr.eq(slot_word_address(cfg.dst_tier, cfg.token_bytes,
                                                             i.payload.slot, i.payload.word))]
        with m.Elif(o.ready):
            m.d.sync += o.valid.eq(0)
        return m


UNITS = (HwUnit("pamif_receiver", "PAM interface address generation unit: released words to "
                "destination-layout write addresses (i -> o_wr)", PamifConfig, PamifReceiver,
                SIM_PRESETS, receiver_cycles, paper="PAM §6.2, Fig. 8d",
                clocks=dict.fromkeys(SIM_PRESETS, IF_CLOCK), response=receiver_response,
                activity=receiver_activity),)
