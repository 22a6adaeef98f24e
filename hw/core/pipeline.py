"""A stream pipeline with a depth parameter and full back-pressure.

A datapath is written as a list of *stages*: functions ``stage(m, values) -> values`` that build
combinational logic from a dict of Amaranth values and return a new dict.  Each stage carries an
estimate of its logic depth (``stage.levels``, two-input gate levels; set with :func:`levels`).
:func:`build_pipeline` chains them and places ``depth`` register boundaries where they balance
the estimated levels between registers (:func:`register_positions`: the partition of the stage
chain into ``depth + 1`` segments with the smallest deepest segment).  The deepest segment never
grows when ``depth`` grows; registers beyond the number of stage boundaries go at the end, where
they only add latency (no open-source flow retimes them into the logic).

A stage may also say what a register right after it costs (``levels(n, cut=(before, after))``):
a ROM read whose output register the FPGA tools absorb into a block RAM leaves only the address
path (``before``) in its own segment, and the RAM's slow clock-to-out (``after``) starts the next.

Handshake: each register boundary has a valid bit; all boundaries load together on a registered
enable, and a one-entry skid buffer at the output absorbs the result in flight when ``o`` stalls,
so no ``ready`` path crosses a pipeline stage.  Latency is ``depth`` cycles, throughput one
transfer per cycle.  With ``depth = 0`` the unit is combinational: ``o.valid = i.valid`` and
``i.ready = o.ready``.
"""
from __future__ import annotations

from amaranth.hdl import Mux, Signal, Value

__all__ = ["build_pipeline", "register_positions", "segment_levels", "levels", "stage_levels",
           "stage_cut_levels", "parallel", "streaming_cycles", "output_skid"]


def levels(n: int, cut: tuple | None = None):
    """Decorator: mark a stage function with its estimated logic depth in gate levels.

    ``cut = (before, after)``: when a register boundary directly follows the stage, the stage
    counts ``before`` levels in its own segment and adds ``after`` levels at the start of the
    next one (instead of ``n`` in its own)."""
    def mark(fn):
        fn.levels = max(0, int(n))
        if cut is not None:
            fn.cut_levels = (max(0, int(cut[0])), max(0, int(cut[1])))
        return fn
    return mark


def stage_levels(stage) -> int:
    """A stage's estimated logic depth (1 when it carries no estimate)."""
    return getattr(stage, "levels", 1)


def stage_cut_levels(stage) -> tuple:
    """``(before, after)``: a stage's levels in its own segment and at the start of the next
    one when a register follows it (``(levels, 0)`` unless the stage says otherwise)."""
    return getattr(stage, "cut_levels", (stage_levels(stage), 0))


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
        if any(hasattr(g, "cut_levels") for g in group):
            cuts = [stage_cut_levels(g) for g in group]
            st.cut_levels = (max(c[0] for c in cuts), max(c[1] for c in cuts))
        out.append(st)
    return out


def _weights(stages) -> tuple:
    """``(levels, before, after)`` per stage: its levels, and those of :func:`stage_cut_levels`
    (``stages`` may also be a list of level counts or a stage count, for equal weights)."""
    if isinstance(stages, int):
        stages = [1] * stages
    w = [w if isinstance(w, int) else stage_levels(w) for w in stages]
    cut = [(w, 0) if isinstance(w, int) else stage_cut_levels(w) for w in stages]
    return w, [c[0] for c in cut], [c[1] for c in cut]


def _shadowed(weights) -> list:
    """For each stage, the stage with cut levels that a register after it really follows, when
    only stages without logic lie between them (else ``None``): such a register sits on that
    stage's output just as a register right after it would."""
    w, before, after = weights
    out, last = [], None
    for x, b, a in zip(w, before, after):
        if (b, a) != (x, 0):
            last = len(out)
            out.append(None)
        elif x or b or a:
            last = None
            out.append(None)
        else:
            out.append(last)
    return out


def _segment_cost(weights, prefix: list, k: int, i: int, shadowed=None) -> float:
    """Estimated levels of the segment of stages ``k .. i - 1``: a register before it (when
    ``k > 0``) and after it (when ``i < n``) use the stages' cut levels.  A segment that ends in
    stages without logic after a stage with cut levels (``shadowed``) is not priced (infinite):
    its register is the same as one right after that stage, which is priced."""
    w, before, after = weights
    n = len(w)
    if shadowed is not None and i < n and shadowed[i - 1] is not None and shadowed[i - 1] >= k:
        return float("inf")
    cost = prefix[i] - prefix[k]
    if k > 0:
        cost += after[k - 1]
    if i < n:
        cost += before[i - 1] - w[i - 1]
    return cost


def register_positions(stages, depth: int) -> list:
    """For each stage, how many register boundaries follow it (sum = ``depth``).

    ``stages`` is the stage list (or their level estimates, or a stage count for equal weights).
    The ``min(depth, n - 1)`` inner boundaries split the chain into segments whose deepest one is
    as shallow as possible (exact, by dynamic programming); ties go to the earliest cut positions
    that achieve it.  Boundaries that find no stage gap go after the last stage.
    """
    weights = _weights(stages)
    n = len(weights[0])
    counts = [0] * n
    if depth == 0 or n == 0:
        return counts
    inner = min(depth, n - 1)
    cuts = _balanced_cuts(weights, inner)
    for k in cuts:
        counts[k] += 1
    counts[-1] += depth - len(cuts)
    return counts


def _balanced_cuts(weights, cuts: int) -> list:
    """Stage indices after which to cut the chain into ``cuts + 1`` segments, minimizing the
    deepest segment, then the sum of squared segment depths (so the other segments balance
    too)."""
    n = len(weights[0])
    prefix = [0]
    for x in weights[0]:
        prefix.append(prefix[-1] + x)
    shadowed = _shadowed(weights)
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
                seg = _segment_cost(weights, prefix, k, i, shadowed)
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
    weights = _weights(stages)
    n = len(weights[0])
    prefix = [0]
    for x in weights[0]:
        prefix.append(prefix[-1] + x)
    counts = register_positions(stages, depth)
    bounds = [k + 1 for k, c in enumerate(counts) if c and k < n - 1]
    edges = [0] + bounds + [n]
    segs = [_segment_cost(weights, prefix, a, b) for a, b in zip(edges, edges[1:])]
    return segs + [0] * (depth - len(bounds))


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
                # data registers have no reset: only the valid bits beside them do
                r = Signal(v.shape(), name=f"pipe{idx}_{key}", reset_less=True)
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
    skid = Signal(result.shape(), name=f"{prefix}_skid", reset_less=True)
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
