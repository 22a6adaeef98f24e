"""The fixed latencies and the no-stall schedule of :mod:`pimforge.hw.hilos.sv_gemv`; the unit's
cycle model is :func:`sv_cycles`, its activity model :func:`sv_activity`."""
from __future__ import annotations

from collections import Counter

from pimforge.base.formats import FP16, FP32
from pimforge.base.numerics import block_starts
from pimforge.hw.core.activity import mem_action, op_action
from pimforge.hw.fp.accumulate import acc_latency
from pimforge.hw.fp.ops import op_latency
from pimforge.hw.hilos.config import SvGemvConfig

__all__ = ["sv_timing", "job_blocks", "sv_schedule", "sv_cycles", "sv_activity",
           "sv_job_activity"]


def sv_timing(cfg: SvGemvConfig) -> dict:
    """Fixed latencies of the unit's pipelines, in cycles (used by the RTL and the cycle model).

    ``mul``: the operand register and the widening multiplier; ``add``: the accumulator (its
    read stage and adder, :func:`~pimforge.hw.fp.accumulate.acc_latency`); ``conv``: the
    drain's read register and its fp32 -> fp16 converts; ``out_fifo``: output FIFO depth (the
    drain's credits: ``conv + 2`` sustain one beat per cycle); ``tail``: cycles from the last V
    beat of a job to its first output beat when the drain is idle."""
    od = cfg.op_depth
    mul = 1 + op_latency("mul_wide", od)
    add, conv = acc_latency(od), 1 + op_latency("convert", od)
    return {"mul": mul, "add": add, "conv": conv, "out_fifo": conv + 2,
            "tail": mul + add + 1 + conv + 1}


def job_blocks(cfg: SvGemvConfig, job) -> list:
    """Real positions of each block of a job: ``job`` is a token count n, or ``(n, segments)``
    (blocks never straddle a segment, as in :func:`pimforge.base.numerics.block_starts`)."""
    n, segments = (job, None) if isinstance(job, int) else (job[0], job[1])
    return [e - a for a, e in block_starts(n, cfg.block, segments)]


def sv_schedule(cfg: SvGemvConfig, jobs) -> list:
    """Cycle model of ``sv_gemv`` with no stalls: ``jobs`` (see :func:`job_blocks`) run back to
    back in one phase, both inputs offered from cycle 0 and the output always ready.

    Returns, per job, a dict with the cycles of its first and last V beat (``v_first``,
    ``v_last``) and of its first and last output beat (``first_out``, ``last_out``).

    Blocks i = 0, 1, ... (over all jobs) alternate between the two P-buffer slots.  Block i's
    ``G x block / U`` y beats start when block i-1's are in and slot i % 2 has been freed (the
    cycle after block i-2's last V beat).  Its ``n_i x head_dim / E`` V beats go one per cycle
    from the cycle after its last y beat, after block i-1's V beats, and, for a job's first block,
    once an O-bank slot is free (the cycle after the drain of job h-2 has read its last beat).
    The drain of job h starts ``mul + add + 1`` cycles after its last V beat, or after the drain
    of job h-1, and reads ``G x head_dim / E`` beats one per cycle; each beat leaves ``conv + 1``
    cycles after its read.
    """
    tm = sv_timing(cfg)
    G, RB = cfg.d_group, cfg.row_beats
    p_beats = G * cfg.block_beats
    drain = G * RB
    out = []
    p_end = -1                 # last y beat of the previous block
    v_ends = [-1, -1]          # last V beat of blocks i-2, i-1
    drain_ends = [-1, -1]      # last drain read of jobs h-2, h-1
    for job in jobs:
        v_first = None
        for k, n_b in enumerate(job_blocks(cfg, job)):
            p_start = max(p_end + 1, v_ends[0] + 1)
            p_end = p_start + p_beats - 1
            v_start = max(p_end + 1, v_ends[1] + 1)
            if k == 0:
                v_start = max(v_start, drain_ends[0] + 1)
                v_first = v_start
            v_ends = [v_ends[1], v_start + n_b * RB - 1]
        v_last = v_ends[1]
        d_start = max(v_last + tm["mul"] + tm["add"] + 1, drain_ends[1] + 1)
        d_end = d_start + drain - 1
        drain_ends = [drain_ends[1], d_end]
        out.append({"v_first": v_first, "v_last": v_last,
                    "first_out": d_start + tm["conv"] + 1, "last_out": d_end + tm["conv"] + 1})
    return out


def sv_cycles(cfg: SvGemvConfig, n_tokens: int) -> int:
    """Cycles of one job of ``n_tokens`` positions (one segment) with no stalls, from the first
    cycle after reset up to and including its last output beat."""
    return sv_schedule(cfg, [n_tokens])[0]["last_out"] + 1


def sv_activity(cfg: SvGemvConfig, jobs) -> dict:
    """Action counts of ``sv_gemv`` over ``jobs`` (see :func:`job_blocks`), stalls or not.

    With G = d_group, E = beat_elems, R = head_dim / E, U = lanes and BB = block / U:

    * P buffer (G memories of 2 BB x 17U): one write per y beat, G x BB a block (padding
      included).  Its reads are combinational (uncounted).
    * MAC array: each V beat (R a real position; a masked position's too, which multiplies
      -0 by +0) makes G x E widening multiplies and G x E accumulator adds, and writes one word
      of the O bank (2R x 32GE).
    * Drain: G x R beats a job, each E converts to fp16 (the bank's drain read is
      combinational), pushed into the output FIFO (``out_fifo`` x 16E) and popped to ``o``.
    """
    G, E, R, U = cfg.d_group, cfg.beat_elems, cfg.row_beats, cfg.lanes
    blocks = [job_blocks(cfg, job) for job in jobs]
    positions = sum(sum(b) for b in blocks)
    beats = positions * R
    counts = Counter()
    counts[mem_action("write", 2 * cfg.block_beats, 17 * U)] += (
        sum(len(b) for b in blocks) * G * cfg.block_beats)
    counts[op_action("mul_wide", FP32)] += beats * G * E
    counts[op_action("add", FP32)] += beats * G * E
    counts[mem_action("write", 2 * R, 32 * G * E)] += beats
    counts[op_action("convert", FP16)] += len(blocks) * G * R * E
    depth = sv_timing(cfg)["out_fifo"]
    for access in ("write", "read"):
        counts[mem_action(access, depth, 16 * E, cls="fifo")] += len(blocks) * G * R
    return dict(counts)


def sv_job_activity(cfg: SvGemvConfig, n_tokens: int) -> dict:
    """:func:`sv_activity` of the cycle model's job (:func:`sv_cycles`): ``n_tokens`` positions,
    one segment."""
    return sv_activity(cfg, [n_tokens])
