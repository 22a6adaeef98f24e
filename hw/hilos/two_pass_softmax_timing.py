"""The fixed latencies and the no-stall schedule of :mod:`pimforge.hw.hilos.two_pass_softmax`; the
unit's cycle model is :func:`softmax_cycles`, its activity model :func:`softmax_activity`."""
from __future__ import annotations

from collections import Counter

from pimforge.base.formats import FP16, FP32
from pimforge.base.numerics import log2_exact
from pimforge.hw.core.activity import mem_action, op_action
from pimforge.hw.fp.ops import op_latency
from pimforge.hw.fp.softmax import merge_latency
from pimforge.hw.hilos.config import TwoPassSoftmaxConfig

__all__ = ["STATS_JOBS", "softmax_timing", "softmax_job_beats", "softmax_schedule",
           "softmax_cycles", "softmax_activity", "softmax_job_activity"]


STATS_JOBS = 2          # stats FIFO entries: pass 1 of job h+1 overlaps pass 2 of job h


def softmax_timing(cfg: TwoPassSoftmaxConfig) -> dict:
    """Fixed latencies of the unit's pipelines in cycles (used by the RTL and the cycle model).

    ``to_fp32``: the score conversion (fp16 scores only).  ``max_tree``: one compare level per
    cycle over ``log2 block`` levels.  ``exp``: fp32 subtraction and exponential.  ``sum_tree``:
    ``log2 block`` adder levels.  ``stats``: from a job's last ``i`` beat to the cycle its
    statistics are written into the stats FIFO (the last row block's maximum, its second read of
    ``BB`` beats, the exponentials, the adders, the merge and the reciprocal).  ``normalize``: an
    ``i_s`` beat to the output FIFO write (its ``o`` beat leaves one cycle later).
    ``out_fifo``: output FIFO entries (one more than the beats in flight at one per cycle).
    ``buffer_blocks``: row blocks in the block buffer (2 for every legal config).
    """
    od, lb = cfg.op_depth, log2_exact(cfg.block)
    to32 = op_latency("convert", od) if cfg.score_fmt.width != 32 else 0
    exp = op_latency("sub", od) + op_latency("exp", od)
    t = {"to_fp32": to32, "max_tree": lb, "exp": exp, "sum_tree": lb * op_latency("add", od),
         "merge": merge_latency(od, FP32), "recip": op_latency("recip", od)}
    t["stats"] = (to32 + t["max_tree"] + cfg.block_beats + exp + t["sum_tree"] + t["merge"]
                  + t["recip"])
    t["normalize"] = to32 + exp + op_latency("mul", od) + op_latency("convert", od)
    t["out_fifo"] = t["normalize"] + 2
    # row blocks the block buffer holds: beat k of a row block is read again max_tree + 1 + k
    # cycles after the block's last beat, and the beat that reuses its entry is written no
    # sooner than (slots - 1) x BB + 1 + k cycles after it: slots x BB >= BB + log2(block)
    t["buffer_blocks"] = 1 + -(-lb // cfg.block_beats)
    return t


def _segments(job) -> list:
    return [int(job)] if isinstance(job, int) else [int(s) for s in job]


def softmax_job_beats(cfg: TwoPassSoftmaxConfig, job) -> int:
    """Score beats of one job (``i`` and ``i_s`` alike, and its ``o`` beats): every row block is
    ``block / U`` beats per query; ``job`` is a token count or a list of segment lengths."""
    blocks = sum(-(-s // cfg.block) for s in _segments(job))
    return blocks * cfg.d_group * cfg.block_beats


def softmax_schedule(cfg: TwoPassSoftmaxConfig, jobs) -> list:
    """Cycle model of the unit with no stalls: ``i`` and ``i_s`` offer every job's beats back to
    back from cycle 0 (``i_s`` is taken as soon as the unit is ready for it) and ``o`` is always
    ready.  Returns, per job, a dict of the (first, last) cycles of its ``i``, ``i_s`` and ``o``
    transfers.

    With ``nb`` beats a job and the latencies of :func:`softmax_timing`:

    * pass 1 takes one beat per cycle, except that job h's last beat waits until job h-2 has left
      pass 2 (the stats FIFO holds two jobs): ``last_i[h] = max(first_i[h] + nb - 1,
      last_s[h-2] + 1)``;
    * job h's statistics are written ``stats`` cycles after its last ``i`` beat, and pass 2 starts
      the next cycle or when job h-1 has left it: ``first_s[h] = max(last_i[h] + stats + 1,
      last_s[h-1] + 1)``, then one beat per cycle;
    * an ``o`` beat leaves ``normalize + 1`` cycles after its ``i_s`` beat.
    """
    t = softmax_timing(cfg)
    out, pops = [], []
    first_i, last_s = 0, -1
    for h, job in enumerate(jobs):
        nb = softmax_job_beats(cfg, job)
        last_i = first_i + nb - 1
        if h >= STATS_JOBS:
            last_i = max(last_i, pops[h - STATS_JOBS] + 1)
        first_s = max(last_i + t["stats"] + 1, last_s + 1)
        last_s = first_s + nb - 1
        pops.append(last_s)
        lag = t["normalize"] + 1
        out.append({"i": (first_i, last_i), "i_s": (first_s, last_s),
                    "o": (first_s + lag, last_s + lag)})
        first_i = last_i + 1
    return out


def softmax_cycles(cfg: TwoPassSoftmaxConfig, n_tokens: int) -> int:
    """Cycles of one job of ``n_tokens`` positions (one segment) with no stalls, up to and
    including its last ``o`` beat."""
    return softmax_schedule(cfg, [n_tokens])[0]["o"][1] + 1


def softmax_activity(cfg: TwoPassSoftmaxConfig, jobs) -> dict:
    """Action counts of ``two_pass_softmax`` over ``jobs`` (token counts or lists of segment
    lengths), stalls or not.

    A job of ``nb`` beats (:func:`softmax_job_beats`: G = d_group row blocks of BB = block / U
    beats per block of each segment, padding included) makes, with U = lanes:

    * pass 1: U conversions to fp32 a beat (fp16 scores only); one block-buffer write a beat,
      and one read (the second read) with its U subtractions and exponentials; per row block,
      the adder tree's block - 1 adds (U - 1 a beat over the lanes, BB - 1 over the beats), one
      merge (a subtraction, an exponential and an fma) and one reciprocal.
    * pass 2: U conversions to fp32 (fp16 scores only), subtractions, exponentials, multiplies
      and conversions to fp16 a beat.

    * FIFOs: the stats FIFO (``STATS_JOBS`` x 64G) takes one push and one pop a job; the output
      FIFO (``out_fifo`` x 18U + 1: the fp16 lanes, keep and mask flags, last) one a beat.

    The comparator trees (the row-block maxima) are not float operations of the inventory.
    """
    t = softmax_timing(cfg)
    U, G, BB = cfg.lanes, cfg.d_group, cfg.block_beats
    jobs = list(jobs)
    beats = sum(softmax_job_beats(cfg, job) for job in jobs)
    rows = beats // BB                       # row blocks: one per query and block
    counts = Counter()
    if cfg.score_fmt.width != 32:
        counts[op_action("convert", FP32)] += 2 * beats * U
    counts[mem_action("write", t["buffer_blocks"] * BB, 33 * U)] += beats
    counts[mem_action("read", t["buffer_blocks"] * BB, 33 * U)] += beats
    counts[op_action("sub", FP32)] += 2 * beats * U + rows
    counts[op_action("exp", FP32)] += 2 * beats * U + rows
    counts[op_action("add", FP32)] += rows * (cfg.block - 1)
    counts[op_action("fma", FP32)] += rows
    counts[op_action("recip", FP32)] += rows
    counts[op_action("mul", FP32)] += beats * U
    counts[op_action("convert", FP16)] += beats * U
    for access in ("write", "read"):
        counts[mem_action(access, STATS_JOBS, 64 * G, cls="fifo")] += len(jobs)
        counts[mem_action(access, t["out_fifo"], 18 * U + 1, cls="fifo")] += beats
    return dict(counts)


def softmax_job_activity(cfg: TwoPassSoftmaxConfig, n_tokens: int) -> dict:
    """:func:`softmax_activity` of the cycle model's job (:func:`softmax_cycles`): one job of
    ``n_tokens`` positions, one segment, no stalls."""
    return softmax_activity(cfg, [n_tokens])
