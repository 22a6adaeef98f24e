"""HBM3 bank descriptors and the bank timing model that feeds ``papi_pu`` (PAPI §6, §7.1).

**The bank** (PAPI §6.2, §7.1): HBM3 at 5.2 Gb/s per pin; one bank's column path is a
pseudo-channel's 32 DQ, so a bank streams 5.2 x 32 / 8 = 20.8 GB/s, the per-bank bandwidth
§6.2 quotes (its "20.8 MB/s" is read as GB/s: 20.8 MB/s could not feed a 666 MHz FPU).  A
column read (BL8 x 32 bits) carries 32 bytes = 16 fp16 (``COLUMN_BYTES``), one FPU beat.  The
FPUs run at ``PU_CLOCK_MHZ`` = 666 MHz (§6.2), and every time below is in those clocks: a column
every 32 B / 20.8 GB/s = 1.538 ns = 333/325 FPU clocks (``TCCD``, exact as a fraction).

**Timing the paper does not give** (JEDEC-typical HBM3 values, stated here as assumptions):
page (row buffer) 1 KB per pseudo-channel bank = 32 columns; tRCD 14 ns, tRP 14 ns, tRAS
28 ns, tRTP 5 ns; read latency is a constant offset and is left out; refresh is not modelled.
ns convert to FPU clocks rounding up: tRCD 10, tRP 10, tRAS 19, tRTP 4.

**The bank model** (:class:`BankModel`; used by the bench to drive ``i_w`` and by the cycle
model): the bank activates page 0 at its start time; column c of an open page activated at A
is due at ``A + tRCD + ceil(c x TCCD)``; the caller reads it then or later (when the PU's
column buffer has room: :mod:`pimforge.hw.papi.pu_timing`).  After the page's last column is
read, PRE goes out at ``max(read + tRTP, A + tRAS)`` and the next ACT tRP later.  Matrix rows lie one after another
in a bank's pages (a row may straddle two pages).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

__all__ = ["PU_CLOCK_MHZ", "PIN_GBPS", "DQ_PER_BANK", "BANK_BYTES_PER_S", "COLUMN_BYTES",
           "PAGE_BYTES", "TCCD", "Hbm3Timing", "HBM3", "BankModel", "ns_to_clocks"]

PU_CLOCK_MHZ = 666                      # PAPI §6.2: the FPU at 666 MHz
PIN_GBPS = Fraction(52, 10)             # PAPI §7.1: HBM3 at 5.2 Gb/s per pin
DQ_PER_BANK = 32                        # a pseudo-channel's data pins feed one bank's column read
BANK_BYTES_PER_S = PIN_GBPS * DQ_PER_BANK * 1_000_000_000 / 8     # 20.8 GB/s (§6.2)
COLUMN_BYTES = 32                       # BL8 x 32 bits: 16 fp16
PAGE_BYTES = 1024                       # HBM3 pseudo-channel page (assumption, JEDEC-typical)
TCCD = Fraction(COLUMN_BYTES) / BANK_BYTES_PER_S * PU_CLOCK_MHZ * 1_000_000   # 333/325 clocks


def ns_to_clocks(ns) -> int:
    """FPU clocks covering ``ns`` nanoseconds (rounded up)."""
    return math.ceil(Fraction(ns) * PU_CLOCK_MHZ / 1000)


@dataclass(frozen=True)
class Hbm3Timing:
    """One HBM3 bank as the PU sees it, in FPU clocks (module docstring for the sources)."""

    tRCD: int = ns_to_clocks(14)
    tRP: int = ns_to_clocks(14)
    tRAS: int = ns_to_clocks(28)
    tRTP: int = ns_to_clocks(5)
    tCCD: Fraction = TCCD
    page_columns: int = PAGE_BYTES // COLUMN_BYTES

    def column_offset(self, c: int) -> int:
        """Clocks from the first column of a page to column ``c`` of it (unthrottled)."""
        return math.ceil(c * self.tCCD)


HBM3 = Hbm3Timing()


class BankModel:
    """One bank streaming its columns 0, 1, 2, ... (module docstring).

    :meth:`due` is the earliest clock of the next column read; :meth:`read` records the clock
    the caller read it (>= due); times are absolute clocks.

    Parameters
    ----------
    start : the clock of page 0's ACT.
    timing : Hbm3Timing
    """

    def __init__(self, start: int = 0, timing: Hbm3Timing = HBM3):
        self.t = timing
        self.act = start          # ACT of the open page
        self.col = 0              # next column index within the open page

    def due(self) -> int:
        """The earliest clock the next column can be read."""
        return self.act + self.t.tRCD + self.t.column_offset(self.col)

    def read(self, cycle: int):
        """The next column was read at ``cycle``; after a page's last column, PRE and ACT."""
        self.col += 1
        if self.col == self.t.page_columns:
            pre = max(cycle + self.t.tRTP, self.act + self.t.tRAS)
            self.act = pre + self.t.tRP
            self.col = 0

    def key(self, base: int) -> tuple:
        """The state relative to clock ``base`` (for detecting periodic steady states)."""
        return (self.act - base, self.col)

    def shift(self, delta: int):
        """Move every stored time by ``delta`` clocks (skipping whole periods)."""
        self.act += delta
