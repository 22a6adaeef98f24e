"""``hermes_gemv``: the NDP-DIMM GEMV engine (Hermes §IV-A, Table II, Fig. 6).

Microarchitecture (numerics: :mod:`pimforge.sim.golden.hermes.gemv`; rates:
:mod:`pimforge.hw.hermes.config`)::

    i_cmd ─► job registers (mode, batch b, n neurons, beats per neuron, merge)
    i_x ───► buffer: V banks of (max_groups x max_beats) words of E acc lanes   (row mode: x)
    i_w ───► issue: one weight beat (E = 8 W fp16) x V vectors per cycle, G = ceil(b / V)
             cycles per beat ─► V x E multipliers (fp16 x fp16 -> acc)
               row mode:    V adder trees (E -> 1) ─► partial banks: beat k adds into k mod Q
                            ─► row finish: pairwise tree of the Q = ``partials`` partials
               column mode: buffer[v][k] += x_c[v] * w_c[k], the partial sums of y
    i_p ───► merge: + the GPU's partial (hot neurons), then fp16 ─► output FIFO ─► o

* **Commands.**  A job is one command: ``mode`` 0 (*rows*: each neuron is a row of W, its
  output is the dot product with x; dense is every row active) or 1 (*cols*: each neuron is a
  column of W, scaled by its x value and added into y), ``batch`` (1..max_batch vectors),
  ``n`` active neurons (0 allowed) and ``beats`` per neuron (``d_in / E`` in row mode,
  ``d_out / E`` in column mode).  Jobs run one after another.
* **Streams.**  Row mode: ``i_x`` takes the b vectors, vector-major, ``beats`` beats each; then
  ``i_w`` the active rows' beats in list order; each row gives G output beats, group g's in
  lanes 0..V-1 (vector g V + u in lane u), and takes as many ``i_p`` beats when merging.
  Column mode: ``i_x`` takes one beat per active column (x_c of vector v in lane v), ``i_w`` the
  active columns' beats; then y leaves beat-major: for each beat k, vectors 0..b-1, E outputs
  each (``i_p`` in the same order when merging).  ``n = 0`` gives y = 0 (plus the merge).
* **Sparsity.**  Only active neurons' beats arrive: the index list drives the DIMM's reads
  (:mod:`pimforge.hw.hermes.dimm`: activations and bursts over the neuron-major layout), so time
  and energy follow the active count.
* **Batching.**  A beat is held for G cycles, meeting V vectors each: the weight is read once.
* **Hazards.**  A row-mode partial is revisited every Q G >= Q >= op_depth cycles, a column-mode
  sum every ``beats x G``: a column starts ``op_depth`` cycles or more after the previous one's
  virtual start (``_issue``), so stalls shorten no revisit below ``op_depth``.  Both modes read
  their sums a cycle before the add, the landing sums forwarded (:mod:`pimforge.hw.fp.accumulate`:
  the row partials in its bank, the column sums in the result buffer through ``read_stage``).
* **Flow control at the inputs.**  The pipelines are free-running; a row's last beat issues only
  with an output credit, the column drain reads only with one.
"""
from __future__ import annotations

from dataclasses import make_dataclass
from types import SimpleNamespace

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib.wiring import In, Out

from pimforge.base.formats import FP16
from pimforge.base.numerics import log2_exact
from pimforge.hw.core.activity import Memory, SyncFIFO, active
from pimforge.hw.core.component import PimComponent
from pimforge.hw.core.fanout import SplitFifo, copies
from pimforge.hw.core.unit import HwUnit
from pimforge.hw.fp.accumulate import (accumulate, finish_partials, forward_lane,
                                       forward_stage, read_stage)
from pimforge.hw.fp.ops import add_tree, delay, delay_valid, float_op, op_latency
from pimforge.hw.hermes.config import GEMV_PRESETS, NDP_CLOCK, HermesGemvConfig
from pimforge.hw.hermes.gemv_formal import gemv_response
from pimforge.hw.hermes.gemv_timing import gemv_cycles, gemv_timing, gemv_unit_activity
from pimforge.hw.hermes.streams import N_BITS, addr_signal, beat_signature, cmd_signature, lane

__all__ = ["HermesGemv"]

JobRegs = make_dataclass("JobRegs", [(f, object, None) for f in (    # _control's job registers
    "cols n_zero beats beats_m1 groups_m1 n_m1 merge bm1 vec_mask pending settle credits "
    "credit_ok load_done run_done drain_done lg_v cols_x fsm take").split()])
IssueState = make_dataclass("IssueState", [(f, object, None) for f in (    # _issue's counters
    "lk k g dk lv dv i col_age col_n load_fire can k_last drain_fire").split()])

class HermesGemv(PimComponent):
    """The NDP-DIMM GEMV engine.  Streams ``i_cmd``, ``i_x``, ``i_w``, ``i_p`` in, ``o`` out
    (see the module docstring).

    ``i_w`` is taken at one beat per G cycles (``throughput`` = 1.0 issue slot per cycle, each
    ``multipliers / serial_cycles`` word products); a row's outputs leave ``latency`` cycles
    after its last beat issues.

    Parameters
    ----------
    cfg : HermesGemvConfig
    """

    UNIT = "hermes_gemv"

    def __init__(self, cfg: HermesGemvConfig):
        super().__init__(cfg, {"i_cmd": In(cmd_signature(cfg)), "i_x": In(beat_signature(cfg)),
                               "i_w": In(beat_signature(cfg)), "i_p": In(beat_signature(cfg)),
                               "o": Out(beat_signature(cfg))})

    @property
    def timing(self) -> dict:
        return gemv_timing(self.cfg)

    @property
    def latency(self) -> int:
        """Cycles from the issue of a row's last beat to its output beat (row mode, no stalls)."""
        return self.timing["row_out"]

    @property
    def throughput(self) -> float:
        """Issue slots per cycle (a beat x V vectors each)."""
        return 1.0

    def manifest(self) -> dict:
        man = super().manifest()
        cfg = self.cfg
        man.update(timing=self.timing, word_products_per_cycle=cfg.word_products,
                   fp16_multipliers=cfg.word_products * 8, peak_gflops_at_1ghz=cfg.peak_gflops,
                   buffer_bits=cfg.vec_lanes * cfg.max_groups * cfg.max_beats * cfg.beat_elems
                   * cfg.acc.width, max_len=cfg.max_len)
        return man

    # ------------------------------------------------------------------------------------------
    def elaborate(self, platform):
        m = Module()
        j = self._control(m)
        s = self._issue(m, j)
        banks = self._buffer(m, j, s)
        prods, tags = self._multipliers(m, j, s, banks)
        rows = self._rows(m, j, s, prods, tags)
        cols = self._cols(m, j, s, banks, prods, tags)
        self._merge_out(m, j, s, rows, cols)
        return m

    def _control(self, m):
        """Job registers and the state machine: IDLE -> LOAD (row mode: x) -> RUN (weights) ->
        SETTLE and DRAIN (column mode) -> WAIT (every output written) -> IDLE."""
        cfg, tm, cmd = self.cfg, self.timing, self.i_cmd
        lg_v = log2_exact(cfg.vec_lanes)
        j = JobRegs(cols=Signal(name="job_cols"), n_zero=Signal(name="job_n_zero"),
                    beats=Signal(range(cfg.max_beats + 1), name="job_beats"),
                    beats_m1=Signal(range(max(2, cfg.max_beats)), name="job_beats_m1"),
                    groups_m1=Signal(range(max(2, cfg.max_groups)), name="job_groups_m1"),
                    n_m1=Signal(N_BITS, name="job_n_m1"), merge=Signal(name="job_merge"),
                    bm1=Signal(5, name="job_bm1"), credit_ok=Signal(init=1, name="out_credit_ok"),
                    vec_mask=Signal(cfg.max_groups * cfg.vec_lanes, name="job_vectors"),
                    pending=Signal(range(tm["out_fifo"] + 1), name="outputs_pending"),
                    settle=Signal(range(tm["settle"] + 1), name="settle_count"),
                    credits=Signal(range(tm["out_fifo"] + 1), init=tm["out_fifo"],
                                   name="out_credits"),
                    load_done=Signal(name="load_done"), run_done=Signal(name="run_done"),
                    drain_done=Signal(name="drain_done"), lg_v=lg_v)
        with m.FSM(name="gemv_state") as fsm:
            with m.State("IDLE"):
                m.d.comb += cmd.ready.eq(1)
                with m.If(cmd.valid):
                    p = cmd.payload
                    groups = (p.batch + cfg.vec_lanes - 1) >> lg_v
                    m.d.sync += j.cols.eq(p.mode)
                    # the mode again per multiplier, for its operand select (loaded here only)
                    j.cols_x = copies(m, p.mode, cfg.vec_lanes * cfg.beat_elems, "job_cols")
                    m.d.sync += [j.n_zero.eq(p.n == 0),
                                 j.beats.eq(p.beats), j.merge.eq(p.merge),
                                 j.bm1.eq(p.batch - 1),
                                 j.vec_mask.eq((Const(1, 17) << p.batch) - 1),
                                 j.beats_m1.eq(p.beats - 1),
                                 j.groups_m1.eq(groups - 1), j.n_m1.eq(p.n - 1)]
                    with m.If(~p.mode):
                        m.next = "LOAD"
                    with m.Elif(p.n == 0):
                        m.next = "DRAIN"
                    with m.Else():
                        m.next = "RUN"
            with m.State("LOAD"):
                with m.If(j.load_done):
                    with m.If(j.n_zero):
                        m.next = "WAIT"
                    with m.Else():
                        m.next = "RUN"
            with m.State("RUN"):
                with m.If(j.run_done):
                    m.d.sync += j.settle.eq(tm["settle"] - 1)
                    with m.If(j.cols):
                        m.next = "SETTLE"
                    with m.Else():
                        m.next = "WAIT"
            with m.State("SETTLE"):
                m.d.sync += j.settle.eq(j.settle - 1)
                with m.If(j.settle == 0):
                    m.next = "DRAIN"
            with m.State("DRAIN"):
                with m.If(j.drain_done):
                    m.next = "WAIT"
            with m.State("WAIT"):
                # every output taken (a credit each) written: a count, not a job-size product
                with m.If(j.pending == 0):
                    m.next = "IDLE"
        j.fsm = fsm
        return j

    def _issue(self, m, j):
        """The x load (row mode), the weight issue and the column drain's read counters; the
        stream ready signals and the output credits."""
        cfg = self.cfg
        MB = cfg.max_beats
        fsm = j.fsm
        ix, iw, ip = self.i_x, self.i_w, self.i_p
        s = IssueState(**{name: Signal(range(max(2, hi)), name=sig) for name, hi, sig in (
            ("lk", MB, "load_beat"), ("k", MB, "issue_beat"),
            ("g", cfg.max_groups, "issue_group"), ("dk", MB, "drain_beat"))})
        s.lv = Signal(5, name="load_vector")
        s.dv = Signal(5, name="drain_vector")
        s.i = Signal(N_BITS, name="issue_neuron")
        od = cfg.op_depth
        s.col_age = Signal(range(od + 1), init=od, name="col_age")
        s.col_n = Signal(range(od + 1), name="col_issued")
        # ---- x load (row mode)
        load_fire = Signal(name="load_fire")
        m.d.comb += load_fire.eq(fsm.ongoing("LOAD") & ix.valid)
        lk_last = s.lk == j.beats_m1
        with m.If(load_fire):
            m.d.sync += s.lk.eq(Mux(lk_last, 0, s.lk + 1))
            with m.If(lk_last):
                m.d.sync += s.lv.eq(Mux(s.lv == j.bm1, 0, s.lv + 1))
        m.d.comb += j.load_done.eq(load_fire & lk_last & (s.lv == j.bm1))
        # ---- weight issue
        k_last = s.k == j.beats_m1
        g_last = s.g == j.groups_m1
        n_last = s.i == j.n_m1
        col_start = (s.k == 0) & (s.g == 0)
        need_p = ~j.cols & j.merge & k_last
        need_credit = ~j.cols & k_last
        can = Signal(name="issue_ok")
        m.d.comb += can.eq(fsm.ongoing("RUN") & iw.valid & (~j.cols | ix.valid)
                           & (~need_p | ip.valid) & (~need_credit | j.credit_ok)
                           & (~j.cols | ~col_start | (s.col_age == od)))
        with m.If(can):
            m.d.sync += s.g.eq(Mux(g_last, 0, s.g + 1))
            with m.If(g_last):
                m.d.sync += s.k.eq(Mux(k_last, 0, s.k + 1))
                with m.If(k_last):
                    m.d.sync += s.i.eq(Mux(n_last, 0, s.i + 1))
        m.d.comb += j.run_done.eq(can & g_last & k_last & n_last)
        # col_age: cycles since the previous column's virtual start, its last issue cycle less
        # its issue count P (at most od, counted in col_n): a column may start when it is od.
        # Stalls inside that column then shorten no address's revisit below od (from its start
        # alone they would: the late beats of a stalled column and the prompt ones of the next)
        issued = Mux(col_start, 1, Mux(s.col_n == od, od, s.col_n + 1))
        with m.If(can & j.cols):
            m.d.sync += s.col_n.eq(issued)
        with m.If(can & j.cols & g_last & k_last):
            m.d.sync += s.col_age.eq(issued)
        with m.Elif(s.col_age != od):
            m.d.sync += s.col_age.eq(s.col_age + 1)
        # ---- column drain: for each beat k, vectors 0..b-1
        drain_fire = Signal(name="drain_fire")
        m.d.comb += drain_fire.eq(fsm.ongoing("DRAIN") & (~j.merge | ip.valid)
                                  & j.credit_ok)
        dv_last = s.dv == j.bm1
        dk_last = s.dk == j.beats_m1
        with m.If(drain_fire):
            m.d.sync += s.dv.eq(Mux(dv_last, 0, s.dv + 1))
            with m.If(dv_last):
                m.d.sync += s.dk.eq(Mux(dk_last, 0, s.dk + 1))
        m.d.comb += [
            j.drain_done.eq(drain_fire & dv_last & dk_last),
            ix.ready.eq(load_fire | (can & j.cols & g_last & k_last)),
            iw.ready.eq(can & g_last),
            ip.ready.eq((can & need_p) | (drain_fire & j.merge)),
        ]
        # output credits: reserved by a row's last-beat issue or a drain read, returned a cycle
        # after a transfer ("one left" a register too, so `o` does not run through the count)
        ret, take, c = Signal(name="credit_ret"), (can & need_credit) | drain_fire, j.credits
        j.take = take
        m.d.sync += [ret.eq(self.o.valid & self.o.ready), c.eq(c + ret - take),
                     j.credit_ok.eq(ret | (c > 1) | ((c == 1) & ~take))]
        s.load_fire, s.can, s.k_last, s.drain_fire = load_fire, can, k_last, drain_fire
        return s

    def _buffer(self, m, j, s):
        """The result buffer: V banks, one per vector lane u, each max_groups x max_beats words
        of E acc lanes.  Row mode: x (fp16 in each lane's low bits), written by the load and
        read at issue.  Column mode: the partial sums of y.  Returns per bank the write port,
        the read port shared by the issue (row mode) and the update (column mode), and the
        drain's read port."""
        cfg = self.cfg
        V, MB, E, A = cfg.vec_lanes, cfg.max_beats, cfg.beat_elems, cfg.acc.width
        lg_v = j.lg_v
        banks = []
        x_word = Cat(*[Cat(lane(self.i_x.payload.data, e, 16), Const(0, A - 16))
                       for e in range(E)])
        depth = cfg.max_groups * MB
        load_addr = addr_signal(m, (s.lv >> lg_v) * MB + s.lk, depth, "load_addr")
        drain_addr = addr_signal(m, (s.dv >> lg_v) * MB + s.dk, depth, "drain_addr")
        # the drain reads the buffer when the merge partial it read from i_p is converted
        drain_addr = delay(m, {"a": drain_addr}, self.timing["conv_p"], "drain_addr_d")["a"]
        for u in range(V):
            mem = Memory(shape=E * A, depth=depth, init=[])
            m.submodules[f"buffer{u}"] = mem
            wr, rd, dr = mem.write_port(), mem.read_port(domain="comb"), \
                mem.read_port(domain="comb")
            lv_u = s.lv[:lg_v] == u if lg_v else Const(1, 1)
            # the load's address and data are the write port's defaults, only its enable waits
            # for the load handshake (under m.If(load_fire) it selected every bank's data bits)
            m.d.comb += [wr.addr.eq(load_addr), wr.data.eq(x_word),
                         wr.en.eq(s.load_fire & lv_u)]
            m.d.comb += dr.addr.eq(drain_addr)
            banks.append({"wr": wr, "rd": rd, "dr": dr})
        return banks

    def _multipliers(self, m, j, s, banks):
        """The issue register, then V x E multipliers, all busy in every issue cycle: w[e]
        times x_v[k E + e] (row mode) or times x_c[v] (column mode).  Returns the products
        [u][e] and the tags of lane (0, 0)."""
        cfg = self.cfg
        V, E, A, od = cfg.vec_lanes, cfg.beat_elems, cfg.acc.width, cfg.op_depth
        ixd = self.i_x.payload.data
        xs = []
        for u in range(V):
            x_u = Signal(16, name=f"x_col{u}")
            with m.Switch(s.g):
                for g in range(cfg.max_groups):
                    if g * V + u < E:
                        with m.Case(g):
                            m.d.comb += x_u.eq(lane(ixd, g * V + u, 16))
                with m.Default():
                    m.d.comb += x_u.eq(0)
            xs.append(x_u)
        issue = {"w": self.i_w.payload.data, "cols": j.cols, "g": s.g, "k": s.k,
                 "first_r": s.k < cfg.partials, "first_c": s.i == 0, "last": s.k_last,
                 "_valid": s.can}
        # x_c or the x row's lane, selected before the issue register by the multiplier's copy
        # of the mode, so the mux stays out of the multipliers' first stage
        for u in range(V):
            for e in range(E):
                issue[f"b{u}_{e}"] = Mux(j.cols_x[u * E + e], xs[u],
                                         lane(banks[u]["rd"].data, e, A)[:16])
        r1 = delay(m, issue, 1, name="issue_reg")
        kind, src = ("mul_wide", FP16) if A == 32 else ("mul", None)
        prods, tags = [], None
        for u in range(V):
            row = []
            for e in range(E):
                b = r1[f"b{u}_{e}"]
                side = None
                if u == 0 and e == 0:
                    side = {k: r1[k] for k in ("cols", "g", "k", "first_r", "first_c", "last")}
                r, v, t = float_op(m, kind, cfg.acc, od, {"a": lane(r1["w"], e, 16), "b": b},
                                   valid=r1["_valid"] if side else None, side=side, src=src,
                                   name=f"mul{u}_{e}", fire=r1["_valid"])
                row.append(r["r"])
                if side:
                    tags = dict(t, valid=v)
            prods.append(row)
        return prods, tags

    def _rows(self, m, j, s, prods, tags):
        """Row mode: V adder trees, the partial banks (beat k adds into partial k mod Q of its
        vector group) and the row finish.  Returns the finished sums (V lanes), their valid,
        the finish's start (``fin_v``) and the merge partials' FIFO (read by the merge)."""
        cfg = self.cfg
        V, od, GM = cfg.vec_lanes, cfg.op_depth, cfg.max_groups
        sums = []
        tv = tags["valid"] & ~tags["cols"]
        row_v = tv if active() else None    # the trees' probes, while probing (row mode)
        tt = {"g": tags["g"], "k": tags["k"][:log2_exact(cfg.partials)],
              "first_r": tags["first_r"], "last": tags["last"]}
        for u in range(V):
            # the tags travel with lane 0's tree
            total, v, t = add_tree(m, cfg.acc, od, prods[u], valid=tv if u == 0 else None,
                                   side=tt if u == 0 else None, name=f"tree{u}", fire=row_v)
            if u == 0:
                tv, tt = v, t
            sums.append(total)
        # partial banks: the float library's accumulator bank, address (k mod Q) x GM + g, V acc
        # lanes a word (read a cycle before the add, the landing sums forwarded)
        Q = cfg.partials
        addr = addr_signal(m, tt["k"] * GM + tt["g"], Q * GM, "partial_addr")
        fin_g = Signal(range(max(2, GM)), name="finish_group")
        _, nv, nt, words = accumulate(
            m, sums, valid=tv, addr=addr, first=tt["first_r"], depth=Q * GM, op_depth=od,
            fmt=cfg.acc, side={"g": tt["g"], "last": tt["last"]},
            read_addr=[q * GM + fin_g for q in range(Q)], name="partial")
        # the merge partials wait in a FIFO from the row's last-beat issue to its finish
        pf = SyncFIFO(width=16 * V, depth=self.timing["out_fifo"])
        m.submodules.p_fifo = pf
        # lanes of vectors beyond the batch (the last group's) take a +0 partial, leave as +0
        pk = Cat(*[j.vec_mask.bit_select(s.g * V + u, 1).replicate(16) for u in range(V)])
        m.d.comb += [pf.w_data.eq(self.i_p.payload.data[:16 * V] & pk),
                     pf.w_en.eq(s.can & ~j.cols & j.merge & s.k_last)]
        # row finish, the cycle after the last partial landed: the pairwise tree of the Q partials
        fin_v = Signal(name="finish_valid")
        m.d.sync += [fin_v.eq(nv & nt["last"]), fin_g.eq(nt["g"])]
        final, fv, ft = finish_partials(m, cfg.acc, od, words, j.beats, V, valid=fin_v,
                                        side={"g": fin_g})
        final = [Mux(j.vec_mask.bit_select(ft["g"] * V + u, 1), x, 0) for u, x in enumerate(final)]
        return {"valid": fv, "vals": final, "fin_v": fin_v, "pf": pf}

    def _cols(self, m, j, s, banks, prods, tags):
        """Column mode: buffer[u][g MB + k] += x_c[v] w_c[k], then the drain's reads, ``conv_p``
        cycles after each drain step.  Returns their valid and word (E acc lanes)."""
        cfg = self.cfg
        V, E, A, od, MB = cfg.vec_lanes, cfg.beat_elems, cfg.acc.width, cfg.op_depth, cfg.max_beats
        depth = cfg.max_groups * MB
        issue_addr = addr_signal(m, s.g * MB + s.k, depth, "issue_addr")
        upd_addr = addr_signal(m, tags["g"] * MB + tags["k"], depth, "update_addr")
        cv = tags["valid"] & tags["cols"]
        for u in range(V):
            wr, rd = banks[u]["wr"], banks[u]["rd"]
            m.d.comb += rd.addr.eq(Mux(j.cols, upd_addr, issue_addr))
            # the float library's registered read stage, both landing sums forwarded from the
            # adders (the write port's data also carries the row-mode x load)
            land = SimpleNamespace(en=Signal(name=f"colland{u}_en"),
                                   addr=Signal.like(upd_addr, name=f"colland{u}_addr"),
                                   data=Signal(E * A, name=f"colland{u}_data"))
            fwd, st, sv = read_stage(
                m, land.data, rd.data, addr=upd_addr, first=tags["first_c"], valid=cv, op_depth=od,
                carry={"_addr": upd_addr, **{f"_p{e}": prods[u][e] for e in range(E)}},
                name=f"colrd{u}", lanes=E)
            outs, ov, ot = [], None, None
            for e in range(E):
                first = e == 0
                r, v, t = float_op(m, "add", cfg.acc, od, forward_lane(fwd, e, st[f"_p{e}"]),
                                   valid=sv if first else None,
                                   side={"addr": st["_addr"]} if first else None,
                                   name=f"colacc{u}_{e}", pre=forward_stage, fire=sv)
                outs.append(r["r"])
                if first:
                    ov, ot = v, t
            m.d.comb += [land.en.eq(ov), land.addr.eq(ot["addr"]), land.data.eq(Cat(*outs))]
            with m.If(ov):
                m.d.comb += [wr.addr.eq(land.addr), wr.data.eq(land.data), wr.en.eq(1)]
        word = Signal(E * A, name="drain_word")
        lg_v = j.lg_v
        cp = self.timing["conv_p"]
        sel = delay(m, {"s": s.dv[:lg_v]}, cp, "drain_sel")["s"] if lg_v else Const(0, 1)
        with m.Switch(sel):
            for u in range(V):
                with m.Case(u):
                    m.d.comb += word.eq(Mux(j.n_zero, 0, banks[u]["dr"].data))
        return {"valid": delay_valid(m, s.drain_fire, cp, "drain_rd_v"), "word": word}

    def _merge_out(self, m, j, s, rows, cols):
        """The merge partial (fp16) converted to acc while the value it meets is summed (row
        mode: the finish tree; column mode: the drain's read waits for it), + the value, fp16,
        the output FIFO.  Without a merge the partial is -0: v + (-0) = v for every v (NaNs
        are the library's canonical ones): no unmerged value waits beside the adder, and every
        output is merged in all E lanes (the probes' ``merge_fire``, built while probing)."""
        cfg = self.cfg
        V, E, A, od = cfg.vec_lanes, cfg.beat_elems, cfg.acc.width, cfg.op_depth
        tm = self.timing
        # row mode: the FIFO's partial is read when its conversion ends with the finish tree
        row_rd = delay_valid(m, rows["fin_v"], tm["finish"] - tm["conv_p"], "p_row_rd")
        pf = rows["pf"]
        m.d.comb += pf.r_en.eq(row_rd & j.merge)
        p_in = [Mux(j.merge, Mux(row_rd, lane(pf.r_data, e, 16) if e < V else 0,
                                    lane(self.i_p.payload.data, e, 16)), 0x8000)
                for e in range(E)]
        if tm["conv_p"]:
            # registered (in conv_p): the FIFO's LUT-RAM read ran into the convert (ECP5).  An
            # fp16 value (NaN canonical) in acc has low fraction bits 0: constants in the merge
            p_reg = Signal(16 * E, name="p_in", reset_less=True)
            m.d.sync += p_reg.eq(Cat(*p_in))
            z = cfg.acc.frac_bits - FP16.frac_bits
            # the probes: p_reg holds an output's partial after its row's or drain step's read
            p_fire = delay_valid(m, row_rd | s.drain_fire, 1, "p_conv_fire") if active() else None
            p_in = [Cat(Const(0, z), float_op(m, "convert", cfg.acc, od, {"a": lane(p_reg, e, 16)},
                                              src=FP16, name=f"p_conv{e}", fire=p_fire)[0]["r"][z:])
                    for e in range(E)]
        rv = rows["valid"]
        # registered inputs (a cycle of ``final``): rows, drain and partials meet from afar
        vals = Signal(A * E, name="merge_in_vals", reset_less=True)
        pm = Signal(A * E, name="merge_in_p", reset_less=True)
        m.d.sync += [vals.eq(Mux(rv, Cat(*rows["vals"], Const(0, A * (E - V))), cols["word"])),
                     pm.eq(Cat(*p_in))]
        merge_fire = delay_valid(m, rv | cols["valid"], 1, "merge_fire") if active() else None
        conv_fire = delay_valid(m, merge_fire, op_latency("add", od), "o_conv") if active() else None
        outs = []
        for e in range(E):
            res = float_op(m, "add", cfg.acc, od, {"a": lane(vals, e, A), "b": lane(pm, e, A)},
                           name=f"merge{e}", fire=merge_fire)[0]["r"]
            if A == 32:
                res = float_op(m, "convert", FP16, od, {"a": res}, src=cfg.acc,
                               name=f"o_conv{e}", fire=conv_fire)[0]["r"]
            outs.append(res)
        # SyncFIFO's ports and cycles, in LUT-RAM: a block RAM's clock-to-out into ``o`` would
        # be the unit's longest path
        out_fifo = SplitFifo([16 * E], self.timing["out_fifo"], "out_fifo", lut_ram=True)
        m.submodules.out_fifo = out_fifo
        # the valid bit in two chains of its own (not through lane 0's operators, not one forking
        # chain): the FIFO's write enable and the written count, each next to its readers
        w_data = Signal(16 * E, name="out_w_data", reset_less=True)
        m.d.sync += w_data.eq(Cat(*outs))
        lat = op_latency("add", od) + (op_latency("convert", od) if A == 32 else 0) + 1
        w_en, count = [delay_valid(m, v, lat, f"out_v{k}_")
                       for k, v in enumerate(copies(m, rv | cols["valid"], 2, "merge_in_valid"))]
        m.d.comb += [out_fifo.w_data.eq(w_data), out_fifo.w_en.eq(w_en),
                     self.o.valid.eq(out_fifo.r_rdy), self.o.payload.data.eq(out_fifo.r_data),
                     out_fifo.r_en.eq(self.o.ready)]
        m.d.sync += j.pending.eq(j.pending + j.take - count)


UNITS = (HwUnit("hermes_gemv", "Hermes NDP-DIMM GEMV engine: dense, batched, row- and "
                "column-sparse y = W x with the GPU merge (i_cmd, i_x, i_w, i_p -> o)",
                HermesGemvConfig, HermesGemv, GEMV_PRESETS, gemv_cycles, response=gemv_response,
                activity=gemv_unit_activity,
                paper="Hermes §IV-A, Table II, Fig. 6", clocks=dict.fromkeys(GEMV_PRESETS, NDP_CLOCK),
                # 8 partials, op_depth 8: 100 MHz on ECP5; its placement takes up to 20 minutes
                synth_bench={"set": {"multipliers": 8, "serial_cycles": 8, "beat_words": 1,
                                     "max_batch": 2, "buffer_bytes": 512, "partials": 8,
                                     "op_depth": 8}, "timeout_s": 1200}),)
