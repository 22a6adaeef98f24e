"""Timing and the exact cycle model of ``hermes_gemv`` (:mod:`pimforge.hw.hermes.gemv`).

The model replays the engine's control cycle by cycle per weight beat, with the DIMM's beat
arrivals (:mod:`pimforge.hw.hermes.dimm`) as an input, so it is exact against the RTL when the
other streams never stall (the bench's no-stall phases); ``tests/hermes/test_gemv.py`` checks
every output beat's cycle.
"""
from __future__ import annotations

from dataclasses import dataclass

from pimforge.base.formats import FP16
from pimforge.base.numerics import log2_exact
from pimforge.hw.core.activity import mem_action, op_action
from pimforge.hw.fp.accumulate import DRAIN_READ, acc_latency
from pimforge.hw.fp.ops import op_latency
from pimforge.hw.hermes.config import HermesGemvConfig

__all__ = ["gemv_timing", "GemvJob", "gemv_schedule", "gemv_cycles", "gemv_activity",
           "gemv_unit_activity"]


def gemv_timing(cfg: HermesGemvConfig) -> dict:
    """Fixed latencies in cycles.  ``row_land``: issue of a row beat to its partial's write;
    ``col_land``: issue of a column beat to its partial sum's write (``settle``: the drain's
    first read follows the last write); ``final``: merge, convert and the output FIFO's write
    from a finished value; ``row_write``: a row's last-beat issue to its output's FIFO write;
    ``row_out``: to the output transfer; ``out_fifo``: depth of the output FIFO (the credits);
    ``finish``: the row finish (its read and tree); ``conv_p``: the merge partial's conversion.
    A credit is taken at a row's last-beat issue and visible again ``row_out + 2`` cycles later
    (returned a cycle after the transfer), so at most ``row_out + 1`` are out when nothing
    stalls, and ``row_out + 2`` credits never hold the issue back."""
    od = cfg.op_depth
    mul = op_latency("mul_wide" if cfg.acc.width == 32 else "mul", od)
    add = op_latency("add", od)
    conv = op_latency("convert", od)
    tree = log2_exact(cfg.beat_elems) * add
    row_land = 1 + mul + tree + acc_latency(od)
    col_land = 1 + mul + acc_latency(od)
    # the merge partial's fp16 -> acc conversion (none at fp16): in column mode the drain's
    # buffer read waits for it; in row mode it runs beside the finish tree (``finish`` >=
    # 1 + 2 add > conv_p, as partials >= 4 and op_depth <= partials)
    conv_p = conv + 1 if cfg.acc.width == 32 else 0      # its input register, the convert
    finish = DRAIN_READ + log2_exact(cfg.partials) * add
    # + the merge's input register and the FIFO's write register
    final = conv_p + add + (conv if cfg.acc.width == 32 else 0) + 2
    row_write = row_land + 1 + finish + final - conv_p
    return {"mul": mul, "add": add, "conv": conv, "conv_p": conv_p, "tree": tree,
            "row_land": row_land, "col_land": col_land, "settle": col_land, "finish": finish,
            "final": final, "row_write": row_write, "row_out": row_write + 1,
            "out_fifo": row_write + 3}


@dataclass(frozen=True)
class GemvJob:
    """One command: ``mode`` ``rows`` or ``cols``, ``batch`` vectors, ``n`` active neurons,
    ``beats`` per neuron, ``merge``; ``arrivals``: per weight beat, the first cycle after the
    command's acceptance it may be offered (the DIMM's delivery; None: at once)."""

    mode: str
    batch: int
    n: int
    beats: int
    merge: bool = False
    arrivals: tuple | None = None


def gemv_schedule(cfg: HermesGemvConfig, jobs) -> list:
    """Cycle model with no stalls but the DIMM's: every job's command, x, partial and output
    streams are offered from cycle 0 and the output is always ready.

    Returns per job a dict: ``cmd`` (acceptance cycle), ``issues`` (cycle of each weight beat's
    first issue slot), ``outputs`` (cycle of each output transfer, in stream order) and ``end``
    (the cycle the engine is idle again)."""
    tm = gemv_timing(cfg)
    od = cfg.op_depth
    free = 0
    out = []
    for job in jobs:
        t_cmd = free
        G = cfg.groups(job.batch)
        beats, n = job.beats, job.n
        issues, outputs = [], []
        if job.mode == "rows":
            t = t_cmd + 1 + job.batch * beats      # the cycle after the last x beat
        else:
            t = t_cmd + 1
        prev_end = t - 1
        for q in range(n * beats):
            start = prev_end + 1
            if job.arrivals is not None:
                start = max(start, t_cmd + job.arrivals[q])
            if job.mode == "cols" and q % beats == 0 and q:
                # od cycles after the previous column's virtual start: its last issue cycle
                # less its issue count (at most od)
                start = max(start, prev_end + 1 + od - min(beats * G, od))
            issues.append(start)
            prev_end = start + G - 1
            if job.mode == "rows" and q % beats == beats - 1:
                outputs.extend(start + g + tm["row_out"] for g in range(G))
        if job.mode == "rows":
            last_write = outputs[-1] - 1 if outputs else None
            free = (last_write + 2) if n else (t + 1)
        else:
            d0 = (prev_end + tm["settle"] + 1) if n else t
            reads = beats * job.batch
            outputs = [d0 + r + tm["final"] + 1 for r in range(reads)]
            free = d0 + reads - 1 + tm["final"] + 2
        out.append({"cmd": t_cmd, "issues": issues, "outputs": outputs, "end": free})
    return out


def _dense_job(cfg: HermesGemvConfig, n_rows: int) -> GemvJob:
    return GemvJob("rows", 1, n_rows, min(4, cfg.max_beats))


def gemv_cycles(cfg: HermesGemvConfig, n_rows: int) -> int:
    """The unit's cycle model for ``pimforge``: a dense row-mode job of ``n_rows`` rows of
    ``min(4, max_beats)`` beats, batch 1, weights offered at once; cycles from reset to the last
    output beat, inclusive (the DIMM's delivery: :func:`gemv_schedule`)."""
    sched = gemv_schedule(cfg, [_dense_job(cfg, n_rows)])[0]
    return sched["outputs"][-1] + 1 if sched["outputs"] else 0


def gemv_activity(cfg: HermesGemvConfig, job: GemvJob) -> dict:
    """The actions of one command (a :class:`GemvJob`; its ``arrivals`` do not matter).

    A weight beat issues for G = ``ceil(batch / V)`` cycles (V vector lanes, E = ``beat_elems``
    elements a beat), ``n x beats x G`` issue cycles in all; in each, all V x E multipliers
    work (lanes past the batch too, on stale operands; their outputs leave as +0).

    * Row mode: the x load writes each of the ``batch x beats`` x beats into one vector lane's
      result-buffer bank; per issue cycle the V adder trees (E - 1 adds each) and the V adds
      into the partial bank, which takes one write; each (row, vector group) finishes once,
      ``partials - 1`` adds per vector lane.  Outputs: ``n x G`` beats.
    * Column mode: per issue cycle V x E adds into the partial sums of y, and each of the V
      result-buffer banks takes one write.  Outputs: the drain's ``beats x batch`` beats (also
      for ``n = 0``).
    * Every output beat is merged in all E lanes (with -0 when the command does not merge), so
      E adds; with an fp32 ``acc`` also E conversions of the partial to fp32 and E of the sum
      to fp16; it takes one write of the output FIFO.
    * A merging row-mode command pushes each output beat's partial into the merge FIFO at its
      row's last-beat issue and pops it at the row's finish.

    Not counted: the combinational reads of the buffers and of the output FIFO
    (:mod:`pimforge.hw.core.activity`).
    """
    V, E, A, Q, MB = cfg.vec_lanes, cfg.beat_elems, cfg.acc, cfg.partials, cfg.max_beats
    G = cfg.groups(job.batch)
    issues = job.n * job.beats * G
    buffer = (cfg.max_groups * MB, E * A.width)
    mul = "mul_wide" if A.width == 32 else "mul"
    counts = {op_action(mul, A): issues * V * E}
    if job.mode == "rows":
        outputs = job.n * G
        adds = issues * V * (E - 1) + issues * V + outputs * V * (Q - 1)
        writes = {mem_action("write", *buffer): job.batch * job.beats,
                  mem_action("write", Q * cfg.max_groups, V * A.width): issues}
    else:
        outputs = job.beats * job.batch
        adds = issues * V * E
        writes = {mem_action("write", *buffer): issues * V}
    counts[op_action("add", A)] = adds + outputs * E
    if A.width == 32:
        counts[op_action("convert", A)] = outputs * E
        counts[op_action("convert", FP16)] = outputs * E
    counts.update(writes)
    out_fifo = mem_action("write", gemv_timing(cfg)["out_fifo"], 16 * E)
    counts[out_fifo] = counts.get(out_fifo, 0) + outputs
    if job.mode == "rows" and job.merge:
        for access in ("write", "read"):
            counts[mem_action(access, gemv_timing(cfg)["out_fifo"], 16 * V, cls="fifo")] = outputs
    return counts


def gemv_unit_activity(cfg: HermesGemvConfig, n_rows: int) -> dict:
    """``HwUnit.activity``: :func:`gemv_activity` of :func:`gemv_cycles`' job."""
    return gemv_activity(cfg, _dense_job(cfg, n_rows))
