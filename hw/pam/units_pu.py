"""Registration of ``pam_pu`` with its family, and its cycle model."""
from __future__ import annotations

from pimforge.hw.pam.config import PU_TIER_PRESETS, PamPuConfig
from pimforge.registry import Unit, register

__all__ = ["pu_cycles", "pu_schedule", "pu_tail_cycles", "PU_PRESETS"]

PU_PRESETS = {**PU_TIER_PRESETS,
              "hbm_fp32": {**PU_TIER_PRESETS["hbm"], "acc": "fp32", "buffer_bytes": 768}}


def pu_schedule(cfg: PamPuConfig, sets) -> list:
    """Cycle model of the PU with no stalls: for each token set in ``sets`` (token counts, run
    back to back, each after its Q load), the cycle of its first and last output beat.

    Per tile of t tokens whose first V beat arrives at ``fv``: V beats are issued one per cycle
    from ``max(fv + P0, merge_free)`` (P0 = score path + P sequencer + exponential), where
    ``merge_free`` is when the previous tile's merge has released the fused multiply-add array;
    a merge holds the array from its tile's last V issue until ``conv + fma + merge + 1 + B``
    cycles later.  The partial leaves ``fma + 1`` cycles after the last merge releases the array.
    """
    from pimforge.hw.pam.pu import pu_timing
    tm = pu_timing(cfg)
    B, T = cfg.beats, cfg.tile_tokens
    p0 = tm["score"] + tm["p_path"] + 2
    hold = tm["conv"] + tm["fma"] + tm["merge"] + 1 + B
    out = []
    q_done = B - 1                       # last Q beat of the first set
    prev_out_end = -1
    for n in sets:
        k = max(q_done + 1, prev_out_end + 1)   # first K beat of the set
        free = 0
        for a in range(0, n, T):
            t = min(T, n - a)
            fv = k + t * B
            start = max(fv + p0, free)
            last_issue = start + t * B - 1
            free = last_issue + hold
            k = fv + t * B                 # next tile's first K beat
        first_out = free + tm["fma"] + 1
        last_out = first_out + B - 1
        out.append((first_out, last_out))
        q_done = max(k - 1, q_done) + B    # the next Q loads once the last V beat is in
        prev_out_end = last_out
    return out


def pu_tail_cycles(cfg: PamPuConfig) -> int:
    """Cycles from the last V beat of a set of whole tiles to its first output beat."""
    n = cfg.tile_tokens
    first_out, _ = pu_schedule(cfg, [n])[0]
    last_v = cfg.beats + 2 * n * cfg.beats - 1
    return first_out - last_v


def pu_cycles(cfg: PamPuConfig, n_tokens: int) -> int:
    """Cycles of one Q load and one set of ``n_tokens`` tokens with no stalls, up to and
    including the last output beat."""
    return pu_schedule(cfg, [n_tokens])[0][1] + 1


def _bench(cfg, rng, seed=1, n_random=None, **kw):
    """The default PU bench; ``n_random`` (the float units' operand count) does not apply."""
    from pimforge.sim.benches.pam_pu import pu_job
    return pu_job(cfg, rng, seed=seed, **kw)


def _factory(cfg):
    from pimforge.hw.pam.pu import PamPu
    return PamPu(cfg)


register(Unit("pam_pu", "PAM local-attention PU: Q.K, row max, exp, l and O = sum p V in tiles "
              "(i_q, i_kv -> o: O, m, l)", PamPuConfig, _factory, PU_PRESETS, _bench, pu_cycles))
