"""Formal properties of valid/ready streams, FIFO no-loss checks and a formal top for any unit.

The rules are those of ``amaranth.lib.stream`` (docs/guide/manifest.md): a transfer happens on
a rising edge where ``valid`` and ``ready`` are both high, and once ``valid`` is raised, ``valid``
and the payload hold until that transfer.  :func:`stream_rules` states them over one stream port:

* on an *output* port (the unit produces the stream) as ``Assert``: the unit must obey them;
* on an *input* port (the unit consumes it) as ``Assume``: the environment obeys them.

Everything else is left free: input payloads, when an input becomes valid and, on every output,
``ready`` (arbitrary back-pressure).  Amaranth 0.5 has no ``Past``/``Stable``, so each check keeps
its own registers of the previous cycle's values.

Reset: :class:`FormalTop` assumes ``rst`` high in the first cycle and low ever after (all
registers also start at their ``init`` values).  The rules apply from the cycle after the reset
cycle, so a stream that ends mid-transfer at reset is not a violation.

FIFO no-loss (:func:`fifo_no_loss`): the units' output FIFOs are flow-controlled by credits
(``w_en`` does not look at ``w_rdy``), so a write into a full FIFO would be lost without a trace.
The check asserts that a write never meets a full FIFO and that the transfers counted in minus
those counted out always equal the FIFO's ``level`` (nothing lost, nothing duplicated).
:func:`find_fifos` finds them among the unit's submodules and, for a composite, inside its
sub-components (two levels further by default).
"""
from __future__ import annotations

from amaranth.hdl import (Assert, Assume, Const, Cover, Elaboratable, Module, ResetSignal, Signal,
                          Value)
from amaranth.lib import fifo as _fifo
from amaranth.lib import stream, wiring

from pimforge.hw.core.fanout import SplitFifo

__all__ = ["stream_ports", "stream_rules", "fifo_no_loss", "find_fifos", "FormalTop",
           "free_inputs"]


def stream_ports(component) -> list:
    """``[(name, port, is_output)]`` for every ``stream.Signature`` member of ``component``."""
    out = []
    for name, member in component.signature.members.items():
        if member.is_signature and isinstance(member.signature, stream.Signature):
            out.append((name, getattr(component, name), member.flow == wiring.Out))
    return out


def _payload_bits(port) -> Value:
    payload = port.payload
    return payload.as_value() if hasattr(payload, "as_value") else Value.cast(payload)


def _ready(port) -> Value:
    return Const(1) if port.signature.always_ready else port.ready


def stream_rules(m: Module, name: str, port, *, output: bool, active: Value) -> None:
    """Add the stream rules for ``port`` to ``m``.

    Parameters
    ----------
    m : the module to add the properties (and their registers) to.
    name : a prefix for the registers' names (the port's name).
    port : the stream interface (``valid``, ``payload`` and, unless always ready, ``ready``).
    output : ``True``: the unit drives the stream, the rules are asserted; ``False``: the
        environment drives it, the rules are assumed.
    active : high in the cycles whose successor the rules constrain (here: not in reset).
    """
    payload = _payload_bits(port)
    ready = _ready(port)
    prev_active = Signal(name=f"{name}_chk_active", reset_less=True)
    prev_waiting = Signal(name=f"{name}_chk_waiting", reset_less=True)
    prev_payload = Signal(len(payload), name=f"{name}_chk_payload", reset_less=True)
    m.d.sync += [prev_active.eq(active), prev_waiting.eq(port.valid & ~ready),
                 prev_payload.eq(payload)]
    check = Assert if output else Assume
    with m.If(prev_active & prev_waiting):
        # valid was high without a transfer: valid and the payload must hold.
        m.d.comb += [check(port.valid, f"{name}_valid_held"),
                     check(payload == prev_payload, f"{name}_payload_held")]
    m.d.comb += Cover(active & port.valid & ready, f"{name}_transfer")


def fifo_no_loss(m: Module, name: str, f, *, active: Value) -> None:
    """Assert that the FIFO ``f`` (``amaranth.lib.fifo.SyncFIFO``-like: ``w_en``, ``w_rdy``,
    ``r_en``, ``r_rdy``, ``level``, ``depth``) never drops a write and that transfers in minus
    transfers out equal its level."""
    written = f.w_en & f.w_rdy
    read = f.r_en & f.r_rdy
    count = Signal(range(f.depth + 1), name=f"{name}_chk_count")  # reset with the FIFO
    m.d.sync += count.eq(count + written - read)
    with m.If(active):
        m.d.comb += [Assert(~(f.w_en & ~f.w_rdy), f"{name}_no_overflow"),
                     Assert(count == f.level, f"{name}_in_minus_out_is_level"),
                     Assert(f.level <= f.depth, f"{name}_level_in_range")]


def find_fifos(module, levels: int = 1, platform=None, prefix: str = "") -> list:
    """``[(name, fifo)]``: the ``amaranth.lib.fifo`` FIFOs (and :class:`~pimforge.hw.core.fanout.SplitFifo`, the same
    ports) among ``module``'s named submodules
    and, for ``levels`` > 1, inside its sub-components (``wiring.Component`` submodules, e.g.
    the units of a composite) down to ``levels`` levels, named ``<component>__<fifo>``.

    To reach a sub-component's FIFOs it is elaborated here (with ``platform``) and its entry in
    ``module`` is replaced by the elaborated module, the same hardware.  Amaranth's own
    components (its FIFOs, whose inner FIFO is theirs, and ``lib.memory.Memory``, which a
    property may still reach as a submodule) are not searched."""
    found = []
    named = getattr(module, "_named_submodules", {})
    for name, entry in list(named.items()):
        sub, src_loc = entry if isinstance(entry, tuple) else (entry, None)
        if isinstance(sub, (_fifo.SyncFIFO, _fifo.SyncFIFOBuffered, SplitFifo)):
            found.append((prefix + name, sub))
        elif levels > 1 and isinstance(sub, wiring.Component) and \
                not type(sub).__module__.startswith("amaranth."):
            inner = sub.elaborate(platform)
            sub._MustUse__used = True  # elaborated here, not by Amaranth
            named[name] = (inner, src_loc)
            found += find_fifos(inner, levels - 1, platform, f"{prefix}{name}__")
    return found


def free_inputs(component) -> list:
    """The signals the environment drives: input streams' ``valid`` and payload, output
    streams' ``ready`` (the ports of the formal top, so the solver may choose them freely)."""
    ports = []
    for _, port, is_output in stream_ports(component):
        if is_output:
            if not port.signature.always_ready:
                ports.append(port.ready)
        else:
            ports += [port.valid, _payload_bits(port)]
    return ports


class FormalTop(Elaboratable):
    """A unit under the stream rules: inputs assumed, outputs (and internal FIFOs) asserted.

    Parameters
    ----------
    dut : the unit's component (a ``wiring.Component`` with stream ports).
    fifos : also check no-loss on the FIFOs among the unit's submodules.
    fifo_levels : how deep :func:`find_fifos` searches: 1, the unit's own submodules; 3 (the
        default) also the FIFOs of its sub-components and theirs (a composite's units, e.g.
        ``pam_system`` -> device -> PU).
    shell : optional component between the unit and the checker (a test's mutation): its
        ``elaborate`` holds only the glue between its own stream ports and the unit's (the unit
        itself is added here), and the checker watches the shell's ports instead of the unit's.
    extra : optional unit-specific properties (e.g. :mod:`pimforge.hw.pamif.buffer_formal`),
        called as ``extra(m, dut, dut_module, ports, active)``: ``dut_module`` is the unit's
        elaborated module (to reach its memories), ``ports`` the component whose stream ports
        the checker watches (the shell, if any), ``active`` as in :func:`stream_rules`.  It adds
        environment assumptions, invariants and covers to ``m``.
    """

    def __init__(self, dut, *, fifos: bool = True, shell=None, extra=None, fifo_levels: int = 3):
        self.dut = dut
        self.fifos = fifos
        self.fifo_levels = fifo_levels
        self.shell = shell
        self.extra = extra
        self.checked_fifos: list = []

    def elaborate(self, platform):
        m = Module()
        dut_module = self.dut.elaborate(platform)
        self.dut._MustUse__used = True  # elaborated here (to reach its FIFOs), not by Amaranth
        m.submodules.dut = dut_module
        seen = self.dut
        if self.shell is not None:
            m.submodules.shell = seen = self.shell
        in_reset = Signal(init=1, reset_less=True, name="formal_reset_cycle")
        m.d.sync += in_reset.eq(0)
        m.d.comb += Assume(ResetSignal("sync") == in_reset, "reset_in_first_cycle_only")
        active = ~in_reset
        for name, port, is_output in stream_ports(seen):
            stream_rules(m, name, port, output=is_output, active=active)
        if self.fifos:
            self.checked_fifos = find_fifos(dut_module, self.fifo_levels, platform)
            for name, f in self.checked_fifos:
                fifo_no_loss(m, name, f, active=active)
        if self.extra is not None:
            self.extra(m, self.dut, dut_module, seen, active)
        return m

    def ports(self) -> list:
        """The top's ports besides the clock and reset (added by Amaranth): :func:`free_inputs`."""
        return free_inputs(self.shell or self.dut)
