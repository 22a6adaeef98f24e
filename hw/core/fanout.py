"""Register copies that split a wide fan-out: :func:`copies`, and :class:`SplitFifo`, a FIFO
whose read pointer is such copies.

A register that selects a whole vector (an accumulator bank's forwarding select drives every bit
of every lane) spends its cycle in routing on an FPGA: on ECP5 a quarter of ``sv_gemv``'s
critical path is the route from one such register to 256 multiplexers.  ``copies`` builds one
register per group of sinks, all loaded from the same value.  Yosys would merge them back
(``opt_merge`` shares flip-flops with equal inputs), so every synthesis flow marks flip-flops
whose output wire ends in
:data:`COPY_MARK` and a number ``keep`` (:mod:`pimforge.synth.flows`).
"""
from __future__ import annotations

from amaranth.hdl import Cat, Elaboratable, Module, Mux, Signal, Value
from pimforge.hw.core.activity import Memory

__all__ = ["copies", "COPY_MARK", "SplitFifo"]

# The name suffix of a copy, before its index; the synthesis flows select ``w:*{COPY_MARK}*``.
COPY_MARK = "_dup"


def copies(m, value, n: int, name: str, init: int = 0) -> list:
    """``n`` registers, each loaded with ``value`` every cycle (one cycle of latency), named
    ``{name}_dup0`` .. ``{name}_dup{n-1}``; one register when ``n`` is 1.  ``init`` is their
    reset value."""
    value = Value.cast(value)
    regs = [Signal(value.shape(), name=f"{name}{COPY_MARK}{k}", init=init) for k in range(n)]
    m.d.sync += [r.eq(value) for r in regs]
    return regs


class SplitFifo(Elaboratable):
    """``amaranth.lib.fifo.SyncFIFO`` (first-word fall-through, combinational read from
    LUT-RAM) with the same ports and cycle behaviour, whose storage is one memory per slice of
    ``widths`` bits, each read at its own copy of the read pointer and written at its own copies
    of the write pointer and the "not full" flag.  A wide FIFO's read pointer
    otherwise drives every RAM cell's address and every output multiplexer: on ECP5 that fan-out
    was ``pam_pu``'s critical path (the V FIFO, 65 bits wide at 4 lanes, into the fma array).

    ``lut_ram``: mark the memories ``ram_style = "distributed"``, so that Yosys keeps them in
    LUT-RAM (a combinational read) instead of folding the read pointer into a block RAM's
    address register, whose slow clock-to-out would then start the reader's path.
    """

    def __init__(self, widths: list, depth: int, name: str = "fifo", lut_ram: bool = False):
        self.widths, self.depth, self.name = [int(w) for w in widths], int(depth), name
        self.attrs = {"ram_style": "distributed"} if lut_ram else {}
        self.width = sum(self.widths)
        self.w_data = Signal(self.width)
        self.w_en = Signal()
        self.w_rdy = Signal()
        self.r_data = Signal(self.width)
        self.r_en = Signal()
        self.r_rdy = Signal()
        self.level = Signal(range(self.depth + 1))

    def elaborate(self, platform):
        m, d, n = Module(), self.depth, len(self.widths)
        level = self.level
        # The write side is registered per slice too: "not full" and the write pointer are
        # copies loaded from their next values, so a slice's write enable is the writer's
        # valid and one register, and its write address a register of its own.  With the
        # full test (level != depth) in front of every slice's write enable, the level
        # register's fan-out to the LUT-RAM cells would be pam_pu's ECP5 critical path.  Cycle
        # behaviour is SyncFIFO's.
        level_next = Signal.like(level, name="level_next")
        not_full = copies(m, level_next != d, n, f"{self.name}_not_full", init=1)
        m.d.comb += [self.w_rdy.eq(not_full[0]), self.r_rdy.eq(level != 0)]
        do_read, do_write = self.r_rdy & self.r_en, self.w_rdy & self.w_en
        produce_next = Signal(range(d), name="produce_next")
        produce = copies(m, produce_next, n, f"{self.name}_produce")
        m.d.comb += produce_next.eq(Mux(do_write, Mux(produce[0] == d - 1, 0, produce[0] + 1),
                                        produce[0]))
        consume_next = Signal(range(d), name="consume_next")
        consume = copies(m, consume_next, n, f"{self.name}_consume")
        m.d.comb += consume_next.eq(Mux(do_read, Mux(consume[0] == d - 1, 0, consume[0] + 1),
                                        consume[0]))
        reads, lo = [], 0
        for k, w in enumerate(self.widths):
            mem = Memory(shape=w, depth=d, init=[], attrs=self.attrs)
            m.submodules[f"slice{k}"] = mem
            wr, rd = mem.write_port(), mem.read_port(domain="comb")
            m.d.comb += [wr.addr.eq(produce[k]), wr.data.eq(self.w_data[lo:lo + w]),
                         wr.en.eq(self.w_en & not_full[k]), rd.addr.eq(consume[k])]
            reads.append(rd.data)
            lo += w
        m.d.comb += self.r_data.eq(Cat(*reads))
        m.d.comb += level_next.eq(level)
        with m.If(do_write & ~do_read):
            m.d.comb += level_next.eq(level + 1)
        with m.If(do_read & ~do_write):
            m.d.comb += level_next.eq(level - 1)
        m.d.sync += level.eq(level_next)
        return m
