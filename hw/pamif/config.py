"""Config of the PAM interface units (PAM §6.2, Fig. 8d): ``pamif_buffer``, ``pamif_sender``,
``pamif_receiver`` and ``pam_interface`` share one :class:`PamifConfig`.

A migration moves ``n`` tokens of ``token_bytes`` from slots of the ``src`` tier to slots of the
``dst`` tier (:mod:`pimforge.hw.pamif.layout`).  ``capacity`` bounds the migration list,
``regions`` is the re-layout buffer's capacity in destination regions (one region = one token in
destination words, see :mod:`pimforge.hw.pamif.buffer`), ``dst_slots`` the occupancy bitmap of
the destination, ``tokens`` the token-id range.

**Buffer capacity.**  The paper gives no size.  The buffer must hold the source's read latency
times its bandwidth plus the destination's (a region is freed only after its words were written),
and it is the sender's issue window.  For DRAM sources that is small: HBM3 returns a burst
tRCD + tCL + tBL = 42 tCK = 16 ns after the request, 20.8 GB/s x 16 ns = 340 B; with row misses
and the destination's write latency, 16 regions of 512 B (8 KB) keep every pair above 0.9
(``tests/pamif/test_interface.py``).  An SSD source is different: a page read takes tR = 30 us,
so 4 dies streaming 2.18 GB/s need 30 us x 2.18 GB/s = 65 KB in flight plus the page being
transferred: 256 regions (128 KB) for ``ssd_to_*``.  The presets use these; the *default* is a
small simulation config (4 regions of 8 bytes, 32-bit and 8-bit words) that Verilator and a
k-induction proof handle in seconds.

**Limits.**  The sender keeps the destination occupancy (``dst_slots`` bits, persistent until
reset: freeing slots when tokens leave is the scheduler's next list, not modelled) and the
list's token marks (``tokens`` bits) in registers; the paper presets use 4096 of each, the
slots and token ids one interface instance addresses.
"""
from __future__ import annotations

from dataclasses import dataclass

from pimforge.base.config import UnitConfig, param
from pimforge.base.errors import ConfigError
from pimforge.hw.core.unit import PresetClock
from pimforge.hw.pamif.layout import IF_CLOCK_MHZ, SMALL_TIERS, TIERS, tier, tier_names

__all__ = ["PamifConfig", "PAIR_PRESETS", "SIM_PRESETS", "pair_preset", "PAPER_TOKEN_BYTES", "STATUS",
           "SMALL_PAIRS", "PAPER_PAIRS", "IF_CLOCK"]

# KV of one token for one head at d = 128, fp16: the K row and the V row (PAM §6.1 moves tokens)
PAPER_TOKEN_BYTES = 512

# status codes of o_status (the hardware's answer to a migration list)
STATUS = {"ok": 0, "token_range": 1, "src_range": 2, "dst_range": 3, "dst_occupied": 4,
          "duplicate_token": 5, "too_long": 6}


def _tier_check(v, cfg):
    return None if v in tier_names() else ", ".join(tier_names())


def _pow2(v, cfg):
    return None if v >= 1 and not v & (v - 1) else "a power of two"


@dataclass(frozen=True)
class PamifConfig(UnitConfig):
    """The PAM interface: source and destination tiers, token size, list and buffer sizes."""

    UNIT = "pam_interface"
    src: str = param("hbm3_s", "source tier (layout descriptor name)", kind=str, check=_tier_check)
    dst: str = param("ddr4_s", "destination tier (layout descriptor name)", kind=str,
                     check=_tier_check)
    token_bytes: int = param(8, "bytes of one token's KV row (the migration unit)", lo=1,
                             hi=1 << 16, check=_pow2)
    capacity: int = param(16, "longest migration list (entries)", lo=1, hi=1 << 16)
    regions: int = param(4, "re-layout buffer capacity in destination regions (tokens); the "
                         "sender's issue window", lo=2, hi=1 << 12, check=_pow2)
    dst_slots: int = param(32, "size of the destination occupancy bitmap (slots >= this are "
                           "out of range)", lo=1, hi=1 << 16)
    tokens: int = param(64, "token-id range: ids >= this are out of range", lo=1, hi=1 << 24)

    def validate(self):
        s, d = tier(self.src), tier(self.dst)
        if self.src == self.dst:
            raise ConfigError(self.UNIT, "dst", self.dst, f"a tier other than src = {self.src}")
        for t in (s, d):
            why = t.check_token(self.token_bytes)
            if not why and self.token_bytes * 8 < 2 * t.word_bits:
                why = f"at least two {t.name} words ({t.word_bytes * 2} bytes)"
            if why:
                raise ConfigError(self.UNIT, "token_bytes", self.token_bytes, why)
        if self.dst_slots > d.slots(self.token_bytes):
            raise ConfigError(self.UNIT, "dst_slots", self.dst_slots,
                              f"at most {d.slots(self.token_bytes)} (the slots of {self.dst})")

    # -- derived sizes
    @property
    def src_tier(self):
        return tier(self.src)

    @property
    def dst_tier(self):
        return tier(self.dst)

    @property
    def src_words(self) -> int:
        """Source words per token (region)."""
        return self.src_tier.token_words(self.token_bytes)

    @property
    def dst_words(self) -> int:
        """Destination words per token (region)."""
        return self.dst_tier.token_words(self.token_bytes)

    @property
    def src_slots(self) -> int:
        return self.src_tier.slots(self.token_bytes)

    @property
    def wide_bits(self) -> int:
        """Width of the buffer's memory: the wider of the two words."""
        return max(self.src_tier.word_bits, self.dst_tier.word_bits)

    @property
    def buffer_bytes(self) -> int:
        return self.regions * self.token_bytes


SMALL_PAIRS = [(a, b) for a in SMALL_TIERS for b in SMALL_TIERS if a != b]
PAPER_PAIRS = [(a, b) for a in TIERS for b in TIERS if a != b]


def _paper_pair(a: str, b: str) -> dict:
    # 1 MB of 512-byte tokens per list; see the module docstring for the regions
    return {"src": a, "dst": b, "token_bytes": PAPER_TOKEN_BYTES, "capacity": 2048,
            "regions": 256 if a == "ssd" else 16, "dst_slots": 4096, "tokens": 4096}


# The paper-size pairs are cycle-model and system-model presets: their RTL (2048-entry lists,
# 4096-slot bitmaps, up to 256 regions) takes 10 s to elaborate and more to lint, so the units
# register only the small pairs (SIM_PRESETS), which every test simulates.
PAIR_PRESETS = {f"{a}_to_{b}": _paper_pair(a, b) for a, b in PAPER_PAIRS}
SIM_PRESETS = {f"small_{a[:3]}_to_{b[:3]}": {"src": a, "dst": b} for a, b in SMALL_PAIRS}
PAIR_PRESETS.update(SIM_PRESETS)
IF_CLOCK = PresetClock(IF_CLOCK_MHZ, "PAM interface (§6.1): 1 GHz, the memory controller's "
                       "clock (hw/pamif/layout.py IF_CLOCK_MHZ)")


def pair_preset(name: str) -> PamifConfig:
    return PamifConfig(**PAIR_PRESETS[name])
