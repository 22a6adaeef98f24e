"""``papi_pu``: a bank-level PIM processing unit of PAPI's FC-PIM (4P1B) and Attn-PIM (1P2B)
(PAPI §6.1, §6.2, §6.4).

Microarchitecture (numerics: :mod:`pimforge.sim.golden.papi.pu`; timing:
:mod:`pimforge.hw.papi.pu_timing`; the banks: :mod:`pimforge.hw.papi.hbm`)::

    i_cmd ─► job registers (reuse, beats per row, rows per bank)
    i_x ───► input buffer: per FPU p, vectors p, p + P, ... (G words of `lanes` fp16 per beat)
    i_w ───► column buffer (FIFO, wbuf beats; a beat = column j of each of the B banks)
             ─► issue: bank b's part x vector group g, one (b, g) per cycle, B G cycles a beat
             ─► P FPUs: `lanes` fp16 multipliers, an adder tree (lanes -> 1), beat k adds into
                partial k mod Q of (bank, group) ─► row finish: a pairwise tree of the Q
                partials (Q = 4: (p0 + p1) + (p2 + p3)), fp16
             ─► output FIFO ─► o (P fp16 lanes: the row's outputs for vectors g P .. g P + P - 1)

* **The FPU.**  PAPI does not describe its FPU; the reference is AttAcc's (PAPI ref. [23],
  whose 0.1025 mm2 PAPI quotes): ``lanes`` (16) fp16 multipliers fed by one 32-byte column
  read, a pairwise adder tree and an accumulator, all round-to-nearest-even operations of the
  float library (:mod:`pimforge.hw.fp`) with IEEE special values.  The accumulator keeps
  Q = ``partials`` partial sums per (row, vector) (beat k adds into k mod Q), so a partial is
  revisited every Q B G >= Q cycles, no sooner than the adder's ``op_depth`` cycles.  The
  partials live in the float library's accumulator bank
  (:func:`~pimforge.hw.fp.accumulate.accumulate`): read a cycle before the add through a
  register, with the sums that land in the read or the add cycle forwarded.
* **Mapping (§6.4).**  Row r of W lies in bank ``r mod B`` (row ``r div B`` of that bank's
  rows, one after another in its pages).  Each column read is used for all ``reuse`` input
  vectors (batch x speculation length, the data reuse of Fig. 7): the P FPUs share the weights
  and take different vectors, FPU p the vectors ``g P + p``, so a bank's column is held
  ``G = ceil(reuse / P)`` cycles.  4P1B: 4 vectors per cycle on one bank's column; 1P2B: one
  FPU takes bank 0's column then bank 1's, each for ``reuse`` cycles.
* **Commands and streams.**  ``i_cmd`` (reuse, beats = cols / lanes, rows per bank), then
  ``i_x`` the reuse vectors, vector-major, ``beats`` beats each, then ``i_w`` the banks'
  columns in row order.  For each row group and bank b, G output beats leave on ``o`` (row
  ``q B + b``, vector ``g P + p`` in lane p; lanes past ``reuse`` are +0).
* **Flow control.**  ``i_w`` is ready while the column buffer has room; the last beat of a row
  issues only with an output credit, so the free-running pipeline never overflows the FIFO.
"""
from __future__ import annotations

from dataclasses import make_dataclass

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib.wiring import In, Out

from pimforge.base.formats import FP16
from pimforge.hw.core.activity import Memory, SyncFIFO, active
from pimforge.hw.core.component import PimComponent
from pimforge.hw.core.unit import HwUnit, PresetClock
from pimforge.hw.fp.accumulate import accumulate, finish_partials
from pimforge.hw.fp.ops import add_tree, delay, float_op
from pimforge.hw.papi.config import PU_PRESETS, PapiPuConfig
from pimforge.hw.papi.hbm import PU_CLOCK_MHZ
from pimforge.hw.papi.pu_formal import pu_response
from pimforge.hw.papi.pu_timing import pu_cycles, pu_latency, pu_activity
from pimforge.hw.papi.streams import ROW_BITS, pu_signatures

__all__ = ["PapiPu"]

# The job registers and the state machine (``fsm``, set once it exists), read by every stage
JobRegs = make_dataclass("JobRegs", [(f, object, None) for f in (
    "reuse beats rows g_m1 beats_m1 reuse_m1 rows_m1 vec_mask in_row rows_out credits "
    "load_done run_done fsm").split()])


def _lane(x, i, w):
    return x[w * i:w * (i + 1)]


def _sig(m, value, shape, name):
    s = Signal(shape, name=name)
    m.d.comb += s.eq(value)
    return s


class PapiPu(PimComponent):
    """One FC-PIM / Attn-PIM slice: B banks' column reads into P FPUs (module docstring).

    ``latency``: cycles from a row's last issue cycle (per vector group) to its output beat,
    with no stalls; ``throughput``: one (bank, vector group) issue per cycle, ``P x lanes``
    multiply-adds.

    Parameters
    ----------
    cfg : PapiPuConfig
    """

    UNIT = "papi_pu"

    def __init__(self, cfg: PapiPuConfig):
        sig = pu_signatures(cfg)
        super().__init__(cfg, {k: (Out if k == "o" else In)(v) for k, v in sig.items()})

    @property
    def latency(self) -> int:
        c = self.cfg
        return pu_latency(c.lanes, c.op_depth, c.acc.width, c.partials)

    @property
    def throughput(self) -> float:
        return 1.0

    @property
    def out_fifo(self) -> int:
        """Output FIFO depth: every output in flight has a place (no stall without back-pressure)."""
        return self.latency + 2

    def manifest(self) -> dict:
        man = super().manifest()
        c = self.cfg
        man.update(layout=c.layout, pus_per_bank=str(c.pus_per_bank), latency=self.latency,
                   fp16_multipliers=c.fpus * c.lanes, out_fifo=self.out_fifo)
        return man

    # ------------------------------------------------------------------------------------------
    def elaborate(self, platform):
        m = Module()
        j = self._control(m)
        xbuf = self._load(m, j)
        s = self._issue(m, j, xbuf)
        sums, tags = self._fpus(m, s)
        fin = self._accumulate(m, j, sums, tags)
        self._output(m, j, fin)
        return m

    def _control(self, m):
        """Job registers and the state machine IDLE -> LOAD (x) -> RUN (weights) -> WAIT
        (every output written) -> IDLE."""
        cfg = self.cfg
        cmd = self.i_cmd
        mr, mb = cfg.max_reuse.bit_length(), cfg.max_beats.bit_length()
        j = JobRegs(reuse=Signal(mr, name="job_reuse"), beats=Signal(mb, name="job_beats"),
                    rows=Signal(ROW_BITS, name="job_rows"),
                    g_m1=Signal(range(max(2, cfg.max_groups)), name="job_groups_m1"),
                    beats_m1=Signal(range(max(2, cfg.max_beats)), name="job_beats_m1"),
                    reuse_m1=Signal(range(max(2, cfg.max_reuse)), name="job_reuse_m1"),
                    rows_m1=Signal(ROW_BITS, name="job_rows_m1"),
                    vec_mask=Signal(cfg.max_groups * cfg.fpus, name="job_vectors"),
                    in_row=Signal(range(max(2, cfg.max_groups * cfg.banks)),
                                  name="outputs_in_row"),
                    rows_out=Signal(ROW_BITS, name="rows_written"),
                    credits=Signal(range(self.out_fifo + 1), init=self.out_fifo,
                                   name="out_credits"),
                    load_done=Signal(name="load_done"), run_done=Signal(name="run_done"))
        groups = (cmd.payload.reuse + cfg.fpus - 1) >> (cfg.fpus.bit_length() - 1)
        with m.FSM(name="pu_state") as fsm:
            with m.State("IDLE"):
                m.d.comb += cmd.ready.eq(1)
                with m.If(cmd.valid):
                    p = cmd.payload
                    m.d.sync += [j.reuse.eq(p.reuse), j.beats.eq(p.beats),
                                 j.rows.eq(p.rows), j.g_m1.eq(groups - 1),
                                 j.in_row.eq(0), j.rows_out.eq(0),
                                 j.beats_m1.eq(p.beats - 1),
                                 j.reuse_m1.eq(p.reuse - 1), j.rows_m1.eq(p.rows - 1),
                                 j.vec_mask.eq(Cat(*[p.reuse > v
                                                        for v in range(len(j.vec_mask))]))]
                    m.next = "LOAD"
            with m.State("LOAD"):
                with m.If(j.load_done):
                    m.next = "RUN"
            with m.State("RUN"):
                with m.If(j.run_done | (j.rows == 0)):
                    m.next = "WAIT"
            with m.State("WAIT"):
                with m.If(j.rows_out == j.rows):
                    m.next = "IDLE"
        j.fsm = fsm
        return j

    def _load(self, m, j):
        """The x load: vector v, beat k into FPU ``v mod P``'s buffer at ``(v div P) MB + k``."""
        cfg = self.cfg
        P, MB, GM = cfg.fpus, cfg.max_beats, cfg.max_groups
        ix = self.i_x
        lv = Signal(range(max(2, cfg.max_reuse)), name="load_vector")
        lk = Signal(range(max(2, MB)), name="load_beat")
        fire = _sig(m, j.fsm.ongoing("LOAD") & ix.valid, 1, "load_fire")
        m.d.comb += ix.ready.eq(j.fsm.ongoing("LOAD"))
        lk_last = lk == j.beats_m1
        lv_last = lv == j.reuse_m1
        with m.If(fire):
            m.d.sync += lk.eq(Mux(lk_last, 0, lk + 1))
            with m.If(lk_last):
                m.d.sync += lv.eq(Mux(lv_last, 0, lv + 1))
        m.d.comb += j.load_done.eq(fire & lk_last & lv_last)
        lg_p = P.bit_length() - 1
        addr = _sig(m, (lv >> lg_p) * MB + lk, range(GM * MB), "load_addr")
        bufs = []
        for p in range(P):
            mem = Memory(shape=16 * cfg.lanes, depth=GM * MB, init=[])
            m.submodules[f"xbuf{p}"] = mem
            wr, rd = mem.write_port(), mem.read_port(domain="comb")
            hit = (lv[:lg_p] == p) if lg_p else Const(1, 1)
            m.d.comb += [wr.addr.eq(addr), wr.data.eq(ix.payload.data), wr.en.eq(fire & hit)]
            bufs.append(rd)
        return bufs

    def _issue(self, m, j, xbuf):
        """The column buffer and the issue counters: per cycle one (bank b, vector group g) of
        the head beat, g inner; the beat leaves the buffer at its last (b, g)."""
        cfg = self.cfg
        B, MB = cfg.banks, cfg.max_beats
        wf = SyncFIFO(width=16 * B * cfg.lanes, depth=cfg.wbuf)
        m.submodules.column_buffer = wf
        # write only on a transfer (the FIFO no-loss proof asserts no w_en while full)
        m.d.comb += [wf.w_data.eq(self.i_w.payload.data),
                     wf.w_en.eq(self.i_w.valid & wf.w_rdy), self.i_w.ready.eq(wf.w_rdy)]
        g = Signal(range(max(2, cfg.max_groups)), name="issue_group")
        b = Signal(range(max(2, B)), name="issue_bank")
        k = Signal(range(max(2, MB)), name="issue_beat")
        q = Signal(ROW_BITS, name="issue_row")
        g_last, b_last = g == j.g_m1, b == B - 1
        k_last, q_last = k == j.beats_m1, q == j.rows_m1
        can = _sig(m, j.fsm.ongoing("RUN") & wf.r_rdy & (j.rows != 0)
                   & (~k_last | (j.credits != 0)), 1, "issue_ok")
        with m.If(can):
            m.d.sync += g.eq(Mux(g_last, 0, g + 1))
            with m.If(g_last):
                m.d.sync += b.eq(Mux(b_last, 0, b + 1))
                with m.If(b_last):
                    m.d.sync += k.eq(Mux(k_last, 0, k + 1))
                    with m.If(k_last):
                        m.d.sync += q.eq(Mux(q_last, 0, q + 1))
        m.d.comb += [wf.r_en.eq(can & g_last & b_last),
                     j.run_done.eq(can & g_last & b_last & k_last & q_last)]
        o_fire = self.o.valid & self.o.ready
        m.d.sync += j.credits.eq(j.credits + o_fire - (can & k_last))
        x_addr = _sig(m, g * MB + k, range(cfg.max_groups * MB), "x_addr")
        w_b = Signal(16 * cfg.lanes, name="issue_w")
        m.d.comb += w_b.eq(wf.r_data.word_select(b, 16 * cfg.lanes) if B > 1 else wf.r_data)
        qb = cfg.partials.bit_length() - 1
        first = (k >> qb) == 0 if len(k) > qb else Const(1, 1)   # k < partials
        issue = {"w": w_b, "b": b, "g": g, "k": k[:qb], "first": first,
                 "last": k_last, "_valid": can}
        for p, rd in enumerate(xbuf):
            m.d.comb += rd.addr.eq(x_addr)
            issue[f"x{p}"] = rd.data
        return delay(m, issue, 1, name="issue_reg")

    def _fpus(self, m, s):
        """P FPUs: ``lanes`` multipliers and an adder tree each.  Returns the P beat sums and
        the tags (travelling with FPU 0)."""
        cfg = self.cfg
        kind, src = ("mul_wide", FP16) if cfg.acc.width == 32 else ("mul", None)
        sums, tags = [], None
        # the lead multiplier's valid, for the probes of the trees that carry none (a chain built
        # only while probing): every FPU multiplies and sums in every issue cycle (lanes past
        # ``reuse`` too, on stale vectors)
        lead_v = None
        for p in range(cfg.fpus):
            prods, v0, t0 = [], None, None
            for e in range(cfg.lanes):
                first = p == 0 and e == 0
                side = {k: s[k] for k in ("b", "g", "k", "first", "last")} if first else None
                r, v, t = float_op(m, kind, cfg.acc, cfg.op_depth,
                                   {"a": _lane(s["w"], e, 16), "b": _lane(s[f"x{p}"], e, 16)},
                                   valid=s["_valid"] if first else None, side=side, src=src,
                                   name=f"fpu{p}_mul{e}", fire=s["_valid"])
                prods.append(r["r"])
                if first:
                    v0, t0, lead_v = v, t, (v if active() else None)
            total, v, t = add_tree(m, cfg.acc, cfg.op_depth, prods, valid=v0, side=t0,
                                   name=f"fpu{p}_tree", fire=lead_v)
            sums.append(total)
            if p == 0:
                tags = dict(t, valid=v)
        return sums, tags

    def _accumulate(self, m, j, sums, tags):
        """Partial sums: beat k adds into partial k mod Q of (bank, group), in the float
        library's accumulator bank (read a cycle ahead, the landing sums forwarded); at a row's
        last beat the finish, a pairwise tree of the Q partials.  Returns the finished sums,
        their valid and group."""
        cfg = self.cfg
        A, od, Q = cfg.acc, cfg.op_depth, cfg.partials
        slots = cfg.banks * cfg.max_groups
        slot = _sig(m, tags["b"] * cfg.max_groups + tags["g"], range(slots), "partial_slot")
        addr = _sig(m, tags["k"] * slots + slot, range(Q * slots), "partial_addr")
        fin_slot = Signal(range(max(2, slots)), name="finish_slot")
        _, nv, nt, words = accumulate(
            m, sums, valid=tags["valid"], addr=addr, first=tags["first"], depth=Q * slots,
            op_depth=od, fmt=A, side={"slot": slot, "g": tags["g"], "last": tags["last"]},
            read_addr=[qi * slots + fin_slot for qi in range(Q)], name="partial")
        fin_v = Signal(name="finish_valid")
        fin_g = Signal.like(nt["g"], name="finish_group")
        m.d.sync += [fin_v.eq(nv & nt["last"]), fin_slot.eq(nt["slot"]), fin_g.eq(nt["g"])]
        final, fv, ft = finish_partials(m, A, od, words, j.beats, cfg.fpus, valid=fin_v,
                                        side={"g": fin_g})
        return {"vals": final, "valid": fv, "g": ft["g"]}

    def _output(self, m, j, fin):
        """fp16 (when ``acc`` is fp32), lanes past ``reuse`` as +0, the output FIFO."""
        cfg = self.cfg
        vals, valid, g = fin["vals"], fin["valid"], fin["g"]
        if cfg.acc.width == 32:
            outs, fire = [], valid
            for p, x in enumerate(vals):
                r, v, t = float_op(m, "convert", FP16, cfg.op_depth, {"a": x},
                                   valid=valid if p == 0 else None,
                                   side={"g": g} if p == 0 else None, src=cfg.acc,
                                   name=f"o_conv{p}", fire=fire)
                outs.append(r["r"])
                if p == 0:
                    valid, g = v, t["g"]
            vals = outs
        keep = [j.vec_mask.bit_select(g * cfg.fpus + p, 1) for p in range(cfg.fpus)]
        out = SyncFIFO(width=16 * cfg.fpus, depth=self.out_fifo)
        m.submodules.out_fifo = out
        m.d.comb += [out.w_data.eq(Cat(*[Mux(keep[p], x, 0) for p, x in enumerate(vals)])),
                     out.w_en.eq(valid),
                     self.o.valid.eq(out.r_rdy), self.o.payload.data.eq(out.r_data),
                     out.r_en.eq(self.o.ready)]
        # Outputs written, counted as rows (each banks x groups outputs) and outputs into the
        # row, so WAIT compares rows_written with the job's rows.  A count of outputs against
        # rows x banks x groups multiplied the command's fields in the accept cycle: 40 gate
        # levels, the unit's deepest stage at 8 partials / op_depth 8.  banks x groups - 1 is
        # groups - 1 with banks - 1 (0 or 1) shifted in: wiring.
        row_m1 = Cat(Const(cfg.banks - 1, cfg.banks.bit_length() - 1), j.g_m1)
        row_done = j.in_row == row_m1
        with m.If(valid):
            m.d.sync += [j.in_row.eq(Mux(row_done, 0, j.in_row + 1)),
                         j.rows_out.eq(Mux(row_done, j.rows_out + 1, j.rows_out))]


UNITS = (HwUnit("papi_pu", "PAPI FC-PIM / Attn-PIM bank processing unit: xPyB FPUs (fp16 "
                "multipliers + adder tree + accumulator) on HBM3 column reads, each read reused "
                "across a batch (i_cmd, i_x, i_w -> o)", PapiPuConfig, PapiPu, PU_PRESETS,
                pu_cycles, paper="PAPI §6.1, §6.2, §6.4", response=pu_response,
                activity=pu_activity,
                clocks=dict.fromkeys(PU_PRESETS, PresetClock(PU_CLOCK_MHZ,
                                                             "PAPI §6.2: the FPU clock")),
                # 8 partials at op_depth 8: the depth its small config needs for 100 MHz on ECP5
                synth_bench={"preset": "small_1p1b", "set": {"partials": 8, "op_depth": 8}}),)
