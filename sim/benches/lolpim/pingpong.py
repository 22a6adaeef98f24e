"""Bench of ``lolpim_pingpong``: PIM programs on one AiM channel, the banks played by the GDDR6
model.

A program (:class:`Program`) is WR-GB loads, MAC tiles and the bank columns each tile reads:
random programs (loads of any length, tiles of any number of steps, accumulations over several
tiles and GB sets, rows opened at random; :func:`random_program`) and GEMV kernels in AiM's
mapping (:func:`kernel_program`, :mod:`pimforge.hw.lolpim.aim`).  The bank is
:class:`BankModel`: the first column of a tile that opens a row is offered tRCD after its ACT,
the ACT no sooner than the MAC command and the previous row's PRE allow
(:func:`pimforge.hw.lolpim.pingpong_timing.act_time`).  The expected outputs come from
:mod:`pimforge.sim.golden.lolpim.pingpong`.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pimforge.base.formats import BF16, FP32
from pimforge.base.numerics import float_bits
from pimforge.hw.lolpim import aim, perf
from pimforge.hw.lolpim.pingpong_timing import Tile, act_time, next_act_ready
from pimforge.sim.benches.pam.beats import pack_rows
from pimforge.sim.golden.lolpim.pingpong import run_program
from pimforge.sim.golden.pam.common import convert
from pimforge.sim.harness.job import Job, Phase
from pimforge.sim.harness.stall import StallPattern

__all__ = ["Program", "bf16", "random_program", "kernel_program", "BankModel", "phase_streams",
           "kernel_y", "pingpong_job"]

INF, NINF, NAN = 0x7F80, 0xFF80, 0x7FC0


@dataclass
class Program:
    loads: list       # per WR-GB: (beats, lanes) bf16 bits
    tiles: list       # Tile per MAC command
    bank: list        # per tile: (steps, banks, lanes) bf16 bits


def bf16(values) -> np.ndarray:
    """bf16 bit patterns of float64 values (round to nearest even, through fp32)."""
    return convert(FP32, BF16, float_bits(FP32, values))


def _extreme(rng, a):
    pick = rng.random(a.shape)
    a = np.where(pick < 0.01, INF, a)
    a = np.where((pick >= 0.01) & (pick < 0.02), NINF, a)
    a = np.where((pick >= 0.02) & (pick < 0.025), NAN, a)
    a = np.where((pick >= 0.03) & (pick < 0.06), rng.integers(1, 0x80, a.shape), a)  # subnormal
    a = np.where((pick >= 0.06) & (pick < 0.08), 0x8000, a)
    return np.where((pick >= 0.08) & (pick < 0.1), 0, a)


def _values(rng, shape, kind):
    a = bf16(rng.standard_normal(shape))
    return _extreme(rng, a) if kind == "extreme" else a


def random_program(cfg, rng, chunks: int = 4, kind: str = "normal") -> Program:
    """``chunks`` GB loads of random length, each used by 1-3 tiles of random steps (the last
    releasing the set); accumulations end at random (the last tile always drains), so some span
    several tiles and GB sets; a random half of the tiles open a row."""
    loads, tiles, bank = [], [], []
    for c in range(chunks):
        n = int(rng.integers(1, cfg.gb_beats + 1)) if rng.random() < 0.7 else cfg.gb_beats
        loads.append(_values(rng, (n, cfg.lanes), kind))
        count = int(rng.integers(1, 4))
        for t in range(count):
            steps = int(rng.integers(1, n + 1))
            last = c == chunks - 1 and t == count - 1
            tiles.append(Tile(steps, release=t == count - 1,
                              drain=last or bool(rng.random() < 0.6),
                              act=not tiles or bool(rng.random() < 0.5)))
            bank.append(_values(rng, (steps, cfg.banks, cfg.lanes), kind))
    return Program(loads, tiles, bank)


def kernel_program(cfg, rng, rows: int, cols: int) -> tuple:
    """y = W x on the channel in AiM's mapping (:func:`pimforge.hw.lolpim.perf.kernel_program`):
    returns ``(program, w16, x16)``, W (rows, cols) and x (cols,) random bf16."""
    w16, x16 = bf16(rng.standard_normal((rows, cols))), bf16(rng.standard_normal(cols))
    steps, tiles = perf.kernel_program(rows, cols, cfg)
    L, B, chunk = cfg.lanes, cfg.banks, tiles.chunk
    G = tiles.G
    wp = np.zeros((G * B, tiles.cols_pad), np.int64)
    wp[:rows, :cols] = w16
    xp = np.zeros(tiles.cols_pad, np.int64)
    xp[:cols] = x16
    loads, tl, bank = [], [], []
    for c, n in enumerate(steps):
        seg = slice(c * chunk, c * chunk + n * L)
        loads.append(xp[seg].reshape(n, L))
        for g in range(G):
            tl.append(tiles[c * G + g])
            bank.append(wp[g * B:(g + 1) * B, seg].reshape(B, n, L).transpose(1, 0, 2))
    return Program(loads, tl, bank), w16, x16


def kernel_y(cfg, outs16, rows: int, cols: int) -> np.ndarray:
    """The host's float64 sum over chunks of the drained partials: y (rows,)."""
    steps, tiles = perf.kernel_program(rows, cols, cfg)
    vals = (np.asarray(outs16, np.int64).astype(np.uint32) << 16).view(np.float32)
    vals = vals.astype(np.float64).reshape(tiles.C, tiles.G * cfg.banks)
    return vals.sum(axis=0)[:rows]


class BankModel:
    """``Phase.offer_at`` of ``i_bank``: the GDDR6 bank timing (module docstring)."""

    def __init__(self, tiles, timing=aim.GDDR6):
        self.tiles, self.timing = list(tiles), timing
        self.first = np.cumsum([0] + [t.steps for t in self.tiles])
        self.tile_of = np.repeat(np.arange(len(self.tiles)), [t.steps for t in self.tiles])
        self.acts = {}          # tile index -> (ACT cycle, first column cycle)

    def _act(self, i, stamps):
        if i in self.acts:
            return self.acts[i]
        ready, j = None, i - 1
        while j >= 0 and not self.tiles[j].act:
            j -= 1
        if j >= 0:      # the row tile j opened, read last just before tile i
            row_act = self._act(j, stamps)[0]
            ready = next_act_ready(self.timing, row_act, stamps["i_bank"][self.first[i] - 1])
        self.acts[i] = act_time(self.timing, stamps["i_mac"][i], ready)
        return self.acts[i]

    def __call__(self, k, stamps):
        i = int(self.tile_of[k])
        if k != self.first[i] or not self.tiles[i].act:
            return 0
        if len(stamps["i_mac"]) <= i:
            return None
        return self._act(i, stamps)[1]


def phase_streams(cfg, prog: Program) -> tuple:
    """``(inputs, expected)`` field lists of one program."""
    B, L = cfg.banks, cfg.lanes
    inputs = {
        "i_ld": {"last_beat": [len(x) - 1 for x in prog.loads]},
        "i_gb": {"data": pack_rows(np.concatenate(prog.loads), 16)},
        "i_mac": {"last_step": [t.steps - 1 for t in prog.tiles],
                  "release": [int(t.release) for t in prog.tiles],
                  "drain": [int(t.drain) for t in prog.tiles]},
        "i_bank": {"data": pack_rows(np.concatenate(prog.bank).reshape(-1, B * L), 16)},
    }
    y = run_program(cfg, prog.loads, prog.tiles, prog.bank)
    return inputs, {"o": {"data": pack_rows(y, 16)}}


def pingpong_job(cfg, rng, seed: int = 1, program=None, stall_p: float = 0.3,
                 stalls: bool = True) -> Job:
    """A random program with extremes (default) or ``program``; the GDDR6 bank model, then
    (``stalls``) the same with random stalls on every input and on ``o``."""
    if program is None:
        program = random_program(cfg, rng, chunks=5)
        extra = random_program(cfg, rng, chunks=3, kind="extreme")
        program = Program(program.loads + extra.loads, program.tiles + extra.tiles,
                          program.bank + extra.bank)
    inputs, expected = phase_streams(cfg, program)
    bank = {"i_bank": BankModel(program.tiles)}
    phases = [Phase("no stalls", inputs, expected, offer_at=bank)]
    if stalls:
        phases.append(Phase(
            f"random stalls p={stall_p}", inputs, expected,
            offer_at={"i_bank": BankModel(program.tiles)},
            valid_stall={s: StallPattern.random(stall_p, seed + k)
                         for k, s in enumerate(("i_ld", "i_gb", "i_mac", "i_bank"))},
            ready_stall={"o": StallPattern.random(stall_p, seed + 7)}))
    return Job(phases)


BENCHES = {"lolpim_pingpong": pingpong_job}
