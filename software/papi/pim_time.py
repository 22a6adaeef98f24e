"""The one coupling of the PAPI system model to the ``papi_pu`` cycle model: FPU-clock cycles
for ``banks`` banks sharing ``fpus`` FPUs to compute Y = W X (W rows x cols fp16 held in those
banks, X cols x reuse), cached per shape.

TEMPORARY: until ``pimforge.hw.papi.perf`` lands (branch ``papi-pu``) this is an analytic
stand-in: a bank streams one 32-byte column (16 fp16 weights) per FPU cycle and an FPU retires
16 multiply-accumulates per cycle.
"""
from __future__ import annotations

from functools import lru_cache

__all__ = ["gemv_cycles", "gemv_seconds", "PU_CLOCK_HZ", "LANES"]

PU_CLOCK_HZ = 666e6
LANES = 16            # fp16 weights per 32-byte column = MACs per FPU cycle (stand-in)


@lru_cache(maxsize=1 << 16)
def gemv_cycles(rows: int, cols: int, reuse: int, fpus: int, banks: int) -> int:
    """FPU cycles of one processing group (cached)."""
    if rows <= 0 or cols <= 0 or reuse <= 0:
        return 0
    elems = rows * cols
    bank = -(-elems // (LANES * banks))
    compute = -(-elems * reuse // (LANES * fpus))
    return int(max(bank, compute) + 8)


def gemv_seconds(rows: int, cols: int, reuse: int, fpus: int, banks: int) -> float:
    """Seconds of one processing group's GEMV at the FPU clock."""
    return gemv_cycles(int(rows), int(cols), int(reuse), int(fpus), int(banks)) / PU_CLOCK_HZ
