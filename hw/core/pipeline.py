"""A stream pipeline with a depth parameter and full back-pressure.

A datapath is written as a list of *stages*: functions ``stage(m, values) -> values`` that build
combinational logic from a dict of Amaranth values and return a new dict.  Each stage carries an
estimate of its logic depth (``stage.levels``, two-input gate levels; set with :func:`levels`).
:func:`build_pipeline` chains them and places ``depth`` register boundaries where they balance
the estimated levels between registers (:func:`register_positions`: the partition of the stage
chain into ``depth + 1`` segments with the smallest deepest segment).  The deepest segment never
grows when ``depth`` grows; registers beyond the number of stage boundaries go at the end, where
they only add latency (no open-source flow retimes them into the logic).

Handshake: each register boundary has a valid bit; all boundaries load together on a registered
enable, and a one-entry skid buffer at the output absorbs the result in flight when ``o`` stalls,
so no ``ready`` path crosses a pipeline stage.  Latency is ``depth`` cycles, throughput one
transfer per cycle.  With ``depth = 0`` the unit is combinational: ``o.valid = i.valid`` and
``i.ready = o.ready``.
"""
from __future__ import annotations

from amaranth.hdl import Mux, Signal, Value

__all__ = ["build_pipeline", "register_positions", "segment_levels", "levels", "stage_levels", "parallel",
           "streaming_cycles", "output_skid"]


def levels(n: int):
    """Decorator: mark a stage function with its estimated logic depth in gate levels."""
    def mark(fn):
        fn.levels = max(0, int(n))
        return fn
    return mark


def stage_levels(stage) -> int:
    """A stage's estimated logic depth (1 when it carries no estimate)."""
    return getattr(stage, "levels", 1)


def parallel(*stage_lists) -> list:
    """Stage lists over disjoint keys, run side by side: stage ``i`` of the result applies stage
    ``i`` of every list (those that have one), and its level estimate is the largest of them."""
    out = []
    for i in range(max(len(lst) for lst in stage_lists)):
        group = [lst[i] for lst in stage_lists if i < len(lst)]

        def st(m, v, group=group):
            for g in group:
                v = g(m, v)
            return v
        st.levels = max(stage_levels(g) for g in group)
        out.append(st)
    return out


def _weights(stages) -> list:
    if isinstance(stages, int):
        return [1] * stages
    return [w if isinstance(w, int) else stage_levels(w) for w in stages]


def register_positions(stages, depth: int) -> list:
    """For each stage, how many register boundaries follow it (sum = ``depth``).

    ``stages`` is the stage list (or their level estimates, or a stage count for equal weights).
    The ``min(depth, n - 1)`` inner boundaries split the chain into segments whose deepest one is
    as shallow as possible (exact, by dynamic programming); ties go to the earliest cut positions
    that achieve it.  Boundaries that find no stage gap go after the last stage.
    """
    w = _weights(stages)
    n = len(w)
    counts = [0] * n
    if depth == 0 or n == 0:
        return counts
    inner = min(depth, n - 1)
    cuts = _balanced_cuts(w, inner)
    for k in cuts:
        counts[k] += 1
    counts[-1] += depth - len(cuts)
    return counts


def _balanced_cuts(w: list, cuts: int) -> list:
    """Stage indices after which to cut ``w`` into ``cuts + 1`` segments, minimizing the deepest
    segment, then the sum of squared segment depths (so the other segments balance too)."""
    n = len(w)
    prefix = [0]
    for x in w:
        prefix.append(prefix[-1] + x)
    inf = (float("inf"), float("inf"))
    # best[j][i]: (deepest, sum of squares) of the first i stages cut into j segments
    best = [[inf] * (n + 1) for _ in range(cuts + 2)]
    arg = [[0] * (n + 1) for _ in range(cuts + 2)]
    best[0][0] = (0, 0)
    for j in range(1, cuts + 2):
        for i in range(j, n + 1):
            for k in range(j - 1, i):
                prev = best[j - 1][k]
                if prev == inf:
                    continue
                seg = prefix[i] - prefix[k]
                cand = (max(prev[0], seg), prev[1] + seg * seg)
                if cand < best[j][i]:
                    best[j][i], arg[j][i] = cand, k
    out, i = [], n
    for j in range(cuts + 1, 0, -1):
        i = arg[j][i]
        if j > 1:
            out.append(i - 1)
    return sorted(out)


def segment_levels(stages, depth: int) -> list:
    """The estimated logic levels between consecutive registers (input to first register, ...,
    last register to output) for ``depth`` registers placed by :func:`register_positions`."""
    w = _weights(stages)
    segs, cur = [], 0
    for x, c in zip(w, register_positions(w, depth)):
        cur += x
        for _ in range(c):
            segs.append(cur)
            cur = 0
    segs.append(cur)
    return segs


def build_pipeline(m, stages, inputs: dict, depth: int, i_stream, o_stream, output_fn):
    """Wire ``stages`` between ``i_stream`` and ``o_stream`` with ``depth`` register boundaries.

    ``inputs`` is the dict handed to the first stage (built from ``i_stream.payload``);
    ``output_fn(values)`` returns the value to drive onto ``o_stream.payload``.

    Flow control: every boundary loads on one enable, ``pipe_adv``, which is a register (the
    output skid buffer is empty), so no combinational path runs from ``o.ready`` into the
    pipeline or to ``i.ready``.  When ``o`` stalls while the last boundary holds a result, the
    result moves into the one-entry skid buffer and the pipeline stops a cycle later.  Without
    back-pressure the latency is ``depth`` cycles and one transfer passes per cycle.
    """
    counts = register_positions(stages, depth)
    values = dict(inputs)
    if depth:
        adv = Signal(name="pipe_adv")
    valid = i_stream.valid
    idx = 0
    for k, stage in enumerate(stages):
        values = stage(m, values)
        for _ in range(counts[k]):
            regs = {}
            for key, v in values.items():
                v = Value.cast(v)
                r = Signal(v.shape(), name=f"pipe{idx}_{key}")
                with m.If(adv):
                    m.d.sync += r.eq(v)
                regs[key] = r
            nv = Signal(name=f"pipe{idx}_valid")
            with m.If(adv):
                m.d.sync += nv.eq(valid)
            valid, values, idx = nv, regs, idx + 1
    result = Value.cast(output_fn(values))
    if not depth:
        m.d.comb += [o_stream.payload.eq(result), o_stream.valid.eq(i_stream.valid),
                     i_stream.ready.eq(o_stream.ready)]
        # Keep the clock and reset ports so every unit integrates the same way, whatever its depth.
        seen = Signal(name="pipe_any_transfer")
        m.d.sync += seen.eq(seen | (i_stream.valid & i_stream.ready))
        return
    m.d.comb += i_stream.ready.eq(adv)
    output_skid(m, adv, valid, result, o_stream, "pipe")


def output_skid(m, adv, valid, result, o_stream, prefix: str) -> None:
    """A one-entry skid buffer between a pipeline's last register boundary (``valid``,
    ``result``) and ``o_stream``; drives the pipeline's enable ``adv`` from a register.

    ``adv = ~<prefix>_skid_full``: while the skid buffer is empty every boundary loads, and a
    result that ``o`` does not take moves into it; the pipeline stops the cycle after, and goes
    on the cycle after ``o`` takes the held result.  So ``o.ready`` reaches only the skid
    buffer's registers, and with ``o`` always ready the timing is the pipeline's alone."""
    result = Value.cast(result)
    skid_full = Signal(name=f"{prefix}_skid_full")
    skid = Signal(result.shape(), name=f"{prefix}_skid")
    m.d.comb += [adv.eq(~skid_full),
                 o_stream.valid.eq(skid_full | valid),
                 o_stream.payload.eq(Mux(skid_full, skid, result))]
    with m.If(skid_full):
        with m.If(o_stream.ready):
            m.d.sync += skid_full.eq(0)
    with m.Elif(valid & ~o_stream.ready):
        m.d.sync += [skid_full.eq(1), skid.eq(result)]


def streaming_cycles(cfg, n_ops: int) -> int:
    """Cycle model of a pipeline built here: ``n_ops`` back-to-back operations with no stalls
    finish ``pipeline_depth`` cycles after the last one enters (one enters per cycle)."""
    return n_ops + cfg.pipeline_depth
