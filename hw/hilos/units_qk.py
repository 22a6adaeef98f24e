"""Registration of ``qk_gemv`` (HILOS Fig. 7d) with its family, and its cycle model."""
from __future__ import annotations

from pimforge.hw.hilos.config import HILOS_PRESETS, QkGemvConfig
from pimforge.registry import Unit, register

__all__ = ["qk_schedule", "qk_cycles", "qk_tail_cycles"]


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
      beat, after tile m-1's issues and once its job's Q is usable; its last-dim pass (the last
      ``block / E`` cycles) waits for its score-buffer half (the cycle after tile m-2's last
      drain read).
    * Drain: tile m's ``G x block / U`` reads go one per cycle from ``mac + 1`` cycles after its
      last MAC issue (its last sum is written ``mac`` cycles after the issue), after tile m-1's
      reads; a read leaves on ``o`` ``drain`` cycles later (see :func:`qk_timing`).
    """
    from pimforge.hw.hilos.qk_gemv import qk_timing
    tm = qk_timing(cfg)
    G, R, B, D = cfg.d_group, cfg.row_beats, cfg.block, cfg.head_dim
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
            final = max(issue + (D - 1) * T, s_free[half])
            prev_issue = final + T - 1
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


def _bench(cfg, rng, seed=1, n_random=None, **kw):
    """The default bench; ``n_random`` (the float units' operand count) does not apply."""
    from pimforge.sim.benches.qk_gemv import qk_job
    return qk_job(cfg, rng, seed=seed, **kw)


def _factory(cfg):
    from pimforge.hw.hilos.qk_gemv import QkGemv
    return QkGemv(cfg)


register(Unit("qk_gemv", "HILOS Q.K^T GEMV with the online block transpose: K-Buf, K^T view, "
              "E x d_group MACs (i_q, i_k -> o: scores in row blocks)", QkGemvConfig, _factory,
              HILOS_PRESETS, _bench, qk_cycles))
