"""Cycle model of the ``hilos_attention`` kernel, composed from its units' own models.

The kernel is a pipeline of ``qk_gemv`` -> pass 1 -> (DRAM) -> pass 2 -> ``sv_gemv`` with
flow control between them, so the composition follows each job's blocks through the units:

* ``qk_gemv``: :func:`~pimforge.hw.hilos.units_qk.qk_schedule` over the jobs' stored tokens (K
  offered from cycle ``latency``).  A job's precomputed score beats follow its last K-derived
  score beat, one per cycle.
* pass 1 ends with the job's last score beat; its statistics are ready ``stats + 1`` cycles
  later (:func:`~pimforge.hw.hilos.two_pass_softmax.softmax_timing`).  Pass 2 of job h starts
  then, after pass 2 of job h-1, and once its first score beat has come back from the DRAM model
  (written one cycle after it passed, readable ``latency + 1`` cycles later).
* pass 2 emits one ``y`` beat per cycle, ``normalize + 1`` cycles after its input beat, into
  ``sv_gemv``'s two P-buffer slots: block i's ``y`` beats wait for the slot that block i-2's
  V rows free.  V rows follow :func:`~pimforge.hw.hilos.units_sv.sv_schedule`'s rules.

The composition ignores second-order couplings (the concatenation holding the next job's scores
while the precomputed ones pass, pass 2's output FIFO), which cost a few cycles per job; the tests
check the model against the RTL within the issue's 2%.
"""
from __future__ import annotations

__all__ = ["kernel_schedule"]


def kernel_schedule(cfg, jobs, latency: int = 0) -> dict:
    """``jobs`` = [(n_k, n), ...] (stored tokens, all tokens); returns ``cycles`` (first cycle
    to the last output beat, inclusive), ``tail`` (last V beat to the first output beat of the
    last job) and per job the cycles of its ``first_out`` and ``last_out`` beats."""
    from pimforge.hw.hilos.sv_gemv import sv_timing
    from pimforge.hw.hilos.two_pass_softmax import softmax_timing
    from pimforge.hw.hilos.units_qk import qk_schedule
    from pimforge.sim.golden.hilos import block_starts
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
