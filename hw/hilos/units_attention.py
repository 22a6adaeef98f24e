"""Registration of ``hilos_attention`` with its family: the kernel bound and the cycle model."""
from __future__ import annotations

from pimforge.hw.hilos.config import HILOS_PRESETS, HilosAttentionConfig
from pimforge.registry import Unit, register

__all__ = ["kernel_bound", "bound_parts", "attention_cycles", "attention_tail_cycles"]


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
    from pimforge.hw.hilos.timing import kernel_schedule
    return kernel_schedule(cfg, [(n_tokens, n_tokens)] * jobs)["cycles"]


def attention_tail_cycles(cfg: HilosAttentionConfig) -> int:
    from pimforge.hw.hilos.timing import kernel_schedule
    return kernel_schedule(cfg, [(cfg.block, cfg.block)])["tail"]


def _bench(cfg, rng, seed=1, n_random=None, **kw):
    from pimforge.sim.benches.hilos_attention import attention_job
    return attention_job(cfg, rng, seed=seed, **kw)


def _factory(cfg):
    from pimforge.hw.hilos.attention import HilosAttention
    return HilosAttention(cfg)


register(Unit("hilos_attention", "HILOS attention kernel: qk_gemv -> two_pass_softmax -> sv_gemv "
              "as a block pipeline with a DRAM model (i_q, i_k, i_pre, i_s, i_v -> o_s, o)",
              HilosAttentionConfig, _factory, HILOS_PRESETS, _bench, attention_cycles))
