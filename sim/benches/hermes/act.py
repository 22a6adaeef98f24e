"""Bench of ``hermes_act``: vectors of fp16 values as ``i`` beats (ReLU or softmax), the golden
outputs as expected ``o`` beats.

A job is a list of :class:`ActVector` (op, kind of values, length) sent back to back: lengths
of one element, partial last beats, several beats and ``max_len``; normal values, signed zeros,
subnormals, large values whose exponentials underflow, -inf among normal values, and vectors
with a NaN, a +inf or only -inf (softmax gives NaN everywhere, as float64 does).  The padding
lanes of a last beat carry random bits, and the beats other than a vector's first (last) carry
the other op (a count of 0): the unit must ignore them.  :func:`act_job` runs the
vectors without stalls, with random stalls on ``i`` (valid) and ``o`` (ready), and with ``o``
ready one cycle in three.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pimforge.base.formats import FP16
from pimforge.base.numerics import float_bits
from pimforge.hw.hermes.streams import ACT_OPS
from pimforge.sim.benches.pam.beats import pack_rows
from pimforge.sim.golden.hermes.act import act_golden
from pimforge.sim.harness.job import Job, Phase, concat_fields
from pimforge.sim.harness.stall import StallPattern

__all__ = ["ActVector", "default_vectors", "random_values", "act_beats", "act_job", "KINDS"]

KINDS = ("normal", "zeros", "subnormal", "large", "neginf", "nan", "posinf", "allneginf",
         "special", "negative", "positive")
_SPECIAL = np.array([np.inf, -np.inf, np.nan, 65504.0, -65504.0, 6e-8, -6e-8, 0.0, -0.0, 11.0,
                     -1e4])


@dataclass(frozen=True)
class ActVector:
    """One vector of the bench: ``op`` (relu or softmax), ``kind`` (:func:`random_values`) and
    its length ``n``."""

    op: str
    kind: str
    n: int


def default_vectors(cfg) -> list:
    """Both ops over every kind and the lengths 1, partial beats, several beats and max_len;
    ReLU after ReLU, softmax after ReLU and ReLU after softmax.  The all-negative and all-large
    softmax vectors end in a partly filled beat, so that a padding value other than -inf in the
    max tree, or other than +0 in the sum, changes the result."""
    U, L = cfg.lanes, cfg.max_len
    return [ActVector("softmax", "normal", 1), ActVector("relu", "special", 3 * U + 1),
            ActVector("relu", "normal", 1), ActVector("softmax", "normal", U + 1),
            ActVector("softmax", "zeros", 2 * U - 1), ActVector("softmax", "subnormal", U),
            ActVector("relu", "zeros", U + 2), ActVector("softmax", "large", 3 * U + 3),
            ActVector("softmax", "neginf", 5 * U - 2), ActVector("softmax", "nan", U + 3),
            ActVector("softmax", "posinf", 2 * U), ActVector("softmax", "allneginf", 3),
            ActVector("relu", "subnormal", 2 * U - 1), ActVector("softmax", "normal", L),
            ActVector("softmax", "special", L // 2 + 1), ActVector("relu", "large", L + U // 2),
            ActVector("softmax", "negative", U + 1), ActVector("softmax", "positive", 2 * U + 1),
            ActVector("relu", "negative", U + 1)]


def random_values(rng, n: int, kind: str = "normal") -> np.ndarray:
    """fp16 bit patterns (n,).  ``normal``: N(0, 3); ``zeros``: +0 and -0; ``subnormal``:
    fp16 subnormals of both signs and zeros; ``large``: uniform in +-6e4 (exponentials
    underflow); ``neginf``: N(0, 3) with a quarter -inf; ``nan``, ``posinf``: N(0, 3) with one
    NaN or +inf; ``allneginf``: -inf only; ``special``: N(0, 3) with a quarter of the values
    drawn from +-inf, NaN, +-65504, +-6e-8, +-0, 11, -1e4; ``negative``: uniform in
    [-700, -500] (all below a padding lane of 0; exp(-x) overflows); ``positive``: uniform in
    [500, 700]."""
    if kind not in KINDS:
        raise ValueError(f"unknown value kind {kind!r}; allowed: {', '.join(KINDS)}")
    x = rng.standard_normal(n) * 3.0
    if kind == "zeros":
        x = np.where(rng.random(n) < 0.5, -0.0, 0.0)
    elif kind == "subnormal":
        x = rng.integers(-1023, 1024, n) * 2.0 ** -24
    elif kind == "large":
        x = rng.uniform(-6e4, 6e4, n)
    elif kind == "neginf":
        x = np.where(rng.random(n) < 0.25, -np.inf, x)
    elif kind in ("nan", "posinf"):
        x[rng.integers(n)] = np.nan if kind == "nan" else np.inf
    elif kind == "allneginf":
        x = np.full(n, -np.inf)
    elif kind == "special":
        x = np.where(rng.random(n) < 0.25, rng.choice(_SPECIAL, n), x)
    elif kind == "negative":
        x = rng.uniform(-700, -500, n)
    elif kind == "positive":
        x = rng.uniform(500, 700, n)
    return float_bits(FP16, x)


def _vector_beats(U: int, op: int, x16, pad) -> dict:
    """One vector's beats: ``pad`` (U,) fills the lanes past the last element."""
    n = len(x16)
    B = -(-n // U)
    rows = np.concatenate([np.asarray(x16, dtype=np.int64), pad[:B * U - n]]).reshape(B, U)
    count = [U] * B
    count[-1] = n - (B - 1) * U
    last = [0] * (B - 1) + [1]
    beats = {"data": pack_rows(rows, 16), "count": count, "last": last}
    if op is not None:
        beats["op"] = [op] * B
    return beats


def act_beats(cfg, rng, vec: ActVector, x16=None) -> tuple:
    """``(i, o)`` beats of one vector (its values drawn with ``rng`` unless given)."""
    x16 = random_values(rng, vec.n, vec.kind) if x16 is None else np.asarray(x16, np.int64)
    U = cfg.lanes
    garbage = rng.integers(0, 1 << 16, U, dtype=np.int64)
    i = _vector_beats(U, ACT_OPS.index(vec.op), x16, garbage)
    # the unit reads op on a vector's first beat and count on its last only: the other beats
    # carry the other op and a count of 0
    B = len(i["count"])
    i["op"] = i["op"][:1] + [1 - i["op"][0]] * (B - 1)
    i["count"] = [0] * (B - 1) + i["count"][-1:]
    o = _vector_beats(U, None, act_golden(cfg, vec.op, x16), np.zeros(U, dtype=np.int64))
    return i, o


def act_job(cfg, rng, seed: int = 1, vectors=None, stall_p: float = 0.3,
            stalls: bool = True) -> Job:
    """The vectors (default :func:`default_vectors`) back to back without stalls, then
    (``stalls``) with random stalls on ``i`` (valid) and ``o`` (ready), and with ``o`` ready one
    cycle in three (the output credits hold ReLU and pass 3 back)."""
    vectors = default_vectors(cfg) if vectors is None else vectors
    ins, outs = zip(*(act_beats(cfg, rng, v) for v in vectors))
    inputs, expected = {"i": concat_fields(ins)}, {"o": concat_fields(outs)}
    phases = [Phase("no stalls", inputs, expected)]
    if stalls:
        phases.append(Phase(f"random stalls p={stall_p}", inputs, expected,
                            valid_stall={"i": StallPattern.random(stall_p, seed + 1)},
                            ready_stall={"o": StallPattern.random(stall_p, seed + 2)}))
        phases.append(Phase("output 1 in 3", inputs, expected,
                            ready_stall={"o": StallPattern.cycle([1, 0, 0])}))
    return Job(phases)


BENCHES = {"hermes_act": act_job}
