"""The cycle and activity models of ``online_softmax`` (:mod:`pimforge.hw.pam.softmax`) and
its output FIFO's depth."""
from __future__ import annotations

from amaranth.hdl import Shape

from pimforge.base.numerics import SCORE
from pimforge.hw.core.activity import mem_action, op_action
from pimforge.hw.fp.softmax import merge_interval, merge_latency
from pimforge.hw.pam.streams import stats_out_signature

__all__ = ["softmax_fifo_depth", "softmax_cycles", "softmax_activity"]


def softmax_fifo_depth(op_depth: int, acc) -> int:
    """Output FIFO entries of :class:`~pimforge.hw.pam.softmax.OnlineSoftmax`: enough for every merge in flight when the
    output is always ready, plus one."""
    return (merge_latency(op_depth, acc) + 1) // merge_interval(op_depth) + 1


def softmax_cycles(cfg, n: int) -> int:
    """Cycle model of ``online_softmax``: ``n`` inputs offered back to back with no stalls enter
    every ``merge_interval`` cycles; the last output leaves ``latency`` cycles after the last
    input (cycles counted to the last transfer, inclusive)."""
    if n < 1:
        return 0
    latency = merge_latency(cfg.op_depth, cfg.acc) + 1         # the merge, then the output FIFO
    return (n - 1) * merge_interval(cfg.op_depth) + latency + 1


def softmax_activity(cfg, n: int) -> dict:
    """The actions of ``n`` inputs, with or without stalls: each accepted input is one merge
    (``merge_stats``: the fp32 subtraction of the maxima, its conversion to ``acc`` with an
    fp16 ``acc``, the exponential and the fma of ``l``; the maxima's compare is no float
    operator); its result is pushed into the output FIFO and popped by the output transfer
    (the credits keep the FIFO from refusing a push)."""
    acc = cfg.acc
    fifo = (softmax_fifo_depth(cfg.op_depth, acc),
            Shape.cast(stats_out_signature(acc).members["payload"].shape).width)
    counts = {op_action("sub", SCORE): n, op_action("exp", acc): n, op_action("fma", acc): n,
              mem_action("write", *fifo, cls="fifo"): n, mem_action("read", *fifo, cls="fifo"): n}
    if acc.width != SCORE.width:
        counts[op_action("convert", acc)] = n
    return counts
