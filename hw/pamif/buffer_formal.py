"""Formal harness of ``pamif_buffer``: its environment, no-loss of a tracked word, counters in
range, the release bound, and the invariants that close k-induction.

Used as :class:`~pimforge.hw.core.formal.FormalTop`'s ``extra`` (``pimforge prove
pamif_buffer``, its declaration's ``formal``); the stream rules of every port come
from the checker itself.

**Environment** (the sender's contract, :mod:`pimforge.hw.pamif.sender`), assumed on what the
environment offers on ``i`` (never on the buffer's ``ready``), kept in shadow registers:

* a *use* of a region is one token: its source words each offered once (``word < src_words``,
  not yet sent in this use), all with the same destination ``slot``;
* a region whose words were all sent takes no word until ``o_free`` has reported it (the
  sender's window credit); ``o_free.ready`` and ``o.ready`` stay free.

**Tracked word.**  ``AnyConst`` picks a destination slot ``s*``, a chunk ``c*`` of the token
(``min(source, destination)`` bits: one whole source or destination word, whichever is
narrower, so every bit of every word is covered by some choice) and its data ``d*``.  The
environment sends slot ``s*`` in at most one use, and the source word holding ``c*`` carries
``d*``.  Asserted: the destination word holding ``c*`` leaves on ``o`` at most once, only after
it was written, with ``d*`` in place; and, as an invariant, until it leaves it is either unread
in its region (memory, slot and fill mask intact) or waiting in ``o``'s register, never both.
With the release bound below, it does leave: nothing is lost, duplicated or corrupted.

**Range** (no overflow, no underflow): every ``count`` within ``0 .. src_words``,
``free_pending`` within ``0 .. regions``; a fill never enters a complete (or released, not yet
reported) region; the memory is read only at the head region, and only once it is complete.

**Release bound** :func:`release_bound` = ``dst_words``: once the head region is complete, it
is released (its last word read, the region freed) within ``dst_words`` consecutive cycles of
``o.ready``: the drain reads one destination word per cycle while ``o`` is ready
(``advance = complete & (~o.valid | o.ready)``), so the last of its ``dst_words`` words is read
in the ``dst_words``-th cycle.  A Cover shows the bound is met exactly (tight).  A region
behind the head, once it and the regions ahead are complete, follows within ``dst_words``
cycles per region ahead of it.

**Invariants** (for induction): each region's count is the popcount of its shadow fill mask,
or 0 with a full mask while its release waits in ``free_pending``; ``head`` = the next region
``o_free`` reports + ``free_pending``; a nonzero ``read_word`` only at a complete head; a
region's ``slot`` register equals the slot of its use; the release counter never exceeds
``read_word``.
"""
from __future__ import annotations

from amaranth.asserts import AnyConst
from amaranth.hdl import Array, Assert, Assume, Cat, Const, Cover, Mux, Signal

from pimforge.base.numerics import log2_exact

__all__ = ["buffer_properties", "release_bound"]


def release_bound(cfg) -> int:
    """Cycles of ``o.ready`` within which a complete head region is released."""
    return cfg.dst_words


def _chunk(value, lane, width):
    """``width`` bits of ``value`` at lane ``lane`` (a value of 0 bits: the only lane)."""
    return value[:width] if len(lane) == 0 else value.word_select(lane, width)


def _environment(m, dut, ports, active):
    """The shadow fill masks and slots of the regions' uses, and the offers they allow."""
    cfg = dut.cfg
    R, Ns = cfg.regions, cfg.src_words
    i, free = ports.i, ports.o_free
    env = {"sent": [Signal(Ns, name=f"env_sent{r}") for r in range(R)],
           "slot": [Signal(len(i.payload.slot), name=f"env_slot{r}") for r in range(R)],
           "fill": i.valid & i.ready, "taken": free.valid & free.ready}
    sent, slot = Array(env["sent"]), Array(env["slot"])
    p = i.payload
    with m.If(i.valid):
        m.d.comb += [Assume(p.word < Ns, "env_word_in_range"),
                     Assume(~sent[p.region].bit_select(p.word, 1), "env_word_once_per_use"),
                     Assume((sent[p.region] == 0) | (p.slot == slot[p.region]),
                            "env_one_slot_per_use")]
    with m.If(env["taken"]):
        m.d.sync += sent[free.payload.region].eq(0)
    with m.If(env["fill"]):
        m.d.sync += [sent[p.region].eq(sent[p.region] | (Const(1, Ns) << p.word)[:Ns]),
                     slot[p.region].eq(p.slot)]
    return env


def _counters(m, dut, dut_module, ports, env, active):
    """Counters in range, no fill into a full region, no read of an incomplete one, and the
    invariants relating them to the shadow masks and ``o_free``."""
    cfg = dut.cfg
    R, Ns, Nd = cfg.regions, cfg.src_words, cfg.dst_words
    rb = log2_exact(R)
    i, free = ports.i, ports.o_free
    count, pending, head = dut.count, dut.free_pending, dut.head
    rd = dut_module.submodules.mem.read_ports[0]
    full = (1 << Ns) - 1
    with m.If(active):
        m.d.comb += [Assert(pending <= R, "free_pending_in_range"),
                     Assert(dut.read_word < Nd, "read_word_in_range"),
                     Assert(head == (free.payload.region + pending)[:rb], "head_is_next_free"),
                     Assert((dut.read_word == 0) | (Array(count)[head] == Ns),
                            "read_word_only_at_complete_head")]
        with m.If(env["fill"]):
            m.d.comb += Assert(Array(count)[i.payload.region] < Ns, "fill_only_into_open_region")
        with m.If(rd.en):
            m.d.comb += [Assert(Array(count)[head] == Ns, "read_only_complete_region"),
                         Assert(rd.addr[-rb:] == head, "read_only_head_region")]
        for r in range(R):
            waiting = (Const(r, rb) - free.payload.region)[:rb] < pending
            c, s = count[r], env["sent"][r]
            m.d.comb += Assert(c <= Ns, f"count{r}_in_range")
            with m.If(waiting):
                m.d.comb += Assert((c == 0) & (s == full), f"released{r}_empty")
            with m.Else():
                m.d.comb += Assert(c == sum(s[b] for b in range(Ns)), f"count{r}_is_words_in")
            with m.If(c != 0):
                m.d.comb += Assert(dut.slots[r] == env["slot"][r], f"slot{r}_of_use")


def _tracked(m, dut, dut_module, ports, env, active):
    """The tracked word (module docstring): assumptions, no-loss assertions, invariants."""
    cfg = dut.cfg
    Ws, Wd, W = cfg.src_tier.word_bits, cfg.dst_tier.word_bits, cfg.wide_bits
    Wc = min(Ws, Wd)
    rb = log2_exact(cfg.regions)
    i, o, free = ports.i, ports.o, ports.o_free
    c = AnyConst(log2_exact(cfg.token_bytes * 8 // Wc))
    s_star, d_star = AnyConst(len(i.payload.slot)), AnyConst(Wc)
    ls, ld, lm = log2_exact(Ws // Wc), log2_exact(Wd // Wc), log2_exact(W // Wc)
    j_star, k_star = c[ls:], c[ld:]
    # the use of slot s*: s_used once it began, s_open until o_free reported its region
    s_used, s_open = Signal(name="trk_slot_used"), Signal(name="trk_use_open")
    s_reg = Signal(rb, name="trk_region")
    t_in, t_out = Signal(name="trk_written"), Signal(name="trk_out")
    sent, eslot = Array(env["sent"]), Array(env["slot"])
    p = i.payload
    with m.If(i.valid & (p.slot == s_star)):
        m.d.comb += Assume(~s_used | (s_open & (p.region == s_reg)), "env_tracked_slot_one_use")
        with m.If(p.word == j_star):
            m.d.comb += Assume(_chunk(p.data, c[:ls], Wc) == d_star, "env_tracked_data")
    with m.If(env["taken"] & (free.payload.region == s_reg)):
        m.d.sync += s_open.eq(0)
    with m.If(env["fill"] & (p.slot == s_star)):
        m.d.sync += [s_used.eq(1), s_open.eq(1), s_reg.eq(p.region)]
        with m.If(p.word == j_star):
            m.d.sync += t_in.eq(1)
    held = o.valid & (o.payload.slot == s_star) & (o.payload.word == k_star)
    with m.If(held & o.ready):
        m.d.sync += t_out.eq(1)
    tap = dut_module.submodules.mem.read_port(domain="comb")
    m.d.comb += tap.addr.eq(Cat(c[lm:], s_reg))
    unread = s_open & (Array(dut.count)[s_reg] != 0) & \
        ~((dut.head == s_reg) & (dut.read_word > k_star))
    with m.If(active):
        with m.If(held):
            m.d.comb += [Assert(t_in & ~t_out, "track_out_once_after_in"),
                         Assert(_chunk(o.payload.data, c[:ld], Wc) == d_star,
                                "track_data_unchanged")]
        with m.If(t_in & ~t_out):
            m.d.comb += Assert(held ^ unread, "track_in_buffer_or_output")
            with m.If(unread):
                m.d.comb += [Assert(_chunk(tap.data, c[:lm], Wc) == d_star, "track_in_memory"),
                             Assert(Array(dut.slots)[s_reg] == s_star, "track_slot_kept")]
        m.d.comb += [Assert(~s_open | s_used, "track_open_implies_used"),
                     Assert(~t_in | s_used, "track_in_implies_used"),
                     Assert(~(s_used & ~s_open) | t_in, "track_closed_implies_in"),
                     Assert(~t_out | t_in, "track_out_implies_in"),
                     Assert(~(t_out & unread), "track_out_not_again")]
        with m.If(s_open):
            m.d.comb += [Assert(t_in == sent[s_reg].bit_select(j_star, 1), "track_in_is_sent"),
                         Assert((sent[s_reg] != 0) & (eslot[s_reg] == s_star),
                                "track_use_in_region")]
        for r in range(cfg.regions):
            with m.If((env["sent"][r] != 0) & (env["slot"][r] == s_star)):
                m.d.comb += Assert(s_open & (s_reg == r), f"track_slot_only_in_region{r}")
    m.d.comb += Cover(held & o.ready, "track_word_out")


def _release(m, dut, ports, active):
    """The release bound (module docstring) and a Cover that it is met exactly."""
    cfg = dut.cfg
    Ns, Nd = cfg.src_words, cfg.dst_words
    o, head = ports.o, dut.head
    run = (Array(dut.count)[head] == Ns) & o.ready
    prev_head = Signal.like(head, name="rel_prev_head")
    cnt = Signal(range(Nd + 1), name="rel_cycles")
    eff = Mux(head == prev_head, cnt, 0)
    m.d.sync += [prev_head.eq(head), cnt.eq(Mux(run, Mux(eff == Nd, Nd, eff + 1), 0))]
    with m.If(active):
        m.d.comb += Assert(eff < release_bound(cfg), "release_within_bound")
        with m.If(eff != 0):
            m.d.comb += Assert((Array(dut.count)[head] == Ns) & (eff <= dut.read_word),
                               "release_count_le_read_word")
    m.d.comb += Cover(active & run & (eff == release_bound(cfg) - 1), "release_at_bound")


def buffer_properties(m, dut, dut_module, ports, active) -> None:
    """Everything above, for :class:`~pimforge.hw.core.formal.FormalTop`'s ``extra``."""
    env = _environment(m, dut, ports, active)
    _counters(m, dut, dut_module, ports, env, active)
    _tracked(m, dut, dut_module, ports, env, active)
    _release(m, dut, ports, active)
