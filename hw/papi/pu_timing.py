"""The exact cycle model of ``papi_pu`` fed by HBM3 banks (:mod:`pimforge.hw.papi.hbm`).

The banks read their columns in lockstep: stream beat j on ``i_w`` carries column j of every
bank (B x ``lanes`` fp16) into the PU's column buffer, a FIFO of ``wbuf`` beats; the FPUs hold
each bank's part ``G = ceil(reuse / fpus)`` cycles, one issue cycle per group of ``fpus`` input
vectors, bank 0's part first, so a stream beat takes ``B G`` issue cycles.  With ``w(j)`` the
cycle beat j is written into the buffer and ``a(j)`` the cycle the FPUs release it (their last
issue cycle):

    v(j) = max(every bank's column j due, w(j - 1) + 1)    the banks read and offer beat j
    w(j) = max(v(j), a(j - wbuf) + 1)                      it enters when the buffer has room
    s(j) = max(w(j) + 1, a(j - 1) + 1)                     first issue cycle (first-word-fall-through)
    a(j) = s(j) + B G - 1

and the last output leaves :func:`pu_latency` cycles after the last ``a``.  Cycle 0 is the
unit's first cycle in its weight phase, when the banks activate page 0.  The buffer lets a bank
run ahead through its PRE/ACT gap when the FPUs are the bottleneck.

:func:`pu_run` runs the recurrence beat by beat; with ``skip`` it recognises a repeating state
at page boundaries (every time relative to bank 0's ACT) and jumps whole periods, so a
16384 x 16384 job costs a few pages of simulation.
"""
from __future__ import annotations

from collections import deque

from pimforge.base.formats import FP16
from pimforge.hw.core.activity import mem_action, op_action
from pimforge.hw.fp.accumulate import ACC_READ, DRAIN_READ
from pimforge.hw.papi.config import PapiPuConfig
from pimforge.hw.papi.hbm import HBM3, BankModel, Hbm3Timing

__all__ = ["pu_latency", "pu_run", "pu_schedule", "pu_cycles", "pu_activity"]


def pu_latency(lanes: int, op_depth: int, acc_bits: int = 16, partials: int = 4) -> int:
    """Cycles from the last issue cycle of a (row, vector group) to its output beat on ``o``
    (no stalls): the issue register, the multipliers, the ``log2(lanes)``-level adder tree,
    the accumulator bank's read register (``ACC_READ``) and partial-sum add, the finish
    register, the partials' read register (``DRAIN_READ``; both in
    :mod:`pimforge.hw.fp.accumulate`), the ``log2(partials)``-level finish tree (partials 4:
    ``(p0 + p1) + (p2 + p3)``), the fp16 conversion when ``acc`` is fp32, and the output
    FIFO."""
    levels = lanes.bit_length() - 1
    conv = 1 if acc_bits == 32 else 0
    return 3 + ACC_READ + DRAIN_READ + op_depth * (2 + levels + (partials.bit_length() - 1) + conv)


class _Stream:
    """The recurrence's state: the banks, the last write and the last ``wbuf`` releases."""

    def __init__(self, banks: int, groups: int, wbuf: int, timing: Hbm3Timing):
        self.banks = [BankModel(0, timing) for _ in range(banks)]
        self.hold, self.D = banks * groups, wbuf
        self.w = None
        self.a = deque(maxlen=wbuf)

    def beat(self) -> tuple:
        """The next stream beat: returns ``(v, w, s, a)``."""
        v = max(bank.due() for bank in self.banks)
        if self.w is not None:
            v = max(v, self.w + 1)
        for bank in self.banks:
            bank.read(v)
        w = v if len(self.a) < self.D else max(v, self.a[0] + 1)
        s = w + 1 if not self.a else max(w + 1, self.a[-1] + 1)
        a = s + self.hold - 1
        self.w = w
        self.a.append(a)
        return v, w, s, a

    def key(self) -> tuple:
        base = self.banks[0].act
        return (tuple(b.key(base) for b in self.banks), self.w - base,
                tuple(x - base for x in self.a)), base

    def shift(self, delta: int):
        for b in self.banks:
            b.shift(delta)
        self.w += delta
        self.a = deque((x + delta for x in self.a), maxlen=self.D)


def pu_run(beats_per_bank: int, banks: int, groups: int, wbuf: int,
           timing: Hbm3Timing = HBM3, skip: bool = True) -> int:
    """The cycle of the FPUs' last issue for ``beats_per_bank`` column reads of each of
    ``banks`` banks, each beat held ``groups`` cycles, through a ``wbuf``-beat column buffer.

    Parameters
    ----------
    beats_per_bank : column reads per bank (rows per bank x beats per row), >= 1.
    banks : banks sharing the FPUs (1 or 2).
    groups : G, issue cycles per beat.
    wbuf : beats the column buffer holds.
    skip : jump whole periods of a repeating page-boundary state (exact).
    """
    st = _Stream(banks, groups, wbuf, timing)
    pc = timing.page_columns
    seen = {}
    j = 0
    last = None
    while j < beats_per_bank:
        if skip and j and j % pc == 0:
            key, base = st.key()
            if key in seen:
                j0, base0 = seen[key]
                period, delta = j - j0, base - base0
                k = (beats_per_bank - j - pc) // period
                if k > 0:
                    st.shift(k * delta)
                    j += k * period
                seen.clear()
            else:
                seen[key] = (j, base)
        last = st.beat()[3]
        j += 1
    return last


def pu_schedule(beats_per_bank: int, banks: int, groups: int, wbuf: int,
                timing: Hbm3Timing = HBM3) -> list:
    """``(v, w, s, a)`` of every stream beat (column index), in order (for the bench and the tests)."""
    st = _Stream(banks, groups, wbuf, timing)
    return [st.beat() for _ in range(beats_per_bank)]


def pu_cycles(cfg: PapiPuConfig, rows: int, reuse: int = 1, beats: int = 0) -> int:
    """The unit's cycle model: a job of ``rows`` rows per bank, ``beats`` column reads per row
    (default ``max_beats``) and ``reuse`` input vectors, the banks of
    :mod:`~pimforge.hw.papi.hbm` activating page 0 at the first weight-phase cycle (cycle 0);
    cycles from then to the last output beat, inclusive (:mod:`~pimforge.hw.papi.pu_timing`)."""
    beats = beats or cfg.max_beats
    last = pu_run(rows * beats, cfg.banks, cfg.groups(reuse), cfg.wbuf)
    return last + pu_latency(cfg.lanes, cfg.op_depth, cfg.acc.width, cfg.partials) + 1


def pu_activity(cfg: PapiPuConfig, rows: int, reuse: int = 1, beats: int = 0) -> dict:
    """The actions of one job (``rows`` rows per bank, ``beats`` column reads per row, default
    ``max_beats``, ``reuse`` input vectors), the job of :func:`pu_cycles`.

    * the x load writes each of the ``reuse x beats`` input beats into one FPU's buffer;
    * an issue cycle is one (row, beat, bank, vector group): ``rows x beats x banks x G`` of
      them, G = ``ceil(reuse / fpus)``.  In each, every FPU multiplies its ``lanes`` products,
      sums them in its ``lanes - 1``-adder tree and adds the sum into a partial (its first
      ``partials`` beats add into +0, an add all the same), and the partial bank takes one
      write.  All ``fpus`` FPUs work in every issue cycle, also those whose vector lies past
      ``reuse`` (its output leaves as +0): the hardware does not gate them.
    * a (row, bank, group) finishes once: per FPU the ``partials - 1`` adds of the finish tree
      (partials no beat reached read as +0 and are added too), and with an fp32 ``acc`` one
      conversion to fp16; the output beat is pushed into and popped from the output FIFO
      (``pu_latency + 2`` deep).
    * each of the ``rows x beats`` weight beats is pushed into and popped from the column
      buffer.

    The x buffers' and the bank's reads are combinational (not counted,
    :mod:`pimforge.hw.core.activity`).
    """
    beats = beats or cfg.max_beats
    P, L, A, Q = cfg.fpus, cfg.lanes, cfg.acc, cfg.partials
    issues = rows * beats * cfg.banks * cfg.groups(reuse)
    finishes = rows * cfg.banks * cfg.groups(reuse)
    mul = "mul_wide" if A.width == 32 else "mul"
    counts = {
        mem_action("write", cfg.max_groups * cfg.max_beats, 16 * L): reuse * beats,
        op_action(mul, A): issues * P * L,
        op_action("add", A): issues * P * (L - 1) + issues * P + finishes * P * (Q - 1),
        mem_action("write", Q * cfg.banks * cfg.max_groups, A.width * P): issues,
    }
    out_fifo = pu_latency(L, cfg.op_depth, A.width, Q) + 2
    for access in ("write", "read"):
        counts[mem_action(access, cfg.wbuf, 16 * cfg.banks * L, cls="fifo")] = rows * beats
        counts[mem_action(access, out_fifo, 16 * P, cls="fifo")] = finishes
    if A.width == 32:
        counts[op_action("convert", FP16)] = finishes * P
    return counts

