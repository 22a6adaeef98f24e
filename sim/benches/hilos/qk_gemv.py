"""Bench of ``qk_gemv``: jobs (a query group against K rows) as beat streams, golden scores in
row-block order as the expected output.

A job is ``G`` queries (``i_q``) and n K rows with a padding mask (``i_k``); its expected ``o``
beats are :func:`pimforge.sim.golden.hilos.qk_gemv.group_scores` laid out by
:func:`~pimforge.sim.benches.hilos.beats.row_block_beats`.  :func:`qk_job` runs several jobs
back to back in one phase, without and with random stalls on every stream.
"""
from __future__ import annotations

import numpy as np

from pimforge.base.formats import FP16
from pimforge.base.numerics import float_bits
from pimforge.sim.benches.hilos.beats import k_beats, q_beats, row_block_beats
from pimforge.sim.golden.hilos import qk_gemv as h_qk
from pimforge.sim.harness.job import Job, Phase, concat_fields
from pimforge.sim.harness.stall import StallPattern

__all__ = ["JobSpec", "default_jobs", "qk_expected", "qk_inputs", "qk_job", "random_job"]

# fp16 values at the edges: signed zeros, the smallest subnormals, the largest finite, infinities
# and a NaN
_SPECIAL16 = np.array([0x0000, 0x8000, 0x0001, 0x8001, 0x03FF, 0x0400, 0x7BFF, 0xFBFF, 0x7C00,
                       0xFC00, 0x7E00, 0x3C00, 0xBC00], dtype=np.int64)


class JobSpec(tuple):
    """``(n, mask, kind)``: n tokens; mask ``none``, ``random`` (each token padding with
    probability 1/4) or ``tail`` (the last quarter padding); input kind ``normal``, ``large``
    (scores near the fp16 limit and beyond it) or ``special`` (edge values sprinkled in)."""

    def __new__(cls, n: int, mask: str = "none", kind: str = "normal"):
        return super().__new__(cls, (n, mask, kind))


def default_jobs(cfg) -> list:
    """One token, partial tiles, exact multiples of the block, masks and extreme inputs."""
    B = cfg.block
    return [JobSpec(1), JobSpec(B + 13, "random"), JobSpec(2 * B, "none", "large"),
            JobSpec(B, "tail"), JobSpec(7, "random", "special"), JobSpec(3 * B + 5, "random"),
            JobSpec(B - 1, "none", "special")]


def random_job(cfg, rng, n: int, mask: str = "none", kind: str = "normal") -> tuple:
    """fp16 bits ``q`` (G, d) and ``k`` (n, d), and the padding mask (n,) bool or None."""
    G, d = cfg.d_group, cfg.head_dim
    q = rng.standard_normal((G, d))
    k = rng.standard_normal((n, d))
    if kind == "large":
        # entries about 1e2; half the rows are +-q_0, whose scores (about 1e4 d / sqrt(d))
        # overflow fp16 to +-infinity (fp32 keeps them)
        q = q * 100.0
        k = k * 100.0
        aligned = rng.random(n) < 0.5
        k[aligned] = q[0] * rng.choice([-1.0, 1.0], size=(int(aligned.sum()), 1))
    q16, k16 = float_bits(FP16, q), float_bits(FP16, k)
    if kind == "special":
        for x in (q16, k16):
            hit = rng.random(x.shape) < 0.05
            x[hit] = rng.choice(_SPECIAL16, size=int(hit.sum()))
    if mask == "none":
        pad = None
    elif mask == "random":
        pad = rng.random(n) < 0.25
    elif mask == "tail":
        pad = np.arange(n) >= n - max(1, n // 4)
    else:
        raise ValueError(f"mask kind {mask!r}: none, random or tail")
    return q16, k16, pad


def qk_expected(cfg, q16, k16, pad) -> dict:
    """Golden ``o`` beats of one job."""
    s = h_qk.group_scores(q16, k16, cfg.scale, cfg.score_fmt, partials=cfg.partials)
    return row_block_beats(cfg, s, pad, cfg.score_fmt.width)



def qk_inputs(cfg, rng, jobs) -> tuple:
    """``(inputs, expected)`` of ``jobs`` (:class:`JobSpec`) run back to back."""
    qs, ks, outs = [], [], []
    for spec in jobs:
        spec = JobSpec(*spec) if not isinstance(spec, JobSpec) else spec
        q16, k16, pad = random_job(cfg, rng, *spec)
        qs.append(q_beats(cfg, q16))
        ks.append(k_beats(cfg, k16, pad))
        outs.append(qk_expected(cfg, q16, k16, pad))
    return {"i_q": concat_fields(qs), "i_k": concat_fields(ks)}, {"o": concat_fields(outs)}


def qk_job(cfg, rng, seed: int = 1, jobs=None, stall_p: float = 0.3, stalls: bool = True,
           slow_sink: int = 0) -> Job:
    """``jobs`` (default :func:`default_jobs`) back to back without stalls, then (``stalls``)
    again with random stalls on both sides of every stream, then (``slow_sink`` > 0) with ``o``
    ready one cycle in ``slow_sink``: the drain, then the MAC array, then K wait for the output."""
    jobs = default_jobs(cfg) if jobs is None else jobs
    inputs, expected = qk_inputs(cfg, rng, jobs)
    phases = [Phase("no stalls", inputs, expected)]
    if stalls:
        phases.append(Phase(f"random stalls p={stall_p}", inputs, expected,
                            valid_stall={"i_q": StallPattern.random(stall_p, seed + 1),
                                         "i_k": StallPattern.random(stall_p, seed + 2)},
                            ready_stall={"*": StallPattern.random(stall_p, seed)}))
    if slow_sink:
        phases.append(Phase(f"o ready 1 in {slow_sink}", inputs, expected,
                            ready_stall={"o": StallPattern.cycle([1] + [0] * (slow_sink - 1))}))
    return Job(phases)


BENCHES = {"qk_gemv": qk_job}
