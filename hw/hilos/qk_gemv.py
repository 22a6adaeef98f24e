"""``qk_gemv``: the query-key GEMV with the online block transpose (HILOS §4.4, Fig. 7d).

The paper's unit "loads a 128 x 128 square block of the Key matrix into an on-chip buffer
(K-Buf), performs the transposition locally, then stores the transposed matrix to another
on-chip buffer (K^T-Buf)" and streams its columns to the MACs with q broadcast.  Here the
transpose is a *view*, not a second buffer::

    i_q ──► Q buffer (2 jobs x d_group x head_dim fp16) ── q[g][i] broadcast ──┐
                                                                                ▼
    i_k ──► K-Buf: E skewed 16-bit banks, 2 tiles ──► K^T view ──► E x d_group MAC lanes
            (a beat rotated by its token, one   column slice: dim i of     │ lane (g, e):
             element per bank)                  tokens tE .. tE+E-1        │ block/E token
                                                                               │ accumulators
            score buffer (2 tiles x d_group x block, raw fp32 sums) ◄── i = d-1 ┘
                 │ U sums a cycle, row-block order
                 └──► x scale (U multipliers) ──► score_fmt ──► output FIFO ──► o

* **K-Buf and K^T view.**  A K row arrives as ``R = head_dim / E`` beats of E dims.  The K-Buf
  is E banks of 16-bit words, skewed: element c of a beat of token u (mod E) goes to bank
  ``(u + c) mod E`` (the beat rotated by u elements), every bank at the address (tile, token,
  beat).  So the E elements of a beat land in E different banks, and so do dim i of E
  consecutive tokens (token u's is in bank ``(u + i) mod E``): bank b reads token
  ``(b - i) mod E`` and the E words, rotated back by ``i mod E``, are a column of ``K^T``.  The
  banks, read column-wise, *are* the K^T-Buf (no copy is made and no cycle is spent
  transposing); each reads one 16-bit word a cycle, registered, so a bank of 2 tiles x
  ``block x R`` words is block RAM (:mod:`pimforge.hw.core.memories`: one 18-Kbit block at
  the paper's sizes).  The K-Buf holds two tiles of ``block`` tokens: one loads while the MAC
  array works on the other.
* **MAC array.**  ``E x d_group`` lanes; lane (g, e) multiplies q[g][i] (fp16 x fp16, exact in
  fp32) and adds it into accumulator t of its bank (``block / E`` accumulators of
  :func:`~pimforge.hw.fp.accumulate.accumulate`, the first dim reads +0).  Order: for i in
  0..d-1, for t in 0..block/E-1, one cycle each.  A tile takes ``block x head_dim / E`` cycles:
  its load time, so at one K beat per cycle the array never idles.  (The paper's ``block`` MACs
  per query would finish a column in one cycle, then wait ``block / E`` cycles for the next
  tile.)  A short last tile is computed as a whole one; its missing tokens leave with keep = 0.
* **Partial sums** (``partials`` Q > 1).  Dim i adds into partial ``i mod Q`` of its token, so
  an accumulator comes back every ``Q x block / E`` cycles instead of ``block / E``: room for an
  adder ``op_depth`` deeper than ``block / E`` (the accumulators are Q x block / E per lane).
* **Scores.**  The sums of the last dim (of the last Q dims: one memory per partial) go, raw,
  into a double-buffered score buffer; the drain reads U of them a cycle in row-block order,
  sums the Q partials pairwise (adjacent pairs first), scales them (fp32 multiply, as the golden
  model) and rounds them to ``score_fmt``.  Scaling at the drain needs U multipliers instead of
  ``E x d_group``: the drain rate (G x block / U beats a tile) never exceeds the tile rate.
* **Flow control** is at the inputs only; every datapath is free-running.  A K beat is accepted
  while its K-Buf half is not full; a Q beat while its Q bank (two: the next job's Q loads while
  the current job computes) is free.  A tile computes when its K-Buf half is full (``block``
  rows or the job's last beat) and its job's Q is loaded; its last dim (the pass that writes the
  score buffer) waits until its score-buffer half is drained.  The drain reads only with an
  output FIFO credit, so back-pressure on ``o`` stops the drain, the last dim, then K.

Numerics are :func:`pimforge.sim.golden.hilos.qk_gemv.qk_scores` bit for bit: ``fma32(q, k, acc)``
equals ``add32(mul_wide(q, k), acc)`` because an fp16 x fp16 product is exact in fp32.
"""
from __future__ import annotations

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib.wiring import In, Out

from pimforge.base.formats import FP16, FP32
from pimforge.base.numerics import log2_exact, scale_bits
from pimforge.hw.core.component import PimComponent
from pimforge.hw.core.fanout import SplitFifo, copies
from pimforge.hw.core.memories import buffer
from pimforge.hw.core.pipeline import levels
from pimforge.hw.core.unit import HwUnit
from pimforge.hw.fp.accumulate import accumulate
from pimforge.hw.fp.core import LV_MUX
from pimforge.hw.fp.ops import add_partials, delay, delay_valid, float_op
from pimforge.hw.hilos.blocks import rotate_elems
from pimforge.hw.hilos.config import HILOS_PRESETS, KERNEL_CLOCK, QkGemvConfig
from pimforge.hw.hilos.qk_gemv_timing import qk_cycles, qk_job_activity, qk_tail_cycles, qk_timing
from pimforge.hw.hilos.streams import k_signature, score_signature, vec_signature

__all__ = ["QkGemv"]


class QkGemv(PimComponent):
    """Q.K^T of one KV head's ``d_group`` queries against a stream of K rows (see the module
    docstring for the microarchitecture and :mod:`pimforge.hw.hilos.streams` for the beats).

    Latency: :attr:`latency` cycles from a tile's last K beat to its first score beat when the
    MAC array is idle.  Throughput: one K beat per cycle at steady state (the MAC array is busy
    every cycle while K streams in); scores leave at up to one beat of U per cycle.

    Parameters
    ----------
    cfg : QkGemvConfig
    """

    UNIT = "qk_gemv"

    def __init__(self, cfg: QkGemvConfig):
        E, U = cfg.beat_elems, cfg.lanes
        super().__init__(cfg, {
            "i_q": In(vec_signature(E)),
            "i_k": In(k_signature(E)),
            "o": Out(score_signature(U, cfg.score_fmt)),
        })

    @property
    def timing(self) -> dict:
        return qk_timing(self.cfg)

    @property
    def latency(self) -> int:
        """Cycles from the last K beat of a tile to its first score beat (MAC array idle, Q
        loaded, no stalls)."""
        return qk_tail_cycles(self.cfg)

    @property
    def throughput(self) -> float:
        """K beats per cycle at steady state."""
        return 1.0

    def manifest(self) -> dict:
        cfg = self.cfg
        man = super().manifest()
        man["timing"] = self.timing
        man["mac_lanes"] = cfg.beat_elems * cfg.d_group
        man["k_buf_bits"] = 2 * cfg.block * cfg.head_dim * 16
        man["score_buffer_bits"] = 2 * cfg.d_group * cfg.block * 32 * cfg.partials
        man["q_buffer_bits"] = 2 * cfg.d_group * cfg.head_dim * 16
        return man

    # ------------------------------------------------------------------------------------------
    # The sections are added in this order, which (with the signal names) fixes the Verilog.
    def elaborate(self, platform):
        m = Module()
        q_loaded, q_rd = self._q_buffer(m)
        k_tiles, k_rd = self._k_buf(m)
        s_tiles, mac = self._mac_issue(m, q_loaded, q_rd, k_tiles, k_rd)
        sums, a_valid, a_tag = self._mac_array(m, mac, k_rd, q_rd)
        s_rd = self._score_buffer(m, sums, a_valid, a_tag, s_tiles["ready"])
        d_valid, d_tag, out_fifo = self._drain_issue(m, s_tiles, s_rd)
        self._drain_scale(m, s_rd, d_valid, d_tag, out_fifo)
        return m

    def _q_buffer(self, m):
        """Q buffer: one memory per query, two job banks.  Returns the banks' loaded flags and
        the read port of each query's memory."""
        cfg = self.cfg
        E, G, R = cfg.beat_elems, cfg.d_group, cfg.row_beats
        q_loaded = [Signal(name=f"q_loaded{b}") for b in range(2)]
        wq = Signal(name="q_write_bank")
        q_g = Signal(range(G), name="q_query")
        q_w = Signal(range(R), name="q_beat")
        q_ready = Signal(name="q_ready")
        m.d.comb += [q_ready.eq(Mux(wq, q_loaded[1], q_loaded[0]) == 0),
                     self.i_q.ready.eq(q_ready)]
        q_fire = self.i_q.valid & q_ready
        q_rd = []
        for g in range(G):
            mem = buffer(m, f"q_buf{g}", 16 * E, 2 * R)
            wr = mem.write_port()
            m.d.comb += [wr.addr.eq(Cat(q_w, wq)), wr.data.eq(self.i_q.payload.data),
                         wr.en.eq(q_fire & (q_g == g))]
            q_rd.append(mem.read_port())
        with m.If(q_fire):
            m.d.sync += q_w.eq(q_w + 1)             # R is a power of two: wraps
            with m.If(q_w == R - 1):
                m.d.sync += q_g.eq(Mux(q_g == G - 1, 0, q_g + 1))
                with m.If(q_g == G - 1):
                    m.d.sync += wq.eq(~wq)
                    for b in range(2):
                        with m.If(wq == b):
                            m.d.sync += q_loaded[b].eq(1)
        return q_loaded, q_rd

    def _k_buf(self, m):
        """K-Buf: E skewed banks of 16-bit words, 2 tiles x block tokens x head_dim dims between
        them.  Returns the two halves' tile descriptors (``full``, ``mask``, ``count``,
        ``last``: a list of two signals each) and the read port of each bank."""
        cfg = self.cfg
        E, B, R = cfg.beat_elems, cfg.block, cfg.row_beats
        le = log2_exact(E)
        k_full = [Signal(name=f"k_full{h}") for h in range(2)]
        k_mask = [Signal(B, name=f"k_mask{h}") for h in range(2)]
        k_count = [Signal(range(B + 1), name=f"k_count{h}") for h in range(2)]
        k_last = [Signal(name=f"k_last{h}") for h in range(2)]
        wh = Signal(name="k_write_half")
        k_tok = Signal(range(B), name="k_token")
        k_b = Signal(range(R), name="k_beat")
        k_ready = Signal(name="k_ready")
        m.d.comb += [k_ready.eq(Mux(wh, k_full[1], k_full[0]) == 0),
                     self.i_k.ready.eq(k_ready)]
        k_fire = self.i_k.valid & k_ready
        row_end = k_fire & (k_b == R - 1)
        tile_end = row_end & ((k_tok == B - 1) | self.i_k.payload.last)
        # element c of token u (mod E) goes to bank (u + c) mod E: the beat rotated by u elements
        k_skewed = rotate_elems(m, self.i_k.payload.data, k_tok[:le], 16, left=True,
                                name="k_skew")
        k_rd = []
        for e in range(E):
            mem = buffer(m, f"k_buf{e}", 16, 2 * B * R)
            wr = mem.write_port()
            m.d.comb += [wr.addr.eq(Cat(k_b, k_tok, wh)),
                         wr.data.eq(k_skewed[16 * e:16 * (e + 1)]), wr.en.eq(k_fire)]
            k_rd.append(mem.read_port())
        # the mask bit is written a cycle late, from registers (not from the input handshake
        # into 2 x block enables); the tile's last-dim pass, which reads it, is >= 2 cycles on
        pend = delay(m, {"en": k_fire, "h": wh, "tok": k_tok, "mask": self.i_k.payload.mask}, 1,
                     name="k_mask_wr")
        for h in range(2):
            with m.If(pend["en"] & (pend["h"] == h)):
                m.d.sync += k_mask[h].bit_select(pend["tok"], 1).eq(pend["mask"])
        with m.If(k_fire):
            m.d.sync += k_b.eq(k_b + 1)
        with m.If(row_end):
            m.d.sync += k_tok.eq(k_tok + 1)
        with m.If(tile_end):
            m.d.sync += [k_tok.eq(0), wh.eq(~wh)]
            for h in range(2):
                with m.If(wh == h):
                    m.d.sync += [k_full[h].eq(1), k_count[h].eq(k_tok + 1),
                                 k_last[h].eq(self.i_k.payload.last)]
        return {"full": k_full, "mask": k_mask, "count": k_count, "last": k_last}, k_rd

    def _mac_issue(self, m, q_loaded, q_rd, k_tiles, k_rd):
        """MAC issue: for i in 0..d-1, for t in 0..block/E-1.  Drives the K-Buf and Q read
        addresses; returns the score-buffer halves' descriptors (``owned``, ``ready``, ``mask``,
        ``count``, ``last``) and the issue state the K^T view needs (``issue``, ``step``,
        ``t``, ``i_lo``, ``half``)."""
        cfg = self.cfg
        E, D, B, Q = cfg.beat_elems, cfg.head_dim, cfg.block, cfg.partials
        T = B // E
        lt, le = log2_exact(T), log2_exact(E)
        k_full, k_mask, k_count, k_last = (k_tiles[k] for k in ("full", "mask", "count", "last"))
        s_owned = [Signal(name=f"score_owned{h}") for h in range(2)]
        s_ready = [Signal(name=f"score_ready{h}") for h in range(2)]
        s_mask = [Signal(B, name=f"score_mask{h}") for h in range(2)]
        s_count = [Signal(range(B + 1), name=f"score_count{h}") for h in range(2)]
        s_last = [Signal(name=f"score_last{h}") for h in range(2)]
        ch = Signal(name="compute_half")        # K-Buf half read = score-buffer half written
        qb = Signal(name="q_read_bank")
        step = Signal(range(T * D), name="mac_step")
        t = step[:lt]
        i_lo = step[lt:lt + le]
        i_hi = step[lt + le:]
        final_start = step == (D - Q) * T       # the last Q dims write the score buffer
        last_step = step == T * D - 1
        cur_full = Mux(ch, k_full[1], k_full[0])
        cur_q = Mux(qb, q_loaded[1], q_loaded[0])
        cur_owned = Mux(ch, s_owned[1], s_owned[0])
        cur_job_last = Mux(ch, k_last[1], k_last[0])
        issue = Signal(name="mac_issue")
        m.d.comb += issue.eq(cur_full & cur_q & ~(final_start & cur_owned))
        # dim i of token tE + u lies in bank (u + i) mod E: bank b reads token u = (b - i) mod E
        for b, r in enumerate(k_rd):
            u = (Const(b, le) - i_lo)[:le]
            m.d.comb += r.addr.eq(Cat(i_hi, u, t, ch))
        for r in q_rd:
            m.d.comb += r.addr.eq(Cat(i_hi, qb))
        # the banks and Q read only for an issue: their words reach a multiplier only under its
        # valid, so the reads in between (which would hold the same data) are not made
        m.d.comb += [r.en.eq(issue) for r in k_rd + q_rd]
        with m.If(issue):
            m.d.sync += step.eq(step + 1)
            with m.If(final_start):
                # the tile's descriptor moves with it to the score-buffer half it now owns
                for h in range(2):
                    with m.If(ch == h):
                        m.d.sync += [s_owned[h].eq(1), s_mask[h].eq(k_mask[h]),
                                     s_count[h].eq(k_count[h]), s_last[h].eq(k_last[h])]
            with m.If(last_step):
                m.d.sync += ch.eq(~ch)
                for h in range(2):
                    with m.If(ch == h):
                        m.d.sync += k_full[h].eq(0)
                with m.If(cur_job_last):
                    m.d.sync += qb.eq(~qb)
                    for b in range(2):
                        with m.If(qb == b):
                            m.d.sync += q_loaded[b].eq(0)
        s_tiles = {"owned": s_owned, "ready": s_ready, "mask": s_mask, "count": s_count,
                   "last": s_last}
        return s_tiles, {"issue": issue, "step": step, "t": t, "i_lo": i_lo, "half": ch,
                         "part": step[lt:lt + log2_exact(Q)]}

    def _mac_array(self, m, mac, k_rd, q_rd):
        """The K^T view and the E x d_group MAC lanes.  Returns the accumulated sums with their
        valid and tag (``final``, ``half``, ``t``)."""
        cfg = self.cfg
        E, G, D, od, Q = cfg.beat_elems, cfg.d_group, cfg.head_dim, cfg.op_depth, cfg.partials
        T = cfg.block // E
        lt, le, lq = log2_exact(T), log2_exact(E), log2_exact(Q)
        step = mac["step"]
        # the K^T view: element i mod E of every bank's word = dim i of tokens tE .. tE+E-1
        rd_valid = Signal(name="kt_valid")
        # (t: the token group; part: the dim's partial sum, i mod Q; the accumulator is both)
        rd_tag = {"sel": Signal(le, name="kt_sel"), "t": Signal(lt + lq, name="kt_t"),
                  "first": Signal(name="kt_first"), "final": Signal(name="kt_final"),
                  "half": Signal(name="kt_half")}
        m.d.sync += [rd_valid.eq(mac["issue"]), rd_tag["sel"].eq(mac["i_lo"]),
                     rd_tag["t"].eq(Cat(mac["t"], mac["part"])), rd_tag["first"].eq(step < T * Q),
                     rd_tag["final"].eq(step >= (D - Q) * T), rd_tag["half"].eq(mac["half"])]
        # the reads' output registers (qk_timing "read"): the words and their tag, a cycle on
        banks = Signal(16 * E, name="kt_banks")
        q_words = [Signal(16 * E, name=f"q_word{g}") for g in range(G)]
        m.d.sync += [banks.eq(Cat(*[r.data for r in k_rd]))] + [
            w.eq(r.data) for w, r in zip(q_words, q_rd)]
        sel = copies(m, rd_tag.pop("sel"), E + G, "kt_sel")  # one per K element and Q word
        rd_tag = delay(m, rd_tag, 1, name="kt_reg")
        rd_valid = delay_valid(m, rd_valid, 1, name="kt_reg_v")
        kt_view = rotate_elems(m, banks, sel[:E], 16, left=False, name="kt_unskew")
        q_col = [w.word_select(s, 16) for w, s in zip(q_words, sel[E:])]

        # The unskew and the Q-word select (log2 E multiplexer steps each, built once above) are
        # in front of every multiplier: stated as its pre stage, they get the multiplier's first
        # register where the placement puts one after them (op_depth >= 10), same latency.
        @levels(LV_MUX * le)
        def kt_operands(m, x):
            return x
        prods, p_valid, p_tag = [], None, None
        for g in range(G):
            for e in range(E):
                first_lane = g == 0 and e == 0
                r, v, tg = float_op(m, "mul_wide", FP32, od,
                                    {"a": q_col[g], "b": kt_view.word_select(e, 16)},
                                    valid=rd_valid if first_lane else None, src=FP16,
                                    side=rd_tag if first_lane else None, name=f"qk{g}_{e}",
                                    pre=kt_operands, fire=rd_valid)
                prods.append(r["r"])
                if first_lane:
                    p_valid, p_tag = v, tg
        return accumulate(
            m, prods, valid=p_valid, addr=p_tag["t"], first=p_tag["first"], depth=T * Q,
            op_depth=od, side={"final": p_tag["final"], "half": p_tag["half"],
                               "t": p_tag["t"]}, name="mac")

    def _score_buffer(self, m, sums, a_valid, a_tag, s_ready):
        """Score buffer: one memory per partial sum, 2 halves x block/E words of d_group x E
        sums.  Writes the sums of the last Q dims (dim i into memory i mod Q), marks a half ready
        when its last word is written; returns the read ports."""
        cfg = self.cfg
        E, G, Q = cfg.beat_elems, cfg.d_group, cfg.partials
        T = cfg.block // E
        lt = log2_exact(T)
        t, part = a_tag["t"][:lt], a_tag["t"][lt:]
        s_write = a_valid & a_tag["final"]
        s_rd = []
        for q in range(Q):
            sbuf = buffer(m, "score_buffer" if Q == 1 else f"score_buffer{q}", 32 * G * E, 2 * T)
            s_wr = sbuf.write_port()
            m.d.comb += [s_wr.addr.eq(Cat(t, a_tag["half"])), s_wr.data.eq(Cat(*sums)),
                         s_wr.en.eq(s_write & (part == q) if Q > 1 else s_write)]
            s_rd.append(sbuf.read_port())
        with m.If(s_write & (a_tag["t"] == Q * T - 1)):
            for h in range(2):
                with m.If(a_tag["half"] == h):
                    m.d.sync += s_ready[h].eq(1)
        return s_rd

    def _drain_issue(self, m, s_tiles, s_rd):
        """Drain: row-block order, U scores a cycle, credits.  Issues the score-buffer reads and
        frees a half after its last read; returns the read's valid, its tag (``chunk``,
        ``keep``, ``mask``, ``last``) and the output FIFO."""
        cfg = self.cfg
        E, G, U = cfg.beat_elems, cfg.d_group, cfg.lanes
        BB = cfg.block // U                # score beats of one query of one tile
        CW = E // U                        # score beats per token group of E
        fmt, tm = cfg.score_fmt, self.timing
        s_ready, s_owned = s_tiles["ready"], s_tiles["owned"]
        s_count, s_mask, s_last = s_tiles["count"], s_tiles["mask"], s_tiles["last"]
        dh = Signal(name="drain_half")
        dg = Signal(range(G), name="drain_query")
        dbb = Signal(range(BB), name="drain_beat")
        pending = Signal(range(tm["fifo"] + 1), name="drain_pending")
        # LUT-RAM: in a block RAM (its depth grows with the drain's latency) the RAM's
        # clock-to-out, 5.6 ns on ECP5, would start the path from o's payload
        out_fifo = SplitFifo([fmt.width * U + 2 * U + 1], tm["fifo"], "out_fifo", lut_ram=True)
        m.submodules.out_fifo = out_fifo
        cur_ready = Mux(dh, s_ready[1], s_ready[0])
        drain = Signal(name="drain_issue")
        m.d.comb += drain.eq(cur_ready & (pending < tm["fifo"]))
        o_fire = self.o.valid & self.o.ready
        m.d.sync += pending.eq(pending + drain - o_fire)
        drain_last = (dg == G - 1) & (dbb == BB - 1)
        with m.If(drain):
            m.d.sync += dbb.eq(dbb + 1)             # BB is a power of two: wraps
            with m.If(dbb == BB - 1):
                m.d.sync += dg.eq(Mux(dg == G - 1, 0, dg + 1))
            with m.If(drain_last):
                m.d.sync += dh.eq(~dh)
                for h in range(2):
                    with m.If(dh == h):
                        m.d.sync += [s_ready[h].eq(0), s_owned[h].eq(0)]
        # a read per drain issue (its words are used only under d_valid)
        m.d.comb += [r.addr.eq(Cat(dbb[log2_exact(CW):], dh)) for r in s_rd]
        m.d.comb += [r.en.eq(drain) for r in s_rd]
        count = Mux(dh, s_count[1], s_count[0])
        keep = Cat(*[Cat(Const(u, log2_exact(U)), dbb) < count if U > 1 else dbb < count
                     for u in range(U)])
        mask = Mux(dh, s_mask[1], s_mask[0]).word_select(dbb, U) & keep
        d_tag = {"chunk": Signal(range(G * CW), name="drain_chunk"),
                 "keep": Signal(U, name="drain_keep"), "mask": Signal(U, name="drain_mask"),
                 "last": Signal(name="drain_last")}
        d_valid = Signal(name="drain_valid")
        m.d.sync += [d_valid.eq(drain), d_tag["chunk"].eq(Cat(dbb[:log2_exact(CW)], dg)),
                     d_tag["keep"].eq(keep), d_tag["mask"].eq(mask),
                     d_tag["last"].eq(Mux(dh, s_last[1], s_last[0]) & drain_last)]
        return d_valid, d_tag, out_fifo

    def _drain_scale(self, m, s_rd, d_valid, d_tag, out_fifo):
        """The drain's U scale multipliers and conversions to ``score_fmt``, the output FIFO's
        write side and ``o``."""
        cfg = self.cfg
        U, od, fmt, tm = cfg.lanes, cfg.op_depth, cfg.score_fmt, self.timing
        # registered (qk_timing "drain"): the word select stays out of the adders' and
        # multipliers' cycle
        parts = [Signal(32 * U, name="drain_scores" if len(s_rd) == 1 else f"drain_scores{q}")
                 for q in range(len(s_rd))]
        m.d.sync += [p.eq(r.data.word_select(d_tag["chunk"], 32 * U)) for p, r in zip(parts, s_rd)]
        tail = delay(m, {k: d_tag[k] for k in ("keep", "mask", "last")}, 1, name="drain_r")
        d_valid = delay_valid(m, d_valid, 1, name="drain_r_v")
        # the partials' pairwise tree (qk_timing "finish"; none for one partial)
        sums, d_valid, tail = add_partials(m, FP32, od, parts, U, valid=d_valid, side=tail,
                                           name="finish")
        chunk = Cat(*sums)
        scale = Const(scale_bits(cfg.scale), 32)
        raw, o_valid, o_tag, scaled_v = [], None, None, None
        for u in range(U):
            lead = u == 0
            r, v, tg = float_op(m, "mul", FP32, od, {"a": chunk[32 * u:32 * (u + 1)], "b": scale},
                                valid=d_valid if lead else None, side=tail if lead else None,
                                name=f"scale{u}", fire=d_valid)
            scaled_v = v if lead else scaled_v
            if tm["conv"]:
                r, v, tg = float_op(m, "convert", fmt, od, {"a": r["r"]}, src=FP32,
                                    valid=v if lead else None, side=tg if lead else None,
                                    name=f"score_fmt{u}", fire=scaled_v)
            raw.append(r["r"])
            if lead:
                o_valid, o_tag = v, tg
        # block padding (keep = 0) leaves as 0, whatever the unused accumulators held
        scores = [Mux(o_tag["keep"][u], x, 0) for u, x in enumerate(raw)]
        m.d.comb += [out_fifo.w_data.eq(Cat(*scores, o_tag["keep"], o_tag["mask"], o_tag["last"])),
                     out_fifo.w_en.eq(o_valid)]
        fw = fmt.width * U
        m.d.comb += [self.o.valid.eq(out_fifo.r_rdy), out_fifo.r_en.eq(self.o.ready),
                     self.o.payload.data.eq(out_fifo.r_data[:fw]),
                     self.o.payload.keep.eq(out_fifo.r_data[fw:fw + U]),
                     self.o.payload.mask.eq(out_fifo.r_data[fw + U:fw + 2 * U]),
                     self.o.payload.last.eq(out_fifo.r_data[fw + 2 * U])]


UNITS = (HwUnit("qk_gemv", "HILOS Q.K^T GEMV with the online block transpose: K-Buf, K^T view, "
                "E x d_group MACs (i_q, i_k -> o: scores in row blocks)", QkGemvConfig, QkGemv,
                HILOS_PRESETS, qk_cycles, paper="HILOS §4.4, Fig. 7d", activity=qk_job_activity,
                clocks=dict.fromkeys(HILOS_PRESETS, KERNEL_CLOCK),
                # 4 partial sums at op_depth 4 x block / E = 16, the deepest their revisit allows
                synth_bench={"set": {"beat_elems": 8, "head_dim": 64, "block": 32, "d_group": 1, "partials": 4,
                                     "op_depth": 16}}),)
