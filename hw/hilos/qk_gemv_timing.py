"""The fixed latencies and the cycle model of :mod:`pimforge.hw.hilos.qk_gemv`: the RTL takes
its latencies from :func:`qk_timing`; the unit's cycle model
(:func:`~pimforge.hw.hilos.qk_gemv_timing.qk_cycles`) is :func:`qk_schedule` (no stalls); its
activity model (the actions the probes count) is :func:`qk_activity`."""
from __future__ import annotations

from collections import Counter

from pimforge.base.formats import FP32
from pimforge.base.numerics import log2_exact
from pimforge.hw.core.activity import mem_action, op_action
from pimforge.hw.fp.accumulate import acc_latency
from pimforge.hw.fp.ops import op_latency
from pimforge.hw.hilos.config import QkGemvConfig

__all__ = ["qk_timing", "qk_schedule", "qk_tail_cycles", "qk_cycles", "qk_activity",
           "qk_job_activity"]


def qk_timing(cfg: QkGemvConfig) -> dict:
    """Fixed latencies of ``qk_gemv``, in cycles (used by the RTL and the cycle model).

    * ``tile``: MAC-array cycles per tile, ``block x head_dim / E``.
    * ``read``: the K-Buf and Q reads and their output register (the block RAM's clock-to-out
      stays out of the multipliers' cycle).  ``mac``: a MAC issue to its sum's write.
    * ``finish``: the drain's pairwise tree of the ``partials`` partial sums (0 for one).
    * ``scale``, ``conv``: the drain's scale multiply and rounding to ``score_fmt`` (0: fp32).
    * ``drain``: a drain read to the cycle its beat can leave (read, register, finish, scale,
      conv, FIFO).
    * ``fifo``: output FIFO depth (the drain's credits): ``drain + 1`` beats in flight plus one.
    """
    od = cfg.op_depth
    conv = op_latency("convert", od) if cfg.score_fmt.width != 32 else 0
    finish = log2_exact(cfg.partials) * op_latency("add", od)
    read, drain = 2, 2 + finish + op_latency("mul", od) + conv + 1
    mac = read + op_latency("mul_wide", od) + acc_latency(od)
    return {"tile": cfg.block * cfg.row_beats, "read": read, "mac": mac, "finish": finish,
            "scale": op_latency("mul", od), "conv": conv, "drain": drain, "fifo": drain + 1}


def qk_schedule(cfg: QkGemvConfig, jobs) -> list:
    """Cycle model of ``qk_gemv`` with no stalls: jobs of ``jobs`` tokens (each >= 1) run back to
    back in one phase, ``i_q`` and ``i_k`` offered from cycle 0 and ``o`` always ready.

    Returns, per job, a dict of cycles: ``q_first``, ``k_first``, ``k_last`` (its first Q beat,
    first and last K beat), ``last_issue`` (its last MAC-array cycle), ``first_out``, ``last_out``.

    * Q: job h's ``G x R`` beats (R = head_dim / E) go one per cycle after job h-1's, once Q bank
      h % 2 is free (the cycle after job h-2's last MAC issue); its Q is usable the cycle after
      its last beat.
    * K: tiles m = 0, 1, ... over all jobs alternate between the two K-Buf halves.  Tile m's
      ``rows x R`` beats go one per cycle after tile m-1's, once half m % 2 is free (the cycle
      after tile m-2's last MAC issue).
    * MAC array: tile m issues ``block x R`` cycles back to back from the cycle after its last K
      beat, after tile m-1's issues and once its job's Q is usable; its last-dims pass (the
      last ``partials x block / E`` cycles) waits for its score-buffer half (the cycle after
      tile m-2's last drain read).
    * Drain: tile m's ``G x block / U`` reads go one per cycle from ``mac + 1`` cycles after its
      last MAC issue (its last sum is written ``mac`` cycles after the issue), after tile m-1's
      reads; a read leaves on ``o`` ``drain`` cycles later (see :func:`qk_timing`).
    """
    tm = qk_timing(cfg)
    G, R, B, D, Q = cfg.d_group, cfg.row_beats, cfg.block, cfg.head_dim, cfg.partials
    T = B // cfg.beat_elems
    reads = G * cfg.block_beats
    q_next, q_free = 0, [0, 0]
    k_next, k_free, s_free = 0, [0, 0], [0, 0]
    prev_issue, prev_read = -1, -1
    tile = 0
    out = []
    for h, n in enumerate(jobs):
        if n < 1:
            raise ValueError(f"a job has at least one token, not {n}")
        q_first = max(q_next, q_free[h % 2])
        q_next = q_first + G * R
        q_usable = q_next
        rec = {"q_first": q_first}
        for a in range(0, n, B):
            rows = min(B, n - a)
            half = tile % 2
            k_start = max(k_next, k_free[half])
            k_end = k_start + rows * R - 1
            k_next = k_end + 1
            issue = max(k_end + 1, prev_issue + 1, q_usable)
            final = max(issue + (D - Q) * T, s_free[half])
            prev_issue = final + Q * T - 1
            k_free[half] = prev_issue + 1
            read = max(prev_issue + tm["mac"] + 1, prev_read + 1)
            prev_read = read + reads - 1
            s_free[half] = prev_read + 1
            if a == 0:
                rec.update(k_first=k_start, first_out=read + tm["drain"])
            tile += 1
        q_free[h % 2] = prev_issue + 1
        rec.update(k_last=k_end, last_issue=prev_issue, last_out=prev_read + tm["drain"])
        out.append(rec)
    return out


def qk_tail_cycles(cfg: QkGemvConfig) -> int:
    """Cycles from the last K beat of a whole tile to the tile's first score beat, with the MAC
    array idle and Q loaded: ``block x R`` MAC cycles, then ``mac + 1`` to the score buffer and
    ``drain`` to ``o``."""
    s = qk_schedule(cfg, [cfg.block])[0]
    return s["first_out"] - s["k_last"]


def qk_cycles(cfg: QkGemvConfig, n_tokens: int) -> int:
    """Cycles of one job of ``n_tokens`` tokens with no stalls (Q and K offered from cycle 0), up
    to and including its last score beat."""
    return qk_schedule(cfg, [n_tokens])[0]["last_out"] + 1


def qk_activity(cfg: QkGemvConfig, jobs) -> dict:
    """Action counts of ``qk_gemv`` over jobs of ``jobs`` tokens (each >= 1), stalls or not.

    With G = d_group, E = beat_elems, R = head_dim / E, T = block / E, Q = partials, U = lanes,
    and a job of n tokens in ``ceil(n / block)`` tiles:

    * Q buffer (G memories of 2R x 16E): one write per Q beat, G x R a job.
    * K-Buf (E banks of 2 block R x 16): every K beat writes all E banks (E x n x R).
    * MAC array: a tile is computed whole, a short one too (its missing tokens leave with
      keep = 0): block x R issues, each a read of every K-Buf bank and Q memory, G x E
      widening multiplies and G x E accumulator adds, and one write of the accumulator bank
      (T Q words of 32 G E bits; its reads are combinational, uncounted).
    * Score buffer (Q memories of 2T x 32GE): the last Q dims' T issues each write one word of
      the memory of their partial (Q x T a tile).
    * Drain: G x block / U beats a tile, each a read of the Q score-buffer memories, U lanes of
      the Q - 1 adds of the partials' tree, a scale multiply and (scores not fp32) a rounding to
      ``score_fmt``, and one write of the output FIFO (``fifo`` entries of
      ``U x (score bits + 2) + 1`` bits; its reads are combinational, uncounted).
    """
    tm = qk_timing(cfg)
    G, E, R, B, Q, U = (cfg.d_group, cfg.beat_elems, cfg.row_beats, cfg.block, cfg.partials,
                        cfg.lanes)
    T = B // E
    jobs = list(jobs)
    tiles = sum(-(-n // B) for n in jobs)
    issues = tiles * B * R
    lanes = G * E
    drain = tiles * G * (B // U)
    counts = Counter()
    counts[mem_action("write", 2 * R, 16 * E)] += G * R * len(jobs)
    counts[mem_action("read", 2 * R, 16 * E)] += G * issues
    counts[mem_action("write", 2 * B * R, 16)] += E * R * sum(jobs)
    counts[mem_action("read", 2 * B * R, 16)] += E * issues
    counts[op_action("mul_wide", FP32)] += issues * lanes
    counts[op_action("add", FP32)] += issues * lanes + drain * U * (Q - 1)
    counts[mem_action("write", T * Q, 32 * lanes)] += issues
    counts[mem_action("write", 2 * T, 32 * lanes)] += tiles * Q * T
    counts[mem_action("read", 2 * T, 32 * lanes)] += Q * drain
    counts[op_action("mul", FP32)] += drain * U
    if tm["conv"]:
        counts[op_action("convert", cfg.score_fmt)] += drain * U
    counts[mem_action("write", tm["fifo"], U * (cfg.score_fmt.width + 2) + 1)] += drain
    return dict(counts)


def qk_job_activity(cfg: QkGemvConfig, n_tokens: int) -> dict:
    """:func:`qk_activity` of the cycle model's job (:func:`qk_cycles`): one job of
    ``n_tokens`` tokens with no stalls."""
    return qk_activity(cfg, [n_tokens])
