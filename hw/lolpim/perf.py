"""The GEMV performance model of one AiM channel (LoL-PIM §6), for the system model: the unit's
exact cycle model run over AiM's GEMV mapping.  The channel itself is :mod:`pimforge.hw.lolpim.aim`.

**The GEMV mapping** (AiM's usual one): W (rows x cols, bf16) has matrix row r in bank
``r mod 16``; each bank's rows lie one after another in its pages, a row never straddling a page
(``page_elems // cols`` rows per page when cols fit a page, else ``ceil(cols / page)`` pages per
row).  x enters through the GB in chunks of ``min(GB, page)`` elements; chunk-outer order: for
each chunk, one WR-GB load, then for each group of 16 rows one all-bank MAC tile over the chunk
with a RD-MAC drain of the 16 results (the host adds the partial sums of different chunks).
A tile whose page differs from the previous tile's opens a row (PRE + ACT).

:func:`kernel_cycles` runs the unit's exact cycle model (:mod:`~.pingpong_timing`) on that
program and skips steady-state periods exactly, so it takes well under a millisecond.
"""
from __future__ import annotations

import dataclasses
import math

from pimforge.hw.lolpim.aim import GDDR6, Gddr6Timing
from pimforge.hw.lolpim.config import PingpongConfig, pingpong_preset
from pimforge.hw.lolpim.pingpong_timing import Engine, Tile, pingpong_activity

__all__ = ["kernel_program", "kernel_cycles", "kernel_activity", "CONTEXT", "CHANNELS", "QWEN_7B", "KERNELS",
           "PAPER_SAVINGS", "kernel_savings"]


class _Tiles:
    """The tiles of a chunk-outer GEMV program, computed on demand (see the module docstring)."""

    def __init__(self, cfg, rows, cols, timing):
        L = cfg.lanes
        self.cols_pad = -(-cols // L) * L
        self.chunk = min(cfg.gb_elems, timing.page_elems)
        self.C = -(-self.cols_pad // self.chunk)
        self.G = -(-rows // cfg.banks)
        page = timing.page_elems
        self.per_page = page // self.cols_pad if self.cols_pad <= page else 0
        self.pages_per_row = -(-self.cols_pad // page)
        self.steps = [min(self.chunk, self.cols_pad - c * self.chunk) // L for c in range(self.C)]
        self.page = page

    def __len__(self):
        return self.C * self.G

    def page_of(self, i: int) -> int:
        c, g = divmod(i, self.G)
        if self.per_page:
            return g // self.per_page
        return g * self.pages_per_row + (c * self.chunk) // self.page

    def __getitem__(self, i: int) -> Tile:
        c, g = divmod(i, self.G)
        act = i == 0 or self.page_of(i) != self.page_of(i - 1)
        return Tile(self.steps[c], release=g == self.G - 1, drain=True, act=act)


def kernel_program(rows: int, cols: int, cfg=None, timing: Gddr6Timing = GDDR6) -> tuple:
    """``(loads, tiles)`` of y = W x on one channel (beats per WR-GB load, lazy tile list)."""
    cfg = cfg or pingpong_preset("aim")
    tiles = _Tiles(cfg, rows, cols, timing)
    return tiles.steps, tiles


def _config(pingpong: bool, cfg) -> PingpongConfig:
    cfg = cfg or pingpong_preset("aim")
    if cfg.pingpong != pingpong:
        cfg = dataclasses.replace(cfg, pingpong=pingpong)
    return cfg


def _run_chunk(eng, tiles, c: int, skip: bool):
    """Simulate chunk ``c``; inside it, skip whole periods once the state repeats."""
    G = tiles.G
    period = tiles.per_page or 1
    seen = {}
    end = (c + 1) * G
    while eng.ti < end:
        before = eng.ti
        if not eng.step():
            return
        g = before - c * G
        if not skip or eng.ti == before or not 1 <= g < G - 2:
            continue
        key, floor = eng.key()
        key = (g % period, eng.ld - c, key)
        if key in seen:
            g0, f0, d0 = seen[key]
            p = g - g0
            k = (G - 2 - g) // p
            if k > 0:
                eng.shift(k * (floor - f0), k * p, 0, k * (eng.drained - d0))
            seen.clear()
        else:
            seen[key] = (g, floor, eng.drained)


def kernel_cycles(rows: int, cols: int, *, pingpong: bool, cfg=None) -> int:
    """PU clocks for ONE AiM channel to compute y = W x (W rows x cols bf16, resident in the
    channel's banks; x in through the GB, y out through the output registers), from the first
    WR-GB to the last RD-MAC beat inclusive.  ``pingpong=False`` is the AiMX baseline (load ->
    MAC -> drain serialised), ``True`` LoL-PIM §6.  ``cfg`` (a
    :class:`~pimforge.hw.lolpim.config.PingpongConfig`, default the ``aim`` preset) sets the
    channel; ``cfg.pingpong`` is overridden by ``pingpong``.

    The exact cycle model of ``lolpim_pingpong`` with the GDDR6 bank model, run over the
    mapping of the module docstring; steady-state periods are skipped exactly."""
    if rows < 1 or cols < 1:
        raise ValueError(f"kernel_cycles: rows and cols must be >= 1, not {rows} x {cols}")
    cfg = _config(pingpong, cfg)
    loads, tiles = kernel_program(rows, cols, cfg)
    eng = Engine(cfg, GDDR6, loads, tiles)
    seen = {}
    c = 0
    while c < tiles.C:
        _run_chunk(eng, tiles, c, skip=True)
        key, floor = eng.key()
        key = (eng.ld - c, key)
        if c < tiles.C - 2 and key in seen:
            c0, f0, d0, l0 = seen[key]
            p = c - c0
            k = (tiles.C - 2 - c) // p
            if k > 0:
                eng.shift(k * (floor - f0), k * p * tiles.G, k * (eng.ld - l0),
                          k * (eng.drained - d0))
                c += k * p
            seen.clear()
        elif c < tiles.C - 2:
            seen[key] = (c, floor, eng.drained, eng.ld)
        c += 1
    eng.run()
    return eng.log["o"][-1] + 1


def kernel_activity(rows: int, cols: int, cfg=None) -> dict:
    """The actions of :func:`kernel_cycles`' program (the unit's activity model,
    :func:`~pimforge.hw.lolpim.pingpong_timing.pingpong_activity`): the same with ping-pong on
    or off, which moves the operations in time only."""
    if rows < 1 or cols < 1:
        raise ValueError(f"kernel_activity: rows and cols must be >= 1, not {rows} x {cols}")
    cfg = cfg or pingpong_preset("aim")
    loads, tiles = kernel_program(rows, cols, cfg)
    # every tile of chunk c has its steps and drains (the page opens do not matter here)
    return pingpong_activity(cfg, loads, [Tile(n) for n in loads for _ in range(tiles.G)])


# ---------------------------------------------------------------- LoL-PIM Fig. 7a kernels
# Qwen1.5-7B (Table 1: d = 4096, 32 heads, d_h = 128, FFN 11008, SwiGLU) at a 16K-token context,
# one module's 16 channels (Table 5) per operation, ITPP (§4.3): the K cache split over channels
# along tokens, the V cache along the head dimension, FC weights by tensor parallelism (§4.1:
# FFN1 along d_out with gate and up stacked, FFN2 along d_in).  Shapes are one channel's W.
CONTEXT = 16384


CHANNELS = 16


QWEN_7B = {"d": 4096, "heads": 32, "d_h": 128, "ffn": 11008}


KERNELS = {
    "QK^T": (CONTEXT // CHANNELS, QWEN_7B["d_h"]),                 # K: 1024 tokens x 128
    "S.V": (QWEN_7B["d_h"] // CHANNELS, CONTEXT),                  # V^T: 8 dims x 16384 tokens
    "FFN1": (2 * QWEN_7B["ffn"] // CHANNELS, QWEN_7B["d"]),        # gate+up: 1376 x 4096
    "FFN2": (QWEN_7B["d"], QWEN_7B["ffn"] // CHANNELS),            # 4096 x 688
}


PAPER_SAVINGS = {"QK^T": 40.0, "S.V": 44.0, "FFN1": 29.0, "FFN2": 28.0}   # Fig. 7a, §6


def kernel_savings(model: str = "Qwen1.5-7B", kernels=None, cfg=None) -> dict:
    """Per kernel of Fig. 7a: ``{name: {"rows", "cols", "off", "on", "saving_pct", "paper_pct"}}``
    with the cycles of one channel without and with ping-pong (``kernels``: name -> (rows, cols),
    default :data:`KERNELS`)."""
    if model != "Qwen1.5-7B":
        raise ValueError(f"kernel_savings: model must be 'Qwen1.5-7B', not {model!r}")
    out = {}
    for name, (rows, cols) in (kernels or KERNELS).items():
        off = kernel_cycles(rows, cols, pingpong=False, cfg=cfg)
        on = kernel_cycles(rows, cols, pingpong=True, cfg=cfg)
        out[name] = {"rows": rows, "cols": cols, "off": off, "on": on,
                     "saving_pct": 100.0 * (off - on) / off,
                     "paper_pct": PAPER_SAVINGS.get(name, math.nan)}
    return out
