"""``pamif_buffer``: the PAM interface's dual-port re-layout buffer (PAM §6.2, Fig. 8d).

::

    i (fill: region, source word, dst slot, data) ─► memory of regions x token bits,
        lane-granular writes in source width; per region a completion counter and the slot
    ─► the head region, once complete, is read out in destination width ─► o (drain)
    ─► after its last word: the region is freed ─► o_free (the sender's window credit)

* **Regions.**  ``regions`` regions of one token each (``token_bytes``): a token's destination
  write unit.  For an SSD destination too: its tokens are slices of 16 KB pages, and the SSD
  controller's cache register (the memory model's) assembles the page from the tokens written
  into it, so a page-sized region would only delay the release by the page's other tokens.  The memory is ``max(source, destination)`` bits wide; the narrower side writes
  (or reads) one lane of it, so 64-bit SSD beats (or the small tiers' 8-bit DDR words) assemble into 256-bit words and back.
* **Release.**  Regions are allocated in list order (entry ``j`` uses region ``j mod regions``),
  fill in any order (the sender interleaves bank groups), and are released in list order: the
  head region leaves as soon as its counter reaches the token's source words, one word per
  cycle, and is freed (counter cleared, reported on ``o_free``) when its last word is read.
* **No overflow.**  ``i`` is not ready for a region that is complete and not yet freed, so a
  region never takes more words than a token has.  Release: with ``o`` always ready, a region
  that completes while every region ahead of it is complete has its first word read within
  ``1 + (regions - 1) * dst_words`` cycles (the regions ahead drain one word per cycle first);
  behind an incomplete region it waits, by design (release in list order).  Releases wait in
  ``free_pending`` until ``o_free`` takes them.

Latency: the last word of a token written at cycle c, its first output word transfers at c + 2
(``latency``); throughput one word per cycle on each side.  For formal proofs the counters,
the head, the read word, the pending releases, the regions' destination slots and the read
enable are attributes (``count``, ``head``, ``read_word``, ``free_pending``, ``slots``,
``advance``).

Parameters
----------
cfg : PamifConfig
"""
from __future__ import annotations

from amaranth.hdl import Array, Cat, Module, Signal
from amaranth.lib.wiring import In, Out

from pimforge.base.numerics import log2_exact
from pimforge.hw.core.activity import Memory
from pimforge.hw.core.component import PimComponent
from pimforge.hw.core.unit import HwUnit
from pimforge.hw.pamif.buffer_formal import buffer_properties
from pimforge.hw.pamif.buffer_timing import buffer_activity, buffer_cycles
from pimforge.hw.pamif.config import IF_CLOCK, SIM_PRESETS, PamifConfig
from pimforge.hw.pamif.streams import drain_signature, fill_signature, free_signature

__all__ = ["PamifBuffer", "BUFFER_LATENCY"]

BUFFER_LATENCY = 2


class PamifBuffer(PimComponent):
    """The re-layout buffer (module docstring): ``i`` fill words in, ``o`` drain words and
    ``o_free`` region releases out."""

    UNIT = "pamif_buffer"

    def __init__(self, cfg: PamifConfig):
        super().__init__(cfg, {"i": In(fill_signature(cfg)), "o": Out(drain_signature(cfg)),
                               "o_free": Out(free_signature(cfg))})
        self.count = [Signal(range(cfg.src_words + 1), name=f"count{r}")
                      for r in range(cfg.regions)]
        self.head = Signal(range(cfg.regions), name="head")
        self.read_word = Signal(range(cfg.dst_words), name="read_word")
        self.free_pending = Signal(range(cfg.regions + 1), name="free_pending")
        self.slots = [Signal(len(self.i.payload.slot), name=f"slot{r}") for r in range(cfg.regions)]
        self.advance = Signal(name="advance")

    @property
    def latency(self) -> int:
        """Cycles from a region's last fill word to its first drain word."""
        return BUFFER_LATENCY

    @property
    def throughput(self) -> float:
        return 1.0

    def manifest(self) -> dict:
        man = super().manifest()
        man["buffer_bits"] = self.cfg.regions * self.cfg.token_bytes * 8
        return man

    def elaborate(self, platform):
        m = Module()
        cfg = self.cfg
        R, Ns, Nd = cfg.regions, cfg.src_words, cfg.dst_words
        Ws, Wd, W = cfg.src_tier.word_bits, cfg.dst_tier.word_bits, cfg.wide_bits
        per = cfg.token_bytes * 8 // W
        mem = Memory(shape=W, depth=R * per, init=[])
        m.submodules.mem = mem
        lr_s, lr_d = log2_exact(W // Ws), log2_exact(W // Wd)
        wp = mem.write_port(granularity=Ws) if Ws < W else mem.write_port()
        rp = mem.read_port(domain="sync")
        i, o, free = self.i, self.o, self.o_free
        count = Array(self.count)
        slot_regs = self.slots
        slots = Array(slot_regs)
        # ---- fill side: ready unless the region is complete (and not yet freed)
        m.d.comb += i.ready.eq(count[i.payload.region] != Ns)
        fill = i.valid & i.ready
        word = i.payload.word
        m.d.comb += [wp.addr.eq(Cat(word[lr_s:], i.payload.region)),
                     wp.data.eq(Cat(*[i.payload.data] * (W // Ws)))]
        if lr_s:
            m.d.comb += wp.en.eq(Cat(*[fill & (word[:lr_s] == k) for k in range(W // Ws)]))
        else:
            m.d.comb += wp.en.eq(fill)
        # per-region updates as one If each (no case on a variable index: lint-clean)
        last_read = Signal(name="last_read")
        for r in range(R):
            with m.If(fill & (i.payload.region == r)):
                m.d.sync += [self.count[r].eq(self.count[r] + 1), slot_regs[r].eq(i.payload.slot)]
            with m.If(last_read & (self.head == r)):
                m.d.sync += self.count[r].eq(0)
        # ---- drain side: the head region, once complete, one destination word per cycle
        head, rw = self.head, self.read_word
        lane = Signal(max(1, lr_d), name="read_lane")
        advance = self.advance
        last_word = rw == Nd - 1
        m.d.comb += [advance.eq((count[head] == Ns) & (~o.valid | o.ready)),
                     last_read.eq(advance & last_word),
                     rp.addr.eq(Cat(rw[lr_d:], head)), rp.en.eq(advance)]
        # releases wait in a counter until o_free takes them (regions in list order)
        pending = self.free_pending
        freed = advance & last_word
        taken = free.valid & free.ready
        m.d.sync += pending.eq(pending + freed - taken)
        m.d.comb += free.valid.eq(pending != 0)
        with m.If(taken):
            m.d.sync += free.payload.region.eq(free.payload.region + 1)
        with m.If(advance):
            m.d.sync += [o.valid.eq(1), o.payload.slot.eq(slots[head]), o.payload.word.eq(rw),
                         o.payload.last.eq(last_word)]
            if lr_d:
                m.d.sync += lane.eq(rw[:lr_d])
            with m.If(last_word):
                m.d.sync += [rw.eq(0), head.eq(head + 1)]
            with m.Else():
                m.d.sync += rw.eq(rw + 1)
        with m.Elif(o.ready):
            m.d.sync += o.valid.eq(0)
        m.d.comb += o.payload.data.eq(rp.data.word_select(lane, Wd) if lr_d else rp.data)
        return m


UNITS = (HwUnit("pamif_buffer", "PAM interface re-layout buffer: source-width fill words "
                "into token regions, released in list order in destination width (i -> o, "
                "o_free)", PamifConfig, PamifBuffer, SIM_PRESETS, buffer_cycles,
                paper="PAM §6.2, Fig. 8d", clocks=dict.fromkeys(SIM_PRESETS, IF_CLOCK),
                formal=buffer_properties, activity=buffer_activity),)
