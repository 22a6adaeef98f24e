"""Bench of ``two_pass_softmax``: jobs of score rows as row-block beats, the golden softmax
outputs as expected ``o`` beats.

A job is one query group's scores ``s`` (G, n) in ``score_fmt`` bits, a padding mask (n,) and its
segments (the K-derived scores, then the host-precomputed ones, HILOS §4.3).  ``i`` and ``i_s``
both carry :func:`~pimforge.sim.benches.hilos.beats.row_block_beats` of ``s`` (pass 2 reads the
same scores back from DRAM), with random bits in the padding lanes; ``o`` carries those of the
golden ``y`` of each query.  :func:`softmax_job` runs several jobs back to back, without and with
random stalls on both sides of every stream.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pimforge.base.numerics import float_bits
from pimforge.sim.benches.hilos.beats import pack_rows, row_block_beats, unpack_rows
from pimforge.sim.golden.hilos import two_pass_softmax as h_sm
from pimforge.sim.harness.job import Job, Phase, concat_fields
from pimforge.sim.harness.stall import StallPattern

__all__ = ["SoftmaxJob", "default_jobs", "random_scores", "softmax_beats", "softmax_job"]


_SPECIAL = np.array([np.inf, -np.inf, np.nan, 3e38, -3e38, 1e-45, -1e-45, 0.0, -0.0, 88.0, -1e4])


@dataclass(frozen=True)
class SoftmaxJob:
    """One job of the bench: segment lengths, the kind of scores (see :func:`random_scores`) and
    the mask (``none``, ``random``: 30% of the positions, ``all``)."""

    segments: tuple
    kind: str = "normal"
    mask: str = "none"

    @property
    def n(self) -> int:
        return sum(self.segments)


def default_jobs(cfg) -> list:
    """One position; K-derived then precomputed scores (100 + 16); exact blocks; a short last
    block; an all-masked job; equal scores; signed zeros; large scores whose exponentials
    underflow; infinities, NaN and subnormals; and partly filled last beats whose real scores
    are all large and negative, or all large and positive, so that a padding value other than
    -inf in the max tree (the padding lanes' data is 0) or other than +0 in the sum tree
    changes the result (a maximum of 0 over scores near -600 makes exp overflow: NaN); and
    scores near the mask value, so that masked positions weigh like real ones and a wrong mask
    value changes the result too."""
    b, U = cfg.block, cfg.lanes
    return [SoftmaxJob((1,)),
            SoftmaxJob((100, 16), "normal", "random"),
            SoftmaxJob((2 * b,), "large", "random"),
            SoftmaxJob((b + 13,), "normal", "random"),
            SoftmaxJob((20,), "normal", "all"),
            SoftmaxJob((b,), "equal"),
            SoftmaxJob((b // 2 + 3,), "zeros", "random"),
            SoftmaxJob((3 * b + 5,), "large"),
            SoftmaxJob((b - 1, 7), "large", "random"),
            SoftmaxJob((b + 8,), "special", "random"),
            SoftmaxJob((U + 1,), "negative"),
            SoftmaxJob((b + U + 1, b // 2 + 1), "negative", "random"),
            SoftmaxJob((U + 1,), "positive"),
            SoftmaxJob((b + U + 1,), "near_mask", "random")]


def random_scores(cfg, rng, n: int, kind: str = "normal") -> np.ndarray:
    """Scores (G, n) in ``cfg.score_fmt`` bits.  ``normal``: N(0, 3); ``large``: uniform in
    +-1e3 (most exponentials underflow to 0); ``equal``: one value per query; ``zeros``: +0 and
    -0 mixed (the maximum must take +0, as the golden order says); ``special``: N(0, 3) with a
    quarter of the scores drawn from +-inf, NaN, +-3e38, +-1e-45 (subnormal), +-0, 88, -1e4;
    ``negative``: uniform in [-700, -500] (all below a padding lane's 0, and exp(-x) overflows);
    ``positive``: uniform in [500, 700] (exp(0 - x) of a padding lane underflows);
    ``near_mask``: the mask value -3 .. +1 (a masked position is near the maximum)."""
    G = cfg.d_group
    if kind == "normal":
        x = rng.standard_normal((G, n)) * 3.0
    elif kind == "large":
        x = rng.uniform(-1e3, 1e3, (G, n))
    elif kind == "equal":
        x = np.repeat(rng.uniform(-5, 5, (G, 1)), n, axis=1)
    elif kind == "zeros":
        x = np.where(rng.random((G, n)) < 0.5, -0.0, 0.0)
    elif kind == "special":
        odd = rng.choice(_SPECIAL, (G, n))
        x = np.where(rng.random((G, n)) < 0.25, odd, rng.standard_normal((G, n)) * 3.0)
    elif kind == "negative":
        x = rng.uniform(-700, -500, (G, n))
    elif kind == "positive":
        x = rng.uniform(500, 700, (G, n))
    elif kind == "near_mask":
        x = cfg.mask_value + rng.uniform(-3, 1, (G, n))
    else:
        raise ValueError(f"unknown score kind {kind!r}; allowed: normal, large, equal, zeros, "
                         "special, negative, positive, near_mask")
    with np.errstate(over="ignore"):        # +-3e38 becomes +-inf in fp16 scores, on purpose
        return float_bits(cfg.score_fmt, x)


def _mask(rng, n: int, kind: str):
    if kind == "none":
        return None
    if kind == "all":
        return np.ones(n, dtype=bool)
    return rng.random(n) < 0.3


def _fill_padding(cfg, beats: dict, rng) -> dict:
    """The beats with random bits (NaN and Inf among them) in the padding lanes (keep = 0)."""
    U, w = cfg.lanes, cfg.score_fmt.width
    data = unpack_rows(beats["data"], w, U)
    pad = ((np.asarray(beats["keep"], dtype=np.int64)[:, None] >> np.arange(U)) & 1) == 0
    data = np.where(pad, rng.integers(0, 1 << w, data.shape, dtype=np.int64), data)
    return {**beats, "data": pack_rows(data, w)}


def softmax_beats(cfg, s, mask=None, segments=None, rng=None) -> tuple:
    """``(scores, y)``: the ``i`` (= ``i_s``) beats of one job and its golden ``o`` beats.  With
    ``rng``, the padding lanes of the scores carry random bits (the unit must ignore them)."""
    s = np.atleast_2d(np.asarray(s, dtype=np.int64))
    y = np.stack([h_sm.two_pass_softmax(row, cfg.block, mask, cfg.score_fmt, cfg.mask_value,
                                         segments)["y"] for row in s])
    scores = row_block_beats(cfg, s, mask, cfg.score_fmt.width, segments)
    if rng is not None:
        scores = _fill_padding(cfg, scores, rng)
    return scores, row_block_beats(cfg, y, mask, 16, segments)


def softmax_job(cfg, rng, seed: int = 1, jobs=None, stall_p: float = 0.3,
                stalls: bool = True) -> Job:
    """The jobs (default :func:`default_jobs`) back to back without stalls, then (``stalls``)
    again with random stalls on ``i``, ``i_s`` (valid) and ``o`` (ready), and once more with
    ``o`` ready one cycle in three (pass 2 falls behind: the output credits and the two-job
    stats FIFO hold pass 1 back)."""
    jobs = default_jobs(cfg) if jobs is None else jobs
    ins, outs = [], []
    for jb in jobs:
        s = random_scores(cfg, rng, jb.n, jb.kind)
        sb, yb = softmax_beats(cfg, s, _mask(rng, jb.n, jb.mask), list(jb.segments), rng)
        ins.append(sb)
        outs.append(yb)
    scores = concat_fields(ins)
    inputs = {"i": scores, "i_s": scores}
    expected = {"o": concat_fields(outs)}
    phases = [Phase("no stalls", inputs, expected)]
    if stalls:
        phases.append(Phase(f"random stalls p={stall_p}", inputs, expected,
                            valid_stall={"i": StallPattern.random(stall_p, seed + 1),
                                         "i_s": StallPattern.random(stall_p, seed + 2)},
                            ready_stall={"o": StallPattern.random(stall_p, seed + 3)}))
        phases.append(Phase("output 1 in 3", inputs, expected,
                            ready_stall={"o": StallPattern.cycle([1, 0, 0])}))
    return Job(phases)


BENCHES = {"two_pass_softmax": softmax_job}
