"""The cocotb side: one coroutine per clock edge drives every input stream and watches every output.

Python cost per cycle is kept small (about 10 us): payloads are packed before the run, stall
patterns are precomputed lists, and the in-order checker compares integers.  Transfer semantics
follow amaranth.lib.stream: values sampled right after a rising edge are the ones the edge saw, so
``valid and ready`` there means a transfer happened at that edge.  A driver raises ``valid``
without looking at ``ready`` and holds it and the payload until the transfer.
"""
from __future__ import annotations

from cocotb.clock import Clock
from cocotb.triggers import RisingEdge

from pimforge.sim.harness.job import PhaseResult, pack_fields, unpack_payloads

MAX_REPORTED_ERRORS = 10


class _Source:
    def __init__(self, dut, name, spec, payloads, pattern):
        self.name = name
        self.valid = getattr(dut, spec["valid"])
        self.payload = getattr(dut, spec["payload"])
        self.ready = getattr(dut, spec["ready"]) if "ready" in spec else None
        self.payloads = payloads
        self.pattern = pattern
        self.plen = len(pattern)
        self.idx = 0
        self.active = False
        self.driven_valid = 0     # last value written to `valid`: writes only on change
        self.stamps = []
        self.start = 0            # memory model: first cycle a beat may be offered
        self.after = None         # memory model: (stamps of the output it reads back, latency)
        self.arrive = None        # memory model: (reference stamps, refs, offsets)
        self.offer = None         # memory model callable fn(k, stamps) (Phase.offer_at)
        self.offer_k = -1         # the beat whose earliest cycle is cached in offer_t
        self.offer_t = 0


class _Sink:
    def __init__(self, dut, name, spec, expected, pattern):
        self.name = name
        self.valid = getattr(dut, spec["valid"])
        self.payload = getattr(dut, spec["payload"])
        self.ready = getattr(dut, spec["ready"]) if "ready" in spec else None
        self.expected = expected
        self.pattern = pattern
        self.plen = len(pattern)
        self.ready_now = self.ready is None
        self.driven_ready = None  # last value written to `ready`: writes only on change
        self.received = []
        self.stamps = []
        self.accept = None        # memory model callable fn(k, stamps) (Phase.ready_at)
        self.accept_k = -1
        self.accept_t = 0


def _earliest(fn, k, stamps, cache_k, cache_t):
    """``(k, t)``: the memory model's earliest cycle for beat ``k`` (cached once known); t is
    None while the model cannot tell yet."""
    if cache_k == k:
        return cache_k, cache_t
    t = fn(k, stamps)
    return (k, t) if t is not None else (-1, None)


async def _reset(dut, sources, sinks, cycles=3):
    for s in sources:
        s.valid.value = 0
    for k in sinks:
        if k.ready is not None:
            k.ready.value = 0
    dut.rst.value = 1
    for _ in range(cycles):
        await RisingEdge(dut.clk)
    dut.rst.value = 0


async def run_phase(dut, manifest, phase, drain_cycles, timeout_factor) -> PhaseResult:
    streams = manifest["streams"]
    sources = [_Source(dut, n, streams[n], pack_fields(manifest, n, phase.inputs[n]),
                       phase.stall_for(n, "valid").as_list())
               for n in streams if streams[n]["direction"] == "in"]
    sinks = [_Sink(dut, n, streams[n], pack_fields(manifest, n, phase.expected[n]),
                   phase.stall_for(n, "ready").as_list())
             for n in streams if streams[n]["direction"] == "out"]
    by_name = {k.name: k for k in sinks}
    src_by_name = {s.name: s for s in sources}
    for s in sources:
        arr = phase.arrivals.get(s.name)
        if arr is not None:
            s.arrive = (src_by_name[arr[0]].stamps, list(arr[1]), list(arr[2]))
        s.start = phase.start_delay.get(s.name, 0)
        dep = phase.after.get(s.name)
        s.after = None if dep is None else (by_name[dep[0]].stamps, dep[1])
        s.offer = phase.offer_at.get(s.name)
    for k in sinks:
        k.accept = phase.ready_at.get(k.name)
    all_stamps = {x.name: x.stamps for x in sources + sinks}
    await _reset(dut, sources, sinks)
    errors = []
    total = sum(len(s.payloads) for s in sources) + sum(len(k.expected) for k in sinks)
    budget = timeout_factor * (total + 100)
    rise = RisingEdge(dut.clk)
    cyc = 0
    # Cycle 0 is the first cycle after reset: drive it before the first edge.
    done_at = None
    last_transfer = 0
    while True:
        # ---- drive for the cycle that ends at the next edge
        # (cocotb writes are the costly part of a cycle, so a signal is written only on change)
        for s in sources:
            if s.active:
                continue  # hold valid and payload until the transfer
            if s.idx < len(s.payloads) and s.pattern[cyc % s.plen] and cyc >= s.start and \
                    (s.after is None or (len(s.after[0]) > s.idx
                                         and cyc > s.after[0][s.idx] + s.after[1])) and \
                    (s.arrive is None or _arrived(s.arrive, s.idx, cyc)) and \
                    (s.offer is None or _offer_ok(s, cyc, all_stamps)):
                s.payload.value = s.payloads[s.idx]
                s.active = True
                if not s.driven_valid:
                    s.valid.value = s.driven_valid = 1
            elif s.driven_valid:
                s.valid.value = s.driven_valid = 0
        for k in sinks:
            if k.ready is not None:
                k.ready_now = k.pattern[cyc % k.plen]
                if k.accept is not None and k.ready_now:
                    k.accept_k, k.accept_t = _earliest(k.accept, len(k.received), all_stamps,
                                                       k.accept_k, k.accept_t)
                    k.ready_now = k.accept_t is not None and cyc >= k.accept_t
                if k.ready_now is not k.driven_ready:
                    k.ready.value = 1 if k.ready_now else 0
                    k.driven_ready = k.ready_now
        await rise
        # ---- observe what that edge transferred
        for s in sources:
            if s.active and (s.ready is None or s.ready.value):
                s.stamps.append(cyc)
                s.idx += 1
                s.active = False
                last_transfer = cyc
        for k in sinks:
            if k.ready_now and k.valid.value:
                raw = k.payload.value
                if not raw.is_resolvable:  # X or Z on a valid payload is a design bug
                    if len(errors) < MAX_REPORTED_ERRORS:
                        errors.append(f"stream '{k.name}': transfer #{len(k.received)} at cycle "
                                      f"{cyc} carries unresolved bits: {raw}")
                    k.received.append(-1)
                    k.stamps.append(cyc)
                    continue
                value = int(raw)
                n = len(k.received)
                k.received.append(value)
                k.stamps.append(cyc)
                last_transfer = cyc
                if n >= len(k.expected):
                    if len(errors) < MAX_REPORTED_ERRORS:
                        errors.append(f"stream '{k.name}': extra transfer #{n} at cycle {cyc}: "
                                      f"{_fields_text(manifest, k.name, value)}")
                elif value != k.expected[n] and len(errors) < MAX_REPORTED_ERRORS:
                    errors.append(f"stream '{k.name}': transfer #{n} at cycle {cyc}: got "
                                  f"{_fields_text(manifest, k.name, value)}, expected "
                                  f"{_fields_text(manifest, k.name, k.expected[n])}")
        cyc += 1
        if done_at is None and all(len(k.received) >= len(k.expected) for k in sinks) \
                and all(s.idx >= len(s.payloads) for s in sources):
            done_at = cyc
        if done_at is not None and cyc >= done_at + drain_cycles:
            break
        if cyc >= budget:
            for s in sources:
                if s.idx < len(s.payloads):
                    errors.append(f"stream '{s.name}': only {s.idx} of {len(s.payloads)} inputs "
                                  f"accepted within {budget} cycles")
            for k in sinks:
                if len(k.received) < len(k.expected):
                    errors.append(f"stream '{k.name}': missing transfers: got {len(k.received)} of "
                                  f"{len(k.expected)} within {budget} cycles")
            break
    for s in sources:
        s.valid.value = s.driven_valid = 0
    # A counter read right after an edge shows the value that edge saw, before its own update:
    # the counts cover the cycles before the last edge, cyc - 1 of them.
    actions = {}
    for p in manifest.get("probes", ()):
        actions[p["action"]] = actions.get(p["action"], 0) + int(getattr(dut, p["port"]).value)
    return PhaseResult(
        name=phase.name, cycles=last_transfer + 1,
        in_stamps={s.name: s.stamps for s in sources},
        out_stamps={k.name: k.stamps for k in sinks},
        received={k.name: k.received for k in sinks},
        errors=errors, actions=actions, probe_cycles=cyc - 1)


def _offer_ok(s, cyc, stamps) -> bool:
    """The memory model lets source ``s`` offer its next beat at cycle ``cyc``."""
    s.offer_k, s.offer_t = _earliest(s.offer, s.idx, stamps, s.offer_k, s.offer_t)
    return s.offer_t is not None and cyc >= s.offer_t


def _arrived(arrive, idx, cyc) -> bool:
    """Beat ``idx`` has arrived by cycle ``cyc``
    (see :attr:`~pimforge.sim.harness.job.Phase.arrivals`)."""
    stamps, refs, offsets = arrive
    ref = refs[idx]
    return len(stamps) > ref and cyc >= stamps[ref] + offsets[idx]


def _fields_text(manifest, stream, value) -> str:
    fields = unpack_payloads(manifest, stream, [value])
    return "{" + ", ".join(f"{n}=0x{int(v[0]):x}" for n, v in fields.items()) + "}"


async def run_job(dut, manifest, job) -> list:
    Clock(dut.clk, 10, unit="ns").start()
    results = []
    for phase in job.phases:
        res = await run_phase(dut, manifest, phase, job.drain_cycles, job.timeout_factor)
        results.append(res)
    return results
