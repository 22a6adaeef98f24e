"""``pam_interface``: the PAM interface (PAM §6.2, Fig. 8d), the three units composed.

::

    i_cmd ─► pamif_sender ─► o_rd ──► (source memory) ──► i_rd ─► pamif_sender
                 │ o_fill                                            ▲ i_free
                 ▼                                                   │
             pamif_buffer ─── o (released regions) ─► pamif_receiver ─► o_wr ─► (destination)
                 └──────────────────── o_free ───────────────────────┘
    o_status ◄─ pamif_sender (error at once; OK once the receiver has written the last word)

A migration list arrives on ``i_cmd``; a bad list is answered on ``o_status`` with no memory
traffic; an accepted one is read from the source in the sender's order
(:func:`~pimforge.hw.pamif.migration.read_order`), re-laid out in the buffer, written to the
destination in list order at the destination layout's addresses, and answered with status 0 and the
entry count after the last write.  The bench plays both memories with the timing models of
:mod:`pimforge.hw.pamif.memory`; :mod:`pimforge.hw.pamif.interface_timing` is the exact cycle model.

Parameters
----------
cfg : PamifConfig
"""
from __future__ import annotations

from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from pimforge.hw.core.component import PimComponent
from pimforge.hw.core.unit import HwUnit
from pimforge.hw.pamif.buffer import PamifBuffer
from pimforge.hw.pamif.config import IF_CLOCK, PAIR_PRESETS, PamifConfig
from pimforge.hw.pamif.interface_timing import interface_activity, interface_cycles
from pimforge.hw.pamif.receiver import PamifReceiver
from pimforge.hw.pamif.sender import PamifSender
from pimforge.hw.pamif.streams import (
    cmd_signature, rd_signature, rdata_signature, status_signature, wr_signature
)

__all__ = ["PamInterface"]


class PamInterface(PimComponent):
    """The PAM interface (module docstring)."""

    UNIT = "pam_interface"

    def __init__(self, cfg: PamifConfig):
        super().__init__(cfg, {"i_cmd": In(cmd_signature(cfg)),
                               "o_status": Out(status_signature(cfg)),
                               "o_rd": Out(rd_signature(cfg)), "i_rd": In(rdata_signature(cfg)),
                               "o_wr": Out(wr_signature(cfg))})

    @property
    def latency(self) -> int:
        """Cycles from a read's answer completing a region to that region's first write, with
        nothing ahead of it: the buffer's 2 and the receiver's 1."""
        return 3

    @property
    def throughput(self) -> float:
        """Words per cycle on each memory port."""
        return 1.0

    def manifest(self) -> dict:
        man = super().manifest()
        man["buffer_bits"] = self.cfg.regions * self.cfg.token_bytes * 8
        return man

    def elaborate(self, platform):
        m = Module()
        cfg = self.cfg
        m.submodules.sender = snd = PamifSender(cfg)
        m.submodules.buffer = buf = PamifBuffer(cfg)
        m.submodules.receiver = rcv = PamifReceiver(cfg)
        wiring.connect(m, wiring.flipped(self.i_cmd), snd.i_cmd)
        wiring.connect(m, snd.o_status, wiring.flipped(self.o_status))
        wiring.connect(m, snd.o_rd, wiring.flipped(self.o_rd))
        wiring.connect(m, wiring.flipped(self.i_rd), snd.i_rd)
        wiring.connect(m, snd.o_fill, buf.i)
        wiring.connect(m, buf.o_free, snd.i_free)
        wiring.connect(m, buf.o, rcv.i)
        wiring.connect(m, rcv.o_wr, wiring.flipped(self.o_wr))
        m.d.comb += snd.downstream_busy.eq(buf.o.valid | rcv.o_wr.valid)
        return m


UNITS = (HwUnit("pam_interface", "PAM interface: KV re-layout between memory tiers, sender + "
                "re-layout buffer + receiver (i_cmd, i_rd -> o_rd, o_wr, o_status)",
                PamifConfig, PamInterface, PAIR_PRESETS, interface_cycles,
                paper="PAM §6.2, Fig. 8d", clocks=dict.fromkeys(PAIR_PRESETS, IF_CLOCK),
                activity=interface_activity),)
