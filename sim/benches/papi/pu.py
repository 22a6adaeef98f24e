"""Bench of ``papi_pu``: GEMV jobs with the weights delivered by the HBM3 bank model.

One job per phase: the command, the ``reuse`` input vectors, then the banks' column reads on
``i_w`` (beat j = column j of every bank, row ``q B + b`` of W in bank b).  The banks are
:class:`pimforge.hw.papi.hbm.BankModel` (§7.1: 5.2 Gb/s per pin, JEDEC-typical tRCD / tRP /
tRAS / tRTP), activating page 0 the cycle after the last ``i_x`` transfer (the unit's first
weight-phase cycle); a column is offered when due and after the previous beat entered the PU.
Phases: without stalls (the cycle model's conditions), then with random stalls on every input
and on ``o``.  Data include Inf, NaN, subnormals and signed zeros.  The expected outputs come
from :mod:`pimforge.sim.golden.papi.pu`.
"""
from __future__ import annotations

import numpy as np

from pimforge.base.formats import FP16
from pimforge.base.numerics import float_bits
from pimforge.hw.papi.hbm import BankModel
from pimforge.sim.benches.pam.beats import pack_rows
from pimforge.sim.golden.papi.pu import pu_gemv
from pimforge.sim.harness.job import Job, Phase
from pimforge.sim.harness.stall import StallPattern

__all__ = ["make_data", "job_streams", "BankOffer", "pu_job", "pu_jobs_back_to_back"]

SPECIALS = np.array([0x7C00, 0xFC00, 0x7E00, 0x0001, 0x03FF, 0x8000, 0x0000, 0x7BFF])


def make_data(rng, cfg, rows: int, reuse: int, beats: int, extreme: bool = False) -> tuple:
    """``(w16, x16)``: W (rows x banks, beats x lanes) and X (reuse, cols) as fp16 bits."""
    cols = beats * cfg.lanes
    w = float_bits(FP16, rng.standard_normal((rows * cfg.banks, cols)))
    x = float_bits(FP16, rng.standard_normal((reuse, cols)))
    w, x = np.asarray(w, np.int64), np.asarray(x, np.int64)
    if extreme:
        for a in (w, x):
            pick = rng.random(a.shape) < 0.05
            a[pick] = rng.choice(SPECIALS, size=int(pick.sum()))
    return w, x


def job_streams(cfg, w16, x16) -> tuple:
    """``(inputs, expected)`` of one job; ``o`` from the golden model."""
    B, L, P = cfg.banks, cfg.lanes, cfg.fpus
    n, cols = w16.shape
    reuse, beats, rows = x16.shape[0], cols // L, n // B
    # i_w beat (q, k): column k of row q of every bank, bank b in lanes b L .. b L + L - 1
    wq = w16.reshape(rows, B, beats, L).transpose(0, 2, 1, 3).reshape(rows * beats, B * L)
    y = pu_gemv(cfg, w16, x16)                            # (rows B, reuse)
    G = cfg.groups(reuse)
    pad = np.zeros((n, G * P), dtype=np.int64)
    pad[:, :reuse] = y
    inputs = {"i_cmd": {"reuse": [reuse], "beats": [beats], "rows": [rows]},
              "i_x": {"data": pack_rows(x16.reshape(-1, L), 16)},
              "i_w": {"data": pack_rows(wq, 16)}}
    return inputs, {"o": {"data": pack_rows(pad.reshape(n * G, P), 16)}}


class BankOffer:
    """``Phase.offer_at`` of ``i_w``: the banks (module docstring).  Replays the bank model
    over the transfers seen so far; ``n_x`` is the job's ``i_x`` beat count."""

    def __init__(self, cfg, n_x: int):
        self.banks, self.n_x = cfg.banks, n_x

    def __call__(self, k, stamps):
        if len(stamps["i_x"]) < self.n_x or len(stamps["i_w"]) < k:
            return None
        start = stamps["i_x"][self.n_x - 1] + 1
        banks = [BankModel(start) for _ in range(self.banks)]
        v = None
        for j in range(k + 1):
            v = max(b.due() for b in banks)
            if j:
                v = max(v, stamps["i_w"][j - 1] + 1)
            for b in banks:
                b.read(v)
        return v


def _random_stalls(stall_p: float, seed: int) -> dict:
    """``Phase`` keywords: random stalls on every input's valid and on ``o``'s ready."""
    return {"valid_stall": {s: StallPattern.random(stall_p, seed + k)
                            for k, s in enumerate(("i_cmd", "i_x", "i_w"))},
            "ready_stall": {"o": StallPattern.random(stall_p, seed + 7)}}


def pu_job(cfg, rng, seed: int = 1, rows: int = 3, reuse: int | None = None,
           beats: int | None = None, stall_p: float = 0.3, stalls: bool = True,
           extreme: bool = True) -> Job:
    """One job (default: ``max_reuse`` vectors, ``max_beats`` beats, 3 rows per bank, with
    special values) under the bank model, then (``stalls``) again with random stalls."""
    reuse = cfg.max_reuse if reuse is None else reuse
    beats = cfg.max_beats if beats is None else beats
    w, x = make_data(rng, cfg, rows, reuse, beats, extreme)
    inputs, expected = job_streams(cfg, w, x)
    n_x = reuse * beats
    phases = [Phase("no stalls", inputs, expected, offer_at={"i_w": BankOffer(cfg, n_x)})]
    if stalls:
        phases.append(Phase(
            f"random stalls p={stall_p}", inputs, expected,
            offer_at={"i_w": BankOffer(cfg, n_x)},
            **_random_stalls(stall_p, seed)))
    return Job(phases)


def pu_jobs_back_to_back(cfg, rng, shapes, seed: int = 1, stall_p: float = 0.3) -> Job:
    """Several jobs in one phase, with no reset between them: the command of job k + 1 waits
    while job k drains, so the unit's end-of-job logic (its output counters and the return to
    idle) is what starts the next one.  ``shapes`` lists ``(rows, reuse, beats)`` per job;
    weights are offered as soon as the unit takes them (no bank model), first without stalls,
    then with random stalls on every input and on ``o``."""
    inputs = {"i_cmd": {"reuse": [], "beats": [], "rows": []}, "i_x": {"data": []},
              "i_w": {"data": []}}
    expected = {"o": {"data": []}}
    for rows, reuse, beats in shapes:
        w, x = make_data(rng, cfg, rows, reuse, beats, extreme=True)
        ins, exp = job_streams(cfg, w, x)
        for stream, fields in ins.items():
            for field, values in fields.items():
                inputs[stream][field] += values
        expected["o"]["data"] += exp["o"]["data"]
    return Job([Phase("back to back, no stalls", inputs, expected),
                Phase(f"back to back, random stalls p={stall_p}", inputs, expected,
                      **_random_stalls(stall_p, seed))])


BENCHES = {"papi_pu": pu_job}
