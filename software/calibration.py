"""PIM compute rates from the RTL cycle models.

The system model never takes a unit's speed as a free constant.  A PAM tier's PU time comes from
:func:`pimforge.hw.pam.pu_timing.pu_schedule` (the cycle model the ``pam_pu`` bench checks
against the Verilog, cycle for cycle), its reductions from
:func:`pimforge.hw.pam.ru_timing.ru_cycles` (checked against ``pam_ru``), and a SmartSSD's attention
kernel from :func:`pimforge.hw.hilos.attention_timing.kernel_schedule` (checked against
``hilos_attention``).  The models are called with the job shapes the system produces and
divided by the unit's clock.

Back-to-back jobs overlap (the next Q loads while the previous partial drains), so the cost of
one more job is taken as the marginal cost ``(cycles(k + 1 jobs) - cycles(1 job)) / k``.
"""
from __future__ import annotations

from functools import lru_cache

from pimforge.hw.hilos.attention_timing import kernel_schedule
from pimforge.hw.hilos.config import HilosAttentionConfig
from pimforge.hw.pam.config import PamPuConfig, PamRuConfig
from pimforge.hw.pam.pu_timing import pu_schedule
from pimforge.hw.pam.ru_timing import ru_cycles

__all__ = ["pu_set_cycles", "pu_fill_cycles", "ru_merge_cycles", "hilos_job_cycles",
           "hilos_fill_cycles", "MARGINAL_JOBS"]

MARGINAL_JOBS = 4     # jobs behind the first one used for the marginal cost


@lru_cache(maxsize=4096)
def _pu_cycles(lanes, head_dim, tile, n, k):
    cfg = PamPuConfig(lanes=lanes, head_dim=head_dim, tile_tokens=tile)
    return pu_schedule(cfg, [n] * k)[-1][1] + 1


def pu_set_cycles(lanes: int, head_dim: int, n_tokens: int, tile: int = 16) -> float:
    """Cycles one PU adds for one more token set of ``n_tokens`` (one query head's tokens),
    run back to back after others (``pam_pu`` cycle model)."""
    n = max(1, int(n_tokens))
    k = MARGINAL_JOBS
    return (_pu_cycles(lanes, head_dim, tile, n, k + 1) - _pu_cycles(lanes, head_dim, tile, n, 1)) / k


def pu_fill_cycles(lanes: int, head_dim: int, n_tokens: int, tile: int = 16) -> float:
    """Cycles of the first set beyond the marginal cost (Q load, pipeline fill and drain)."""
    n = max(1, int(n_tokens))
    return _pu_cycles(lanes, head_dim, tile, n, 1) - pu_set_cycles(lanes, head_dim, n, tile)


@lru_cache(maxsize=1024)
def _ru_cycles(vector_width, head_dim, final, partials, k):
    cfg = PamRuConfig(vector_width=vector_width, head_dim=head_dim, final=final,
                      scratch_bytes=max(512, head_dim * 2))
    return ru_cycles(cfg, [partials] * k)


def ru_merge_cycles(vector_width: int, head_dim: int, partials: int, final: bool = False) -> float:
    """Cycles an RU adds for one more reduction request of ``partials`` partial results
    (``pam_ru`` cycle model)."""
    p = max(1, int(partials))
    k = MARGINAL_JOBS
    return (_ru_cycles(vector_width, head_dim, final, p, k + 1)
            - _ru_cycles(vector_width, head_dim, final, p, 1)) / k


@lru_cache(maxsize=1024)
def _hilos_cycles(d_group, head_dim, n_k, n, k):
    cfg = HilosAttentionConfig(d_group=d_group, head_dim=head_dim)
    return kernel_schedule(cfg, [(n_k, n)] * k)["cycles"]


def _bucket(n: int) -> int:
    """Long contexts are rounded up to a multiple of 1,024 tokens (at most 0.8% more work for
    contexts over 128 blocks) so the cache serves whole sweeps."""
    return n if n <= 16384 else -(-n // 1024) * 1024


def hilos_job_cycles(d_group: int, head_dim: int, n_stored: int, n_precomputed: int = 0) -> float:
    """Cycles a ``hilos_attention`` kernel adds for one more job (one KV head and its
    ``d_group`` queries) over ``n_stored`` tokens read from the SSD plus ``n_precomputed`` host
    scores (delayed writeback), run back to back (``hilos_attention`` cycle model)."""
    n_k = _bucket(max(1, int(n_stored)))
    n = n_k + max(0, int(n_precomputed))
    k = MARGINAL_JOBS
    return (_hilos_cycles(d_group, head_dim, n_k, n, k + 1) - _hilos_cycles(d_group, head_dim, n_k, n, 1)) / k


def hilos_fill_cycles(d_group: int, head_dim: int, n_stored: int, n_precomputed: int = 0) -> float:
    n_k = _bucket(max(1, int(n_stored)))
    n = n_k + max(0, int(n_precomputed))
    return _hilos_cycles(d_group, head_dim, n_k, n, 1) - hilos_job_cycles(d_group, head_dim, n_k, n - n_k)
