"""The fixed latencies and the no-stall schedule of :mod:`pimforge.hw.pam.pu`: the RTL takes
its latencies from :func:`pu_timing`; the unit's cycle model
is :func:`pu_cycles`, from :func:`pu_schedule`."""
from __future__ import annotations

from pimforge.base.numerics import log2_exact
from pimforge.hw.fp.ops import op_latency
from pimforge.hw.fp.softmax import merge_latency, to_acc_latency
from pimforge.hw.pam.config import PamPuConfig

__all__ = ["pu_timing", "pu_schedule", "pu_tail_cycles", "pu_cycles"]


def pu_timing(cfg: PamPuConfig) -> dict:
    """Fixed latencies of the PU's pipelines, in cycles (used by the RTL and the cycle model)."""
    od = cfg.op_depth
    conv = op_latency("convert", od) if cfg.acc.width != 16 else 0     # V to the accumulator
    add = op_latency("add", od)
    score = (op_latency("mul_wide", od) + log2_exact(cfg.lanes) * add + log2_exact(cfg.beats) * add
             + op_latency("mul", od))
    p_path = op_latency("sub", od) + to_acc_latency(cfg.acc, od) + op_latency("exp", od)
    fma = op_latency("fma", od)
    return {"conv": conv, "score": score, "p_path": p_path, "fma": fma,
            "merge": merge_latency(od, cfg.acc)}


def pu_schedule(cfg: PamPuConfig, sets) -> list:
    """Cycle model of the PU with no stalls: for each token set in ``sets`` (token counts, run
    back to back, each after its Q load), the cycle of its first and last output beat.

    Per tile of t tokens whose first V beat arrives at ``fv``: V beats are issued one per cycle
    from ``max(fv + P0, merge_free)`` (P0 = score path + P sequencer + exponential), where
    ``merge_free`` is when the previous tile's merge has released the fused multiply-add array;
    a merge holds the array from its tile's last V issue until ``conv + fma + merge + 1 + B``
    cycles later.  The partial leaves ``fma + 1`` cycles after the last merge releases the array.
    """
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
