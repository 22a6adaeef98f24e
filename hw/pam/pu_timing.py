"""The fixed latencies, the no-stall schedule and the actions of :mod:`pimforge.hw.pam.pu`: the
RTL takes its latencies from :func:`pu_timing` and its V FIFO's depth from :func:`v_fifo_depth`;
the unit's cycle model is :func:`pu_cycles`, from :func:`pu_schedule`, and its activity model
:func:`pu_activity_model`, from :func:`pu_activity` (the per-set counts the system energy
model takes)."""
from __future__ import annotations

from collections import Counter

from pimforge.base.formats import FP16
from pimforge.base.numerics import SCORE, log2_exact
from pimforge.hw.core.activity import mem_action, op_action
from pimforge.hw.fp.ops import op_latency
from pimforge.hw.fp.softmax import merge_latency, to_acc_latency
from pimforge.hw.pam.config import PamPuConfig

__all__ = ["pu_timing", "v_fifo_depth", "pu_schedule", "pu_tail_cycles", "pu_cycles",
           "pu_activity", "pu_activity_model"]


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


def v_fifo_depth(cfg: PamPuConfig) -> int:
    """V FIFO entries: a tile's V beats wait there for its row max and first exponential (the
    score path and the P path), plus two rows and a margin.  Not rounded up to a power of two:
    the FIFO is the PU's largest memory (16 x 257 bits an entry at 16 lanes).  At hbm (49
    entries) the bench's no-stall cycle count still matches the model with 16 entries fewer,
    and not with 24 fewer (the V stream stalls), so the margin is small but real."""
    t = pu_timing(cfg)
    return t["score"] + t["p_path"] + 2 * cfg.beats + 8


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


def pu_activity(cfg: PamPuConfig, sets) -> dict:
    """The actions of the PU for the token ``sets`` of :func:`pu_schedule` (each after its Q
    load), with or without stalls: every count follows a transfer or a token, tile or beat of
    the stream, never a cycle.  Per set of N tokens in ``ceil(N / T)`` tiles, B beats a row,
    L lanes:

    * Q load: B writes of the Q buffer;
    * score path, per K beat: L widening multiplies and the L - 1 adds of the lane tree; per
      token the B - 1 adds of the beat tree (a pairwise tree over the row's beats), the scale
      multiply and one write of the score buffer;
    * P path, per token: exp(s - m_t), an fp32 subtraction, the conversion to ``acc`` (fp16
      only) and the exponential;
    * V path, per V beat: one write into each of the V FIFO's slices (L - 1 of 16 bits, the
      last of 17 with the ``last`` flag), with an fp32 ``acc`` L conversions of the V lanes,
      L fmas and one O_t write; per token one add into l_t;
    * tile merge, per tile: one online-softmax merge (``merge_stats``: the subtraction, the
      conversion with fp16, the exponential and the fma; its compare is no float operator),
      then B beats of L fmas that rescale O, each beat written into O.

    Each tile's descriptor (row max, count, parity) is pushed into and popped from the tile
    FIFO once, each token's p_j (with m_t and its flags) into and from the P FIFO once.  The
    memories' reads, the V FIFO's among them, are combinational (not counted).
    """
    L, B, T, acc = cfg.lanes, cfg.beats, cfg.tile_tokens, cfg.acc
    tokens = sum(sets)
    tiles = sum(-(-n // T) for n in sets)
    vdepth = v_fifo_depth(cfg)
    c = Counter()
    c[mem_action("write", B, 16 * L)] += B * len(sets)
    c[op_action("mul_wide", SCORE)] += tokens * B * L
    c[op_action("add", SCORE)] += tokens * B * (L - 1) + tokens * (B - 1)
    c[op_action("mul", SCORE)] += tokens
    c[mem_action("write", 2 * T, SCORE.width)] += tokens
    for n in (tokens, tiles):               # the P path per token, the merge per tile
        c[op_action("sub", SCORE)] += n
        if acc.width != SCORE.width:
            c[op_action("convert", acc)] += n
        c[op_action("exp", acc)] += n
    c[mem_action("write", vdepth, 16)] += tokens * B * (L - 1)
    c[mem_action("write", vdepth, 17)] += tokens * B
    if acc.width != FP16.width:
        c[op_action("convert", acc)] += tokens * B * L
    c[op_action("fma", acc)] += tokens * B * L + tiles * (1 + B * L)
    c[op_action("add", acc)] += tokens
    c[mem_action("write", B, acc.width * L)] += (tokens + tiles) * B   # O_t and O, same shape
    tile_fifo = (2, SCORE.width + T.bit_length() + 1)        # row max, count, parity
    p_fifo = (2 * T, acc.width + SCORE.width + 2)            # p_j, m_t, first, last
    for access in ("write", "read"):
        c[mem_action(access, *tile_fifo, cls="fifo")] += tiles
        c[mem_action(access, *p_fifo, cls="fifo")] += tokens
    return dict(c)


def pu_activity_model(cfg: PamPuConfig, n_tokens: int) -> dict:
    """Registry activity model: the job of :func:`pu_cycles`, one Q load and one set of
    ``n_tokens`` tokens."""
    return pu_activity(cfg, [n_tokens])
