"""The cycle model of ``online_softmax`` (:mod:`pimforge.hw.pam.softmax`)."""
from __future__ import annotations

from pimforge.hw.fp.softmax import merge_interval, merge_latency

__all__ = ["softmax_cycles"]


def softmax_cycles(cfg, n: int) -> int:
    """Cycle model of ``online_softmax``: ``n`` inputs offered back to back with no stalls enter
    every ``merge_interval`` cycles; the last output leaves ``latency`` cycles after the last
    input (cycles counted to the last transfer, inclusive)."""
    if n < 1:
        return 0
    latency = merge_latency(cfg.op_depth, cfg.acc) + 1         # the merge, then the output FIFO
    return (n - 1) * merge_interval(cfg.op_depth) + latency + 1
