"""Registration of ``sv_gemv`` (HILOS Fig. 7e) with its family, and its cycle model."""
from __future__ import annotations

from pimforge.hw.hilos.config import HILOS_PRESETS, SvGemvConfig
from pimforge.registry import Unit, register

__all__ = ["sv_schedule", "sv_cycles", "job_blocks"]


def job_blocks(cfg: SvGemvConfig, job) -> list:
    """Real positions of each block of a job: ``job`` is a token count n, or ``(n, segments)``
    (blocks never straddle a segment, as in :func:`pimforge.sim.golden.hilos.block_starts`)."""
    from pimforge.sim.golden.hilos import block_starts
    n, segments = (job, None) if isinstance(job, int) else (job[0], job[1])
    return [e - a for a, e in block_starts(n, cfg.block, segments)]


def sv_schedule(cfg: SvGemvConfig, jobs) -> list:
    """Cycle model of ``sv_gemv`` with no stalls: ``jobs`` (see :func:`job_blocks`) run back to
    back in one phase, both inputs offered from cycle 0 and the output always ready.

    Returns, per job, a dict with the cycles of its first and last V beat (``v_first``,
    ``v_last``) and of its first and last output beat (``first_out``, ``last_out``).

    Blocks i = 0, 1, ... (over all jobs) alternate between the two P-buffer slots.  Block i's
    ``G x block / U`` y beats start when block i-1's are in and slot i % 2 has been freed (the
    cycle after block i-2's last V beat).  Its ``n_i x head_dim / E`` V beats go one per cycle
    from the cycle after its last y beat, after block i-1's V beats, and, for a job's first block,
    once an O-bank slot is free (the cycle after the drain of job h-2 has read its last beat).
    The drain of job h starts ``mul + add + 1`` cycles after its last V beat, or after the drain
    of job h-1, and reads ``G x head_dim / E`` beats one per cycle; each beat leaves ``conv + 1``
    cycles after its read.
    """
    from pimforge.hw.hilos.sv_gemv import sv_timing
    tm = sv_timing(cfg)
    G, RB = cfg.d_group, cfg.row_beats
    p_beats = G * cfg.block_beats
    drain = G * RB
    out = []
    p_end = -1                 # last y beat of the previous block
    v_ends = [-1, -1]          # last V beat of blocks i-2, i-1
    drain_ends = [-1, -1]      # last drain read of jobs h-2, h-1
    for job in jobs:
        v_first = None
        for k, n_b in enumerate(job_blocks(cfg, job)):
            p_start = max(p_end + 1, v_ends[0] + 1)
            p_end = p_start + p_beats - 1
            v_start = max(p_end + 1, v_ends[1] + 1)
            if k == 0:
                v_start = max(v_start, drain_ends[0] + 1)
                v_first = v_start
            v_ends = [v_ends[1], v_start + n_b * RB - 1]
        v_last = v_ends[1]
        d_start = max(v_last + tm["mul"] + tm["add"] + 1, drain_ends[1] + 1)
        d_end = d_start + drain - 1
        drain_ends = [drain_ends[1], d_end]
        out.append({"v_first": v_first, "v_last": v_last,
                    "first_out": d_start + tm["conv"] + 1, "last_out": d_end + tm["conv"] + 1})
    return out


def sv_cycles(cfg: SvGemvConfig, n_tokens: int) -> int:
    """Cycles of one job of ``n_tokens`` positions (one segment) with no stalls, from the first
    cycle after reset up to and including its last output beat."""
    return sv_schedule(cfg, [n_tokens])[0]["last_out"] + 1


def _bench(cfg, rng, seed=1, n_random=None, **kw):
    """The default bench; ``n_random`` (the float units' operand count) does not apply."""
    from pimforge.sim.benches.sv_gemv import sv_job
    return sv_job(cfg, rng, seed=seed, **kw)


def _factory(cfg):
    from pimforge.hw.hilos.sv_gemv import SvGemv
    return SvGemv(cfg)


register(Unit("sv_gemv", "HILOS score x V GEMV: O = sum_j y_j V_j for d_group queries, "
              "double-buffered (i_p, i_v -> o)", SvGemvConfig, _factory, HILOS_PRESETS, _bench,
              sv_cycles))
