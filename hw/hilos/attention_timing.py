"""The block-pipeline schedule of :mod:`pimforge.hw.hilos.attention` from its units' timing; the
unit's cycle model is :func:`attention_cycles`, its activity model :func:`attention_activity`
(its units' activity models composed, :func:`kernel_activity`)."""
from __future__ import annotations

from collections import Counter

from pimforge.base.numerics import block_starts
from pimforge.hw.core.activity import mem_action
from pimforge.hw.hilos.config import HilosAttentionConfig
from pimforge.hw.hilos.qk_gemv_timing import qk_activity, qk_schedule
from pimforge.hw.hilos.sv_gemv_timing import sv_activity, sv_timing
from pimforge.hw.hilos.two_pass_softmax_timing import (
    softmax_activity, softmax_job_beats, softmax_timing
)

__all__ = ["bound_parts", "kernel_bound", "attention_cycles", "attention_tail_cycles",
           "kernel_schedule", "kernel_activity", "attention_activity"]


def _blocks(cfg, n_k: int, n: int) -> int:
    """Row blocks of one query: the stored tokens' blocks plus the precomputed ones'."""
    c = n - n_k
    return -(-n_k // cfg.block) + (-(-c // cfg.block) if c else 0)


def bound_parts(cfg, jobs) -> dict:
    """The three limits of a kernel run, in cycles, for ``jobs`` = [(n_k, n), ...]:
    QK^T beats (K rows of the stored tokens), S.V beats (V rows of all tokens) and the cycles of
    one softmax pass (``d_group`` rows of ``block / lanes`` beats per block)."""
    rb = cfg.row_beats
    return {"qk_beats": sum(n_k * rb for n_k, _ in jobs),
            "sv_beats": sum(n * rb for _, n in jobs),
            "softmax_pass": sum(cfg.d_group * _blocks(cfg, n_k, n) * cfg.block_beats
                                for n_k, n in jobs)}


def kernel_bound(cfg, jobs) -> int:
    """max(QK^T beats, S.V beats, softmax pass cycles): what the kernel cannot beat at one beat
    per cycle per unit."""
    return max(bound_parts(cfg, jobs).values())


def attention_cycles(cfg: HilosAttentionConfig, n_tokens: int, jobs: int = 1) -> int:
    """Cycle model of ``jobs`` back-to-back jobs of ``n_tokens`` stored tokens each (no stalls,
    DRAM at one beat per cycle with zero latency), first input to last output beat."""
    return kernel_schedule(cfg, [(n_tokens, n_tokens)] * jobs)["cycles"]


def kernel_activity(cfg: HilosAttentionConfig, jobs) -> dict:
    """Action counts of a kernel run of ``jobs`` = [(n_k, n), ...] (stored tokens, all tokens;
    n_k >= 1), stalls or not: the sum of its units' activity models.  ``qk_gemv`` sees the
    stored tokens (:func:`~pimforge.hw.hilos.qk_gemv_timing.qk_activity`); the softmax each
    job's scores as the segments ``[n_k, n - n_k]`` (the precomputed ones a segment of their
    own, :func:`~pimforge.hw.hilos.two_pass_softmax_timing.softmax_activity`); ``sv_gemv``
    every token's V row in those segments
    (:func:`~pimforge.hw.hilos.sv_gemv_timing.sv_activity`).  The top's own FIFOs: the jobs'
    ``pre`` flags (4 x 1) take one push and one pop a job; the DRAM write (4 x the score
    payload) each pass-1 score beat, popped to ``o_s``."""
    jobs = [(int(n_k), int(n)) for n_k, n in jobs]
    segments = [[n_k, n - n_k] if n > n_k else [n_k] for n_k, n in jobs]
    counts = Counter(qk_activity(cfg.qk_config(), [n_k for n_k, _ in jobs]))
    sm = cfg.softmax_config()
    counts.update(softmax_activity(sm, segments))
    counts.update(sv_activity(cfg.sv_config(), [(n, seg) for (_, n), seg in zip(jobs, segments)]))
    beats = sum(softmax_job_beats(sm, seg) for seg in segments)
    width = cfg.lanes * cfg.score_fmt.width + 2 * cfg.lanes + 1     # data, keep, mask, last
    for access in ("write", "read"):
        counts[mem_action(access, 4, 1, cls="fifo")] += len(jobs)
        counts[mem_action(access, 4, width, cls="fifo")] += beats
    return dict(counts)


def attention_activity(cfg: HilosAttentionConfig, n_tokens: int, jobs: int = 1) -> dict:
    """Action counts of the job of :func:`attention_cycles`: ``jobs`` jobs (KV heads) of
    ``n_tokens`` stored tokens each, e.g. one decode step's attention for ``jobs`` KV heads at
    a context of ``n_tokens``."""
    return kernel_activity(cfg, [(n_tokens, n_tokens)] * jobs)


def attention_tail_cycles(cfg: HilosAttentionConfig) -> int:
    return kernel_schedule(cfg, [(cfg.block, cfg.block)])["tail"]


def kernel_schedule(cfg, jobs, latency: int = 0) -> dict:
    """``jobs`` = [(n_k, n), ...] (stored tokens, all tokens); returns ``cycles`` (first cycle
    to the last output beat, inclusive), ``tail`` (last V beat to the first output beat of the
    last job) and per job the cycles of its ``first_out`` and ``last_out`` beats."""
    qk = qk_schedule(cfg.qk_config(), [n_k for n_k, _ in jobs])
    st = softmax_timing(cfg.softmax_config())
    sv = sv_timing(cfg.sv_config())
    G, RB = cfg.d_group, cfg.row_beats
    p_beats = G * cfg.block_beats
    lag = st["normalize"] + 1
    out = []
    cat_end = -1             # last score beat into pass 1 (and the DRAM write FIFO)
    s_end = -1               # pass 2's last input beat
    y_end = -1               # last y beat into sv_gemv
    v_ends = [-1, -1]        # last V beat of blocks i-2 and i-1
    drain_ends = [-1, -1]    # last drain read of jobs h-2 and h-1
    for h, (n_k, n) in enumerate(jobs):
        q = qk[h]
        c = n - n_k
        segments = [n_k, c] if c else [n_k]
        blocks = [e - a for a, e in block_starts(n, cfg.block, segments)]
        pre_beats = (len(blocks) - len(block_starts(n_k, cfg.block))) * p_beats
        first_cat = max(q["first_out"] + latency, cat_end + 1)
        cat_end = max(q["last_out"] + latency, cat_end + 1) + pre_beats
        s_start = max(cat_end + st["stats"] + 1, s_end + 1, first_cat + 1 + latency + 1)
        v_first = None
        for k, n_b in enumerate(blocks):
            y_start = max(s_start + k * p_beats + lag, y_end + 1, v_ends[0] + 1)
            y_end = y_start + p_beats - 1
            v_start = max(y_end + 1, v_ends[1] + 1, latency)
            if k == 0:
                v_start = max(v_start, drain_ends[0] + 1)
                v_first = v_start
            v_ends = [v_ends[1], v_start + n_b * RB - 1]
        s_end = y_end - lag
        v_last = v_ends[1]
        d_start = max(v_last + sv["mul"] + sv["add"] + 1, drain_ends[1] + 1)
        d_end = d_start + G * RB - 1
        drain_ends = [drain_ends[1], d_end]
        out.append({"v_first": v_first, "v_last": v_last, "first_out": d_start + sv["conv"] + 1,
                    "last_out": d_end + sv["conv"] + 1})
    last = out[-1]
    return {"cycles": last["last_out"] + 1, "tail": last["first_out"] - last["v_last"],
            "jobs": out}
