"""``pamif_sender``: the PAM interface's command reorder unit (PAM §6.2, Fig. 8d).

::

    i_cmd (list entries) ─► load + checks ─► list memory, per-group queues, occupancy bitmap
        └─ a bad list ─► o_status (code, entry), no reads, the bitmap as before
    issue: one source read per cycle, round-robin over the source groups ─► o_rd (addr, tag)
    i_rd (data, tag, in request order) ─► o_fill (region, word, dst slot, data) ─► buffer
    i_free (region released) ─► the issue window; the last one ─► o_status (OK, entries)

* **Load.**  Entries arrive on ``i_cmd`` until ``last``; each is stored (up to ``capacity``)
  and checked in order (:mod:`pimforge.hw.pamif.migration`: token and slot ranges, occupied
  destination, duplicate token, too long).  The first error wins.  Destination slots and tokens
  of the list are marked in ``marks`` / ``seen``; an accepted list ORs its marks into the
  occupancy bitmap ``occ`` (it persists across lists until reset), a rejected one drops them.
* **Issue** (the read order of :func:`~pimforge.hw.pamif.migration.read_order`).  Each source
  group has an in-order queue of its entries; each cycle the next group after the last one
  served that has work and whose head is within ``regions`` of the oldest unfinished head gives
  one word; a token's words go consecutively within its group.  The read waits while its entry
  is not inside the buffer's window (``entry < freed + regions``) or ``o_rd`` is not ready.
* **Fill.**  ``i_rd`` passes to ``o_fill`` with its region (``entry mod regions``) and the
  entry's destination slot; the memory returns each request's tag.
* **Done.**  When every region was freed (and, inside ``pam_interface``, the receiver drained),
  ``o_status`` reports code 0 and the entry count.

Latency: a list of n entries is loaded in n cycles, decided the next, and its first read
issues the cycle after; throughput one read per cycle.

Parameters
----------
cfg : PamifConfig
"""
from __future__ import annotations

from dataclasses import make_dataclass

from amaranth.hdl import Array, Cat, Const, Module, Signal
from amaranth.lib.wiring import In, Out

from pimforge.base.numerics import log2_exact
from pimforge.hw.core.activity import Memory
from pimforge.hw.core.component import PimComponent
from pimforge.hw.core.unit import HwUnit
from pimforge.hw.pamif.config import IF_CLOCK, SIM_PRESETS, STATUS, PamifConfig
from pimforge.hw.pamif.sender_formal import sender_environment, sender_response
from pimforge.hw.pamif.sender_timing import sender_activity, sender_cycles
from pimforge.hw.pamif.streams import (
    bits, cmd_signature, fill_signature, free_signature, rd_signature, rdata_signature,
    status_signature
)

__all__ = ["PamifSender", "slot_word_address"]

# The list's registers, shared by the load, the checks, the store, the issue and the fill
ListRegs = make_dataclass("ListRegs", [(f, object, None) for f in (
    "n code index occ marks seen freed qlen qpos word head last").split()])


def slot_word_address(t, token_bytes: int, slot, word):
    """The §6.1 word address of ``word`` of the token in ``slot`` as a bit permutation
    (:mod:`pimforge.hw.pamif.layout`): ``Cat(word, column, row, bank, group)``."""
    lb, lg = log2_exact(t.banks), log2_exact(t.groups)
    lt = log2_exact(t.tokens_per_row(token_bytes))
    lr = log2_exact(t.rows)
    lw = log2_exact(t.token_words(token_bytes))
    spg = lb + lt + lr
    return Cat(word[:lw], slot[lb:lb + lt], slot[lb + lt:spg], slot[:lb], slot[spg:spg + lg])


class PamifSender(PimComponent):
    """The command reorder unit (module docstring).  ``downstream_busy`` (not a port) holds the
    OK status back while a composing unit still has words in flight."""

    UNIT = "pamif_sender"

    def __init__(self, cfg: PamifConfig):
        super().__init__(cfg, {"i_cmd": In(cmd_signature(cfg)),
                               "o_status": Out(status_signature(cfg)),
                               "o_rd": Out(rd_signature(cfg)), "i_rd": In(rdata_signature(cfg)),
                               "o_fill": Out(fill_signature(cfg)),
                               "i_free": In(free_signature(cfg))})
        self.downstream_busy = Signal(name="downstream_busy")

    @property
    def latency(self) -> int:
        """Cycles from the list's last entry to its first read request."""
        return 2

    @property
    def throughput(self) -> float:
        return 1.0

    def elaborate(self, platform):
        m = Module()
        cfg = self.cfg
        C, G = cfg.capacity, cfg.src_tier.groups
        ab = bits(C)
        # the list: source slots (read by the issue) and destination slots (read by the fill)
        lmem = (Memory(shape=bits(cfg.src_slots), depth=C, init=[]),
                Memory(shape=bits(cfg.dst_slots), depth=C, init=[]))
        m.submodules.src_mem, m.submodules.dst_mem = lmem
        queues = []
        for g in range(G):
            q = Memory(shape=ab, depth=C, init=[])
            m.submodules[f"queue{g}"] = q
            queues.append(q)
        s = ListRegs(n=Signal(range(C + 1), name="entries"),
                     code=Signal(3, name="err_code"),
                     index=Signal(len(self.o_status.payload.index), name="err_index"),
                     occ=Signal(cfg.dst_slots, name="occupied"),
                     marks=Signal(cfg.dst_slots, name="marks"),
                     seen=Signal(cfg.tokens, name="seen"),
                     freed=Signal(range(C + 1), name="freed"),
                     qlen=[Signal(range(C + 1), name=f"qlen{g}") for g in range(G)],
                     qpos=[Signal(range(C + 1), name=f"qpos{g}") for g in range(G)],
                     word=[Signal(range(cfg.src_words), name=f"word{g}") for g in range(G)],
                     head=[Signal(ab, name=f"head{g}") for g in range(G)],
                     last=Signal(range(G), init=G - 1, name="last_group"))
        bad = self._checks(m, s)
        store = Signal(name="store")
        with m.FSM(name="sender_state") as fsm:
            self._load(m, s, bad, store)
            with m.State("DECIDE"):
                m.d.sync += [s.marks.eq(0), s.seen.eq(0)]
                with m.If(s.code != 0):
                    m.next = "STATUS"
                with m.Else():
                    m.d.sync += [s.occ.eq(s.occ | s.marks), s.index.eq(s.n)]
                    with m.If(s.n == 0):
                        m.next = "STATUS"
                    with m.Else():
                        m.next = "ISSUE"
            with m.State("ISSUE"):
                with m.If((s.freed == s.n) & ~self.downstream_busy):
                    m.next = "STATUS"
            with m.State("STATUS"):
                m.d.comb += self.o_status.valid.eq(1)
                with m.If(self.o_status.ready):
                    m.d.sync += [s.n.eq(0), s.code.eq(0), s.freed.eq(0),
                                 s.last.eq(G - 1)]
                    m.d.sync += [x.eq(0) for x in s.qlen + s.qpos]
                    m.next = "LOAD"
        m.d.comb += [self.o_status.payload.code.eq(s.code),
                     self.o_status.payload.index.eq(s.index)]
        self._store(m, s, lmem, queues, store)
        self._issue(m, fsm, s, lmem, queues)
        self._fill(m, s, lmem)
        return m

    def _checks(self, m, s):
        """The code of the entry on ``i_cmd`` (0: fine), the first failing check."""
        cfg, p = self.cfg, self.i_cmd.payload
        bad = Signal(3, name="entry_code")
        with m.If(p.token >= cfg.tokens):
            m.d.comb += bad.eq(STATUS["token_range"])
        with m.Elif(p.src_slot >= cfg.src_slots):
            m.d.comb += bad.eq(STATUS["src_range"])
        with m.Elif(p.dst_slot >= cfg.dst_slots):
            m.d.comb += bad.eq(STATUS["dst_range"])
        with m.Elif((s.occ | s.marks).bit_select(p.dst_slot, 1)):
            m.d.comb += bad.eq(STATUS["dst_occupied"])
        with m.Elif(s.seen.bit_select(p.token, 1)):
            m.d.comb += bad.eq(STATUS["duplicate_token"])
        return bad

    def _load(self, m, s, bad, store):
        """LOAD: store and check each entry (module docstring)."""
        cfg, p = self.cfg, self.i_cmd.payload
        C = cfg.capacity
        with m.State("LOAD"):
            m.d.comb += self.i_cmd.ready.eq(1)
            with m.If(self.i_cmd.valid):
                m.d.comb += store.eq(s.n != C)
                with m.If(s.n != C):
                    m.d.sync += s.n.eq(s.n + 1)
                with m.If(s.code == 0):
                    with m.If(s.n == C):
                        m.d.sync += [s.code.eq(STATUS["too_long"]), s.index.eq(C)]
                    with m.Elif(bad != 0):
                        m.d.sync += [s.code.eq(bad), s.index.eq(s.n)]
                # Marked whatever the checks say: a bad entry rejects the list, which drops the
                # marks, so its own marks never count (and the checks stay off this path).
                m.d.sync += [s.marks.eq(s.marks | _onehot(p.dst_slot, cfg.dst_slots)),
                             s.seen.eq(s.seen | _onehot(p.token, cfg.tokens))]
                with m.If(p.last):
                    m.next = "DECIDE"

    def _store(self, m, s, lmem, queues, store):
        """The list memory and the per-group queues of entry indices."""
        cfg, p = self.cfg, self.i_cmd.payload
        G = cfg.src_tier.groups
        ws, wd = lmem[0].write_port(), lmem[1].write_port()
        lspg = log2_exact(cfg.src_tier.slots_per_group(cfg.token_bytes))
        group = p.src_slot[lspg:lspg + log2_exact(G)] if G > 1 else Const(0, 1)
        m.d.comb += [ws.addr.eq(s.n), ws.data.eq(p.src_slot[:bits(cfg.src_slots)]),
                     wd.addr.eq(s.n), wd.data.eq(p.dst_slot[:bits(cfg.dst_slots)]),
                     ws.en.eq(store), wd.en.eq(store)]
        for g, q in enumerate(queues):
            with m.If(store & (group == g)):
                m.d.sync += s.qlen[g].eq(s.qlen[g] + 1)
                with m.If(s.qlen[g] == s.qpos[g]):
                    m.d.sync += s.head[g].eq(s.n)
            qw = q.write_port()
            m.d.comb += [qw.addr.eq(s.qlen[g]), qw.data.eq(s.n),
                         qw.en.eq(store & (group == g))]

    def _pick(self, m, s, has, elig):
        """The next eligible group after the last one served: (any, group)."""
        G = self.cfg.src_tier.groups
        pick = Signal(range(G), name="pick")
        with m.Switch(s.last):
            for last in range(G):
                with m.Case(last):
                    order = [(last + k) % G for k in range(1, G + 1)]
                    for k, g in enumerate(order):
                        cond = elig[g]
                        if k == 0:
                            with m.If(cond):
                                m.d.comb += pick.eq(g)
                        else:
                            with m.Elif(cond):
                                m.d.comb += pick.eq(g)
        return Cat(*elig).any(), pick

    def _issue(self, m, fsm, s, lmem, queues):
        """ISSUE: the round-robin read order and the window (module docstring)."""
        cfg = self.cfg
        C, G, R = cfg.capacity, cfg.src_tier.groups, cfg.regions
        ab = bits(C)
        # Each queue's head is a register (``head``): loaded with the queue's first entry, and
        # with the next one (read at qpos + 1) as its token's last word issues, so the queues'
        # reads stay off the path from the heads through the pick to the issue state.
        has, heads, nexts = [], s.head, []
        for g, q in enumerate(queues):
            rp = q.read_port(domain="comb")
            m.d.comb += rp.addr.eq((s.qpos[g] + 1)[:ab])
            has.append(s.qpos[g] != s.qlen[g])
            nexts.append(rp.data)
        # A group is eligible when its head is within R of the oldest head, that is of every
        # other group's head (pairwise compares side by side, not a chain through the minimum),
        # and each head's window test against the frees is made before the pick selects it.
        elig = [has[g] & Cat(*[~has[h] | (heads[g] < heads[h] + R) for h in range(G) if h != g]
                             ).all() if R < (1 << ab) else has[g] for g in range(G)]
        in_win = [((h - s.freed)[:ab] < Const(R, ab + 1)[:ab]) if R < (1 << ab) else Const(1)
                  for h in heads]
        any_, pick = self._pick(m, s, has, elig)
        entry = Signal(ab, name="issue_entry")
        word = Signal(len(s.word[0]), name="issue_word")
        in_window = Signal(name="in_window")
        m.d.comb += [entry.eq(Array(heads)[pick]), word.eq(Array(s.word)[pick]),
                     in_window.eq(Array(in_win)[pick])]
        rp = lmem[0].read_port(domain="comb")
        m.d.comb += rp.addr.eq(entry)
        src_slot = rp.data
        o = self.o_rd
        m.d.comb += [o.valid.eq(fsm.ongoing("ISSUE") & any_ & in_window),
                     o.payload.addr.eq(slot_word_address(cfg.src_tier, cfg.token_bytes,
                                                         src_slot, word)),
                     o.payload.entry.eq(entry), o.payload.word.eq(word)]
        with m.If(o.valid & o.ready):
            m.d.sync += s.last.eq(pick)
            for g in range(G):
                with m.If(pick == g):
                    with m.If(s.word[g] == cfg.src_words - 1):
                        m.d.sync += [s.word[g].eq(0), s.qpos[g].eq(s.qpos[g] + 1),
                                     s.head[g].eq(nexts[g])]
                    with m.Else():
                        m.d.sync += s.word[g].eq(s.word[g] + 1)

    def _fill(self, m, s, lmem):
        """i_rd -> o_fill with the region and the entry's destination slot; i_free counts."""
        cfg = self.cfg
        i, o = self.i_rd, self.o_fill
        rp = lmem[1].read_port(domain="comb")
        m.d.comb += [rp.addr.eq(i.payload.entry), o.valid.eq(i.valid), i.ready.eq(o.ready),
                     o.payload.region.eq(i.payload.entry[:log2_exact(cfg.regions)]),
                     o.payload.word.eq(i.payload.word),
                     o.payload.slot.eq(rp.data[:len(o.payload.slot)]),
                     o.payload.data.eq(i.payload.data),
                     self.i_free.ready.eq(1)]
        with m.If(self.i_free.valid):
            m.d.sync += s.freed.eq(s.freed + 1)


def _onehot(index, width: int):
    """``width`` bits with bit ``index`` set: one comparator per bit (no case over the index
    values, and quick to elaborate where a 4096-bit shift is not)."""
    return Cat(*[index == k for k in range(width)])


UNITS = (HwUnit("pamif_sender", "PAM interface command reorder unit: migration-list checks, "
                "source reads round-robin over bank groups, tagged words to the buffer "
                "(i_cmd, i_rd, i_free -> o_rd, o_fill, o_status)", PamifConfig, PamifSender,
                SIM_PRESETS, sender_cycles, paper="PAM §6.2, Fig. 8d",
                clocks=dict.fromkeys(SIM_PRESETS, IF_CLOCK), formal=sender_environment,
                response=sender_response, activity=sender_activity),)
