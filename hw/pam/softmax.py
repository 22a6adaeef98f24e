"""The ``online_softmax`` unit (PAM §5.1.1, eqs. 3-5): one
:func:`~pimforge.hw.fp.softmax.merge_stats`
behind a stream, its outputs queued in a FIFO.
"""
from __future__ import annotations

from amaranth.hdl import Module, Signal
from amaranth.lib.wiring import In, Out

from pimforge.hw.core.activity import SyncFIFO
from pimforge.hw.core.component import PimComponent
from pimforge.hw.core.formal import one_per_input
from pimforge.hw.core.unit import HwUnit
from pimforge.hw.fp.softmax import merge_interval, merge_latency, merge_stats
from pimforge.hw.pam.config import OnlineSoftmaxConfig
from pimforge.hw.pam.softmax_timing import softmax_activity, softmax_cycles, softmax_fifo_depth
from pimforge.hw.pam.streams import stats_in_signature, stats_out_signature

__all__ = ["OnlineSoftmax", "softmax_fifo_depth"]


class OnlineSoftmax(PimComponent):
    """``online_softmax``: merges ``(m_in, l_in)`` pairs into a running ``(m, l)`` (PAM eqs. 3-5).

    Input stream ``i`` carries ``m_in`` (fp32, the score format), ``l_in`` (acc) and ``first``
    (restart); output stream ``o`` carries the new running ``m`` and ``l``, the exponential ``g``
    applied to the smaller side and ``swap`` (the running state was the smaller side), one output
    per input.  Streaming
    scores (eqs. 1-6) is the case ``l_in = 1``.

    An input is accepted at most every ``merge_interval = op_depth + 1`` cycles (throughput
    ``1 / (op_depth + 1)``); the latency is ``merge_latency + 1`` cycles (the merge, then the output
    FIFO): ``3 * op_depth + 4`` with fp32, ``4 * op_depth + 4`` with fp16 (the exponent argument's
    conversion).  A credit counter admits an input only when the FIFO can take its result, so
    back-pressure on ``o`` never loses data.

    Parameters
    ----------
    cfg : OnlineSoftmaxConfig
    """

    UNIT = "online_softmax"

    def __init__(self, cfg):
        acc = cfg.acc
        super().__init__(cfg, {
            "i": In(stats_in_signature(acc)), "o": Out(stats_out_signature(acc))
        })

    @property
    def latency(self) -> int:
        return merge_latency(self.cfg.op_depth, self.cfg.acc) + 1

    @property
    def throughput(self) -> float:
        return 1.0 / merge_interval(self.cfg.op_depth)

    def elaborate(self, platform):
        m = Module()
        od = self.cfg.op_depth
        interval = merge_interval(od)
        depth = softmax_fifo_depth(od, self.cfg.acc)
        wait = Signal(range(interval), name="wait")       # cycles until the l loop is free
        credits_used = Signal(range(depth + 1), name="credits_used")
        accept = Signal()
        m.d.comb += [self.i.ready.eq((wait == 0) & (credits_used < depth)),
                     accept.eq(self.i.valid & self.i.ready)]
        with m.If(accept):
            m.d.sync += wait.eq(interval - 1)
        with m.Elif(wait != 0):
            m.d.sync += wait.eq(wait - 1)
        p = self.i.payload
        r = merge_stats(m, self.cfg.acc, od, valid=accept, first=p.first, m_in=p.m_in,
                        l_in=p.l_in)
        out = Signal(self.o.payload.shape())
        m.d.comb += [out.m.eq(r["m"]), out.l.eq(r["l"]), out.g.eq(r["g"]), out.swap.eq(r["swap"])]
        m.submodules.fifo = fifo = SyncFIFO(width=len(out.as_value()), depth=depth)
        m.d.comb += [fifo.w_data.eq(out.as_value()), fifo.w_en.eq(r["valid"]),
                     self.o.payload.eq(fifo.r_data), self.o.valid.eq(fifo.r_rdy),
                     fifo.r_en.eq(self.o.ready)]
        sent = self.o.valid & self.o.ready
        m.d.sync += credits_used.eq(credits_used + accept - sent)
        return m


UNITS = (HwUnit("online_softmax", "online-softmax statistics merge, PAM eqs. 3-5 "
                "(i: m_in, l_in, first -> o: m, l, g, swap)",
                OnlineSoftmaxConfig, OnlineSoftmax, {"fp32": {"acc": "fp32"}}, softmax_cycles,
                paper="PAM §5.1.1, eqs. 3-5", response=one_per_input(softmax_cycles),
                activity=softmax_activity,
                # op_depth 12: the depth its ECP5 figure needs for 100 MHz
                synth_bench={"set": {"op_depth": 12}}),)
