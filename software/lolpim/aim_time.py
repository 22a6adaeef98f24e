"""The one coupling of the LoL-PIM system model to the AiM channel's cycle model: seconds for one
AiM channel to compute y = W x with W (rows x cols, bf16) resident in its 16 banks (x through the
2 KB global buffer, y out through the output registers), serial or ping-pong buffered (§6)."""
from __future__ import annotations

from functools import lru_cache

__all__ = ["channel_gemv_seconds", "channel_gemv_cycles", "AIM_CLOCK_HZ"]

# TEMPORARY (until hw/lolpim/aim.py lands on branch lolpim-pp): a local analytic stand-in with
# the same contract as pimforge.hw.lolpim.aim.kernel_cycles.  Replaced by the real import.
AIM_CLOCK_HZ = 1.0e9


def kernel_cycles(rows: int, cols: int, *, pingpong: bool, cfg=None) -> int:
    banks, gb_elems, beat = 16, 1024, 16
    r = -(-rows // banks)
    chunks = -(-cols // gb_elems)
    load = chunks * 64
    mac = r * (-(-cols // beat)) + r * chunks * 20
    drain = r * 24
    if pingpong:
        return max(load, mac, drain) + 64 + 24
    return load + mac + drain


@lru_cache(maxsize=65536)
def channel_gemv_cycles(rows: int, cols: int, pingpong: bool) -> int:
    """Command-clock cycles of one channel's GEMV (the cycle model, cached)."""
    if rows <= 0 or cols <= 0:
        return 0
    return int(kernel_cycles(int(rows), int(cols), pingpong=bool(pingpong)))


def channel_gemv_seconds(rows: int, cols: int, pingpong: bool) -> float:
    """Seconds of one channel's GEMV at the AiM command clock."""
    return channel_gemv_cycles(rows, cols, pingpong) / AIM_CLOCK_HZ
