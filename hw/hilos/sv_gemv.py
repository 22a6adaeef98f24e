"""``sv_gemv``: the score x V GEMV, O = sum_j y_j V_j (HILOS §4.4, Fig. 7e).

Microarchitecture (numerics: :func:`pimforge.sim.golden.hilos.sv_gemv.sv_output`)::

    i_p ──► P buffer (2 slots x d_group x block fp16 y + mask bits)
                 │ y[g][j] of the row being issued (broadcast to the E lanes of query g)
    i_v ──► V beat ──► G x E widening multipliers (fp16 x fp16 -> fp32, exact)
                              │
                     accumulate(): O bank, 2 job slots x head_dim/E beats x (G x E) fp32 lanes
                              │ job complete
                     drain: query-major reads of the finished slot ─► E converts (fp32 -> fp16)
                              ─► output FIFO ─► o

* **P buffer.**  The softmax outputs of one block (``d_group`` queries x ``block`` positions,
  arriving in row-block order) fill one of two slots; ``i_p`` is ready while the slot being
  filled is free.  A block's ``keep`` bits give its number of real positions (its V rows).
* **V issue.**  ``i_v`` is ready while the slot of the block being issued is full, so the V rows
  of block b go out as soon as block b's y values are complete, one beat per cycle, straight into
  the multipliers.  Row j's beat b updates accumulator address ``(job slot, b)``: lane (g, e) is
  query g, dimension ``b E + e``; the job's first row starts the accumulators from +0.  The job
  structure comes from ``i_p`` (keep bits, ``last``); ``i_v.last`` repeats it and is not used.
* **Masking.**  A masked position's lanes multiply -0 by +0 instead of y by v: the product is
  -0 and ``x + (-0) = x`` for every x (+0, -0, Inf and NaN included), so the update is the
  identity, bit-exact with the golden model's skip, and the V row (which may hold Inf or NaN)
  never reaches the adder.  Padding (keep = 0) has no V row and is never issued.
* **Numerics.**  y v of two fp16 values is exact in fp32 (22-bit significands), so
  ``round(O + y v)`` equals the golden ``fma32(y, v, O)``, NaN and Inf cases included (the
  float library returns its canonical NaN from every operation).
* **Double-buffered O.**  Consecutive jobs use alternate slots of the accumulator bank, so the
  drain of job h (``d_group x head_dim / E`` beats) overlaps job h+1.  The first V beat of a job
  waits for a free slot (a credit: the slot is released when its drain has read it).
* **Flow control at the inputs only.**  The multipliers, the adders and the converts are
  free-running; the drain issues a read only when the output FIFO has a credit for it, so an
  output stall never needs to stop a pipeline.
"""
from __future__ import annotations

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib.wiring import In, Out

from pimforge.base.formats import FP16, FP32
from pimforge.base.numerics import log2_exact
from pimforge.hw.core.activity import SyncFIFO
from pimforge.hw.core.component import PimComponent
from pimforge.hw.core.memories import buffer
from pimforge.hw.core.unit import HwUnit
from pimforge.hw.fp.accumulate import accumulate
from pimforge.hw.fp.ops import delay, delay_valid, float_op
from pimforge.hw.hilos.config import HILOS_PRESETS, KERNEL_CLOCK, SvGemvConfig
from pimforge.hw.hilos.streams import v_signature, vec_signature, y_signature
from pimforge.hw.hilos.sv_gemv_formal import sv_response
from pimforge.hw.hilos.sv_gemv_timing import sv_cycles, sv_job_activity, sv_timing

__all__ = ["SvGemv"]

NEG_ZERO16 = 0x8000


def _popcount(bits, width: int):
    total = Const(0, range(width + 1))
    for i in range(width):
        total = total + bits[i]
    return total


class SvGemv(PimComponent):
    """The score x V GEMV.  Streams ``i_p`` (softmax outputs y, row-block order) and ``i_v`` (V
    rows of the real positions) in, ``o`` (O, d_group x head_dim fp16, query-major) out; see
    :mod:`pimforge.hw.hilos.streams`.

    ``i_v`` is taken at one beat per cycle at steady state (``throughput`` = 1.0 V beats per
    cycle, d_group x beat_elems multiply-accumulates each); O leaves ``latency`` =
    ``3 op_depth + 5`` cycles after the job's last V beat (when the drain is idle), at one beat
    per cycle, while the next job streams in.

    Parameters
    ----------
    cfg : SvGemvConfig
    """

    UNIT = "sv_gemv"

    def __init__(self, cfg: SvGemvConfig):
        super().__init__(cfg, {
            "i_p": In(y_signature(cfg.lanes)),
            "i_v": In(v_signature(cfg.beat_elems)),
            "o": Out(vec_signature(cfg.beat_elems)),
        })

    @property
    def timing(self) -> dict:
        return sv_timing(self.cfg)

    @property
    def latency(self) -> int:
        """Cycles from the last V beat of a job to its first output beat (no stalls)."""
        return self.timing["tail"]

    @property
    def throughput(self) -> float:
        """V beats per cycle at steady state."""
        return 1.0

    def manifest(self) -> dict:
        man = super().manifest()
        cfg = self.cfg
        man["timing"] = self.timing
        man["mac_lanes"] = cfg.d_group * cfg.beat_elems
        # P buffer: 2 slots of d_group x block (fp16 + mask bit); O bank: 2 slots of fp32
        man["p_buffer_bits"] = 2 * cfg.d_group * cfg.block * 17
        man["o_bank_bits"] = 2 * cfg.d_group * cfg.head_dim * 32
        return man

    # ------------------------------------------------------------------------------------------
    # The sections are added in this order, which (with the signal names) fixes the Verilog.
    def elaborate(self, platform):
        m = Module()
        p_mems, p_slots = self._p_buffer(m)
        v_state = self._v_issue(m, p_slots)
        products, mv, mtag = self._multipliers(m, p_mems, v_state)
        drain_addr, job_done, drain_word = self._o_bank(m, products, mv, mtag)
        self._drain(m, drain_addr, job_done, drain_word, v_state)
        return m

    def _p_buffer(self, m):
        """P buffer: two block slots, one memory per query.  Returns the memories and the write
        side's state (``full``, ``rows``, ``job_last``: two signals each; ``wslot`` and
        ``block_done``)."""
        cfg = self.cfg
        U, G, BB, blk = cfg.lanes, cfg.d_group, cfg.block_beats, cfg.block
        ip = self.i_p
        p_mems = []
        for g in range(G):
            p_mems.append(buffer(m, f"p_buffer{g}", 17 * U, 2 * BB))
        p_full = [Signal(name=f"p_full{s}") for s in range(2)]
        blk_n = [Signal(range(blk + 1), name=f"p_rows{s}") for s in range(2)]   # real positions
        blk_last = [Signal(name=f"p_job_last{s}") for s in range(2)]           # ends its job
        pw = Signal(name="p_wslot")
        pw_g = Signal(range(max(G, 2)), name="p_query")
        pw_k = Signal(range(BB), name="p_beat")
        keep_n = Signal(range(blk + 1), name="p_keep_count")
        m.d.comb += ip.ready.eq(~Mux(pw, p_full[1], p_full[0]))
        p_fire = Signal(name="p_fire")
        m.d.comb += p_fire.eq(ip.valid & ip.ready)
        for g, mem in enumerate(p_mems):
            wr = mem.write_port()
            m.d.comb += [wr.addr.eq(pw * BB + pw_k), wr.data.eq(Cat(ip.payload.data,
                                                                    ip.payload.mask)),
                         wr.en.eq(p_fire & (pw_g == g))]
        # the block's real positions: the keep bits of query 0's beats
        keep_next = keep_n + Mux(pw_g == 0, _popcount(ip.payload.keep, U), 0)
        p_block_done = p_fire & (pw_g == G - 1) & (pw_k == BB - 1)
        with m.If(p_fire):
            m.d.sync += [pw_k.eq(Mux(pw_k == BB - 1, 0, pw_k + 1)), keep_n.eq(keep_next)]
            with m.If(pw_k == BB - 1):
                m.d.sync += pw_g.eq(Mux(pw_g == G - 1, 0, pw_g + 1))
        with m.If(p_block_done):
            m.d.sync += [pw.eq(~pw), keep_n.eq(0)]
            for s in range(2):
                with m.If(pw == s):
                    m.d.sync += [blk_n[s].eq(keep_next), blk_last[s].eq(ip.payload.last)]
        return p_mems, {"full": p_full, "rows": blk_n, "job_last": blk_last, "wslot": pw,
                        "block_done": p_block_done}

    def _v_issue(self, m, p_slots):
        """V issue: takes V beats of the P slot being read, frees the slot after its block.
        Returns the issue state the multipliers and the drain need."""
        cfg = self.cfg
        RB, blk = cfg.row_beats, cfg.block
        iv = self.i_v
        p_full, blk_n, blk_last = p_slots["full"], p_slots["rows"], p_slots["job_last"]
        pr = Signal(name="p_rslot")
        vb = Signal(range(RB), name="v_beat")          # beat within the V row
        vj = Signal(range(blk), name="v_row")          # row within the block
        first_row = Signal(init=1, name="first_row")   # the row is its job's first
        acc_slot = Signal(name="acc_slot")             # O bank slot of the job being issued
        slots_held = Signal(range(3), name="acc_slots_held")
        cur_full = Mux(pr, p_full[1], p_full[0])
        cur_n = Mux(pr, blk_n[1], blk_n[0])
        cur_last = Mux(pr, blk_last[1], blk_last[0])
        job_begin = first_row & (vb == 0)
        m.d.comb += iv.ready.eq(cur_full & (~job_begin | (slots_held < 2)))
        v_fire = Signal(name="v_fire")
        m.d.comb += v_fire.eq(iv.valid & iv.ready)
        row_end = vb == RB - 1
        blk_end = row_end & (vj == cur_n - 1)
        job_end = blk_end & cur_last
        v_block_done = v_fire & blk_end
        with m.If(v_fire):
            m.d.sync += vb.eq(Mux(row_end, 0, vb + 1))
            with m.If(row_end):
                m.d.sync += [vj.eq(Mux(blk_end, 0, vj + 1)), first_row.eq(job_end)]
            with m.If(blk_end):
                m.d.sync += pr.eq(~pr)
            with m.If(job_end):
                m.d.sync += acc_slot.eq(~acc_slot)
        for s in range(2):
            with m.If(p_slots["block_done"] & (p_slots["wslot"] == s)):
                m.d.sync += p_full[s].eq(1)
            with m.Elif(v_block_done & (pr == s)):
                m.d.sync += p_full[s].eq(0)
        return {"rslot": pr, "beat": vb, "row": vj, "first_row": first_row, "acc_slot": acc_slot,
                "slots_held": slots_held, "job_begin": job_begin, "fire": v_fire,
                "job_end": job_end}

    def _multipliers(self, m, p_mems, v_state):
        """Multipliers: y[g][j] broadcast to query g's E lanes.  Returns the products with the
        first lane's valid and tag (``addr``, ``first``, ``end``)."""
        cfg = self.cfg
        E, U, od, RB, BB = cfg.beat_elems, cfg.lanes, cfg.op_depth, cfg.row_beats, cfg.block_beats
        iv = self.i_v
        pr, vj, vb = v_state["rslot"], v_state["row"], v_state["beat"]
        lg_u = log2_exact(U)
        y_addr = pr * BB + (vj >> lg_u)
        elem = vj[:lg_u] if lg_u else Const(0, 1)
        products, mv, mtag = [], None, None
        # the operand register (sv_timing "mul"): y and its mask bit per query and the V beat,
        # so that the P buffer's read and the beat's fan-out do not share a cycle with the
        # multipliers' first stage (on ECP5 that path set the unit's clock at op_depth 8)
        v_beat = Signal(16 * E, name="v_beat_r")
        side = delay(m, {"addr": v_state["acc_slot"] * RB + vb, "first": v_state["first_row"],
                         "end": v_state["job_end"]}, 1, name="mul_in")
        fire = delay_valid(m, v_state["fire"], 1, name="mul_in_v")
        m.d.sync += v_beat.eq(iv.payload.data)
        for g, mem in enumerate(p_mems):
            rd = mem.read_port(domain="comb")
            m.d.comb += rd.addr.eq(y_addr)
            y_g = Signal(16, name=f"y{g}")
            masked = Signal(name=f"y{g}_masked")
            with m.Switch(elem):
                for u in range(U):
                    with m.Case(u):
                        m.d.sync += [y_g.eq(rd.data[16 * u:16 * (u + 1)]),
                                     masked.eq(rd.data[16 * U + u])]
            for e in range(E):
                lane = g * E + e
                a = Mux(masked, Const(NEG_ZERO16, 16), y_g)
                b = Mux(masked, Const(0, 16), v_beat[16 * e:16 * (e + 1)])
                r, v, t = float_op(m, "mul_wide", FP32, od, {"a": a, "b": b},
                                   valid=fire if lane == 0 else None,
                                   side=side if lane == 0 else None, src=FP16,
                                   name=f"mac{lane}_mul", fire=fire)
                products.append(r["r"])
                if lane == 0:
                    mv, mtag = v, t
        return products, mv, mtag

    def _o_bank(self, m, products, mv, mtag):
        """O bank: accumulate() with two job slots.  Returns the drain's read address (driven by
        ``_drain``), the job-done strobe and the drain's read word."""
        cfg = self.cfg
        RB, od = cfg.row_beats, cfg.op_depth
        drain_addr = Signal(range(2 * RB), name="drain_addr")
        _, done_v, done_t, drain_word = accumulate(
            m, products, valid=mv, addr=mtag["addr"], first=mtag["first"], depth=2 * RB,
            op_depth=od, side={"end": mtag["end"]}, read_addr=drain_addr, name="o_acc")
        job_done = Signal(name="job_done")
        m.d.comb += job_done.eq(done_v & done_t["end"])
        return drain_addr, job_done, drain_word

    def _drain(self, m, drain_addr, job_done, drain_word, v_state):
        """Drain: query-major reads of a finished slot, fp16 converts, the output FIFO."""
        cfg = self.cfg
        E, G, od, RB = cfg.beat_elems, cfg.d_group, cfg.op_depth, cfg.row_beats
        # accumulate()'s second read port: the drain reads the finished slot while the next job
        # updates the other one.
        depth = self.timing["out_fifo"]
        pending = Signal(range(3), name="drain_pending")   # finished jobs not yet read out
        credits = Signal(range(depth + 1), init=depth, name="out_credits")
        d_slot = Signal(name="drain_slot")
        d_g = Signal(range(max(G, 2)), name="drain_query")
        d_b = Signal(range(RB), name="drain_beat")
        d_fire = Signal(name="drain_fire")
        m.d.comb += [d_fire.eq((pending != 0) & (credits != 0)),
                     drain_addr.eq(d_slot * RB + d_b)]
        d_last = d_fire & (d_g == G - 1) & (d_b == RB - 1)
        with m.If(d_fire):
            m.d.sync += d_b.eq(Mux(d_b == RB - 1, 0, d_b + 1))
            with m.If(d_b == RB - 1):
                m.d.sync += d_g.eq(Mux(d_g == G - 1, 0, d_g + 1))
        with m.If(d_last):
            m.d.sync += d_slot.eq(~d_slot)
        slots_held = v_state["slots_held"]
        m.d.sync += [pending.eq(pending + job_done - d_last),
                     slots_held.eq(slots_held + (v_state["fire"] & v_state["job_begin"]) - d_last)]
        # (a case per query, not a dynamic part-select: Amaranth's netlist checks treat every
        # output bit of a part-select as depending on every input bit)
        # registered (the read stage of sv_timing "conv"): the bank's read and the query select
        # do not share a cycle with the converts' first stage
        o_words = Signal(32 * E, name="drain_words")
        with m.Switch(d_g):
            for g in range(G):
                with m.Case(g):
                    m.d.sync += o_words.eq(drain_word[32 * E * g:32 * E * (g + 1)])
        w_valid = delay_valid(m, d_fire, 1, name="drain_words_v")
        outs, cv = [], None
        for e in range(E):
            r, v, _ = float_op(m, "convert", FP16, od, {"a": o_words[32 * e:32 * (e + 1)]},
                               valid=w_valid if e == 0 else None, src=FP32, name=f"o_conv{e}",
                               fire=w_valid)
            outs.append(r["r"])
            if e == 0:
                cv = v
        out_fifo = SyncFIFO(width=16 * E, depth=depth)
        m.submodules.out_fifo = out_fifo
        o_fire = Signal(name="o_fire")
        m.d.comb += [out_fifo.w_data.eq(Cat(*outs)), out_fifo.w_en.eq(cv),
                     self.o.valid.eq(out_fifo.r_rdy), self.o.payload.data.eq(out_fifo.r_data),
                     out_fifo.r_en.eq(self.o.ready), o_fire.eq(self.o.valid & self.o.ready)]
        m.d.sync += credits.eq(credits + o_fire - d_fire)


UNITS = (HwUnit("sv_gemv", "HILOS score x V GEMV: O = sum_j y_j V_j for d_group queries, "
                "double-buffered (i_p, i_v -> o)", SvGemvConfig, SvGemv, HILOS_PRESETS,
                sv_cycles, paper="HILOS §4.4, Fig. 7e", clocks=dict.fromkeys(HILOS_PRESETS, KERNEL_CLOCK),
                response=sv_response, activity=sv_job_activity,
                # op_depth d / E = 8, the deepest its accumulator revisit allows
                synth_bench={"set": {"beat_elems": 8, "head_dim": 64, "block": 32, "d_group": 1, "op_depth": 8}}),)
