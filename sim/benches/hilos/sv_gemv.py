"""Bench of ``sv_gemv``: jobs of softmax outputs and V rows as beat streams, golden O as expected
output.

A job is one KV head's ``d_group`` rows of softmax outputs y (G, n) over n positions, the V rows
(n, head_dim), a padding mask (n,) and the segments the blocks stay inside.  The y values are
realistic (:func:`~pimforge.sim.golden.hilos.two_pass_softmax.two_pass_softmax` on random scores) with arbitrary
fp16 values mixed in; masked positions carry nonzero y and V rows of Inf and NaN, which must not
reach O.  The expected O is :func:`~pimforge.sim.golden.hilos.sv_gemv.sv_output` per query.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pimforge.base.formats import FP16, FP32
from pimforge.base.numerics import float_bits
from pimforge.sim.benches.hilos.beats import (
    o_beats, pack_rows, row_block_beats, unpack_rows, v_beats
)
from pimforge.sim.golden.hilos import sv_gemv as h_sv
from pimforge.sim.golden.hilos import two_pass_softmax as h_sm
from pimforge.sim.harness.job import Job, Phase, concat_fields
from pimforge.sim.harness.stall import StallPattern

__all__ = ["JobSpec", "JobData", "default_jobs", "make_job_data", "sv_expected", "sv_inputs",
           "sv_job"]

INF16, NINF16, NAN16 = 0x7C00, 0xFC00, 0x7E00


@dataclass(frozen=True)
class JobSpec:
    """One job of the bench: ``n`` positions, ``segments`` (None = one), ``mask`` (``none``,
    ``random``: random padding, ``all``: every position masked) and ``kind`` (``normal`` or
    ``extreme``: large V and y values, Inf and NaN in real rows, overflow of the fp16 output)."""

    n: int
    segments: tuple | None = None
    mask: str = "none"
    kind: str = "normal"

    @property
    def job(self):
        """The job as the cycle model takes it."""
        return self.n if self.segments is None else (self.n, self.segments)


@dataclass
class JobData:
    y: np.ndarray          # (G, n) fp16 bits
    v16: np.ndarray        # (n, d) fp16 bits
    mask: np.ndarray       # (n,) bool
    segments: list | None


def default_jobs(cfg) -> list:
    """Jobs of the default bench, sized by ``block``: one position, partial blocks, exact
    multiples, two segments (K scores then the host's precomputed ones), masks, extremes."""
    b = cfg.block
    return [JobSpec(1),
            JobSpec(b + b // 2 - 3, mask="random"),
            JobSpec(2 * b),
            JobSpec(5, mask="all"),
            JobSpec(b + 16, segments=(b, 16), mask="random"),
            JobSpec(3),
            JobSpec(b - 1, kind="extreme", mask="random"),
            JobSpec(2 * b + 16 + 7, segments=(2 * b + 7, 16)),
            JobSpec(b, mask="random")]


def _mask(rng, n: int, how: str) -> np.ndarray:
    if how == "none":
        return np.zeros(n, dtype=bool)
    if how == "all":
        return np.ones(n, dtype=bool)
    m = rng.random(n) < 0.25
    m[:max(1, n // 8)] = True        # a run of left padding, and the job's first row masked
    if n > 2:
        m[-1] = False
    return m


def make_job_data(cfg, rng, spec: JobSpec) -> JobData:
    G, d, n = cfg.d_group, cfg.head_dim, spec.n
    mask = _mask(rng, n, spec.mask)
    segments = None if spec.segments is None else list(spec.segments)
    scores = float_bits(FP32, rng.standard_normal((G, n)) * 3.0)
    y = np.stack([h_sm.two_pass_softmax(row, cfg.block, mask, FP32, segments=segments)["y"]
                  for row in scores])
    v = rng.standard_normal((n, d))
    if spec.kind == "extreme":
        with np.errstate(over="ignore"):             # some overflow to Inf: intended
            v16 = float_bits(FP16, v * 3e4)          # products near 2^30, O beyond fp16
        v16[rng.random((n, d)) < 0.02] = INF16
        v16[rng.random((n, d)) < 0.02] = NINF16
        v16[rng.random((n, d)) < 0.01] = NAN16
        # arbitrary y: zeros of both signs, subnormals, large and negative values
        pick = rng.random((G, n))
        y = np.where(pick < 0.1, 0, y)
        y = np.where((pick >= 0.1) & (pick < 0.2), 0x8000, y)
        y = np.where((pick >= 0.2) & (pick < 0.3), rng.integers(1, 0x400, (G, n)), y)
        with np.errstate(over="ignore"):
            big = float_bits(FP16, rng.standard_normal((G, n)) * 2e4)
        y = np.where((pick >= 0.3) & (pick < 0.4), big, y)
    else:
        v16 = float_bits(FP16, v)
        pick = rng.random((G, n))
        y = np.where(pick < 0.05, 0, y)              # some exact zeros, some arbitrary values
        y = np.where((pick >= 0.05) & (pick < 0.1), float_bits(FP16, rng.standard_normal((G, n))),
                     y)
    # masked positions: nonzero y (some Inf or NaN, so that neither operand's mask may be
    # dropped: Inf x +0 is NaN), and V rows of Inf / NaN (the golden model skips them)
    idx = np.nonzero(mask)[0]
    y[:, idx] = float_bits(FP16, 0.5 + rng.random((G, len(idx))))
    y[:, idx[2::5]] = INF16
    y[:, idx[4::5]] = NAN16
    for k, j in enumerate(idx):
        v16[j] = (INF16, NAN16, NINF16)[k % 3] if k % 4 != 3 else v16[j]
    return JobData(np.asarray(y, dtype=np.int64), np.asarray(v16, dtype=np.int64), mask,
                   segments)


def sv_expected(cfg, data: JobData) -> dict:
    """Golden ``o`` beats of one job."""
    o = np.stack([h_sv.sv_output(row, data.v16, data.mask) for row in data.y])
    return o_beats(cfg, o)


def sv_inputs(cfg, data: JobData) -> dict:
    """``i_p`` and ``i_v`` beats of one job; the padding lanes of ``i_p`` (keep = 0) carry NaN,
    which the unit never issues."""
    p = row_block_beats(cfg, data.y, data.mask, 16, data.segments)
    U = cfg.lanes
    y = unpack_rows(p["data"], 16, U)
    pad = ((np.asarray(p["keep"], dtype=np.int64)[:, None] >> np.arange(U)) & 1) == 0
    p["data"] = pack_rows(np.where(pad, NAN16, y), 16)
    return {"i_p": p, "i_v": v_beats(cfg, data.v16)}



def sv_job(cfg, rng, seed: int = 1, jobs=None, stall_p: float = 0.3, stalls: bool = True) -> Job:
    """``jobs`` (JobSpecs, default :func:`default_jobs`) back to back without stalls, then
    (``stalls``) again with random stalls on both sides of every stream."""
    jobs = default_jobs(cfg) if jobs is None else jobs
    ps, vs, outs = [], [], []
    for spec in jobs:
        data = make_job_data(cfg, rng, spec)
        ins = sv_inputs(cfg, data)
        ps.append(ins["i_p"])
        vs.append(ins["i_v"])
        outs.append(sv_expected(cfg, data))
    inputs = {"i_p": concat_fields(ps), "i_v": concat_fields(vs)}
    expected = {"o": concat_fields(outs)}
    phases = [Phase("no stalls", inputs, expected)]
    if stalls:
        phases.append(Phase(f"random stalls p={stall_p}", inputs, expected,
                            valid_stall={"i_p": StallPattern.random(stall_p, seed + 1),
                                         "i_v": StallPattern.random(stall_p, seed + 2)},
                            ready_stall={"o": StallPattern.random(stall_p, seed + 3)}))
    return Job(phases)


BENCHES = {"sv_gemv": sv_job}
