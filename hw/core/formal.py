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

Response (:func:`response_check`, input side): the rules above hold for a unit that takes an
input and never answers it.  A :class:`Response` states what the unit owes for its inputs (how
many transfers on one output each input transfer is answered by, and the latency its cycle
model gives); the check tracks one transfer the solver picks (a free ``formal_pick`` input: the
first transfer that owes an output in a cycle with ``pick`` high), and from the cycle after it
assumes every output ready (fair output ready: before the pick the environment stalls as it
likes, so the tracked transfer may meet a unit full of stalled work).  Asserted: within the
transfer's latency, or one cycle per output still owed if more are owed than that (the outputs
ahead of it drain at one a cycle), plus the response's ``slack``, the output count reaches the
outputs owed up to and including it.  No delay lines: two counters, the target and a timer.
A trace that never picks is unconstrained, so the response narrows no other property; it is a
bounded property (its counters are not inductive), for ``bmc`` and ``cover`` runs.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from amaranth.hdl import (Assert, Assume, Const, Cover, Elaboratable, Module, Mux, ResetSignal,
                          Signal, Value)
from amaranth.lib import fifo as _fifo
from amaranth.lib import memory as _memory
from amaranth.lib import stream, wiring

from pimforge.hw.core.fanout import SplitFifo
from pimforge.hw.core.pipeline import streaming_cycles

__all__ = ["stream_ports", "stream_rules", "fifo_no_loss", "find_fifos", "FormalTop",
           "free_inputs", "Owed", "Response", "per_transfer", "streaming_response",
           "response_check", "one_per_input", "has_response", "unit_response", "RESPONSE_BITS",
           "MAX_RESPONSE"]

RESPONSE_BITS = 12   # the owed and output counters: wider than any bmc run's transfers
MAX_RESPONSE = 1023  # the response timer saturates here (a bound beyond: never asserted)


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
    property may still reach as a submodule, and its probed subclass) are not searched."""
    found = []
    named = getattr(module, "_named_submodules", {})
    for name, entry in list(named.items()):
        sub, src_loc = entry if isinstance(entry, tuple) else (entry, None)
        if isinstance(sub, (_fifo.SyncFIFO, _fifo.SyncFIFOBuffered, SplitFifo)):
            found.append((prefix + name, sub))
        elif levels > 1 and isinstance(sub, wiring.Component) and \
                not isinstance(sub, _memory.Memory) and \
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


@dataclass(frozen=True)
class Owed:
    """One source of owed outputs, a cycle at a time.

    Members
    -------
    weight : the output transfers that this cycle's input transfer owes (0: none this cycle).
    latency : cycles from that input transfer to the last of its output transfers, no stalls
        (from the unit's cycle model).
    pickable : the solver may track this cycle's transfer only where this is high (e.g. a job
        unit whose latency holds for one kind of transfer; the others still count as owed).
    """

    weight: Value
    latency: int
    pickable: Value = field(default_factory=lambda: Const(1))


@dataclass(frozen=True)
class Response:
    """What a unit owes for its inputs (:func:`response_check`).

    Members
    -------
    output : the output port whose transfers answer the inputs (in order).
    owed : ``owed(m, ports) -> (list of Owed, in_contract)``: ``ports`` the component whose
        streams the checker watches; ``in_contract`` (a Value) low once the environment left the
        unit's contract (e.g. a command out of range), which voids the check instead of
        restricting the environment (the stream rules still see every trace).
    slack : cycles allowed beyond the latency: the stall the environment may still apply in the
        tracked transfer's own cycle (a skid buffer fills, the pipeline waits one cycle).
    """

    output: str
    owed: Callable
    slack: int = 1


def per_transfer(latencies: dict, output: str, weights: dict | None = None,
                 slack: int = 1) -> Response:
    """A response owed per input transfer: ``latencies`` input port name -> latency;
    ``weights`` port name -> ``weight(port) -> Value`` (default 1 per transfer)."""
    weights = weights or {}

    def owed(m, ports):
        out = []
        for name, lat in latencies.items():
            port = getattr(ports, name)
            w = weights.get(name, lambda p: Const(1))(port)
            out.append(Owed(Mux(port.valid & _ready(port), w, 0), lat))
        return out, Const(1)
    return Response(output, owed, slack)


def streaming_response(cycle_model, cfg, component) -> Response:
    """One output per input transfer for a unit with one input and one output stream, latency
    ``cycle_model(cfg, 1) - 1`` (a cycle model counts the cycles of ``n`` back-to-back
    operations, the first entering at cycle 0)."""
    ins = [n for n, _, is_out in stream_ports(component) if not is_out]
    outs = [n for n, _, is_out in stream_ports(component) if is_out]
    if len(ins) != 1 or len(outs) != 1:
        raise ValueError(f"streaming_response: needs one input and one output stream, got "
                         f"{ins} and {outs}")
    return per_transfer({ins[0]: cycle_model(cfg, 1) - 1}, outs[0])


def _any(values) -> Value:
    out = Const(0)
    for v in values:
        out = out | v
    return out


def has_response(unit) -> bool:
    """Whether :func:`unit_response` gives the unit a response."""
    return unit.response is not None or unit.cycle_model is streaming_cycles


def unit_response(unit, cfg, component) -> Response | None:
    """The response a unit declaration states: its ``response(cfg)``, else, for a unit whose
    cycle model is :func:`~pimforge.hw.core.pipeline.streaming_cycles`, one output per input
    (:func:`streaming_response`); None for a unit that states none."""
    if unit.response is not None:
        return unit.response(cfg)
    if unit.cycle_model is streaming_cycles:
        return streaming_response(unit.cycle_model, cfg, component)
    return None


def one_per_input(cycle_model, input: str = "i", output: str = "o", slack: int = 1):
    """A declaration's ``response`` for a unit that answers each transfer on ``input`` with one
    on ``output``: ``response(cfg)`` with the latency ``cycle_model(cfg, 1) - 1``."""
    def response(cfg) -> Response:
        return per_transfer({input: cycle_model(cfg, 1) - 1}, output, slack=slack)
    return response


def response_check(m: Module, ports, spec: Response, pick: Value, *, active: Value) -> None:
    """The input-side check of ``spec`` on the streams of ``ports`` (module docstring)."""
    owed_list, in_contract = spec.owed(m, ports)
    bits = RESPONSE_BITS
    owed_now = Signal(bits, name="resp_owed_now")
    m.d.comb += owed_now.eq(sum((o.weight for o in owed_list), Const(0, bits)))
    owed = Signal(bits, name="resp_owed")          # owed before this cycle
    outs = Signal(bits, name="resp_outputs")       # output transfers before this cycle
    out_port = getattr(ports, spec.output)
    out_now = out_port.valid & _ready(out_port)
    m.d.sync += [owed.eq(owed + owed_now), outs.eq(outs + out_now)]
    # the latency of this cycle's pick: the largest among the sources that owe now
    lat_now = Signal(range(MAX_RESPONSE + 1), name="resp_latency_now")
    can_pick = Signal(name="resp_can_pick")
    lat = Const(0, range(MAX_RESPONSE + 1))
    for o in sorted(owed_list, key=lambda o: o.latency):    # the largest last, so it wins
        here = (o.weight != 0) & o.pickable
        lat = Mux(here, o.latency, lat)
    m.d.comb += [lat_now.eq(lat),
                 can_pick.eq(_any([(o.weight != 0) & o.pickable for o in owed_list]))]
    tracked = Signal(name="resp_tracked")
    target = Signal(bits, name="resp_target")
    bound = Signal(range(MAX_RESPONSE + 1), name="resp_bound")
    timer = Signal(range(MAX_RESPONSE + 1), name="resp_timer")
    contract = Signal(init=1, name="resp_in_contract")
    with m.If(~in_contract):
        m.d.sync += contract.eq(0)
    take = Signal(name="resp_take")
    m.d.comb += take.eq(active & ~tracked & pick & can_pick)
    owed_after = (owed + owed_now)[:bits]
    # more owed than the latency carries: one output a cycle, the last at ``outstanding - 1``
    # cycles after the first could leave
    outstanding = (owed_after - outs)[:bits]
    with m.If(take):
        wait = Mux(outstanding > lat_now, outstanding, lat_now) + spec.slack
        m.d.sync += [tracked.eq(1), target.eq(owed_after), timer.eq(0),
                     bound.eq(Mux(wait > MAX_RESPONSE, MAX_RESPONSE, wait))]
    with m.Elif(tracked & (timer != MAX_RESPONSE)):
        m.d.sync += timer.eq(timer + 1)
    seen = (outs + out_now)[:bits]
    # timer counts from 0 in the cycle after the pick: the pick's cycle + timer + 1
    with m.If(tracked & active):
        for name, port, is_output in stream_ports(ports):
            if is_output and not port.signature.always_ready:
                m.d.comb += Assume(port.ready, f"resp_{name}_ready_after_pick")
        with m.If(contract & in_contract & (timer + 1 >= bound)):
            m.d.comb += Assert((seen - target)[bits - 1] == 0, "resp_answered_in_time")
    m.d.comb += Cover(tracked & active & contract & (timer + 1 == bound), "resp_deadline")


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
    response : optional :class:`Response`, checked by :func:`response_check` on the watched
        ports; the solver's pick is the top's extra input ``formal_pick``.
    """

    def __init__(self, dut, *, fifos: bool = True, shell=None, extra=None, fifo_levels: int = 3,
                 response: Response | None = None):
        self.dut = dut
        self.response = response
        self.pick = Signal(name="formal_pick")
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
        if self.response is not None:
            response_check(m, seen, self.response, self.pick, active=active)
        return m

    def ports(self) -> list:
        """The top's ports besides the clock and reset (added by Amaranth): :func:`free_inputs`."""
        pick = [self.pick] if self.response is not None else []
        return free_inputs(self.shell or self.dut) + pick
