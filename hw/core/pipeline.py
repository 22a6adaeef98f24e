"""A stream pipeline with a depth parameter and full back-pressure.

A datapath is written as a list of *stages*: functions ``stage(m, values) -> values`` that build
combinational logic from a dict of Amaranth values and return a new dict.  :func:`build_pipeline`
chains them and inserts ``depth`` register boundaries, spread evenly between the stages (any
registers beyond the number of stage boundaries go at the end, for retiming).

Handshake: each register boundary has a valid bit and loads when it is empty or when the
boundary after it loads (a bubble-collapsing pipeline).  Latency is ``depth`` cycles, throughput
one transfer per cycle.  With ``depth = 0`` the unit is combinational: ``o.valid = i.valid`` and
``i.ready = o.ready``.
"""
from __future__ import annotations

from amaranth.hdl import Signal, Value

__all__ = ["build_pipeline", "register_positions", "streaming_cycles"]


def register_positions(n_stages: int, depth: int) -> list:
    """For each stage index, how many register boundaries follow it (sum = depth)."""
    counts = [0] * n_stages
    if depth == 0 or n_stages == 0:
        return counts
    inner = min(depth, n_stages - 1)
    # boundaries after stage k for k in 0..n-2, spread evenly; the rest after the last stage.
    for j in range(inner):
        k = ((j + 1) * n_stages) // (inner + 1) - 1
        k = max(0, min(n_stages - 2, k))
        counts[k] += 1
    counts[-1] += depth - inner
    return counts


def build_pipeline(m, stages, inputs: dict, depth: int, i_stream, o_stream, output_fn):
    """Wire ``stages`` between ``i_stream`` and ``o_stream`` with ``depth`` register boundaries.

    ``inputs`` is the dict handed to the first stage (built from ``i_stream.payload``);
    ``output_fn(values)`` returns the value to drive onto ``o_stream.payload``.
    """
    counts = register_positions(len(stages), depth)
    values = dict(inputs)
    boundaries = []  # list of (valid signal, load-enable placeholder signal)
    upstream_valid = i_stream.valid
    for k, stage in enumerate(stages):
        values = stage(m, values)
        for _ in range(counts[k]):
            idx = len(boundaries)
            valid = Signal(name=f"pipe{idx}_valid")
            load = Signal(name=f"pipe{idx}_load")
            regs = {}
            for key, v in values.items():
                v = Value.cast(v)
                r = Signal(v.shape(), name=f"pipe{idx}_{key}")
                with m.If(load):
                    m.d.sync += r.eq(v)
                regs[key] = r
            with m.If(load):
                m.d.sync += valid.eq(upstream_valid)
            boundaries.append((valid, load))
            upstream_valid = valid
            values = regs
    m.d.comb += o_stream.payload.eq(output_fn(values))
    if not boundaries:
        m.d.comb += [o_stream.valid.eq(i_stream.valid), i_stream.ready.eq(o_stream.ready)]
        # Keep the clock and reset ports so every unit integrates the same way, whatever its depth.
        seen = Signal(name="pipe_any_transfer")
        m.d.sync += seen.eq(seen | (i_stream.valid & i_stream.ready))
        return
    # Load enables, from the output backwards: a boundary loads when empty or when the next one loads.
    downstream_accept = o_stream.ready
    for valid, load in reversed(boundaries):
        m.d.comb += load.eq(~valid | downstream_accept)
        downstream_accept = load
    m.d.comb += [i_stream.ready.eq(downstream_accept), o_stream.valid.eq(boundaries[-1][0])]


def streaming_cycles(cfg, n_ops: int) -> int:
    """Cycle model of a pipeline built here: ``n_ops`` back-to-back operations with no stalls
    finish ``pipeline_depth`` cycles after the last one enters (one enters per cycle)."""
    return n_ops + cfg.pipeline_depth
