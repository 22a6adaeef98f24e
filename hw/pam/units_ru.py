"""Registration of ``online_softmax`` and ``pam_ru`` (imported by :mod:`.units`)."""
from __future__ import annotations

from pimforge.hw.pam.config import OnlineSoftmaxConfig, PamRuConfig
from pimforge.hw.pam.ru import PamRu, ru_cycle_model
from pimforge.hw.pam.softmax import OnlineSoftmax, merge_interval, merge_latency
from pimforge.registry import Unit, register


def softmax_cycles(cfg, n: int) -> int:
    """Cycle model of ``online_softmax``: ``n`` inputs offered back to back with no stalls enter
    every ``merge_interval`` cycles; the last output leaves ``latency`` cycles after the last
    input (cycles counted to the last transfer, inclusive)."""
    if n < 1:
        return 0
    latency = merge_latency(cfg.op_depth, cfg.acc) + 1         # the merge, then the output FIFO
    return (n - 1) * merge_interval(cfg.op_depth) + latency + 1


def _softmax_bench(cfg, rng, seed=1, **kw):
    from pimforge.sim.benches.pam_ru import softmax_job
    return softmax_job(cfg, rng, seed=seed, **kw)


def _ru_bench(cfg, rng, seed=1, **kw):
    from pimforge.sim.benches.pam_ru import ru_job
    return ru_job(cfg, rng, seed=seed, **kw)


register(Unit("online_softmax", "online-softmax statistics merge, PAM eqs. 3-5 "
              "(i: m_in, l_in, first -> o: m, l, g, swap)",
              OnlineSoftmaxConfig, lambda cfg: OnlineSoftmax(cfg), {"fp32": {"acc": "fp32"}},
              _softmax_bench, softmax_cycles))
register(Unit("pam_ru", "PAM reduction unit: merges partials (O, m, l) of a request, PAM Alg. 1 "
              "Reduction (i: data, m, l, last -> o: data, m, l [, norm, lse])",
              PamRuConfig, lambda cfg: PamRu(cfg),
              {"final": {"final": True}, "fp32": {"acc": "fp32"}},
              _ru_bench, ru_cycle_model))
