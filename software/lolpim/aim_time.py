"""The one coupling of the LoL-PIM system model to the AiM channel's cycle model: seconds for one
AiM channel to compute y = W x with W (rows x cols, bf16) resident in its 16 banks (x through the
2 KB global buffer, y out through the output registers), serial or ping-pong buffered (§6).

The cycles come from ``pimforge.hw.lolpim.perf.kernel_cycles``, the exact cycle model of the
``lolpim_pingpong`` unit run on AiM's GEMV program; results are cached per shape.
"""
from __future__ import annotations

from functools import lru_cache

from pimforge.hw.lolpim.aim import AIM_CLOCK_MHZ
from pimforge.hw.lolpim.perf import kernel_cycles

__all__ = ["channel_gemv_seconds", "channel_gemv_cycles", "AIM_CLOCK_MHZ"]


@lru_cache(maxsize=65536)
def channel_gemv_cycles(rows: int, cols: int, pingpong: bool) -> int:
    """Command-clock cycles of one channel's GEMV (the cycle model, cached)."""
    if rows <= 0 or cols <= 0:
        return 0
    return int(kernel_cycles(int(rows), int(cols), pingpong=bool(pingpong)))


def channel_gemv_seconds(rows: int, cols: int, pingpong: bool) -> float:
    """Seconds of one channel's GEMV at the AiM command clock."""
    return channel_gemv_cycles(rows, cols, pingpong) / (AIM_CLOCK_MHZ * 1e6)
