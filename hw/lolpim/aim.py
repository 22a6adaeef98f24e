"""GDDR6-AiM channel descriptors (LoL-PIM §2.2, §6, Table 5), for ``lolpim_pingpong``, its cycle
model and the channel's performance model (:mod:`pimforge.hw.lolpim.perf`).

**The channel** (Table 5 unless stated): GDDR6 at 16 Gb/s per pin, x16, so 32 GB/s of I/O per
channel; 16 banks per channel, 2 KB page; one PU per bank with 16 bf16 multipliers (AiM's
MAC unit: a 16-element dot product per command, §2.2); 32 GFLOPS per PU at 1 GHz (= 16 MACs per
PU clock, so one all-bank MAC column access per clock); a 2 KB global buffer (GB) per channel,
and LoL-PIM adds a second one (§6, §7.2: 0.053 mm2).  The cycle models count PU clocks at
``AIM_CLOCK_MHZ`` = 1 GHz; at 32 GB/s the channel moves 32 bytes (16 bf16) per clock, one GB beat
or one RD-MAC burst of 16 banks x 2 bytes.

**GDDR6 timing** (:class:`Gddr6Timing`, in 1 GHz clocks): the paper gives none.  The values are
JEDEC-typical GDDR6 (JESD250) numbers as data sheets of 16 Gb/s parts state them in ns:
tRCD 18 ns, tRP 18 ns, tRAS 32 ns (tRC = tRAS + tRP = 50 ns), tRTP 4 ns, tWR 18 ns,
tCCD_S / tCCD_L 1 / 2 ns (the all-bank MAC streams at one column per clock, Table 5's rate);
read latency (RL, CAS + I/O) 20 ns and write latency (WL) 8 ns are assumptions.  Refresh is
not modelled.  Used by the model: tRCD, tRP, tRAS, tRTP (bank side) and RL, WL (the unit's
``rd_latency`` / ``wr_latency``); tWR and tCCD are stated for completeness (GB writes do not
touch the banks, MAC columns come at Table 5's rate).
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["AIM_CLOCK_MHZ", "PIN_GBPS", "DQ_PINS", "CHANNEL_BYTES_PER_S", "BANKS_PER_CHANNEL",
           "PAGE_BYTES", "MULTIPLIERS_PER_PU", "GB_BYTES", "ELEM_BYTES", "IO_BYTES_PER_CYCLE",
           "Gddr6Timing", "GDDR6"]

AIM_CLOCK_MHZ = 1000              # Table 5: the PU (and the cycle models) at 1 GHz
PIN_GBPS = 16                      # Table 5: GDDR6 16 Gb/s per pin
DQ_PINS = 16                       # Table 5: x16 organisation
CHANNEL_BYTES_PER_S = PIN_GBPS * DQ_PINS * 1_000_000_000 // 8   # 32 GB/s per channel
BANKS_PER_CHANNEL = 16             # Table 5
PAGE_BYTES = 2048                  # Table 5: page size 2 KB
MULTIPLIERS_PER_PU = 16            # §2.2: 16-element dot product per bank; Table 5: 32 GFLOPS/PU
GB_BYTES = 2048                    # Table 5: 2 KB global buffer per channel (x2 with ping-pong)
ELEM_BYTES = 2                     # bf16
IO_BYTES_PER_CYCLE = CHANNEL_BYTES_PER_S // (AIM_CLOCK_MHZ * 1_000_000)  # 32 bytes a clock


@dataclass(frozen=True)
class Gddr6Timing:
    """GDDR6 timing in PU clocks (1 GHz = 1 ns); sources in the module docstring."""

    tRCD: int = 18
    tRP: int = 18
    tRAS: int = 32
    tRTP: int = 4
    tWR: int = 18          # not used: WR-GB writes the GB, not a bank
    tCCD_S: int = 1        # not used: MAC columns stream at one per clock (Table 5)
    tCCD_L: int = 2        # not used (as tCCD_S)
    RL: int = 20           # read latency (the unit's rd_latency)
    WL: int = 8            # write latency (the unit's wr_latency)
    page_bytes: int = PAGE_BYTES

    @property
    def tRC(self) -> int:
        return self.tRAS + self.tRP

    @property
    def page_elems(self) -> int:
        return self.page_bytes // ELEM_BYTES


GDDR6 = Gddr6Timing()


