"""The one coupling of the PAPI system model to the ``papi_pu`` cycle model
(``pimforge.hw.papi.perf.pu_gemv_cycles``, the unit's exact cycle model on the HBM3 bank
model): FPU-clock cycles for ``banks`` banks sharing ``fpus`` FPUs to compute Y = W X (W rows x
cols fp16 held in those banks, X cols x reuse in the PU's buffer), cached per shape."""
from __future__ import annotations

from functools import lru_cache

from pimforge.hw.papi.perf import PAPER_LANES, PU_CLOCK_MHZ, pu_gemv_cycles

__all__ = ["gemv_cycles", "gemv_seconds", "PU_CLOCK_MHZ", "LANES"]

LANES = PAPER_LANES       # fp16 weights per 32-byte column read = multipliers of one FPU


@lru_cache(maxsize=1 << 16)
def gemv_cycles(rows: int, cols: int, reuse: int, fpus: int, banks: int) -> int:
    """FPU cycles of one processing group (the cycle model, cached); 0 for an empty GEMV."""
    if rows <= 0 or cols <= 0 or reuse <= 0:
        return 0
    return int(pu_gemv_cycles(int(rows), int(cols), int(reuse), fpus=int(fpus),
                              banks=int(banks)))


def gemv_seconds(rows: int, cols: int, reuse: int, fpus: int, banks: int) -> float:
    """Seconds of one processing group's GEMV at the FPU clock (666 MHz)."""
    cycles = gemv_cycles(int(rows), int(cols), int(reuse), int(fpus), int(banks))
    return cycles / (PU_CLOCK_MHZ * 1e6)
