"""Tier layout descriptors of the PAM interface (PAM §6.1, Fig. 7; Table 1): data, no Amaranth.

One :class:`Tier` describes what a PAM interface instance sees of one memory tier: its data path
(``word_bits``, the port width), its organisation (``groups`` bank groups or SSD channels,
``banks`` banks per group or dies per channel, rows of ``row_bytes``) and its timing.  The same
descriptor drives the RTL (address bits), the golden re-layout, the memory timing models
(:mod:`pimforge.hw.pamif.memory`) and the system model's estimate (:mod:`pimforge.hw.pamif.perf`).

**Slots (§6.1).**  A token's place in a tier is a *slot* ``(group, index)``: the first level of
the mapping picks the bank group (HBM, DDR) or channel (SSD); within the group, tokens spread over
the banks at aligned rows and columns::

    bank = index % banks
    pos  = index // banks
    row  = pos // tokens_per_row
    col  = pos % tokens_per_row * token_words          (word column inside the row)

A slot is numbered flat, ``slot = group * slots_per_group + index``.  Word addresses are
``(((group * banks + bank) * rows + row) * row_words + col + w)`` for word ``w`` of the token, so
with power-of-two geometry (required) the address is a bit permutation of ``(slot, w)``.  Which
slot a migrated token gets is the scheduler's choice (§6.3): the migration list carries it.

**Presets (Table 1).**  ``hbm3``: one HBM3 pseudo-channel (5.2 Gbps, 32 bits: a BL8 burst is
the 256-bit HBM PU word), 4 bank groups x 4 banks, 1 KB rows; tCL is not in Table 1 and is
taken equal to tRCD.  ``ddr4``: one DDR4-3200 rank (8 x8 chips: 64 bits, 8 KB rows), 2 bank
groups x 4 banks; tWR (not in Table 1) is JEDEC's 15 ns.  Its port moves 256 bits per cycle,
four 64-bit DDR PU words (half a BL8 burst): at the interface's 1 GHz a 64-bit port would carry
only 8 GB/s of the rank's 25.6 GB/s, so the interface, not DDR4, would be the slower side.  ``ssd``: one channel (2400 MT/s on 8 bits) with 4 dies, 16 KB pages, tR = 30 us;
the page program time is not in Table 1, ``tPROG`` = 200 us is a typical TLC value.  The SSD
port moves 64-bit beats: the channel gives one byte per 417 ps, a 64-bit beat per 3.3 ns, so a
wider port would only idle (one interface instance per SSD channel; 64 channels take 64
instances), and SSD <-> DRAM migrations assemble 64-bit beats into 256-bit words and back.  Small ``*_s`` tiers keep the width ratios (32/8/8
bits) with few rows, for simulation.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

__all__ = ["Tier", "TIERS", "SMALL_TIERS", "tier", "slot_fields", "slot_address",
           "token_addresses", "interleaved_slot", "IF_CLOCK_MHZ", "IF_PERIOD_PS", "side_bandwidth", "tier_names"]

IF_CLOCK_MHZ = 1000     # the interface runs at 1 GHz (the memory controller's clock)
IF_PERIOD_PS = 1_000_000 // IF_CLOCK_MHZ    # the memory models count whole picoseconds


@dataclass(frozen=True)
class Tier:
    """One tier as an interface instance sees it.

    Members
    -------
    name : tier name.
    kind : ``dram`` (HBM, DDR: bank timing) or ``ssd`` (dies and pages).
    word_bits : data path width of the interface port (one word per cycle at most).
    groups : bank groups (DRAM) or channels (SSD): the first level of the §6.1 mapping.
    banks : banks per group (DRAM) or dies per channel (SSD).
    row_bytes : DRAM row (page) of one bank, or SSD page.
    rows : rows (pages) per bank (die) in the interface's address range.
    burst_bytes : DRAM burst (BL8); for SSD the page.
    tck_ps : DRAM clock period; SSD: the channel's time per byte.
    tRCD, tRP, tCL, tBL, tCCD_S, tCCD_L, tWR : DRAM timings in tCK (Table 1).
    tR_ns, tPROG_ns : SSD page read and program time.
    """

    name: str
    kind: str
    word_bits: int
    groups: int
    banks: int
    row_bytes: int
    rows: int
    burst_bytes: int
    tck_ps: int
    tRCD: int = 0
    tRP: int = 0
    tCL: int = 0
    tBL: int = 0
    tCCD_S: int = 0
    tCCD_L: int = 0
    tWR: int = 0
    tR_ns: int = 0
    tPROG_ns: int = 0

    def __post_init__(self):
        for f in ("word_bits", "groups", "banks", "row_bytes", "rows", "burst_bytes"):
            v = getattr(self, f)
            if v < 1 or v & (v - 1):
                raise ValueError(f"tier {self.name}: {f} must be a power of two, not {v}")
        if self.kind not in ("dram", "ssd"):
            raise ValueError(f"tier {self.name}: kind must be dram or ssd, not {self.kind!r}")

    @property
    def word_bytes(self) -> int:
        return self.word_bits // 8

    @property
    def row_words(self) -> int:
        return self.row_bytes * 8 // self.word_bits

    @property
    def burst_words(self) -> int:
        return max(1, self.burst_bytes * 8 // self.word_bits)

    def token_words(self, token_bytes: int) -> int:
        return token_bytes * 8 // self.word_bits

    def tokens_per_row(self, token_bytes: int) -> int:
        return self.row_bytes // token_bytes

    def slots_per_group(self, token_bytes: int) -> int:
        return self.banks * self.rows * self.tokens_per_row(token_bytes)

    def slots(self, token_bytes: int) -> int:
        return self.groups * self.slots_per_group(token_bytes)

    def words(self) -> int:
        """Words in the interface's address range of this tier."""
        return self.groups * self.banks * self.rows * self.row_words

    def check_token(self, token_bytes: int) -> str | None:
        """Why ``token_bytes`` does not fit this tier (None when it does)."""
        if token_bytes * 8 % self.word_bits or token_bytes > self.row_bytes:
            return (f"a multiple of {self.word_bytes} bytes ({self.name} word) and at most "
                    f"{self.row_bytes} ({self.name} row)")
        return None

    # -- bandwidth (bytes per ns) of the memory itself, without the port limit
    def mem_read_bw(self) -> float:
        if self.kind == "dram":
            return self.burst_bytes * 1000.0 / (max(self.tBL, self.tCCD_S) * self.tck_ps)
        bus = self.groups * 1000.0 / self.tck_ps
        return min(bus, self.groups * self.banks * self.row_bytes / self.tR_ns)

    def mem_write_bw(self) -> float:
        if self.kind == "dram":
            return self.mem_read_bw()
        bus = self.groups * 1000.0 / self.tck_ps
        return min(bus, self.groups * self.banks * self.row_bytes / self.tPROG_ns)

    def port_bw(self) -> float:
        """One word per interface cycle."""
        return self.word_bytes * 1000.0 / IF_PERIOD_PS


def side_bandwidth(t: Tier, direction: str) -> float:
    """Peak bytes per ns of ``t`` as a source (``read``) or destination (``write``) of an
    interface: the smaller of the memory's streaming rate and the port's."""
    mem = t.mem_read_bw() if direction == "read" else t.mem_write_bw()
    return min(mem, t.port_bw())


HBM3 = Tier("hbm3", "dram", word_bits=256, groups=4, banks=4, row_bytes=1024, rows=1 << 14,
            burst_bytes=32, tck_ps=385, tRCD=19, tRP=19, tCL=19, tBL=4, tCCD_S=2, tCCD_L=4,
            tWR=21)
DDR4 = Tier("ddr4", "dram", word_bits=256, groups=2, banks=4, row_bytes=8192, rows=1 << 14,
            burst_bytes=64, tck_ps=625, tRCD=24, tRP=24, tCL=24, tBL=4, tCCD_S=4, tCCD_L=8,
            tWR=24)
SSD = Tier("ssd", "ssd", word_bits=64, groups=1, banks=4, row_bytes=16384, rows=1 << 12,
           burst_bytes=16384, tck_ps=417, tR_ns=30000, tPROG_ns=200000)
TIERS = {t.name: t for t in (HBM3, DDR4, SSD)}

# small tiers for simulation: the 32/8/8-bit ratios, 2 groups x 2 banks, few rows; the DRAM
# timings of the presets, the SSD's scaled down (a page of 32 bytes, reads of 200 ns)
SMALL_TIERS = {t.name: t for t in (
    replace(HBM3, name="hbm3_s", word_bits=32, groups=2, banks=2, row_bytes=32, rows=2,
            burst_bytes=4),
    replace(DDR4, name="ddr4_s", word_bits=8, groups=2, banks=2, row_bytes=16, rows=4,
            burst_bytes=8),
    replace(SSD, name="ssd_s", word_bits=8, groups=2, banks=2, row_bytes=32, rows=2,
            burst_bytes=32, tck_ps=1000, tR_ns=200, tPROG_ns=400))}


def tier_names() -> tuple:
    return tuple(TIERS) + tuple(SMALL_TIERS)


def tier(name: str) -> Tier:
    if name in TIERS:
        return TIERS[name]
    if name in SMALL_TIERS:
        return SMALL_TIERS[name]
    raise KeyError(f"unknown tier {name!r}; known: {', '.join(tier_names())}")


def slot_fields(t: Tier, token_bytes: int, slot):
    """(group, bank, row, col) of slot(s) ``slot`` (ints or NumPy arrays), §6.1."""
    spg = t.slots_per_group(token_bytes)
    tpr = t.tokens_per_row(token_bytes)
    group, index = slot // spg, slot % spg
    bank, pos = index % t.banks, index // t.banks
    return group, bank, pos // tpr, pos % tpr * t.token_words(token_bytes)


def interleaved_slot(t: Tier, token_bytes: int, k):
    """The slot of the ``k``-th token when tokens are interleaved over the groups first (§6.1's
    first level: bank groups or SSD channels), then filled in §6.1 order within each group."""
    return (k % t.groups) * t.slots_per_group(token_bytes) + k // t.groups


def slot_address(t: Tier, token_bytes: int, slot):
    """Word address of word 0 of the token in ``slot``."""
    group, bank, row, col = slot_fields(t, token_bytes, slot)
    return ((group * t.banks + bank) * t.rows + row) * t.row_words + col


def token_addresses(t: Tier, token_bytes: int, slot) -> list:
    """Word addresses of a token's words, in order."""
    base = int(slot_address(t, token_bytes, slot))
    return list(range(base, base + t.token_words(token_bytes)))
