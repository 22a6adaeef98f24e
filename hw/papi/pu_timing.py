"""The exact cycle model of ``papi_pu`` fed by HBM3 banks (:mod:`pimforge.hw.papi.hbm`).

The PU takes the banks' beats in round-robin order (bank 0's column j, bank 1's column j, ...)
and holds each beat ``G = ceil(reuse / fpus)`` cycles, one issue cycle per group of ``fpus``
input vectors.  Beat n of bank b (stream beat ``n B + b``) starts issuing at

    s = max(bank b's latch ready, the previous beat's last issue cycle + 1)

and the PU takes it (the ``i_w`` transfer) at its last issue cycle ``s + G - 1``.  The last
output leaves ``pu_latency`` cycles after the last issue cycle.  Cycle 0 is the unit's first
cycle in its weight phase, when the bench's banks activate page 0.

:func:`pu_run` runs that recurrence beat by beat; with ``skip`` it recognises a repeating
state at page boundaries (every time relative to bank 0's ACT) and jumps whole periods, so a
16384-column, 16384-row job costs a few pages of simulation.
"""
from __future__ import annotations

from pimforge.hw.papi.hbm import HBM3, BankModel, Hbm3Timing

__all__ = ["pu_latency", "pu_run", "pu_issue_starts"]


def pu_latency(lanes: int, op_depth: int, acc_bits: int = 16) -> int:
    """Cycles from the last issue cycle of a (row, vector group) to its output beat on ``o``
    (no stalls): the issue register, the multipliers, the ``log2(lanes)``-level adder tree,
    the partial-sum add, the finish register, ``(p0 + p1) + (p2 + p3)``, the fp16 conversion
    when ``acc`` is fp32, and the output FIFO."""
    levels = lanes.bit_length() - 1
    conv = 1 if acc_bits == 32 else 0
    return 3 + op_depth * (4 + levels + conv)


def _step(banks, prev, G):
    """One round: a beat of every bank in order; returns the last take cycle."""
    for bank in banks:
        s = bank.ready() if prev is None else max(bank.ready(), prev + 1)
        prev = s + G - 1
        bank.taken(prev)
    return prev


def pu_run(beats_per_bank: int, banks: int, groups: int, timing: Hbm3Timing = HBM3,
           skip: bool = True) -> int:
    """The cycle of the PU's last issue (the last ``i_w`` transfer) for ``beats_per_bank``
    column reads of each of ``banks`` banks, each beat held ``groups`` cycles.

    Parameters
    ----------
    beats_per_bank : column reads per bank (rows per bank x beats per row), >= 1.
    banks : banks sharing the FPUs (1 or 2).
    groups : G, issue cycles per beat.
    skip : jump whole periods of a repeating page-boundary state (exact).
    """
    bank_models = [BankModel(0, timing) for _ in range(banks)]
    pc = timing.page_columns
    prev = None
    seen = {}
    j = 0
    while j < beats_per_bank:
        if skip and j % pc == 0 and j:
            base = bank_models[0].act
            key = (tuple(b.key(base) for b in bank_models), prev - base)
            if key in seen:
                j0, base0 = seen[key]
                period, delta = j - j0, base - base0
                k = (beats_per_bank - j - pc) // period
                if k > 0:
                    for b in bank_models:
                        b.shift(k * delta)
                    prev += k * delta
                    j += k * period
                seen.clear()
            else:
                seen[key] = (j, base)
        prev = _step(bank_models, prev, groups)
        j += 1
    return prev


def pu_issue_starts(beats_per_bank: int, banks: int, groups: int,
                    timing: Hbm3Timing = HBM3) -> list:
    """The first issue cycle of every stream beat, in stream order (for the RTL tests)."""
    bank_models = [BankModel(0, timing) for _ in range(banks)]
    prev, out = None, []
    for _ in range(beats_per_bank):
        for bank in bank_models:
            s = bank.ready() if prev is None else max(bank.ready(), prev + 1)
            out.append(s)
            prev = s + groups - 1
            bank.taken(prev)
    return out
