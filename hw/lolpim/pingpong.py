"""``lolpim_pingpong``: one AiM channel's PU datapath with I/O-aware ping-pong buffering
(LoL-PIM §6, Fig. 7b; AiM §2.2, Table 3, Table 5).

Microarchitecture (numerics: :mod:`pimforge.sim.golden.lolpim.pingpong`; timing:
:mod:`pimforge.hw.lolpim.pingpong_timing`; channel and GDDR6: :mod:`pimforge.hw.lolpim.aim`)::

    i_ld, i_gb ─► bus engine ─► GB set [lptr]          (WR-GB / DT-GB: beats of `lanes` bf16)
                      ▲  one data bus: a drain or a load at a time, drains first
    i_mac ─► MAC engine: tile = `last_step + 1` all-bank column steps on GB set [mptr]
    i_bank ─► issue register (bank columns x GB word) ─► banks x lanes bf16 multipliers (fp32)
              ─► per PU an adder tree (lanes -> 1) ─► accumulate into partial [par] of
              output-register set [cur] ─► (drain) pairwise tree of the partials, bf16
              ─► output registers [cur]
    o ◄─ bus engine: RD-MAC / DT-Out of output-register set [dptr] (banks bf16 per beat)

* **Ping-pong** (§6): with ``pingpong`` there are two GB sets and two output-register sets, and
  a ping-pong bit per side (``lptr``/``mptr`` for the GB, ``aptr``/``dptr`` for the output
  registers) alternates them, so the MAC engine works on one set while the bus engine loads
  (DT-GB) or drains (DT-Out) the other; a set's *full* / *free* flag blocks a command until its
  set is ready (the dual command queue: ``i_ld`` and ``i_mac`` are the two queues).  Without it
  there is one set of each, and a load also waits until nothing is in flight: AiMX's serial
  load -> MAC -> drain.
* **Numerics.**  AiM's multipliers are BF16 (SK hynix's GDDR6-AiM, ISSCC 2022, LoL-PIM ref. [41];
  the LoL-PIM text itself says only that the output registers are 2 bytes, §2.2): bf16 x bf16
  products are exact in fp32, each PU sums its ``lanes`` products in a pairwise fp32 tree, and
  column step k of an accumulation adds into partial sum ``k mod Q`` (Q = ``partials``, so the
  accumulate adder may take Q cycles); a drained accumulation is the pairwise tree of the Q
  partials (Q = 2: ``p0 + p1``) rounded to bf16.  Every operation is a round-to-nearest-even
  operation of the float library (:mod:`pimforge.hw.fp`), IEEE special values, no flush to zero.
* **Partials** live in the float library's accumulator bank
  (:func:`~pimforge.hw.fp.accumulate.accumulate`, S x Q words of ``banks`` fp32 lanes): read a
  cycle before the add, the sums landing in the read or the add cycle forwarded; an
  accumulation's first Q steps start from +0 (no clearing).  A drain reads its Q partials the
  cycle after the last sum lands, through a register (those no step reached read as +0).
* **Commands.**  ``i_ld``: ``last_beat`` (a WR-GB of ``last_beat + 1`` beats into the next GB
  set).  ``i_mac``: ``last_step``, ``release`` (the tile is the last use of its GB set) and
  ``drain`` (the tile ends its accumulation; RD-MAC follows).  The first tile after a drain (or
  reset) opens an accumulation in the next free output-register set.  Tile step k multiplies
  bank column k with GB beat k.
* **The bank** is the bench's GDDR6 model (:func:`pimforge.hw.lolpim.pingpong_timing.act_time`):
  a tile that opens a row gets its first column tRCD after the ACT.  The bus engine counts the
  GDDR6 write latency before a load's beats and the read latency before a drain's beat, so the
  RTL's cycle counts carry the I/O cost.
"""
from __future__ import annotations

from dataclasses import dataclass

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib.wiring import In, Out

from pimforge.base.formats import BF16, FP32
from pimforge.base.numerics import log2_exact
from pimforge.hw.core.activity import Memory, active
from pimforge.hw.core.component import PimComponent
from pimforge.hw.core.unit import HwUnit, PresetClock
from pimforge.hw.fp.accumulate import accumulate, finish_partials
from pimforge.hw.fp.ops import add_tree, delay, delay_valid, float_op
from pimforge.hw.lolpim.aim import AIM_CLOCK_MHZ
from pimforge.hw.lolpim.config import PINGPONG_PRESETS, PingpongConfig
from pimforge.hw.lolpim.pingpong_formal import pingpong_response
from pimforge.hw.lolpim.pingpong_timing import (ACC_IN, pingpong_cycles, pingpong_timing,
                                                pingpong_unit_activity)
from pimforge.hw.lolpim.streams import pingpong_signatures

__all__ = ["LolpimPingpong"]


@dataclass
class ChannelState:
    """The ping-pong bits, the per-set flags and the GB (``_flags``), then what the engines
    share: the MAC FSM's issue strobe, step and GB word (``_mac``), the bus FSM (``_bus``)."""
    full: Signal
    free: Signal
    done: Signal
    open: Signal
    par: Signal
    cnt: Signal
    visited: Signal
    flight: Signal
    mac_idle: Signal | None     # only without ping-pong (the serial load waits for it)
    lptr: Signal
    mptr: Signal
    aptr: Signal
    dptr: Signal
    cur: Signal
    gb: Memory
    issue: Signal | None = None
    step: Signal | None = None
    gb_word: object = None
    tag_last: object = None
    bus_fsm: object = None


def _lane(x, i, w):
    return x[w * i:w * (i + 1)]


def _bit(vec_sig, idx):
    """Bit ``idx`` of a per-set flag vector (one set: the bit itself, no case statement)."""
    return vec_sig[0] if len(vec_sig) == 1 else vec_sig.bit_select(idx, 1)


def _pick(sel, items):
    """``items[sel]`` for one or two items (an output-register set)."""
    return items[0] if len(items) == 1 else Mux(sel, items[1], items[0])


class LolpimPingpong(PimComponent):
    """One AiM channel's PUs with ping-pong GB and output registers (module docstring).

    ``latency``: cycles from a drained tile's last bank beat to its output beat, with no stalls
    (pipeline, bf16 conversion and the RD-MAC read latency); ``throughput``: one all-bank column
    step (``banks x lanes`` MACs) per cycle.

    Parameters
    ----------
    cfg : PingpongConfig
    """

    UNIT = "lolpim_pingpong"

    def __init__(self, cfg: PingpongConfig):
        sig = pingpong_signatures(cfg)
        super().__init__(cfg, {"i_ld": In(sig["i_ld"]), "i_gb": In(sig["i_gb"]),
                               "i_mac": In(sig["i_mac"]), "i_bank": In(sig["i_bank"]),
                               "o": Out(sig["o"])})

    @property
    def timing(self) -> dict:
        return pingpong_timing(self.cfg)

    @property
    def latency(self) -> int:
        return self.timing["done"] + 1 + self.cfg.rd_latency

    @property
    def throughput(self) -> float:
        return 1.0

    def manifest(self) -> dict:
        man = super().manifest()
        man["timing"] = self.timing
        man["macs"] = self.cfg.macs
        man["gb_bits"] = self.cfg.sets * self.cfg.gb_elems * 16
        return man

    def elaborate(self, platform):
        m = Module()
        c = self._flags(m)
        self._c = c
        self._mac(m, c)
        self._bus(m, c)
        res = self._datapath(m, c)
        self._outputs(m, c, res)
        return m

    # ------------------------------------------------------------------ control
    def _flags(self, m) -> ChannelState:
        """The ping-pong bits and the per-set flags (§6, Fig. 7b)."""
        cfg, S = self.cfg, self.cfg.sets
        pb = max(1, (S - 1).bit_length())
        c = ChannelState(
            full=Signal(S, name="gb_full"), free=Signal(S, init=(1 << S) - 1, name="oreg_free"),
            done=Signal(S, name="oreg_done"), open=Signal(name="acc_open"),
            par=Signal(log2_exact(cfg.partials), name="acc_parity"),
            cnt=Signal(range(cfg.partials + 1), name="acc_steps"),   # saturates at Q
            visited=Signal(range(cfg.partials + 1), name="acc_visited"),
            flight=Signal(range(pingpong_timing(cfg)["flight"] + 1), name="flight"),
            # the baseline's quiet condition needs it
            mac_idle=None if cfg.pingpong else Signal(name="mac_idle"),
            **{name: Signal(pb, name=name) for name in ("lptr", "mptr", "aptr", "dptr", "cur")},
            gb=Memory(shape=16 * cfg.lanes, depth=S * cfg.gb_beats, init=[]))
        m.submodules.gb = c.gb
        return c

    def _flip(self, ptr):
        return (ptr + 1)[:len(ptr)] if self.cfg.pingpong else ptr

    def _bus(self, m, c):
        """The bus engine: RD-MAC drains (first) and WR-GB loads, one at a time."""
        cfg, tm = self.cfg, self.timing
        gb_beats = cfg.gb_beats
        cnt = Signal(range(max(cfg.rd_latency, cfg.wr_latency) + 1), name="bus_wait")
        k = Signal(range(gb_beats), name="load_beat")
        last = Signal(range(gb_beats), name="load_last")
        flight = c.flight
        wr = c.gb.write_port()
        quiet = Const(1) if cfg.pingpong else ((flight == 0) & (c.done == 0) & c.mac_idle)
        ld, gb, o = self.i_ld, self.i_gb, self.o
        with m.FSM(name="bus") as fsm:
            with m.State("IDLE"):
                with m.If(_bit(c.done, c.dptr)):
                    m.d.sync += cnt.eq(max(cfg.rd_latency - 1, 0))
                    m.next = "DWAIT" if cfg.rd_latency else "DOUT"
                with m.Elif(~_bit(c.full, c.lptr) & quiet):
                    m.d.comb += ld.ready.eq(1)
                    with m.If(ld.valid):
                        m.d.sync += [last.eq(ld.payload.last_beat), k.eq(0),
                                     cnt.eq(max(cfg.wr_latency - 1, 0))]
                        m.next = "LWAIT" if cfg.wr_latency else "LOAD"
            with m.State("LWAIT"):
                m.d.sync += cnt.eq(cnt - 1)
                with m.If(cnt == 0):
                    m.next = "LOAD"
            with m.State("LOAD"):
                m.d.comb += gb.ready.eq(1)
                with m.If(gb.valid):
                    m.d.comb += [wr.addr.eq(c.lptr * gb_beats + k), wr.data.eq(gb.payload.data),
                                 wr.en.eq(1)]
                    m.d.sync += k.eq(k + 1)
                    with m.If(k == last):
                        m.d.sync += [_bit(c.full, c.lptr).eq(1),
                                     c.lptr.eq(self._flip(c.lptr))]
                        m.next = "IDLE"
            with m.State("DWAIT"):
                m.d.sync += cnt.eq(cnt - 1)
                with m.If(cnt == 0):
                    m.next = "DOUT"
            with m.State("DOUT"):
                m.d.comb += o.valid.eq(1)
                with m.If(o.ready):
                    m.d.sync += [_bit(c.free, c.dptr).eq(1),
                                 _bit(c.done, c.dptr).eq(0),
                                 c.dptr.eq(self._flip(c.dptr))]
                    m.next = "IDLE"
        c.bus_fsm = fsm

    def _mac(self, m, c):
        """The MAC engine: accepts a tile when its GB set is full (and, opening an
        accumulation, an output-register set is free), then one column step per bank beat."""
        cfg, tm = self.cfg, self.timing
        mac, bank = self.i_mac, self.i_bank
        k = Signal(range(cfg.gb_beats), name="mac_step")
        last = Signal(range(cfg.gb_beats), name="mac_last")
        rel, drn = Signal(name="mac_release"), Signal(name="mac_drain")
        issue = Signal(name="issue")
        c.issue, c.step = issue, k
        rd = c.gb.read_port(domain="comb")
        c.gb_word = rd.data
        m.d.comb += rd.addr.eq(c.mptr * cfg.gb_beats + k)
        with m.FSM(name="mac"):
            with m.State("IDLE"):
                if c.mac_idle is not None:
                    m.d.comb += c.mac_idle.eq(1)
                ok = _bit(c.full, c.mptr) & (c.open | _bit(c.free, c.aptr))
                m.d.comb += mac.ready.eq(ok)
                with m.If(mac.valid & ok):
                    p = mac.payload
                    m.d.sync += [k.eq(0), last.eq(p.last_step), rel.eq(p.release),
                                 drn.eq(p.drain)]
                    with m.If(~c.open):
                        m.d.sync += [c.open.eq(1), c.par.eq(0), c.cnt.eq(0),
                                     c.cur.eq(c.aptr),
                                     c.aptr.eq(self._flip(c.aptr)),
                                     _bit(c.free, c.aptr).eq(0)]
                    m.next = "RUN"
            with m.State("RUN"):
                m.d.comb += [bank.ready.eq(1), issue.eq(bank.valid)]
                with m.If(bank.valid):
                    m.d.sync += [k.eq(k + 1), c.par.eq(c.par + 1),
                                 c.cnt.eq(c.visited)]
                    with m.If(k == last):
                        with m.If(rel):
                            m.d.sync += [_bit(c.full, c.mptr).eq(0),
                                         c.mptr.eq(self._flip(c.mptr))]
                        with m.If(drn):
                            m.d.sync += c.open.eq(0)
                        m.next = "IDLE"
        c.tag_last = (k == last) & drn
        flight = c.flight
        with m.If(issue):
            m.d.sync += flight.eq(tm["flight"])
        with m.Elif(flight != 0):
            m.d.sync += flight.eq(flight - 1)

    # ------------------------------------------------------------------ datapath
    def _datapath(self, m, c) -> dict:
        """Issue register, bf16 multipliers, per-PU trees, the Q partial sums per set, the
        drain's combine and bf16 conversion.  Returns the result per bank and its set/valid.
        A step's tags: its set and partial, ``last`` (it ends a drained accumulation),
        ``first`` (its partial's first visit) and ``nvis`` (partials visited so far, <= Q)."""
        cfg = self.cfg
        B, L, Q, od = cfg.banks, cfg.lanes, cfg.partials, cfg.op_depth
        iss = {"bank": Signal(16 * B * L, name="issue_bank"),
               "gbw": Signal(16 * L, name="issue_gb"),
               "set": Signal(len(c.cur), name="issue_set"),
               "par": Signal(len(c.par), name="issue_par"),
               "first": Signal(name="issue_first"),
               "nvis": Signal.like(c.cnt, name="issue_nvis"),
               "last": Signal(name="issue_last"), "valid": Signal(name="issue_valid")}
        m.d.comb += c.visited.eq(Mux(c.cnt == Q, Q, c.cnt + 1))
        m.d.sync += iss["valid"].eq(c.issue)
        with m.If(c.issue):
            m.d.sync += [iss["bank"].eq(self.i_bank.payload.data), iss["gbw"].eq(c.gb_word),
                         iss["set"].eq(c.cur), iss["par"].eq(c.par),
                         iss["first"].eq(c.cnt != Q), iss["nvis"].eq(c.visited),
                         iss["last"].eq(c.tag_last)]
        tags = {k: iss[k] for k in ("set", "par", "last", "first", "nvis")}
        sums, tv, tt, mul_v = [], None, None, None
        for b in range(B):
            level, first = [], b == 0
            for e in range(L):
                side = first and e == 0
                r, v, t = float_op(m, "mul_wide", FP32, od,
                                   {"a": _lane(iss["bank"], b * L + e, 16),
                                    "b": _lane(iss["gbw"], e, 16)},
                                   valid=iss["valid"] if side else None,
                                   side=tags if side else None, src=BF16, name=f"mul{b}_{e}",
                                   fire=iss["valid"])
                level.append(r["r"])
                if side:
                    tv, tt, mul_v = v, t, (v if active() else None)
            # the tags travel with bank 0's tree; every bank's tree sums in every step (the
            # other trees' probes take bank 0's valid, a chain built only while probing)
            total, v, t = add_tree(m, FP32, od, level, valid=tv if first else None,
                                   side=tt if first else None, name=f"tree{b}", fire=mul_v)
            if first:
                tv, tt = v, t
            sums.append(total)
        return self._accumulate(m, sums, tv, tt)

    def _accumulate(self, m, sums, tv, tt) -> dict:
        """Column step k adds into partial ``k mod Q`` of its set (a register, ``ACC_IN``, after
        the trees), in the float library's accumulator bank (read a cycle ahead, the landing
        sums forwarded; the first Q steps of an accumulation start from +0).  The cycle after
        a drained accumulation's last sum lands, its partials are read (those no step reached
        as +0) and registered."""
        cfg = self.cfg
        S, Q = cfg.sets, cfg.partials
        r = delay(m, {**tt, **{f"_s{b}": x for b, x in enumerate(sums)}}, ACC_IN, "acc_in")
        tv = delay_valid(m, tv, ACC_IN, name="acc_in_v")
        sums, tt = [r.pop(f"_s{b}") for b in range(len(sums))], r
        addr = Signal(range(S * Q), name="acc_addr")
        m.d.comb += addr.eq(tt["set"] * Q + tt["par"])
        fin_set = Signal(len(tt["set"]), name="finish_set")
        _, av, at, words = accumulate(
            m, sums, valid=tv, addr=addr, first=tt["first"], depth=S * Q,
            op_depth=cfg.op_depth, side={"set": tt["set"], "last": tt["last"],
                                         "nvis": tt["nvis"]},
            read_addr=[fin_set * Q + j for j in range(Q)], name="acc")
        fin_v = Signal(name="finish_valid")
        fin_n = Signal.like(at["nvis"], name="finish_visited")
        m.d.sync += [fin_v.eq(av & at["last"]), fin_set.eq(at["set"]), fin_n.eq(at["nvis"])]
        sums, v, t = finish_partials(m, FP32, cfg.op_depth, words, fin_n, cfg.banks,
                                     valid=fin_v, side={"set": fin_set}, name="combine")
        return self._to_bf16(m, sums, v, t)

    def _to_bf16(self, m, sums, v, t) -> dict:
        """The finished sums (one per bank) to bf16."""
        od = self.cfg.op_depth
        res, rv, rt = [], None, None
        for b, x in enumerate(sums):
            first = b == 0
            r, v2, t2 = float_op(m, "convert", BF16, od, {"a": x}, src=FP32,
                                 valid=v if first else None, side=t if first else None,
                                 name=f"to_bf16_{b}", fire=v)
            res.append(r["r"])
            if first:
                rv, rt = v2, t2
        return {"vals": res, "valid": rv, "set": rt["set"]}

    def _outputs(self, m, c, res):
        """The output-register sets: written by the combine, read out by the bus engine."""
        cfg = self.cfg
        B, S = cfg.banks, cfg.sets
        oregs = [Signal(16 * B, name=f"oreg{s}") for s in range(S)]
        for s in range(S):
            with m.If(res["valid"] & (res["set"] == s)):
                m.d.sync += [oregs[s].eq(Cat(*res["vals"])), c.done[s].eq(1)]
        m.d.comb += self.o.payload.data.eq(_pick(c.dptr, oregs))


UNITS = (HwUnit("lolpim_pingpong", "LoL-PIM I/O-aware ping-pong buffering: one AiM channel's "
                "bf16 PUs with two GB and output-register sets (i_ld, i_gb, i_mac, i_bank -> o)",
                PingpongConfig, LolpimPingpong, PINGPONG_PRESETS, pingpong_cycles,
                paper="LoL-PIM §6, Fig. 7b; AiM §2.2, Tables 3 and 5", response=pingpong_response,
                activity=pingpong_unit_activity,
                clocks=dict.fromkeys(PINGPONG_PRESETS, PresetClock(
                    AIM_CLOCK_MHZ, "LoL-PIM Table 5: the AiM PU clock")),
                # 8 partials at op_depth 8: the depth its small config needs for 100 MHz on ECP5
                synth_bench={"set": {"partials": 8, "op_depth": 8}}),)
