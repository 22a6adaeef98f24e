"""``pimforge run hermes-gemv``: y = W x on the Hermes NDP-DIMM GEMV engine (Hermes §IV-A).

Shapes: W ``(d_out, d_in)``; x ``(d_in,)`` or ``(b, d_in)`` with b <= 16; the GPU's partial
``(d_out,)`` or ``(b, d_out)``.  Modes:

* ``dense``: every row of W (the engine's row mode with the full list);
* ``rows``: only the rows in ``active`` (output neurons, the up-projection's predicted-active
  rows); the other outputs are the GPU's partial (its hot neurons), or 0 without one;
* ``cols``: only the columns in ``active`` (input neurons, the down-projection's active
  columns); ``y = sum_c x_c W[:, c]`` (+ the GPU's partial).

Neurons are padded with zeros to whole 64-byte DRAM bursts (32 fp16).  Two backends give the
same bits: ``golden`` (:mod:`pimforge.sim.golden.hermes.gemv`, one pass) and ``rtl`` (the
generated Verilog of a small engine, :data:`RTL_ENGINE`, in one cocotb simulation with the DIMM
model; the harness checks every output beat against the golden model).  Every result reports
``||y - y_ref||_inf / ||y_ref||_inf`` against float64 and the cycles of the exact cycle model
(the rtl backend: the simulation's own count).
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from pimforge.base.errors import ToolError, UserError
from pimforge.base.formats import FP16
from pimforge.base.numerics import bits_float
from pimforge.hw.catalog import HW_UNITS
from pimforge.hw.hermes.config import NDP_CLOCK_MHZ, PAPER_GEMV, HermesGemvConfig
from pimforge.hw.hermes.gemv_timing import gemv_schedule
from pimforge.sim.benches.hermes.gemv import GemvData, job_streams, timing_job, unpack_outputs
from pimforge.sim.benches.hermes.gemv import expected_y
from pimforge.sim.harness.job import Job, Phase, unpack_payloads
from pimforge.sim.harness.runner import run_unit
from pimforge.software.flow_io import (
    check_choice, check_out_path, json_float, load_npy, to_fp16, write_flow_outputs
)

__all__ = ["MODES", "BACKENDS", "RTL_ENGINE", "HermesGemvResult", "hermes_gemv", "run_cli"]

MODES = ("dense", "rows", "cols")
BACKENDS = ("golden", "rtl")
BURST_ELEMS = 32
RTL_ENGINE = HermesGemvConfig()
"""The engine the rtl backend simulates, the unit's default: 2 word products a cycle, batch up
to 4, neurons up to 1024 elements (a quick Verilator build; the tests run the same one)."""


@dataclass
class HermesGemvResult:
    """``o`` = y, (b, d_out) or (d_out,) float16; ``rel_err`` against float64; ``cycles``."""

    o: np.ndarray
    rel_err: float
    mode: str
    backend: str
    batch: int
    d_in: int
    d_out: int
    active: int
    merge: bool
    cycles: int
    engine: dict
    wall_s: float = 0.0

    def report(self) -> dict:
        return {"flow": "hermes-gemv", "backend": self.backend, "mode": self.mode,
                "batch": self.batch, "d_in": self.d_in, "d_out": self.d_out,
                "active": self.active, "merge": self.merge, "rel_err": json_float(self.rel_err),
                "cycles": self.cycles, "clock_mhz": NDP_CLOCK_MHZ, "engine": self.engine,
                "wall_s": round(self.wall_s, 3)}

    def summary(self) -> str:
        return (f"hermes-gemv ({self.backend}, {self.mode}): {self.active} active neuron(s), "
                f"batch {self.batch}, {self.d_out} x {self.d_in}; rel. error vs float64 "
                f"{self.rel_err:.2e}; {self.cycles} cycles")


def _check_inputs(w, x, active, partial, mode):
    if w.ndim != 2 or 0 in w.shape:
        raise UserError(f"W must be a non-empty 2-D array (d_out, d_in), got shape {w.shape}")
    d_out, d_in = w.shape
    if x.ndim not in (1, 2) or x.shape[-1] != d_in:
        raise UserError(f"x must have shape ({d_in},) or (b, {d_in}) to match W {w.shape}, "
                        f"got {x.shape}")
    xb = np.atleast_2d(x)
    if not 1 <= len(xb) <= 16:
        raise UserError(f"x holds {len(xb)} vectors; the engine takes a batch of 1..16")
    total = d_in if mode == "cols" else d_out
    if active is None:
        idx = np.arange(total)
    else:
        if active.ndim != 1:
            raise UserError(f"active must be a 1-D index list, got shape {active.shape}")
        idx = active.astype(np.int64)
        if len(idx) and (idx.min() < 0 or idx.max() >= total):
            raise UserError(f"active holds an index out of range: allowed 0..{total - 1} "
                            f"({'columns of W' if mode == 'cols' else 'rows of W'})")
        if len(np.unique(idx)) != len(idx):
            raise UserError("active holds duplicated indices; each neuron may appear once")
    if partial is not None:
        want = (d_out,) if x.ndim == 1 else (len(xb), d_out)
        if partial.shape != want:
            raise UserError(f"gpu partial must have shape {want}, got {partial.shape}")
    return xb, idx


def _pad(a, axis_len, unit):
    pad = (-axis_len) % unit
    return np.pad(a, [(0, 0)] * (a.ndim - 1) + [(0, pad)]) if pad else a


def hermes_gemv(w, x, active=None, mode: str = "dense", gpu_partial=None,
                backend: str = "golden", sim: str = "verilator") -> HermesGemvResult:
    """y = W x on the engine (see the module docstring)."""
    check_choice(mode, MODES, "mode")
    check_choice(backend, BACKENDS, "backend")
    w, x = np.asarray(w), np.asarray(x)
    act = None if active is None else np.asarray(active)
    if mode == "dense" and act is not None:
        raise UserError("mode dense takes no active list; use --mode rows or cols")
    part = None if gpu_partial is None else np.asarray(gpu_partial)
    xb, idx = _check_inputs(w, x, act, part, mode)
    d_out, d_in = w.shape
    w16, x16 = to_fp16("W", w), to_fp16("x", xb)
    p16 = None if part is None else np.atleast_2d(to_fp16("gpu partial", part))
    eng_mode = "cols" if mode == "cols" else "rows"
    length = d_out if eng_mode == "cols" else d_in
    if backend == "rtl":
        cfg = RTL_ENGINE
    else:   # the paper's engine with the buffer one pass needs (Table II: 256 KB)
        cfg = HermesGemvConfig(**dict(PAPER_GEMV, buffer_bytes=max(262144, 4096 * -(-length // 64))))
    unit = max(BURST_ELEMS, cfg.beat_elems)   # whole DRAM bursts and whole beats
    neurons = _pad(w16.T.copy() if eng_mode == "cols" else w16, length, unit)
    xin = x16 if eng_mode == "cols" else _pad(x16, d_in, unit)
    ppad = None if p16 is None else (_pad(p16, d_out, unit) if eng_mode == "cols" else p16)
    data = GemvData(eng_mode, neurons, xin, idx, ppad)
    if neurons.shape[1] > cfg.max_len or len(xb) > cfg.max_batch:
        raise UserError(f"the rtl backend's engine takes neurons of up to {cfg.max_len} "
                        f"elements and {cfg.max_batch} vectors; use --backend golden")
    t0 = time.perf_counter()
    if backend == "rtl":
        y16, cycles = _rtl(cfg, data, sim)
    else:
        y16 = expected_y(cfg, data)
        sched = gemv_schedule(cfg, [timing_job(cfg, data)])[0]
        cycles = (sched["outputs"][-1] + 1) if sched["outputs"] else sched["end"]
    wall = time.perf_counter() - t0
    y = _assemble(eng_mode, y16, idx, p16, len(xb), d_out)
    yf = bits_float(FP16, y).astype(np.float16)
    ref = _reference(w, xb, idx, part, eng_mode)
    top = np.abs(ref).max()
    err = float(np.abs(yf.astype(np.float64) - ref).max() / top) if top > 0 else \
        float(np.abs(yf.astype(np.float64) - ref).max())
    out = yf if x.ndim == 2 else yf[0]
    return HermesGemvResult(out, err, mode, backend, len(xb), d_in, d_out, len(idx),
                            part is not None, int(cycles),
                            {"multipliers": cfg.multipliers, "serial_cycles": cfg.serial_cycles,
                             "beat_words": cfg.beat_words, "acc": cfg.acc.name}, wall)


def _assemble(mode, y16, idx, p16, b, d_out) -> np.ndarray:
    """The engine's output as y (b, d_out) fp16 bits."""
    if mode == "cols":
        return y16[:, :d_out]
    y = np.zeros((b, d_out), dtype=np.int64) if p16 is None else p16.copy()
    y[:, idx] = y16.T
    return y


def _reference(w, xb, idx, part, mode) -> np.ndarray:
    w64 = w.astype(np.float16).astype(np.float64)
    x64 = xb.astype(np.float16).astype(np.float64)
    p64 = 0.0 if part is None else np.atleast_2d(part.astype(np.float16).astype(np.float64))
    if mode == "cols":
        return x64[:, idx] @ w64[:, idx].T + p64
    y = np.zeros((len(x64), w.shape[0])) + p64
    y[:, idx] = y[:, idx] + x64 @ w64[idx].T
    return y


def _rtl(cfg, data, sim) -> np.ndarray:
    ins, outs = job_streams(cfg, data)
    job = timing_job(cfg, data)
    arr = job.arrivals or ()
    phase = Phase("run", ins, outs, arrivals={"i_w": ("i_cmd", [0] * len(arr), list(arr))})
    res = run_unit(HW_UNITS["hermes_gemv"], cfg, Job([phase]), sim=sim)
    if not res.passed:
        raise ToolError(f"hermes_gemv RTL does not match the golden model:\n{res.summary()}"
                        f"\nlog: {res.log}")
    words = list(unpack_payloads(res.manifest, "o", res.phases[0].received["o"])["data"])
    return unpack_outputs(cfg, data, words), res.phases[0].cycles


def run_cli(args) -> int:
    """``pimforge run hermes-gemv``: check everything, compute, then write y (and report)."""
    mode = check_choice(args.mode, MODES, "mode")
    backend = check_choice(args.backend, BACKENDS, "backend")
    check_out_path(args.out, "--out")
    if args.report is not None:
        check_out_path(args.report, "--report")
    w, x = load_npy(args.w, "W"), load_npy(args.x, "x")
    act = None if args.active is None else load_npy(
        args.active, "active", dtypes=("int8", "int16", "int32", "int64", "uint8", "uint16",
                                       "uint32"))
    part = None if args.gpu_partial is None else load_npy(args.gpu_partial, "gpu partial")
    res = hermes_gemv(w, x, act, mode, part, backend)
    return write_flow_outputs(res, args.out, args.report)
