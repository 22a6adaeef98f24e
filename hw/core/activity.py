"""Activity probes: counters of the actions a unit's RTL performs, for the energy model.

The energy of a job is the sum over actions (a float operation, an SRAM read or write) of how
often each fires times its energy (:mod:`pimforge.hw.core.energy`).  A unit's activity model
(``HwUnit.activity``) predicts those counts; the probes count them in simulation so that the
benches can check the model exactly, as they check the cycle models.

Generators call :func:`probe` where an action fires: :func:`~pimforge.hw.fp.ops.float_op` on
its operand-valid signal, a stream unit on its input transfer, a memory
(:class:`Memory`, a drop-in for ``amaranth.lib.memory.Memory``) on each port's enable.  While no
:func:`probing` block is open the calls build nothing, so ``pimforge generate`` and synthesis
see the unit unchanged.  Inside one (the bench harness opens it), each call adds a counter
``pf_probe_<n>`` that adds ``weight`` in every cycle its ``fire`` signal is high and clears on
reset; :func:`~pimforge.hw.core.elaborate.elaborate` makes the counters ports of the top module,
and the manifest lists them under ``"probes"``.

Action keys are strings ``"<class>:<kind>:<shape>"``:

- ``op:<kind>:<fmt>`` -- one float operation (``op:fma:e5m10``), as in the operator inventory;
- ``sram:read:<depth>x<width>`` and ``sram:write:<depth>x<width>`` -- one access of a memory
  of ``depth`` words of ``width`` bits (``rom:read:...`` for a constant table);
- ``fifo:read:<depth>x<width>`` and ``fifo:write:<depth>x<width>`` -- one pop or push of a
  :class:`SyncFIFO` (its storage is a register file, priced by the SRAM rule).

A read port without an enable (an asynchronous LUT-RAM read, whose ``en`` is the constant 1)
reads in every cycle whether its data is used or not, so it has no event to count; such ports
are not probed, and the activity models do not count them either (``docs/guide/energy.md``).
"""
from __future__ import annotations

import threading
from collections import Counter
from contextlib import contextmanager

from amaranth.hdl import Const, Module, Shape, Signal, Value
from amaranth.lib import fifo, memory

from pimforge.hw.core.inventory import fmt_name

__all__ = ["COUNTER_BITS", "Probe", "probing", "probe", "active", "op_action", "mem_action",
           "Memory", "SyncFIFO"]

COUNTER_BITS = 48


class Probe:
    """One counter: the action it counts, its top-level port name and its signal."""

    def __init__(self, key: str, name: str, signal: Signal):
        self.key = key
        self.name = name
        self.signal = signal


class _Stack(threading.local):
    """Per thread, as the operator inventory's recordings."""

    def __init__(self):
        self.items = []


_OPEN = _Stack()


@contextmanager
def probing():
    """Build a counter for every :func:`probe` call made inside the block; yields the list of
    :class:`Probe` it fills."""
    probes = []
    _OPEN.items.append(probes)
    try:
        yield probes
    finally:
        _OPEN.items.pop()


def active() -> bool:
    """True inside a :func:`probing` block."""
    return bool(_OPEN.items)


def op_action(kind: str, fmt) -> str:
    """The action key of one float operation of ``kind`` with result format ``fmt``."""
    return f"op:{kind}:{fmt_name(fmt)}"


def mem_action(access: str, depth: int, width: int, rom: bool = False, cls: str = "") -> str:
    """The action key of one ``access`` (``read`` or ``write``) of a memory (``cls``
    ``"fifo"`` for a FIFO's push or pop)."""
    cls = cls or ("rom" if rom else "sram")
    return f"{cls}:{access}:{depth}x{width}"


def probe(m: Module, key: str, fire, weight: int = 1) -> None:
    """Count ``weight`` actions ``key`` in every cycle ``fire`` is high (nothing outside a
    :func:`probing` block)."""
    if not _OPEN.items or weight == 0:
        return
    probes = _OPEN.items[-1]
    name = f"pf_probe_{len(probes)}"
    cnt = Signal(COUNTER_BITS, name=name)
    with m.If(Value.cast(fire).any()):
        m.d.sync += cnt.eq(cnt + int(weight))
    probes.append(Probe(key, name, cnt))


class Memory(memory.Memory):
    """``amaranth.lib.memory.Memory`` whose ports are probed when it elaborates inside a
    :func:`probing` block: a write port counts one ``write`` per cycle its enable is set (any
    lane), a read port with an enable one ``read`` per cycle it is set.  A memory with ``init``
    values and no write port counts as a ROM."""

    def elaborate(self, platform):
        inner = super().elaborate(platform)
        if not active():
            return inner
        m = Module()
        m.submodules.mem = inner
        width = Shape.cast(self.shape).width
        rom = not self.write_ports
        for port in self.write_ports:
            probe(m, mem_action("write", self.depth, width), port.en)
        for port in self.read_ports:
            if isinstance(port.en, Const):
                continue
            probe(m, mem_action("read", self.depth, width, rom=rom), port.en)
        return m


class SyncFIFO(fifo.SyncFIFO):
    """``amaranth.lib.fifo.SyncFIFO`` whose pushes and pops are probed inside a
    :func:`probing` block (``fifo:write`` when ``w_en & w_rdy``, ``fifo:read`` when
    ``r_en & r_rdy``).  Its storage is Amaranth's own memory, so it is counted here once, not
    again as an SRAM."""

    def elaborate(self, platform):
        m = super().elaborate(platform)
        if active() and self.depth:
            probe(m, mem_action("write", self.depth, self.width, cls="fifo"),
                  self.w_en & self.w_rdy)
            probe(m, mem_action("read", self.depth, self.width, cls="fifo"),
                  self.r_en & self.r_rdy)
        return m
