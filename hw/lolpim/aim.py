"""GDDR6-AiM channel descriptors and the GEMV cycle model of one AiM channel (LoL-PIM §2.2, §6,
Table 5), for ``lolpim_pingpong`` and the system model.

**The channel** (Table 5 unless stated): GDDR6 at 16 Gb/s per pin, x16, so 32 GB/s of I/O per
channel; 16 banks per channel, 2 KB page; one PU per bank with 16 bf16 multipliers (AiM's
MAC unit: a 16-element dot product per command, §2.2); 32 GFLOPS per PU at 1 GHz (= 16 MACs per
PU clock, so one all-bank MAC column access per clock); a 2 KB global buffer (GB) per channel,
and LoL-PIM adds a second one (§6, §7.2: 0.053 mm2).  The cycle models count PU clocks at
``AIM_CLOCK_HZ`` = 1 GHz; at 32 GB/s the channel moves 32 bytes (16 bf16) per clock, one GB beat
or one RD-MAC burst of 16 banks x 2 bytes.

**GDDR6 timing** (:class:`Gddr6Timing`, in 1 GHz clocks): the paper gives none.  The values are
JEDEC-typical GDDR6 (JESD250) numbers as data sheets of 16 Gb/s parts state them in ns:
tRCD 18 ns, tRP 18 ns, tRAS 32 ns (tRC = tRAS + tRP = 50 ns), tRTP 4 ns, tWR 18 ns,
tCCD_S / tCCD_L 1 / 2 ns (the all-bank MAC streams at one column per clock, Table 5's rate);
read latency (RL, CAS + I/O) 20 ns and write latency (WL) 8 ns are assumptions.  Refresh is
not modelled.  Used by the model: tRCD, tRP, tRAS, tRTP (bank side) and RL, WL (the unit's
``rd_latency`` / ``wr_latency``); tWR and tCCD are stated for completeness (GB writes do not
touch the banks, MAC columns come at Table 5's rate).

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
from dataclasses import dataclass

from pimforge.hw.lolpim.config import PingpongConfig, pingpong_preset
from pimforge.hw.lolpim.pingpong_timing import Engine, Tile

__all__ = ["AIM_CLOCK_HZ", "PIN_GBPS", "DQ_PINS", "CHANNEL_BYTES_PER_S", "BANKS_PER_CHANNEL",
           "PAGE_BYTES", "MULTIPLIERS_PER_PU", "GB_BYTES", "ELEM_BYTES", "IO_BYTES_PER_CYCLE",
           "Gddr6Timing", "GDDR6", "kernel_program", "kernel_cycles", "KERNELS", "PAPER_SAVINGS",
           "kernel_savings"]

AIM_CLOCK_HZ = 1_000_000_000       # Table 5: the PU (and the cycle models) at 1 GHz
PIN_GBPS = 16                      # Table 5: GDDR6 16 Gb/s per pin
DQ_PINS = 16                       # Table 5: x16 organisation
CHANNEL_BYTES_PER_S = PIN_GBPS * DQ_PINS * 1_000_000_000 // 8   # 32 GB/s per channel
BANKS_PER_CHANNEL = 16             # Table 5
PAGE_BYTES = 2048                  # Table 5: page size 2 KB
MULTIPLIERS_PER_PU = 16            # §2.2: 16-element dot product per bank; Table 5: 32 GFLOPS/PU
GB_BYTES = 2048                    # Table 5: 2 KB global buffer per channel (x2 with ping-pong)
ELEM_BYTES = 2                     # bf16
IO_BYTES_PER_CYCLE = CHANNEL_BYTES_PER_S // AIM_CLOCK_HZ       # 32 bytes per PU clock


@dataclass(frozen=True)
class Gddr6Timing:
    """GDDR6 timing in PU clocks (1 GHz = 1 ns); sources in the module docstring."""

    tRCD: int = 18
    tRP: int = 18
    tRAS: int = 32
    tRTP: int = 4
    tWR: int = 18          # not used: WR-GB writes the GB, not a bank
    tCCD_S: int = 1        # not used: MAC columns stream at one per clock (Table 5)
    tCCD_L: int = 2        # not used (as tCCD_S)
    RL: int = 20           # read latency (the unit's rd_latency)
    WL: int = 8            # write latency (the unit's wr_latency)
    page_bytes: int = PAGE_BYTES

    @property
    def tRC(self) -> int:
        return self.tRAS + self.tRP

    @property
    def page_elems(self) -> int:
        return self.page_bytes // ELEM_BYTES


GDDR6 = Gddr6Timing()


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
