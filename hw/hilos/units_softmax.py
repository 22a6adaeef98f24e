"""Registration of ``two_pass_softmax`` (HILOS §4.4, Alg. 1, Fig. 7b-c) and its cycle model."""
from __future__ import annotations

from pimforge.hw.hilos.config import HILOS_PRESETS, TwoPassSoftmaxConfig
from pimforge.registry import Unit, register

__all__ = ["softmax_job_beats", "softmax_schedule", "softmax_cycles"]


def _segments(job) -> list:
    return [int(job)] if isinstance(job, int) else [int(s) for s in job]


def softmax_job_beats(cfg: TwoPassSoftmaxConfig, job) -> int:
    """Score beats of one job (``i`` and ``i_s`` alike, and its ``o`` beats): every row block is
    ``block / U`` beats per query; ``job`` is a token count or a list of segment lengths."""
    blocks = sum(-(-s // cfg.block) for s in _segments(job))
    return blocks * cfg.d_group * cfg.block_beats


def softmax_schedule(cfg: TwoPassSoftmaxConfig, jobs) -> list:
    """Cycle model of the unit with no stalls: ``i`` and ``i_s`` offer every job's beats back to
    back from cycle 0 (``i_s`` is taken as soon as the unit is ready for it) and ``o`` is always
    ready.  Returns, per job, a dict of the (first, last) cycles of its ``i``, ``i_s`` and ``o``
    transfers.

    With ``nb`` beats a job and the latencies of :func:`~pimforge.hw.hilos.two_pass_softmax.
    softmax_timing`:

    * pass 1 takes one beat per cycle, except that job h's last beat waits until job h-2 has left
      pass 2 (the stats FIFO holds two jobs): ``last_i[h] = max(first_i[h] + nb - 1,
      last_s[h-2] + 1)``;
    * job h's statistics are written ``stats`` cycles after its last ``i`` beat, and pass 2 starts
      the next cycle or when job h-1 has left it: ``first_s[h] = max(last_i[h] + stats + 1,
      last_s[h-1] + 1)``, then one beat per cycle;
    * an ``o`` beat leaves ``normalize + 1`` cycles after its ``i_s`` beat.
    """
    from pimforge.hw.hilos.two_pass_softmax import STATS_JOBS, softmax_timing
    t = softmax_timing(cfg)
    out, pops = [], []
    first_i, last_s = 0, -1
    for h, job in enumerate(jobs):
        nb = softmax_job_beats(cfg, job)
        last_i = first_i + nb - 1
        if h >= STATS_JOBS:
            last_i = max(last_i, pops[h - STATS_JOBS] + 1)
        first_s = max(last_i + t["stats"] + 1, last_s + 1)
        last_s = first_s + nb - 1
        pops.append(last_s)
        lag = t["normalize"] + 1
        out.append({"i": (first_i, last_i), "i_s": (first_s, last_s),
                    "o": (first_s + lag, last_s + lag)})
        first_i = last_i + 1
    return out


def softmax_cycles(cfg: TwoPassSoftmaxConfig, n_tokens: int) -> int:
    """Cycles of one job of ``n_tokens`` positions (one segment) with no stalls, up to and
    including its last ``o`` beat."""
    return softmax_schedule(cfg, [n_tokens])[0]["o"][1] + 1


def _bench(cfg, rng, seed=1, n_random=None, **kw):
    """The default bench; ``n_random`` (the float units' operand count) does not apply."""
    from pimforge.sim.benches.two_pass_softmax import softmax_job
    return softmax_job(cfg, rng, seed=seed, **kw)


def _factory(cfg):
    from pimforge.hw.hilos.two_pass_softmax import TwoPassSoftmax
    return TwoPassSoftmax(cfg)


register(Unit("two_pass_softmax", "HILOS two-pass softmax: block max, exp-sum and streaming "
              "update, then exp(x - m) / Z (i, i_s -> o)", TwoPassSoftmaxConfig, _factory,
              HILOS_PRESETS, _bench, softmax_cycles))
