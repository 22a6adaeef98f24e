"""The fixed latencies, the no-stall schedule and the actions of :mod:`pimforge.hw.pam.ru`; the
unit's cycle model is :func:`ru_cycle_model`, its activity model :func:`ru_activity_model`
(from :func:`ru_activity`)."""
from __future__ import annotations

import math
from collections import Counter

from pimforge.base.formats import FP16
from pimforge.base.numerics import SCORE
from pimforge.hw.core.activity import mem_action, op_action
from pimforge.hw.fp.ops import op_latency
from pimforge.hw.fp.softmax import merge_latency, to_acc_latency

__all__ = ["IN_REG", "COEF_REG", "ru_drain_depth", "stats_ready", "ru_timing", "ru_latency",
           "ru_schedule", "ru_cycles", "ru_cycle_model", "ru_activity", "ru_activity_model"]


# The input beat is registered before the merge and the O update (IN_REG): it cuts the path from
# pam_device's collector port select into the merge's first compare.  The fmas take their
# coefficients (g, swap, first) from registers loaded by the merge's valid (COEF_REG): it cuts
# the merge's valid off every fma operand select.  Each is one register stage.
IN_REG = 1
COEF_REG = 1


def ru_drain_depth(cfg) -> int:
    """Register stages of the drain pipeline: none (non-final), the multiplier, plus the fp16
    converter with an fp32 accumulator."""
    if not cfg.final:
        return 0
    conv = op_latency("convert", cfg.op_depth) if cfg.acc.width != 16 else 0
    return op_latency("mul", cfg.op_depth) + conv


def stats_ready(cfg) -> int:
    """Cycles from a merge's beat 0 until the RU sees its statistics finished (the in-flight
    counter back at zero): after the merge (non-final), after the log, its conversion to fp32
    (fp16 accumulator) and the lse add (final)."""
    od = cfg.op_depth
    extra = op_latency("log", od) + to_acc_latency(cfg.acc, od) + op_latency("add", od) \
        if cfg.final else 0
    return IN_REG + merge_latency(od, cfg.acc) + extra + 1


def ru_timing(cfg) -> tuple:
    """``(written, stats)``: the reader may start ``written`` cycles after a request's last
    input beat (its scratch write is done: the input register, the merge latency, the
    coefficient register, the fma and the write) and ``stats`` (:func:`stats_ready`) cycles
    after the last partial's beat 0."""
    od = cfg.op_depth
    written = IN_REG + merge_latency(od, cfg.acc) + COEF_REG + op_latency("fma", od) + 1
    return written, stats_ready(cfg)


def ru_latency(cfg) -> int:
    """Cycles from the last input beat of a request to its first output beat (no stalls).

    The reader starts when the last beat's scratch write is done and the statistics of the last
    merge are ready (:func:`ru_timing`; the last partial's beat 0 is ``Bw - 1`` cycles before
    the last beat); one cycle of scratch read and the drain pipeline follow."""
    written, stats = ru_timing(cfg)
    start = max(written, stats - (cfg.beats - 1))
    return start + 1 + ru_drain_depth(cfg)


def ru_schedule(cfg, partials_per_request) -> list:
    """Per request ``(first input beat, first output, last output)`` cycles for requests of the
    given partial counts sent back to back with no stalls on either side.

    A request of P partials takes input beats ``t .. T = t + P*Bw - 1``; its first output comes
    ``latency`` cycles after T and the others follow one per cycle.  Its reader starts
    ``1 + drain_depth`` cycles before the first output and reads one entry per cycle; the next
    request's first beat enters in the cycle after the reader has read the last entry."""
    bw, lat, depth = cfg.beats, ru_latency(cfg), ru_drain_depth(cfg)
    t, out = 0, []
    for p in partials_per_request:
        if p < 1:
            raise ValueError("every request needs at least one partial")
        first_out = t + p * bw - 1 + lat
        out.append((t, first_out, first_out + bw - 1))
        t = first_out - 1 - depth + bw
    return out


def ru_cycles(cfg, partials_per_request) -> int:
    """Cycle model: cycles up to and including the last output transfer (see
    :func:`ru_schedule`)."""
    return ru_schedule(cfg, partials_per_request)[-1][2] + 1


def ru_cycle_model(cfg, n: int) -> int:
    """Registry cycle model: ``n`` input beats as one request of ``ceil(n / Bw)`` partials."""
    return ru_cycles(cfg, [max(1, math.ceil(n / cfg.beats))])


def ru_activity(cfg, partials_per_request) -> dict:
    """The actions of the RU for requests of the given partial counts (:func:`ru_schedule`'s
    job), with or without stalls: every count follows a partial or a beat.  Per partial of
    Bw beats, W lanes:

    * one online-softmax merge at its beat 0 (``merge_stats``: the fp32 subtraction, the
      conversion to ``acc`` with fp16, the exponential and the fma); in final mode each merge's
      ``l`` also goes through ``recip`` and ``log`` (the conversion of the log to fp32 with
      fp16, and the lse add), which the reader takes from the request's last merge;
    * per beat, one read of the scratch (the old O, a cycle before the fmas), W fmas and one
      write back.

    Per request the reader reads the Bw scratch entries once (a stalled output holds the read
    until the drain pipeline takes it); in final mode each entry's W elements are multiplied
    by ``recip(l)`` and, with an fp32 ``acc``, converted to fp16 on their way out.
    """
    W, bw, acc = cfg.vector_width, cfg.beats, cfg.acc
    parts, reqs = sum(partials_per_request), len(partials_per_request)
    c = Counter()
    c[op_action("sub", SCORE)] += parts
    if acc.width != SCORE.width:
        c[op_action("convert", acc)] += parts
    c[op_action("exp", acc)] += parts
    c[op_action("fma", acc)] += parts + parts * bw * W
    scratch = (bw, W * acc.width)
    c[mem_action("read", *scratch)] += parts * bw + reqs * bw
    c[mem_action("write", *scratch)] += parts * bw
    if cfg.final:
        c[op_action("recip", acc)] += parts
        c[op_action("log", acc)] += parts
        if acc.width != SCORE.width:
            c[op_action("convert", SCORE)] += parts
        c[op_action("add", SCORE)] += parts
        c[op_action("mul", acc)] += reqs * bw * W
        if acc.width != FP16.width:
            c[op_action("convert", FP16)] += reqs * bw * W
    return dict(c)


def ru_activity_model(cfg, n: int) -> dict:
    """Registry activity model: the job of :func:`ru_cycle_model`, ``n`` input beats as one
    request of ``ceil(n / Bw)`` partials."""
    return ru_activity(cfg, [max(1, math.ceil(n / cfg.beats))])
