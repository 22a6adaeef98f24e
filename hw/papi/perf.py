"""The system-model contract of ``papi_pu``: cycles of one bank-group slice for a GEMV.

``from pimforge.hw.papi.perf import pu_gemv_cycles, PU_CLOCK_MHZ``.  The numbers are the unit's
exact cycle model (:mod:`pimforge.hw.papi.pu_timing`) with the HBM3 bank model
(:mod:`pimforge.hw.papi.hbm`); whole periods of the steady state are skipped exactly, so a call
takes well under a millisecond for rows, cols up to 16384 and reuse up to 1024.
"""
from __future__ import annotations

from pimforge.hw.papi.config import PAPER_PU, PRESET_OP_DEPTH, PapiPuConfig
from pimforge.hw.papi.hbm import HBM3, PU_CLOCK_MHZ
from pimforge.hw.papi.pu_timing import pu_activity, pu_latency, pu_run

__all__ = ["pu_gemv_cycles", "pu_gemv_activity", "PU_CLOCK_MHZ", "PAPER_LANES", "PAPER_WBUF"]

PAPER_LANES = 16     # AttAcc's FPU: 16 fp16 multipliers = one 32-byte HBM3 column read
PAPER_WBUF = 32      # the paper presets' column buffer: one 1 KB page of column reads


def pu_gemv_cycles(rows: int, cols: int, reuse: int, *, fpus: int, banks: int = 1,
                   cfg=None) -> int:
    """FPU clocks (666 MHz, PAPI §6.2) for one slice of ``banks`` banks sharing ``fpus`` FPUs
    (4P1B: fpus=4, banks=1; 1P2B: 1, 2; 1P1B: 1, 1) to compute Y = W X, W ``rows x cols`` fp16
    resident in those banks, X ``cols x reuse`` already in the PU's input buffer.

    Mapping: row r of W lies in bank ``r mod banks``, rows one after another in the bank's
    pages; the FPUs take the banks' column reads in round-robin order, and each column read
    (``lanes`` fp16) is used for all ``reuse`` input vectors, ``fpus`` of them per cycle (the
    FPUs share the weights and work on different vectors).  Counted from page 0's ACT to the
    last output, inclusive.  ``cfg`` (a :class:`~pimforge.hw.papi.config.PapiPuConfig`) gives
    ``lanes``, ``op_depth``, ``acc``, ``partials`` and ``wbuf``; default the paper presets' 16
    lanes, op_depth 4 (``PRESET_OP_DEPTH``: the depth whose netlist meets 666 MHz), fp16, 4
    partials and a 32-beat column buffer.  Rows are padded
    to a multiple of ``banks`` and cols to a multiple of ``lanes``.
    """
    for name, v in (("rows", rows), ("cols", cols), ("reuse", reuse), ("fpus", fpus),
                    ("banks", banks)):
        if not isinstance(v, int) or v < 1:
            raise ValueError(f"pu_gemv_cycles: {name} must be an integer >= 1, not {v!r}")
    lanes, op_depth, acc_bits, partials, wbuf = PAPER_LANES, PRESET_OP_DEPTH, 16, 4, PAPER_WBUF
    if cfg is not None:
        lanes, op_depth, acc_bits, partials, wbuf = (cfg.lanes, cfg.op_depth, cfg.acc.width,
                                                     cfg.partials, cfg.wbuf)
    beats = -(-cols // lanes) * -(-rows // banks)
    groups = -(-reuse // fpus)
    latency = pu_latency(lanes, op_depth, acc_bits, partials)
    return pu_run(beats, banks, groups, wbuf, HBM3) + latency + 1


def pu_gemv_activity(rows: int, cols: int, reuse: int, *, fpus: int, banks: int = 1,
                     cfg=None) -> dict:
    """The actions of :func:`pu_gemv_cycles`' job (the unit's activity model,
    :func:`~pimforge.hw.papi.pu_timing.pu_activity`, on ``ceil(rows / banks)`` rows per bank
    of ``ceil(cols / lanes)`` beats).  ``cfg`` as there; its default is the paper presets'
    slice (:data:`~pimforge.hw.papi.config.PAPER_PU`) with ``fpus`` and ``banks``, whose
    buffer shapes name the SRAM and FIFO actions."""
    for name, v in (("rows", rows), ("cols", cols), ("reuse", reuse), ("fpus", fpus),
                    ("banks", banks)):
        if not isinstance(v, int) or v < 1:
            raise ValueError(f"pu_gemv_activity: {name} must be an integer >= 1, not {v!r}")
    cfg = cfg or PapiPuConfig(**dict(PAPER_PU, fpus=fpus, banks=banks))
    return pu_activity(cfg, -(-rows // banks), reuse, -(-cols // cfg.lanes))
