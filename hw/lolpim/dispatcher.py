"""``lolpim_dispatcher``: the on-module DPA command dispatcher (LoL-PIM §5.3, Fig. 6c).

::

    i (host writes) ─► command buffer (DPA words) · Va2Pa table · configuration buffer (run)
    run: S0 sequencer (pc, loop) ─► cmd buffer read ─► S1 decode (Dyn-Loop / Dyn-Modi / PIM,
         coef * iter, LB - 1) ─► S2 operand (base + product, range; Dyn-Loop redirect, errors)
         ─► S3 range error, Va2Pa address ─► Va2Pa read ─► S4 translate ─► O register
         ─► o (concrete PIM commands)
    end of the run or first error ─► o_status (code, program index)

The encoding (DPA words, host writes, commands out, status codes) is
:mod:`pimforge.hw.lolpim.dpa`'s; it is also in the manifest (``encoding``).

* **Host.**  ``i`` is ready while no run is under way.  Kind 0 and 1 writes fill the command
  buffer and the Va2Pa table; a kind-2 write fills the configuration buffer (T_cur, request,
  layer, layers, length: §5.3) and starts a run; a bad configuration ends it at once with
  ``bad_config``.
* **Sequencer (S0).**  Fetches one program word a cycle, in execution order: at the end of a
  loop body it jumps back to the body's start until the LB-th repetition (Dyn-Loop, §5.2); after
  word ``length - 1`` one cycle ends the layer (the next layer starts at word 0, the last ends
  the run).  Each fetch carries its tags (pc, repetition, layer, in a loop, last of a body,
  last word, words left to the end).
* **Decode (S1).**  A Dyn-Modi sets the pending modification of the next word; a PIM command
  takes it (its product ``coef * iter``, registered, §5.2: virtual operands start at 0 and grow
  by the stride each repetition) and its base (the row or the column).  A Dyn-Loop's LB is
  ``ceil(T_cur / 2**shift)`` (``row = T_cur / 256``, §5.1), kept as ``LB - 1 = (T_cur - 1) >>
  shift`` (LB = 0 exactly when T_cur = 0): one shifter, no adder.  Structural errors are found
  here and registered with the word (a failing Dyn-Modi goes on to S2 too).
* **Operand (S2).**  ``base + product`` and its range check (bits at or above ``vrows`` or
  ``2**col_bits``), both registered for S3.  The structural errors and LB > ``max_lb`` act
  here; a Dyn-Loop redirects the sequencer (its two younger fetches are dropped): a Dyn-Loop
  costs three cycles, LB = 0 skips the body.
* **Address (S3).**  An out-of-range operand is an error; the registered virtual row and the
  request address the table's registered read port.
* **Translate (S4).**  A virtual row takes the table's physical row (a miss is an error).
* **Errors.**  The oldest failing word wins: it and every younger word are dropped, older ones
  are still issued, then ``o_status`` reports the code and the word's index.  No command with
  an unchecked address is ever issued.  Every kill and the redirect come from stage registers
  (S2 .. S4), never from the command buffer's data in the same cycle.

Every stage advances when ``o`` is empty or taken (one enable, no skid buffer needed: the ready
path is one gate to the enables).  Latency: a run's first command leaves 6 cycles after the
run's transfer; throughput one command per cycle in a body of PIM commands (a Dyn-Modi word
costs a cycle, a Dyn-Loop three, the end of a layer one).

Parameters
----------
cfg : DispatcherConfig
"""
from __future__ import annotations

from dataclasses import dataclass

from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal
from amaranth.lib.wiring import In, Out

from pimforge.base.numerics import log2_exact
from pimforge.hw.core.activity import Memory
from pimforge.hw.core.component import PimComponent
from pimforge.hw.core.unit import HwUnit
from pimforge.hw.lolpim.config import DISPATCHER_PRESETS, DispatcherConfig
from pimforge.hw.lolpim.dispatcher_formal import dispatcher_response
from pimforge.hw.lolpim.dispatcher_timing import (FIRST_COMMAND_LATENCY, dispatcher_cycles,
                                                  dispatcher_unit_activity)
from pimforge.hw.lolpim.dpa import KINDS, STATUS, encoding_manifest, run_fields
from pimforge.hw.lolpim.streams import command_signature, host_signature, status_signature

__all__ = ["LolpimDispatcher"]


@dataclass
class RunRegs:
    """The run's registers: its state, status and configuration buffer (``_host``)."""
    running: Signal
    reporting: Signal
    code: Signal
    index: Signal
    length_w: Signal
    layers_m1: Signal
    t_m1: Signal
    t_zero: Signal
    # the configuration buffer, one field per :func:`~pimforge.hw.lolpim.dpa.run_fields` entry
    t_cur: Signal
    request: Signal
    layer: Signal
    layers: Signal
    length: Signal
    # set once the host write's decode exists
    run_layer: object = None
    start: Signal | None = None
    go: Signal | None = None


class LolpimDispatcher(PimComponent):
    """The DPA dispatcher (module docstring)."""

    UNIT = "lolpim_dispatcher"

    def __init__(self, cfg: DispatcherConfig):
        super().__init__(cfg, {"i": In(host_signature(cfg)), "o": Out(command_signature(cfg)),
                               "o_status": Out(status_signature(cfg))})

    @property
    def latency(self) -> int:
        """Cycles from the run's transfer to its first command (word 0 a PIM command)."""
        return FIRST_COMMAND_LATENCY

    @property
    def throughput(self) -> float:
        return 1.0

    def manifest(self) -> dict:
        man = super().manifest()
        man["encoding"] = encoding_manifest(self.cfg)
        return man

    def elaborate(self, platform):
        m = Module()
        cfg = self.cfg
        cmem = Memory(shape=cfg.word_bits, depth=cfg.cmd_depth, init=[])
        vmem = Memory(shape=cfg.map_bits, depth=cfg.map_depth, init=[])
        m.submodules.cmd_buffer, m.submodules.va2pa = cmem, vmem
        adv = Signal(name="advance")
        m.d.comb += adv.eq(~self.o.valid | self.o.ready)
        r = self._host(m, cmem, vmem)
        s0 = self._sequencer_regs()
        s1, s2 = self._decode(m, cmem, r, s0, adv)
        s3, e2, redirect = self._operand(m, r, s2, adv)
        s4, e3 = self._address(m, vmem, r, s3, adv)
        e4 = self._translate(m, s4, adv)
        stop = Signal(name="stop")
        m.d.comb += stop.eq(e4["hit"] | e3["hit"] | e2["hit"])
        # kills (the oldest error wins; a redirect drops the two younger fetches)
        m.d.comb += [s1["kill"].eq(stop | redirect), s2["kill"].eq(stop),
                     s3["kill"].eq(e3["hit"] | e4["hit"]), e2["older"].eq(e3["hit"] | e4["hit"])]
        with m.If(adv & r.running):
            with m.If(e4["hit"]):
                m.d.sync += [r.code.eq(STATUS["va2pa_miss"]), r.index.eq(e4["index"])]
            with m.Elif(e3["hit"]):
                m.d.sync += [r.code.eq(STATUS["operand_range"]), r.index.eq(e3["index"])]
            with m.Elif(e2["hit"]):
                m.d.sync += [r.code.eq(e2["code"]), r.index.eq(e2["index"])]
        self._sequencer(m, r, s0, s2, adv, stop, redirect)
        empty = ~(s0["active"] | s1["v"] | s2["v"] | s3["v"] | s4["v"] | self.o.valid)
        with m.If(r.running & empty):
            m.d.sync += [r.running.eq(0), r.reporting.eq(1)]
        m.d.comb += [self.o_status.valid.eq(r.reporting),
                     self.o_status.payload.code.eq(r.code),
                     self.o_status.payload.index.eq(r.index)]
        with m.If(self.o_status.valid & self.o_status.ready):
            m.d.sync += r.reporting.eq(0)
        return m

    # -- host writes and the configuration buffer ------------------------------------------------

    def _host(self, m, cmem, vmem) -> RunRegs:
        cfg, i = self.cfg, self.i
        r = RunRegs(running=Signal(name="running"), reporting=Signal(name="reporting"),
                    code=Signal(4, name="err_code"), index=Signal(cfg.len_bits, name="err_index"),
                    # the length one bit wider (compared with pc + LE) and layers - 1 (the last
                    # layer)
                    length_w=Signal(cfg.len_bits + 1, name="cfg_length_w"),
                    layers_m1=Signal(cfg.max_layers.bit_length(), name="cfg_layers_m1"),
                    # T_cur - 1 and T_cur = 0, for LB - 1 = (T_cur - 1) >> shift (S1)
                    t_m1=Signal(cfg.t_bits, name="cfg_t_cur_m1"), t_zero=Signal(name="cfg_t_zero"),
                    **{name: Signal(width, name=f"cfg_{name}") for name, width in run_fields(cfg)})
        idle = ~(r.running | r.reporting)
        m.d.comb += i.ready.eq(idle)
        take = Signal(name="host_take")
        m.d.comb += take.eq(i.valid & idle)
        kind, addr, data = i.payload.kind, i.payload.addr, i.payload.data
        cw, vw = cmem.write_port(), vmem.write_port()
        m.d.comb += [cw.addr.eq(addr), cw.data.eq(data), vw.addr.eq(addr), vw.data.eq(data),
                     cw.en.eq(take & (kind == KINDS["cmd"]) & _below(addr, cfg.cmd_depth)),
                     vw.en.eq(take & (kind == KINDS["map"]) & _below(addr, cfg.map_depth))]
        run = {}
        off = 0
        for name, width in run_fields(cfg):
            run[name] = data[off:off + width]
            off += width
        r.run_layer = run["layer"]
        r.start = Signal(name="run_start")
        m.d.comb += r.start.eq(take & (kind == KINDS["run"]))
        bad = (run["layer"] >= run["layers"]) | \
            ~_below(run["request"], cfg.requests) | ~_below(run["length"], cfg.cmd_depth + 1)
        r.go = Signal(name="run_go")
        m.d.comb += r.go.eq(r.start & ~bad)
        with m.If(r.start):
            m.d.sync += [getattr(r, name).eq(run[name]) for name, _ in run_fields(cfg)]
            m.d.sync += [r.length_w.eq(run["length"]), r.layers_m1.eq(run["layers"] - 1),
                         r.t_m1.eq(run["t_cur"] - 1), r.t_zero.eq(run["t_cur"] == 0)]
            with m.If(bad):
                m.d.sync += [r.reporting.eq(1), r.code.eq(STATUS["bad_config"]),
                             r.index.eq(0)]
            with m.Else():
                m.d.sync += [r.running.eq(1), r.code.eq(STATUS["ok"]),
                             r.index.eq(run["length"])]
        return r

    # -- S0: the sequencer -----------------------------------------------------------------------

    def _sequencer_regs(self) -> dict:
        cfg = self.cfg
        return _regs("", pc=cfg.len_bits, iter=cfg.iter_bits, layer=cfg.max_layers.bit_length(),
                     active=1, loop_on=1, loop_start=cfg.len_bits, loop_end=cfg.len_bits,
                     lb_m1=cfg.iter_bits, fetch=1, at_end=1)

    def _sequencer(self, m, r, s0, s2, adv, stop, redirect):
        """Next program word in execution order (§5.2: Dyn-Loop repeats its body LB times)."""
        pc, it, layer, active = s0["pc"], s0["iter"], s0["layer"], s0["active"]
        at_end = s0["at_end"]
        m.d.comb += [at_end.eq(s0["loop_on"] & (pc == s0["loop_end"])),
                     s0["fetch"].eq(active & (pc != r.length))]
        with m.If(r.go):
            m.d.sync += [pc.eq(0), it.eq(0), s0["loop_on"].eq(0), active.eq(1),
                         layer.eq(r.run_layer)]
        with m.Elif(adv & redirect):
            m.d.sync += [pc.eq(Mux(r.t_zero, s2["skip"], s2["start"])), it.eq(0),
                         layer.eq(s2["layer"]), active.eq(1), s0["loop_on"].eq(~r.t_zero),
                         s0["loop_start"].eq(s2["start"]), s0["loop_end"].eq(s2["end"]),
                         s0["lb_m1"].eq(s2["lb_m1"])]
        with m.Elif(adv & stop):
            m.d.sync += active.eq(0)
        with m.Elif(adv & active):
            with m.If(pc == r.length):          # the end of a layer
                with m.If(layer != r.layers_m1):
                    m.d.sync += [pc.eq(0), layer.eq(layer + 1)]
                with m.Else():
                    m.d.sync += active.eq(0)
            with m.Elif(at_end & (it != s0["lb_m1"])):
                m.d.sync += [pc.eq(s0["loop_start"]), it.eq(it + 1)]
            with m.Elif(at_end):
                m.d.sync += [pc.eq(pc + 1), it.eq(0), s0["loop_on"].eq(0)]
            with m.Else():
                m.d.sync += pc.eq(pc + 1)

    # -- S1: decode ------------------------------------------------------------------------------

    def _decode(self, m, cmem, r, s0, adv):
        """Program word -> Dyn-Loop setup, Dyn-Modi state, PIM operands (module docstring)."""
        cfg = self.cfg
        rb, cb, pb = cfg.row_bits, cfg.col_bits, cfg.pc_bits
        rp = cmem.read_port(domain="sync")
        # read on a fetch only: every user of the word is gated by the valid bit it sets
        m.d.comb += [rp.addr.eq(s0["pc"][:pb]), rp.en.eq(adv & s0["fetch"])]
        length = r.length_w
        # last: the program's last word; after: the words after pc (a body fits if LE <= after;
        # it fits pc_bits while pc < length, the only case that is decoded)
        s1 = _regs("s1_", v=1, kill=1, pc=cfg.len_bits, iter=cfg.iter_bits, layer=cfg.layer_bits,
                   inl=1, bend=1, last=1, after=cfg.pc_bits)
        with m.If(adv):
            m.d.sync += [s1["v"].eq(s0["fetch"] & ~s1["kill"] & ~r.go), s1["pc"].eq(s0["pc"]),
                         s1["iter"].eq(s0["iter"]), s1["layer"].eq(s0["layer"]),
                         s1["inl"].eq(s0["loop_on"]), s1["bend"].eq(s0["at_end"]),
                         s1["last"].eq(s0["pc"] + 1 == length),
                         s1["after"].eq(length - s0["pc"] - 1)]
        w = rp.data
        op, row, col = w[:3], w[3:3 + rb], w[3 + rb:3 + rb + cb]
        le, shift = w[3:3 + pb], w[3 + pb:3 + pb + cfg.shift_bits]
        target, coef = w[3], w[4:4 + rb]
        is_pim, is_loop, is_modi = op < 3, op == 3, op == 4
        modi = {"on": Signal(name="modi_pending"), "col": Signal(name="modi_col"),
                "coef": Signal(rb, name="modi_coef"), "pc": Signal(cfg.len_bits, name="modi_pc")}
        # a structural error is registered with the word and acts in S2 (the word goes there even
        # when it is a Dyn-Modi); its index is the word's, or the Dyn-Modi's it does not follow
        code = Signal(4, name="s1_code")
        m.d.comb += code.eq(Mux(modi["on"] & ~is_pim, STATUS["bad_modi"],
                            Mux(op > 4, STATUS["bad_opcode"],
                                Mux(is_modi & (s1["bend"] | s1["last"]), STATUS["bad_modi"],
                                    Mux(is_loop & s1["inl"], STATUS["nested_loop"],
                                        Mux(is_loop & ((le == 0) | (le > s1["after"])),
                                            STATUS["loop_range"], STATUS["ok"]))))))
        # LB = ceil(T_cur / 2**shift) (§5.1) is 0 exactly when T_cur = 0, else
        # LB - 1 = floor((T_cur - 1) / 2**shift): one shifter, no adder.  "LB > max_lb" for
        # every shift depends on the run's T_cur only: registered the cycle after the run's
        # write (ready when its first word reaches S1), the word's shift selects one bit.
        t_m1 = r.t_m1
        over = Signal(1 << cfg.shift_bits, name="cfg_lb_over")
        m.d.sync += over.eq(Cat(*[~r.t_zero & ((t_m1 >> k) >= cfg.max_lb)
                                  for k in range(1 << cfg.shift_bits)]))
        # (a failing word may still set the Dyn-Modi state: every younger word is dropped)
        go_on = adv & s1["v"] & ~s1["kill"]
        with m.If(r.go):
            m.d.sync += modi["on"].eq(0)
        with m.Elif(go_on & is_modi):
            m.d.sync += [modi["on"].eq(1), modi["col"].eq(target), modi["coef"].eq(coef),
                         modi["pc"].eq(s1["pc"])]
        with m.Elif(go_on & is_pim):
            m.d.sync += modi["on"].eq(0)
        s2 = self._s2_regs()
        with m.If(adv):
            m.d.sync += [s2["v"].eq(go_on & (~is_modi | (code != 0))), s2["loop"].eq(is_loop),
                         s2["err"].eq(code),
                         s2["fail"].eq((code != 0) | (is_loop & Array(over)[shift])),
                         s2["op"].eq(op[:2]), s2["row"].eq(row), s2["col"].eq(col),
                         s2["base"].eq(Mux(modi["col"], col, row)),
                         s2["pc"].eq(Mux(modi["on"] & ~is_pim, modi["pc"], s1["pc"])),
                         s2["iter"].eq(s1["iter"]), s2["layer"].eq(s1["layer"]),
                         s2["mod_row"].eq(modi["on"] & ~modi["col"]),
                         s2["mod_col"].eq(modi["on"] & modi["col"]),
                         s2["prod"].eq(modi["coef"] * s1["iter"]),
                         s2["lb_m1"].eq(r.t_m1 >> shift),
                         s2["start"].eq(s1["pc"] + 1), s2["end"].eq(s1["pc"] + le),
                         s2["skip"].eq(s1["pc"] + le + 1)]
        return s1, s2

    def _s2_regs(self) -> dict:
        cfg = self.cfg
        lb = cfg.len_bits
        return _regs("s2_", v=1, kill=1, err=4, fail=1, loop=1, op=2, row=cfg.row_bits, col=cfg.col_bits,
                     base=max(cfg.row_bits, cfg.col_bits), pc=lb,
                     iter=cfg.iter_bits, layer=cfg.layer_bits, mod_row=1, mod_col=1,
                     prod=cfg.row_bits + cfg.iter_bits, lb_m1=cfg.t_bits, start=lb, end=lb,
                     skip=lb + 1)

    # -- S2: operand (base + product, range check) ---------------------------------------------

    def _operand(self, m, r, s2, adv):
        """``base + product`` and its range check, registered; a Dyn-Loop's bound and redirect."""
        cfg = self.cfg
        vop = Signal(cfg.row_bits + cfg.iter_bits + 1, name="s2_operand")
        m.d.comb += vop.eq(s2["base"] + s2["prod"])
        e2 = {"hit": Signal(name="s2_error"), "code": Signal(4, name="s2_code"),
              "index": s2["pc"], "older": Signal(name="s2_older_error")}
        # (s2_fail: a structural error or LB > max_lb, found in S1)
        m.d.comb += [e2["code"].eq(Mux(s2["err"] != 0, s2["err"], STATUS["loop_bound"])),
                     e2["hit"].eq(s2["v"] & s2["fail"])]
        redirect = Signal(name="redirect")
        m.d.comb += redirect.eq(s2["v"] & s2["loop"] & ~e2["hit"] & ~e2["older"])
        vb = log2_exact(cfg.vrows)
        s3 = _regs("s3_", v=1, kill=1, op=2, row=cfg.row_bits, col=cfg.col_bits, vrow=vb,
                   pc=cfg.len_bits, iter=cfg.iter_bits, layer=cfg.layer_bits, tr=1, bad=1)
        # out of range: a bit set at or above vrows (a power of two) or 2**col_bits
        bad = (s2["mod_row"] & vop[vb:].any()) | (s2["mod_col"] & vop[cfg.col_bits:].any())
        with m.If(adv):
            m.d.sync += [s3["v"].eq(s2["v"] & ~s2["loop"] & ~s2["kill"]), s3["op"].eq(s2["op"]),
                         s3["row"].eq(s2["row"]), s3["vrow"].eq(vop[:vb]),
                         s3["col"].eq(Mux(s2["mod_col"], vop[:cfg.col_bits], s2["col"])),
                         s3["pc"].eq(s2["pc"]), s3["iter"].eq(s2["iter"]),
                         s3["layer"].eq(s2["layer"]), s3["tr"].eq(s2["mod_row"]),
                         s3["bad"].eq(bad)]
        return s3, e2, redirect

    # -- S3: the range error and the Va2Pa address -----------------------------------------------

    def _address(self, m, vmem, r, s3, adv):
        """A registered out-of-range operand is an error here; the rest read the Va2Pa table."""
        cfg = self.cfg
        e3 = {"hit": Signal(name="s3_error"), "index": s3["pc"]}
        m.d.comb += e3["hit"].eq(s3["v"] & s3["bad"])
        rp = vmem.read_port(domain="sync")
        # read for a command that translates its row only (S4 uses the entry for those alone)
        m.d.comb += [rp.addr.eq(Cat(s3["vrow"], r.request)), rp.en.eq(adv & s3["v"] & s3["tr"])]
        s4 = _regs("s4_", v=1, op=2, row=cfg.row_bits, col=cfg.col_bits, pc=cfg.len_bits,
                   iter=cfg.iter_bits, layer=cfg.layer_bits, tr=1)
        s4["entry"] = rp.data
        with m.If(adv):
            m.d.sync += [s4["v"].eq(s3["v"] & ~s3["kill"])]
            m.d.sync += [s4[k].eq(s3[k]) for k in ("op", "row", "col", "pc", "iter", "layer", "tr")]
        return s4, e3

    # -- S4: translate, then the output register -------------------------------------------------

    def _translate(self, m, s4, adv) -> dict:
        o = self.o
        entry = s4["entry"]
        e4 = {"hit": Signal(name="s4_error"), "index": s4["pc"]}
        m.d.comb += e4["hit"].eq(s4["v"] & s4["tr"] & ~entry[0])
        with m.If(adv):
            m.d.sync += [o.valid.eq(s4["v"] & ~e4["hit"]), o.payload.op.eq(s4["op"]),
                         o.payload.row.eq(Mux(s4["tr"], entry[1:], s4["row"])),
                         o.payload.col.eq(s4["col"]), o.payload.layer.eq(s4["layer"]),
                         o.payload.pc.eq(s4["pc"]), o.payload.iter.eq(s4["iter"])]
        return e4


def _regs(prefix: str, **widths) -> dict:
    """A stage's registers by name: ``name -> Signal(width, name=prefix + name)``."""
    return {k: Signal(w, name=f"{prefix}{k}") for k, w in widths.items()}


def _below(v, n: int):
    """``v < n``, or constant true when every value of ``v`` is below ``n``."""
    return Const(1, 1) if n >= 1 << len(v) else v < Const(n, len(v))


UNITS = (HwUnit("lolpim_dispatcher", "LoL-PIM on-module DPA dispatcher: Dyn-Loop / Dyn-Modi "
                "programs expanded per request (LB from T_cur), virtual rows through the Va2Pa "
                "table, one PIM command a cycle (i -> o, o_status)", DispatcherConfig,
                LolpimDispatcher, DISPATCHER_PRESETS, dispatcher_cycles,
                activity=dispatcher_unit_activity,
                paper="LoL-PIM §5.3, Fig. 6c", synth_bench={"preset": "small"},
                response=dispatcher_response),)
