"""Small stream components and mutation shells for tests/test_formal.py.

``TinyStage`` is a one-register stream stage, correct or with one of three protocol bugs.
``MutantShell`` sits between a unit and the checker (``FormalTop(shell=...)``) and breaks the
unit's output stream ``o`` (or another output ``port``) the way a dropped ready term would.
``BufferMutant`` is ``pamif_buffer`` with one bug inside (for tests/pamif/test_formal_buffer.py).
"""
from amaranth.hdl import Array, Assume, Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.fifo import SyncFIFO
from amaranth.lib.wiring import In, Out

from pimforge.hw.core.formal import stream_ports
from pimforge.hw.core.pipeline import build_pipeline
from pimforge.hw.pamif.buffer import PamifBuffer

STAGE_BUGS = (None, "ignore_ready", "drop_valid", "payload_glitch")
SHELL_BUGS = ("ignore_ready", "drop_valid", "payload_glitch")


class TinyStage(wiring.Component):
    """One register stage, 8-bit payload: ``latency`` 1.

    ``bug``: ``ignore_ready`` loads whatever ``o.ready`` says; ``drop_valid`` lowers ``o.valid``
    in the second cycle of a stall; ``payload_glitch`` flips a payload bit while stalled.
    """

    i: In(stream.Signature(8))
    o: Out(stream.Signature(8))
    latency = 1

    def __init__(self, bug=None):
        assert bug in STAGE_BUGS
        self.bug = bug
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        full, data, waited = Signal(), Signal(8), Signal()
        load = Signal()
        m.d.comb += load.eq(1 if self.bug == "ignore_ready" else ~full | self.o.ready)
        m.d.comb += self.i.ready.eq(load)
        with m.If(load):
            m.d.sync += [full.eq(self.i.valid), data.eq(self.i.payload)]
        m.d.sync += waited.eq(full & ~self.o.ready)
        valid, payload = full, data
        if self.bug == "drop_valid":
            valid = full & ~waited
            m.d.comb += load.eq(~full | (self.o.ready & ~waited))
        if self.bug == "payload_glitch":
            payload = data ^ waited
        m.d.comb += [self.o.valid.eq(valid), self.o.payload.eq(payload)]
        return m


class PipeStage(wiring.Component):
    """The project's bubble-collapsing pipeline (:mod:`pimforge.hw.core.pipeline`), 8 bits
    through an increment, ``depth`` register boundaries."""

    i: In(stream.Signature(8))
    o: Out(stream.Signature(8))

    def __init__(self, depth=2):
        self.latency = depth
        self.depth = depth
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        stages = [lambda m, v: {"x": v["x"] + 1}, lambda m, v: {"x": v["x"][:8] ^ 0x5A}]
        build_pipeline(m, stages, {"x": self.i.payload}, self.depth, self.i, self.o,
                       lambda v: v["x"][:8])
        return m


class MutantShell(wiring.Component):
    """The unit's ports, passed through, except that output ``port`` (default ``o``) gets ``bug``:

    * ``ignore_ready``: the unit sees ``o.ready`` always high (the ready term dropped);
    * ``drop_valid``: ``o.valid`` falls in the second cycle of a stall;
    * ``payload_glitch``: a payload bit flips while stalled.
    """

    def __init__(self, dut, bug, port="o"):
        assert bug in SHELL_BUGS
        self.dut, self.bug, self.port = dut, bug, port
        self.latency = dut.latency
        super().__init__(dut.signature)

    def elaborate(self, platform):
        m = Module()
        inner = {name: port for name, port, _ in stream_ports(self.dut)}
        for name, outer, is_output in stream_ports(self):
            port = inner[name]
            if not is_output:
                m.d.comb += [port.valid.eq(outer.valid), port.payload.eq(outer.payload),
                             outer.ready.eq(port.ready)]
                continue
            if name != self.port:
                m.d.comb += [outer.valid.eq(port.valid), outer.payload.eq(port.payload),
                             port.ready.eq(outer.ready)]
                continue
            waited = Signal(name="shell_waited")
            m.d.sync += waited.eq(port.valid & ~outer.ready)
            bits = port.payload.as_value()
            m.d.comb += [outer.valid.eq(port.valid), outer.payload.eq(bits),
                         port.ready.eq(outer.ready)]
            if self.bug == "ignore_ready":
                m.d.comb += port.ready.eq(1)
            elif self.bug == "drop_valid":
                m.d.comb += [outer.valid.eq(port.valid & ~waited),
                             port.ready.eq(outer.ready & ~waited)]
            else:
                m.d.comb += outer.payload.eq(bits ^ waited)
        return m


class CreditFifo(wiring.Component):
    """``i`` into an ``amaranth.lib.fifo.SyncFIFO`` of ``depth`` entries, out on ``o``; ``i`` is
    flow-controlled by ``credits`` (beats in the FIFO or in its one-cycle input register), as
    the units' output FIFOs are.  ``credits > depth`` overflows the FIFO: a write is lost."""

    i: In(stream.Signature(8))
    o: Out(stream.Signature(8))

    def __init__(self, depth=2, credits=2):
        self.depth, self.credits = depth, credits
        self.latency = 2
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        m.submodules.out_fifo = f = SyncFIFO(width=8, depth=self.depth)
        used = Signal(range(self.credits + 1))
        staged, data = Signal(), Signal(8)
        fire, sent = Signal(), Signal()
        m.d.comb += [self.i.ready.eq(used < self.credits), fire.eq(self.i.valid & self.i.ready),
                     sent.eq(self.o.valid & self.o.ready)]
        m.d.sync += [staged.eq(fire), data.eq(self.i.payload), used.eq(used + fire - sent)]
        m.d.comb += [f.w_en.eq(staged), f.w_data.eq(data), self.o.valid.eq(f.r_rdy),
                     self.o.payload.eq(f.r_data), f.r_en.eq(self.o.ready)]
        return m


class NeverValid(wiring.Component):
    """An output that never becomes valid: every assertion holds (vacuously); only a cover
    run shows that no transfer can happen."""

    i: In(stream.Signature(8))
    o: Out(stream.Signature(8))
    latency = 1

    def elaborate(self, platform):
        m = Module()
        seen = Signal()
        m.d.sync += seen.eq(seen | self.i.valid)
        m.d.comb += [self.i.ready.eq(1), self.o.valid.eq(0), self.o.payload.eq(seen)]
        return m


BUFFER_BUGS = ("skip_write", "slow_drain", "early_complete")


class BufferMutant(PamifBuffer):
    """``pamif_buffer`` with ``bug``, patched over the real ``elaborate`` (a later comb
    assignment to the same signal wins):

    * ``skip_write``: a token's last source word is not written into the memory;
    * ``slow_drain``: the drain's ready term dropped, it reads only while ``o`` is empty
      (``advance = complete & ~o.valid``: one word every other cycle);
    * ``early_complete``: the completion count off by one (a region is read from
      ``src_words - 1`` words on).
    """

    def __init__(self, cfg, bug):
        assert bug in BUFFER_BUGS
        self.bug = bug
        super().__init__(cfg)

    def elaborate(self, platform):
        m = super().elaborate(platform)
        ns = self.cfg.src_words
        count = Array(self.count)
        if self.bug == "skip_write":
            with m.If(self.i.payload.word == ns - 1):
                m.d.comb += m.submodules.mem.write_ports[0].en.eq(0)
        elif self.bug == "slow_drain":
            m.d.comb += self.advance.eq((count[self.head] == ns) & ~self.o.valid)
        else:
            m.d.comb += self.advance.eq((count[self.head] >= ns - 1) &
                                        (~self.o.valid | self.o.ready))
        return m


def zero_data(extra=None):
    """A ``FormalTop`` extra for cover runs: ``extra`` (the unit's own, if any) plus the
    assumption that every input stream's ``data`` field is 0.  A transfer reached under it is
    reachable without it; the solver need not search the arithmetic's free operands, which at
    the job-based units' depths (40-100 cycles) is what makes a plain cover slow."""

    def add(m, dut, dut_module, ports, active):
        if extra is not None:
            extra(m, dut, dut_module, ports, active)
        for name, port, is_output in stream_ports(ports):
            data = getattr(port.payload, "data", None) if not is_output else None
            if data is not None:
                m.d.comb += Assume(data == 0, f"{name}_data_zero")
    return add
