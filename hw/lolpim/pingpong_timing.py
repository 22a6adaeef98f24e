"""The exact cycle model of ``lolpim_pingpong`` (:mod:`pimforge.hw.lolpim.pingpong`).

A *program* is what the host (LoL-PIM's dual command queue, §6) gives one AiM channel: a list
of WR-GB loads (beats of ``lanes`` bf16 into the next GB set) and a list of MAC *tiles* (one
all-bank MAC command of ``steps`` column accesses; ``release`` frees its GB set afterwards,
``drain`` ends the accumulation and reads the output registers out, RD-MAC / DT-Out; ``act``
says the tile opens a new DRAM row).

The model replays the unit's three engines event by event, as the RTL does them cycle by cycle:

* **MAC engine**: accepts a tile when its GB set is full and, for the first tile of an
  accumulation, an output-register set is free; then one column step per cycle, its first one
  no sooner than the bank delivers it (:func:`act_time`: PRE/ACT with tRAS, tRTP, tRP, tRCD).
* **Bus engine** (the channel's one data bus): a drain (waits ``rd_latency``, one output beat)
  or a load (waits ``wr_latency``, then one beat a cycle), drains first.  Without ping-pong a
  load also waits until nothing is in flight (the AiMX baseline: load -> MAC -> drain).
* **Pipeline**: a step's accumulation lands ``land`` cycles after its bank beat; a drained
  accumulation's output registers are ready ``done`` cycles after its last beat.

:func:`schedule` is exact against the RTL's cycle counts when no stream stalls but the bank's
(``tests/lolpim/test_pingpong.py``); :func:`pimforge.hw.lolpim.perf.kernel_cycles` runs the same
engine on a whole GEMV's program.
"""
from __future__ import annotations

from dataclasses import dataclass

from pimforge.base.formats import BF16, FP32
from pimforge.base.numerics import log2_exact
from pimforge.hw.core.activity import mem_action, op_action
from pimforge.hw.fp.accumulate import DRAIN_READ, acc_latency
from pimforge.hw.fp.ops import op_latency
from pimforge.hw.lolpim.aim import GDDR6
from pimforge.hw.lolpim.config import PingpongConfig

__all__ = ["Tile", "pingpong_timing", "act_time", "Engine", "schedule", "ACC_IN", "pingpong_cycles",
           "pingpong_activity", "pingpong_unit_activity"]

# A register between the adder trees and the accumulator bank: the tags (the bank's address)
# travel with bank 0's tree, and on ECP5 the route from there into the bank's read
# (acc_addr -> acc_word, almost all of it routing) limits the clock; the register lets the
# placer put the address beside the bank.
ACC_IN = 1


@dataclass(frozen=True)
class Tile:
    """One MAC command of the program (see the module docstring)."""

    steps: int
    release: bool = True
    drain: bool = True
    act: bool = True


def pingpong_timing(cfg) -> dict:
    """Fixed latencies in cycles.  ``land``: a bank beat's transfer to its partial sum's write
    (issue register, multiply, the ``lanes`` adder tree, ``ACC_IN``, the accumulator bank's
    read stage and add); ``done``: the last bank beat of a drained accumulation to its
    output-register set being visible to the bus engine (+ the finish read and its register,
    the pairwise tree of the partial sums, bf16 conversion, the register write); ``flight``: the
    baseline's quiet wait after a beat."""
    od = cfg.op_depth
    mul, add = op_latency("mul_wide", od), op_latency("add", od)
    conv = op_latency("convert", od)
    land = 1 + mul + log2_exact(cfg.lanes) * add + ACC_IN + acc_latency(od)
    done = land + 1 + DRAIN_READ + log2_exact(cfg.partials) * add + conv + 1
    return {"mul": mul, "add": add, "conv": conv, "land": land, "done": done,
            "flight": done - 1}


def act_time(timing, t_accept: int, act_ready) -> tuple:
    """The GDDR6 bank model of a tile that opens a row: ``(ACT cycle, first column cycle)``.
    ``act_ready`` is the earliest ACT after the previous row's PRE (None: no row open yet)."""
    act = t_accept if act_ready is None else max(t_accept, act_ready)
    return act, max(t_accept + 1, act + timing.tRCD)


def next_act_ready(timing, row_act: int, last_read: int) -> int:
    """Earliest ACT of the next row: PRE no sooner than tRAS after ACT and tRTP after the last
    read, then tRP."""
    return max(row_act + timing.tRAS, last_read + timing.tRTP) + timing.tRP


class Engine:
    """The event engine (state of one channel).  Times are absolute cycles from reset."""

    def __init__(self, cfg, timing, loads, tiles):
        self.cfg, self.dram, self.tm = cfg, timing, pingpong_timing(cfg)
        self.loads, self.tiles = loads, tiles
        S = cfg.sets
        self.S = S
        self.full = [None] * S        # cycle each GB set's full bit is visible (None: empty)
        self.gbfree = [0] * S         # cycle each GB set's empty bit is visible (None: full)
        self.ofree = [0] * S          # cycle each output-register set is free (None: in use)
        self.odone = [None] * S       # cycle each set's result is ready for RD-MAC
        self.mac_idle = self.bus_idle = self.flight0 = 0
        self.act_ready = None
        self.row_act = None
        self.ld = self.ti = self.closed = self.drained = 0
        self.mptr = self.aptr = self.cur = 0
        self.open = False
        self.log = {"ld": [], "gb": [], "mac": [], "bank_first": [], "bank_last": [], "o": []}

    # ------------------------------------------------------------------ candidates
    def _mac_start(self):
        if self.ti >= len(self.tiles) or self.full[self.mptr] is None:
            return None
        t = max(self.mac_idle, self.full[self.mptr])
        if not self.open:
            if self.ofree[self.aptr] is None:
                return None
            t = max(t, self.ofree[self.aptr])
        return t

    def _drain_start(self):
        if self.drained >= self.closed:
            return None
        return max(self.bus_idle, self.odone[self.drained % self.S])

    def _load_start(self):
        if self.ld >= len(self.loads):
            return None
        s = self.ld % self.S
        if self.gbfree[s] is None:
            return None
        t = max(self.bus_idle, self.gbfree[s])
        if not self.cfg.pingpong:
            if self.drained < self.closed:
                return None
            t = max(t, self.flight0)
        return t

    # ------------------------------------------------------------------ actions
    def _do_mac(self, t):
        tile, tm = self.tiles[self.ti], self.tm
        if tile.act:
            self.row_act, first = act_time(self.dram, t, self.act_ready)
        else:
            first = t + 1
        last = first + tile.steps - 1
        self.act_ready = next_act_ready(self.dram, self.row_act, last)
        self.mac_idle, self.flight0 = last + 1, last + 1 + tm["flight"]
        if not self.open:
            self.cur, self.open = self.aptr, True
            self.ofree[self.cur] = None
            self.aptr = (self.aptr + 1) % self.S
        if tile.release:
            self.full[self.mptr], self.gbfree[self.mptr] = None, last + 1
            self.mptr = (self.mptr + 1) % self.S
        if tile.drain:
            self.odone[self.cur] = last + tm["done"]
            self.open = False
            self.closed += 1
        self.log["mac"].append(t)
        self.log["bank_first"].append(first)
        self.log["bank_last"].append(last)
        self.ti += 1

    def _do_drain(self, t):
        s = self.drained % self.S
        t_o = t + 1 + self.cfg.rd_latency
        self.ofree[s], self.odone[s] = t_o + 1, None
        self.bus_idle = t_o + 1
        self.drained += 1
        self.log["o"].append(t_o)

    def _do_load(self, t):
        s, n = self.ld % self.S, self.loads[self.ld]
        first = t + 1 + self.cfg.wr_latency
        self.full[s], self.gbfree[s] = first + n, None
        self.bus_idle = first + n
        self.ld += 1
        self.log["ld"].append(t)
        self.log["gb"].extend(range(first, first + n))

    def step(self) -> bool:
        """Run the earliest possible action (drains before loads on a tie); False when none is
        left."""
        cands = [(t, k) for k, t in enumerate((self._mac_start(), self._drain_start(),
                                               self._load_start())) if t is not None]
        if not cands:
            return False
        t, k = min(cands)
        (self._do_mac, self._do_drain, self._do_load)[k](t)
        return True

    # ------------------------------------------------------------------ steady-state skips
    _TIMES = ("full", "gbfree", "ofree", "odone")

    def key(self) -> tuple:
        """The state relative to the engines' frontier (times that can no longer matter are
        clipped to it): two equal keys have the same future for the same program ahead."""
        floor = min(self.mac_idle, self.bus_idle)

        def rel(x, lo=floor):
            return None if x is None else max(x, lo) - floor
        row = rel(self.row_act, floor - self.dram.tRAS)
        times = tuple(rel(x) for name in self._TIMES for x in getattr(self, name))
        return (times, rel(self.mac_idle), rel(self.bus_idle), rel(self.flight0),
                rel(self.act_ready), row, self.mptr, self.aptr, self.cur, self.open,
                self.closed - self.drained), floor

    def shift(self, dt: int, tiles: int, loads: int, drains: int):
        """Jump ahead by whole periods: every time by ``dt``, the program counters by the
        tiles, loads and drains those periods run (the caller checked they repeat)."""
        for name in self._TIMES:
            setattr(self, name, [None if x is None else x + dt for x in getattr(self, name)])
        for name in ("mac_idle", "bus_idle", "flight0", "act_ready", "row_act"):
            x = getattr(self, name)
            setattr(self, name, None if x is None else x + dt)
        self.ti += tiles
        self.closed += drains
        self.drained += drains
        self.ld += loads
        if self.log["o"]:
            self.log["o"][-1] += dt

    def run(self):
        while self.step():
            pass
        if self.ti < len(self.tiles) or self.drained < self.closed:
            raise ValueError("lolpim_pingpong program deadlocks: a tile waits for a GB load or "
                             "an output-register set that never comes")
        return self


def schedule(cfg, loads, tiles, timing) -> dict:
    """Cycle model of one program from reset, with no stalls but the bank's.

    Returns the cycles of every ``i_ld`` acceptance (``ld``), ``i_gb`` beat (``gb``), ``i_mac``
    acceptance (``mac``), first and last bank beat of each tile, ``o`` transfer, and ``cycles``
    (the last output's cycle + 1)."""
    eng = Engine(cfg, timing, list(loads), list(tiles)).run()
    out = dict(eng.log)
    out["cycles"] = (eng.log["o"][-1] + 1) if eng.log["o"] else 0
    return out


def pingpong_cycles(cfg: PingpongConfig, n_tiles: int) -> int:
    """The unit's cycle model for ``pimforge``: one WR-GB of a full set, then ``n_tiles``
    drained tiles over it (each opening a row, the last releasing the set); cycles from reset
    to the last output beat, inclusive (:func:`schedule`, GDDR6 banks)."""
    if n_tiles < 1:
        return 0
    return schedule(cfg, [cfg.gb_beats], _unit_tiles(cfg, n_tiles), GDDR6)["cycles"]


def _unit_tiles(cfg: PingpongConfig, n_tiles: int) -> list:
    return [Tile(cfg.gb_beats, release=i == n_tiles - 1) for i in range(n_tiles)]


def pingpong_activity(cfg: PingpongConfig, loads, tiles) -> dict:
    """The actions of one program (as :func:`schedule` takes it: ``loads`` the beats of each
    WR-GB, ``tiles`` the MAC commands); the bank model and ping-pong change none of them.

    * each GB beat loaded is one write of the GB memory (its MAC-side read is combinational,
      not counted);
    * each column step (a bank beat): ``banks x lanes`` bf16 multiplies into fp32, the banks'
      adder trees (``lanes - 1`` adds each), ``banks`` adds into the step's partial (the
      first Q steps of an accumulation add into +0) and one write of the accumulator bank;
    * each drained tile finishes its accumulation: per bank the ``partials - 1`` adds of the
      pairwise tree (unvisited partials read as +0) and one conversion to bf16.
    """
    B, L, Q = cfg.banks, cfg.lanes, cfg.partials
    steps = sum(t.steps for t in tiles)
    drains = sum(1 for t in tiles if t.drain)
    return {mem_action("write", cfg.sets * cfg.gb_beats, 16 * L): sum(loads),
            op_action("mul_wide", FP32): steps * B * L,
            op_action("add", FP32): steps * B * (L - 1) + steps * B + drains * B * (Q - 1),
            mem_action("write", cfg.sets * Q, 32 * B): steps,
            op_action("convert", BF16): drains * B}


def pingpong_unit_activity(cfg: PingpongConfig, n_tiles: int) -> dict:
    """``HwUnit.activity``: :func:`pingpong_activity` of :func:`pingpong_cycles`' program."""
    if n_tiles < 1:
        return {}
    return pingpong_activity(cfg, [cfg.gb_beats], _unit_tiles(cfg, n_tiles))
