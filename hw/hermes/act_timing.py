"""The fixed latencies and the no-stall schedule of :mod:`pimforge.hw.hermes.act`; the unit's cycle
model is :func:`act_cycle_model`."""
from __future__ import annotations

from pimforge.base.formats import FP16
from pimforge.base.numerics import log2_exact
from pimforge.hw.core.activity import mem_action, op_action
from pimforge.hw.fp.ops import op_latency
from pimforge.hw.hermes.config import HermesActConfig
from pimforge.hw.hermes.streams import ACT_OPS

__all__ = ["act_timing", "act_schedule", "act_cycles", "act_cycle_model", "act_activity",
           "act_unit_activity"]


def act_timing(cfg: HermesActConfig) -> dict:
    """Fixed latencies in cycles (used by the RTL and the cycle model).

    ``max``: the input register, the lane max tree (a level a cycle) and the running maximum
    register.  ``exp``: a buffer read (1), fp16 to ``acc`` (fp32 only), the subtraction and the
    exponential.  ``sum``: the lane adder tree and the partial-sum adder.  ``total``: the
    log2(partials) adder levels of Z's tree.  ``recip``: the reciprocal.  ``norm``: a pass-3
    read to its output FIFO write (exp, multiply, ``acc`` to fp16).  ``relu``: an ``i`` beat
    to its FIFO write.  ``out_fifo``: output FIFO entries (one more than the beats in flight
    at one a cycle).
    """
    od, lv = cfg.op_depth, log2_exact(cfg.lanes)
    cv = op_latency("convert", od) if cfg.acc.width != 16 else 0
    add = op_latency("add", od)
    t = {"max": lv + 2, "exp": 1 + cv + op_latency("sub", od) + op_latency("exp", od),
         "sum": (lv + 1) * add, "total": log2_exact(cfg.partials) * add,
         "recip": op_latency("recip", od), "relu": 1}
    t["norm"] = t["exp"] + op_latency("mul", od) + cv
    t["out_fifo"] = t["norm"] + 2
    return t


def _beats(cfg, n: int) -> int:
    return -(-n // cfg.lanes)


def _job_span(cfg, t, op: str, n: int) -> tuple:
    """``(i_last, o_first, o_last, next)`` of one job starting at cycle 0 with no stalls."""
    B = _beats(cfg, n)
    if op == "relu":
        lag = t["relu"] + 1
        return B - 1, lag, B - 1 + lag, B
    if n > cfg.max_len:
        raise ValueError(f"hermes_act: softmax of {n} elements; the buffer holds max_len = "
                         f"{cfg.max_len}")
    s2 = B - 1 + t["max"]                              # pass 2 reads beat 0
    w = s2 + B - 1 + t["exp"] + t["sum"]               # the last partial-sum write
    s3 = w + 2 + t["total"] + t["recip"]               # pass 3 reads beat 0 (1/Z registered)
    o_first = s3 + t["norm"] + 1
    return B - 1, o_first, o_first + B - 1, o_first + B - 1


def act_schedule(cfg: HermesActConfig, jobs) -> list:
    """Cycle model with no stalls: ``jobs`` is a list of ``(op, n)``, offered back to back from
    cycle 0, ``o`` always ready.  Returns per job the (first, last) cycles of its ``i`` and ``o``
    transfers.

    A ReLU job of B = ceil(n / U) beats takes one ``i`` beat a cycle and gives each ``o`` beat
    ``relu + 1`` cycles later; the next job starts right after its last beat.  A softmax job's
    pass 2 reads beat 0 ``max`` cycles after its last ``i`` beat; pass 3 reads beat 0
    ``exp + sum + 2 + total + recip`` cycles after pass 2's last read; an ``o`` beat leaves
    ``norm + 1`` cycles after its read; the next job's first ``i`` beat is taken the cycle its
    last ``o`` beat leaves (:func:`act_timing`).
    """
    t = act_timing(cfg)
    out, s = [], 0
    for op, n in jobs:
        i_last, o_first, o_last, nxt = _job_span(cfg, t, op, n)
        out.append({"i": (s, s + i_last), "o": (s + o_first, s + o_last)})
        s += nxt
    return out


def act_cycles(cfg: HermesActConfig, op: str, n: int) -> int:
    """Cycles of one job of ``n`` elements alone, up to and including its last ``o`` beat
    (O(1)).  With B = ceil(n / U), lv = log2 U, lq = log2 partials, d = op_depth and c = d for
    fp32 ``acc`` (the conversions), 0 for fp16:

    * ReLU: ``B + 2``;
    * softmax: ``3 B + lv + (lv + lq + 7) d + 3 c + 8`` (``(lv + 9) d`` at the default
      partials = 4): three passes over the beats plus the pipelines max, exp, sum, total,
      recip and norm (:func:`act_schedule`).
    """
    if op not in ACT_OPS:
        raise ValueError(f"hermes_act: op must be one of {ACT_OPS}, not {op!r}")
    if n < 1:
        raise ValueError(f"hermes_act: a vector has at least one element, not {n}")
    return _job_span(cfg, act_timing(cfg), op, n)[2] + 1


def act_cycle_model(cfg: HermesActConfig, n: int) -> int:
    """The registered cycle model: a softmax of ``n`` elements (:func:`act_cycles`)."""
    return act_cycles(cfg, "softmax", n)


def act_activity(cfg: HermesActConfig, op: str, n: int) -> dict:
    """The actions of one job of ``n`` elements (B = ceil(n / U) beats), the job of
    :func:`act_cycles`.  Every output beat is written into the output FIFO once.

    * ReLU: no float operation (a sign test), B FIFO writes.
    * Softmax: the B input beats are written into the vector buffer, which passes 2 and 3 read
      once each (2B reads).  Per read, every lane subtracts the maximum and exponentiates
      (with an fp32 ``acc``, after converting x to fp32, and m beside them once a read);
      lanes past the last beat's count compute on padding like the others.  Pass 2 sums each
      beat in the lane tree (U - 1 adds) and adds it into a partial (1); Z is the tree of
      the Q partials (Q - 1 adds) and one reciprocal; pass 3 multiplies every lane by 1/Z
      (and converts it to fp16 with an fp32 ``acc``).

    The comparators of the max tree are not float operators of the inventory (not counted).
    """
    U, A, B = cfg.lanes, cfg.acc, _beats(cfg, n)
    t = act_timing(cfg)
    out_fifo = mem_action("write", t["out_fifo"], 16 * U + U.bit_length() + 1)
    if op == "relu":
        return {out_fifo: B}
    counts = {out_fifo: B,
              mem_action("write", cfg.max_beats, 16 * U): B,
              mem_action("read", cfg.max_beats, 16 * U): 2 * B,
              op_action("sub", A): 2 * B * U, op_action("exp", A): 2 * B * U,
              op_action("add", A): B * (U - 1) + B + cfg.partials - 1,
              op_action("recip", A): 1, op_action("mul", A): B * U}
    if A.width != 16:
        counts[op_action("convert", A)] = 2 * B * (U + 1)
        counts[op_action("convert", FP16)] = B * U
    return counts


def act_unit_activity(cfg: HermesActConfig, n: int) -> dict:
    """``HwUnit.activity``: a softmax of ``n`` elements (:func:`act_cycle_model`'s job)."""
    return act_activity(cfg, "softmax", n)
