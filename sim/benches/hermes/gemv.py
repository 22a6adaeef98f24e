"""Bench of ``hermes_gemv``: GEMV jobs in all four modes, weights delivered by the DIMM model.

A job is one command of :mod:`pimforge.hw.hermes.gemv`: dense (row mode, every row active),
batched (up to ``max_batch`` vectors), row-sparse and column-sparse (an index list of active
neurons; empty and full lists included), with and without the GPU's partial merged in.  The
weights live neuron-major in the DIMM; :func:`pimforge.hw.hermes.dimm.beat_arrivals` turns the
active list into bursts, and each weight beat is offered no sooner than it arrives after the
command that asked for it.  The expected outputs come from
:mod:`pimforge.sim.golden.hermes.gemv`.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pimforge.base.formats import FP16
from pimforge.base.numerics import float_bits
from pimforge.hw.hermes.config import DDR4_3200
from pimforge.hw.hermes.dimm import beat_arrivals, neuron_addresses
from pimforge.hw.hermes.gemv_timing import GemvJob
from pimforge.sim.benches.pam.beats import pack_rows, unpack_rows
from pimforge.sim.golden.hermes.gemv import gemv_cols, gemv_rows
from pimforge.sim.harness.job import Job, Phase, concat_fields
from pimforge.sim.harness.stall import StallPattern

__all__ = ["GemvSpec", "GemvData", "make_data", "job_streams", "expected_y", "unpack_outputs",
           "timing_job", "default_specs", "gemv_job"]

INF16, NINF16, NAN16 = 0x7C00, 0xFC00, 0x7E00


@dataclass(frozen=True)
class GemvSpec:
    """One job: ``mode`` (rows or cols), ``batch``, ``length`` (elements per neuron: d_in in row
    mode, d_out in column mode), ``total`` neurons in the layer, ``active`` (None: all, an int:
    that many chosen at random, sorted), ``merge``, ``kind`` (``normal`` or ``extreme``: Inf,
    NaN, subnormals and zeros of both signs in W and x)."""

    mode: str
    batch: int
    length: int
    total: int
    active: int | None = None
    merge: bool = False
    kind: str = "normal"


@dataclass
class GemvData:
    mode: str
    neurons: np.ndarray     # (total, length) fp16 bits, neuron-major (rows of W, or columns)
    x: np.ndarray           # (b, d_in) fp16 bits
    active: np.ndarray      # indices of the active neurons, in issue order
    p: np.ndarray | None    # merge partial, (b, d_out) fp16 bits, or None

    @property
    def batch(self) -> int:
        return self.x.shape[0]

    @property
    def length(self) -> int:
        return self.neurons.shape[1]


def _extreme(rng, a16):
    pick = rng.random(a16.shape)
    a16 = np.where(pick < 0.01, INF16, a16)
    a16 = np.where((pick >= 0.01) & (pick < 0.02), NINF16, a16)
    a16 = np.where((pick >= 0.02) & (pick < 0.025), NAN16, a16)
    a16 = np.where((pick >= 0.03) & (pick < 0.06), rng.integers(1, 0x400, a16.shape), a16)
    a16 = np.where((pick >= 0.06) & (pick < 0.08), 0x8000, a16)
    return np.where((pick >= 0.08) & (pick < 0.1), 0, a16)


def make_data(rng, spec: GemvSpec) -> GemvData:
    b, length, total = spec.batch, spec.length, spec.total
    neurons = float_bits(FP16, rng.standard_normal((total, length)))
    d_in = length if spec.mode == "rows" else total
    d_out = total if spec.mode == "rows" else length
    x = float_bits(FP16, rng.standard_normal((b, d_in)))
    if spec.kind == "extreme":
        neurons, x = _extreme(rng, neurons), _extreme(rng, x)
    if spec.active is None:
        active = np.arange(total)
    else:
        active = np.sort(rng.choice(total, size=spec.active, replace=False))
    p = float_bits(FP16, rng.standard_normal((b, d_out)) * 4.0) if spec.merge else None
    return GemvData(spec.mode, np.asarray(neurons, np.int64), np.asarray(x, np.int64),
                    active, p)


def expected_y(cfg, data: GemvData) -> np.ndarray:
    """The golden result: row mode (n_active, b), column mode (b, d_out), fp16 bits."""
    w = data.neurons[data.active]
    if data.mode == "rows":
        p = None if data.p is None else data.p[:, data.active].T
        return gemv_rows(cfg, w, data.x, p)
    xc = data.x[:, data.active].T
    return gemv_cols(cfg, w, xc, data.length, data.p)


def _row_beats(cfg, per_row, pad: int = 0) -> list:
    """Row-mode beats: per row, G beats with vectors g V .. g V + V - 1 in lanes 0..V-1; the
    other lanes hold ``pad``."""
    n, b = per_row.shape
    V, E = cfg.vec_lanes, cfg.beat_elems
    G = cfg.groups(b)
    lanes = np.full((n, G, E), pad, dtype=np.int64)
    padded = np.full((n, G * V), pad, dtype=np.int64)
    padded[:, :b] = per_row
    lanes[:, :, :V] = padded.reshape(n, G, V)
    return pack_rows(lanes.reshape(n * G, E), 16)


def _col_beats(cfg, per_vec) -> list:
    """Column-mode beats of (b, d_out): for each beat k, vectors 0..b-1."""
    b, d = per_vec.shape
    E = cfg.beat_elems
    return pack_rows(per_vec.reshape(b, d // E, E).transpose(1, 0, 2).reshape(-1, E), 16)


def job_streams(cfg, data: GemvData) -> tuple:
    """``(inputs, outputs)`` beat lists of one job (``o`` from the golden model)."""
    E, b, length = cfg.beat_elems, data.batch, data.length
    beats = length // E
    n = len(data.active)
    cmd = {"mode": [int(data.mode == "cols")], "batch": [b], "n": [n], "beats": [beats],
           "merge": [int(data.p is not None)]}
    w = pack_rows(data.neurons[data.active].reshape(-1, E), 16) if n else []
    y = expected_y(cfg, data)
    if data.mode == "rows":
        x = pack_rows(data.x.reshape(-1, E), 16)
        p = [] if data.p is None else _row_beats(cfg, data.p[:, data.active].T, INF16)
        o = _row_beats(cfg, y) if n else []
    else:
        # lanes past the batch carry Inf and NaN: the unit must not read them
        xc = np.resize(np.array([INF16, NAN16, NINF16], dtype=np.int64), (n, E))
        xc[:, :b] = data.x[:, data.active].T
        x = pack_rows(xc, 16) if n else []
        p = [] if data.p is None else _col_beats(cfg, data.p)
        o = _col_beats(cfg, y)
    inputs = {"i_cmd": cmd, "i_x": {"data": x}, "i_w": {"data": w}, "i_p": {"data": p}}
    return inputs, {"o": {"data": o}}


def unpack_outputs(cfg, data: GemvData, words) -> np.ndarray:
    """``o`` words of one job back to the golden shape (row mode (n, b), column mode (b, d_out))."""
    E, b = cfg.beat_elems, data.batch
    lanes = unpack_rows(words, 16, E)
    if data.mode == "rows":
        V, G = cfg.vec_lanes, cfg.groups(b)
        return lanes[:, :V].reshape(-1, G * V)[:, :b]
    d = data.length
    return lanes.reshape(d // E, b, E).transpose(1, 0, 2).reshape(b, d)


def timing_job(cfg, data: GemvData, timing=DDR4_3200, clock_mhz: float = 1000.0) -> GemvJob:
    """The job as the cycle model takes it, with the DIMM's arrivals (cycles after the
    command's acceptance)."""
    n, beats = len(data.active), data.length // cfg.beat_elems
    arr = None
    if n:
        addrs = neuron_addresses(data.active, data.length * 2)
        arr = tuple(1 + a for a in beat_arrivals(timing, addrs, cfg.beat_elems * 2, clock_mhz))
    return GemvJob(data.mode, data.batch, n, beats, data.p is not None, arr)


def default_specs(cfg) -> list:
    """Small jobs covering the four modes, batching, merging, empty and full lists, extremes."""
    # neurons are whole 64-byte bursts (32 fp16) in the DIMM
    E, b = max(cfg.beat_elems, 32), cfg.max_batch
    L = min(cfg.max_len, 2 * E)
    return [GemvSpec("rows", 1, L, 12),                                   # dense, batch 1
            GemvSpec("rows", b, L, 8, merge=True),                        # batched + merge
            GemvSpec("rows", max(1, b - 1), E, 10, active=4),             # short rows, sparse
            GemvSpec("rows", 2, E, 16, active=0),                         # empty list
            GemvSpec("cols", 1, L, 24, active=6, merge=True),             # column-sparse
            GemvSpec("cols", b, E, 9),                                    # full list, batched
            GemvSpec("cols", 2, E, 7, active=0, merge=True),              # empty: y = p
            GemvSpec("rows", 3 if b >= 3 else b, L, 9, active=5, kind="extreme"),
            GemvSpec("cols", b, E, 12, active=5, kind="extreme"),
            GemvSpec("rows", max(1, b - 1), E, 6, active=3, merge=True)]    # merge, short group


def gemv_job(cfg, rng, seed: int = 1, specs=None, stall_p: float = 0.3,
             stalls: bool = True) -> Job:
    """``specs`` (default :func:`default_specs`) back to back with the DIMM's timing, then
    (``stalls``) again with random stalls on every stream on top of it."""
    specs = default_specs(cfg) if specs is None else specs
    ins, outs, refs, offs = [], [], [], []
    for idx, spec in enumerate(specs):
        data = make_data(rng, spec)
        i, o = job_streams(cfg, data)
        ins.append(i)
        outs.append(o)
        arr = timing_job(cfg, data).arrivals or ()
        refs.extend([idx] * len(arr))
        offs.extend(arr)
    inputs = {s: concat_fields([i[s] for i in ins]) for s in ins[0]}
    expected = {"o": concat_fields([o["o"] for o in outs])}
    arrivals = {"i_w": ("i_cmd", refs, offs)}
    phases = [Phase("no stalls", inputs, expected, arrivals=arrivals)]
    if stalls:
        phases.append(Phase(
            f"random stalls p={stall_p}", inputs, expected, arrivals=arrivals,
            valid_stall={s: StallPattern.random(stall_p, seed + k)
                         for k, s in enumerate(("i_cmd", "i_x", "i_w", "i_p"))},
            ready_stall={"o": StallPattern.random(stall_p, seed + 7)}))
    return Job(phases)


BENCHES = {"hermes_gemv": gemv_job}
