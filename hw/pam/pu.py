"""``pam_pu``: the local-attention processing unit (PAM Alg. 1 ``Local_Attention``, §5.2.1).

Microarchitecture (tile form of Alg. 1, lines 9-12; the numerics are spelled out in
:mod:`pimforge.sim.golden.pam.common`)::

    i_q ──► Q buffer (B x L fp16)
                 │ Q[kb]
    i_kv ─┬─ K ──► L multipliers ─► lane adder tree ─► beat tree ─► x scale ─► s_j
          │                                                                   │
          │                       Row-wise Max Unit (running compare) ◄───────┘  score buffer
          │                                                                       (2 x T)
          │        tile end ─► P sequencer: p_j = exp(s_j - m_t)  (fp32 sub, to acc, exp unit)
          │                                         │ P FIFO
          └─ V ──► V FIFO ──► V processor: O_t[b] = fma(p_j, v, O_t[b]), l_t += p_j
                                            │ (L fused multiply-adds, shared)
                      tile merge (online_softmax merge_stats + the same L fmas) ─► O, m, l
                                                                                  │
                                                                      o ◄── drain ┘

* The score path (multipliers, both adder trees, scale, row max, score buffer) works in fp32
  whatever the accumulator: an exponential turns a score's absolute error into a relative error
  of its weight (:mod:`pimforge.sim.golden.pam.common`).  The multipliers are widening fp16 x
  fp16 -> fp32 units (exact).  ``s_j - m_t`` is rounded to ``acc`` before the ``acc``
  exponential; ``p``, ``l`` and ``O`` are in the accumulator format.
* Every internal pipeline is free-running; the input's ready is the only flow control: a token
  is admitted while fewer than 2T are in flight (the score buffer holds two tiles), a V beat
  while the V FIFO has room.  So the PU takes one beat per cycle at steady state.
* The V FIFO hides the score latency: a tile's V rows wait there for its row max and exponentials.
* The tile merge rescales O with the V update's fused multiply-add array while the next tile's K
  rows stream in, so it is hidden for tiles of more than a few tokens.
"""
from __future__ import annotations

import dataclasses

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib.wiring import In, Out

from pimforge.base.formats import FP16
from pimforge.base.numerics import SCORE, log2_exact, scale_bits
from pimforge.hw.core.activity import Memory, SyncFIFO
from pimforge.hw.core.component import PimComponent
from pimforge.hw.core.fanout import SplitFifo
from pimforge.hw.core.pipeline import levels
from pimforge.hw.core.unit import HwUnit
from pimforge.hw.fp.core import LV_MUX, lv_log
from pimforge.hw.fp.ops import beat_tree, delay, delay_valid, float_op
from pimforge.hw.fp.softmax import exp_diff, greater, merge_stats
from pimforge.hw.pam.config import HBM_FP32_CLOCK_MHZ, PU_TIER_PRESETS, TIER_CLOCKS, PamPuConfig
from pimforge.hw.pam.pu_formal import pu_environment
from pimforge.hw.pam.pu_timing import (
    pu_activity_model, pu_cycles, pu_tail_cycles, pu_timing, v_fifo_depth
)
from pimforge.hw.pam.streams import kv_signature, partial_signature, q_signature

__all__ = ["PamPu"]


class PamPu(PimComponent):
    """The local-attention PU.  Streams ``i_q`` and ``i_kv`` in, ``o`` out (beat formats in
    :mod:`pimforge.hw.pam.streams`).

    A token costs ``2 * ceil(d / lanes)`` input beats and the PU takes one beat per cycle, so a set
    of N tokens streams in ``2 N B`` cycles; the partial (O, m, l) leaves ``latency`` cycles after
    the last V beat, at one beat per cycle.

    Parameters
    ----------
    cfg : PamPuConfig
    """

    UNIT = "pam_pu"

    def __init__(self, cfg: PamPuConfig):
        lanes, acc = cfg.lanes, cfg.acc
        super().__init__(cfg, {
            "i_q": In(q_signature(lanes)),
            "i_kv": In(kv_signature(lanes)),
            "o": Out(partial_signature(acc, lanes)),
        })

    @property
    def timing(self) -> dict:
        return pu_timing(self.cfg)

    @property
    def latency(self) -> int:
        """Cycles from the last V beat of a set to its first output beat (no stalls)."""
        return pu_tail_cycles(self.cfg)

    @property
    def throughput(self) -> float:
        """Input beats per cycle at steady state."""
        return 1.0

    def manifest(self) -> dict:
        man = super().manifest()
        man["storage_bytes"] = self.cfg.storage_bytes
        man["v_fifo_beats"] = v_fifo_depth(self.cfg)
        man["timing"] = self.timing
        return man

    # ------------------------------------------------------------------------------------------
    # The sections of the datapath, in the order ``elaborate`` builds them (the order of the
    # statements and the signal names fix the generated Verilog).

    def elaborate(self, platform):
        m = Module()
        q_rd, q_loaded = self._q_buffer(m)
        kv = self._input_acceptance(m, q_rd, q_loaded)
        s, s_valid = self._score_path(m, q_rd, kv["k_fire"])
        s_rd, desc = self._row_max(m, s, s_valid, kv["tile_end"])
        p_fifo, p = self._p_sequencer(m, s_rd, desc)
        mem, v = self._v_issue(m, kv, p_fifo, p)
        mseq = _merge_seq_state(self.cfg)
        fma = self._fma_array(m, mem, v, p, mseq)
        l_t = self._tile_l(m, fma)
        m_out, l_out = self._tile_merge(m, fma, l_t, v, p, mseq)
        self._drain(m, fma, mseq, mem["o_rd"], kv["drain_pending"], m_out, l_out)
        return m

    def _q_buffer(self, m):
        """Q buffer (B x L fp16): loads the query's B beats, then holds it until the set's last V
        beat.  Returns the comb read port (address: the K beat) and the loaded flag."""
        L, B = self.cfg.lanes, self.cfg.beats
        q_mem = Memory(shape=16 * L, depth=B, init=[])
        m.submodules.q_buffer = q_mem
        q_wr, q_rd = q_mem.write_port(), q_mem.read_port(domain="comb")
        q_idx = Signal(range(B), name="q_idx")
        q_loaded = Signal(name="q_loaded")
        m.d.comb += [self.i_q.ready.eq(~q_loaded), q_wr.addr.eq(q_idx),
                     q_wr.data.eq(self.i_q.payload.data),
                     q_wr.en.eq(self.i_q.valid & self.i_q.ready)]
        with m.If(self.i_q.valid & self.i_q.ready):
            m.d.sync += q_idx.eq(Mux(q_idx == B - 1, 0, q_idx + 1))
            with m.If(q_idx == B - 1):
                m.d.sync += q_loaded.eq(1)
        return q_rd, q_loaded

    def _input_acceptance(self, m, q_rd, q_loaded) -> dict:
        """K/V input: ready while fewer than 2T tokens are in flight (K) or the V FIFO has room
        (V); V beats go to the V FIFO.  Returns the K beat counter ``kb``, the in-flight token
        count, the drain-pending flag, the V FIFO, ``k_fire`` and ``tile_end``."""
        L, B, T = self.cfg.lanes, self.cfg.beats, self.cfg.tile_tokens
        kv = self.i_kv
        kb = Signal(range(B), name="k_beat")           # beat within the K row
        in_flight = Signal(range(2 * T + 1), name="tokens_in_flight")
        drain_pending = Signal(name="drain_pending")
        v_fifo = SplitFifo([16] * (L - 1) + [17], v_fifo_depth(self.cfg), "v_fifo")
        m.submodules.v_fifo = v_fifo
        token_start = ~kv.payload.is_v & (kb == 0)
        can_accept = Mux(kv.payload.is_v, v_fifo.w_rdy, ~token_start | (in_flight < 2 * T))
        m.d.comb += kv.ready.eq(q_loaded & ~drain_pending & can_accept)
        k_fire = Signal(name="k_fire")
        v_fire = Signal(name="v_fire")
        m.d.comb += [k_fire.eq(kv.valid & kv.ready & ~kv.payload.is_v),
                     v_fire.eq(kv.valid & kv.ready & kv.payload.is_v)]
        with m.If(k_fire):
            m.d.sync += kb.eq(Mux(kb == B - 1, 0, kb + 1))
        m.d.comb += q_rd.addr.eq(kb)
        last_fire = v_fire & kv.payload.last
        with m.If(last_fire):
            m.d.sync += [q_loaded.eq(0), drain_pending.eq(1)]
        m.d.comb += [v_fifo.w_data.eq(Cat(kv.payload.data, kv.payload.last)),
                     v_fifo.w_en.eq(v_fire)]
        # a tile's K phase ends at the first V beat after K beats
        prev_is_v = Signal(init=1, name="prev_is_v")
        with m.If(kv.valid & kv.ready):
            m.d.sync += prev_is_v.eq(kv.payload.is_v)
        tile_end = v_fire & ~prev_is_v
        return {"kb": kb, "in_flight": in_flight, "drain_pending": drain_pending,
                "v_fifo": v_fifo, "k_fire": k_fire, "tile_end": tile_end}

    def _score_path(self, m, q_rd, k_fire):
        """Score path in fp32: Q.K products, lane adder tree, beat tree, scale.  Returns the score
        ``s`` and its valid bit."""
        cfg = self.cfg
        L, B, od, sw = cfg.lanes, cfg.beats, cfg.op_depth, SCORE.width
        # fp16 x fp16 products, exact in fp32 (a widening multiplier: 11-bit significands)
        prods, valid = [], None
        for i in range(L):
            r, v, _ = float_op(m, "mul_wide", SCORE, od,
                               {"a": _lane(q_rd.data, i, 16),
                                "b": _lane(self.i_kv.payload.data, i, 16)},
                               valid=k_fire if i == 0 else None, src=FP16, name=f"qk{i}",
                               fire=k_fire)
            prods.append(r["r"])
            if i == 0:
                valid = v
        level = 0
        while len(prods) > 1:
            nxt = []
            for i in range(0, len(prods), 2):
                r, v, _ = float_op(m, "add", SCORE, od, {"a": prods[i], "b": prods[i + 1]},
                                   valid=valid if i == 0 else None, name=f"lt{level}_{i // 2}",
                                   fire=valid)
                nxt.append(r["r"])
                if i == 0:
                    nv = v
            prods, valid, level = nxt, nv, level + 1

        def add_level(held, x, valid, lvl):
            r, v, _ = float_op(m, "add", SCORE, od, {"a": held, "b": x}, valid=valid,
                               name=f"bt{lvl}")
            return r["r"], v
        # streaming pairwise tree over the beats
        x, valid = beat_tree(m, prods[0], valid, log2_exact(B), sw, add_level, "bt")
        r, s_valid, _ = float_op(m, "mul", SCORE, od,
                                 {"a": x, "b": Const(scale_bits(cfg.scale), sw)},
                                 valid=valid, name="scale")
        return r["r"], s_valid

    def _row_max(self, m, s, s_valid, tile_end):
        """Row-wise Max Unit and the score buffer (two tiles); at the delayed tile-end marker a
        descriptor (row max, count, parity) enters the tile FIFO.  Returns the buffer's comb
        read port and the tile FIFO."""
        T, sw = self.cfg.tile_tokens, SCORE.width
        s_mem = Memory(shape=sw, depth=2 * T, init=[])
        m.submodules.score_buffer = s_mem
        s_wr = s_mem.write_port()
        s_rd = s_mem.read_port(domain="comb")
        s_cnt = Signal(range(T + 1), name="tile_count")
        s_par = Signal(name="tile_parity")
        m_t = Signal(sw, name="row_max")
        # the golden model's order: -0 below +0 (the comparator's flag treats them as equal)
        gt = greater(m, s, m_t, name="row_max_gt")
        m.d.comb += [s_wr.addr.eq(s_par * T + s_cnt), s_wr.data.eq(s),
                     s_wr.en.eq(s_valid & (s_cnt < T))]
        with m.If(s_valid & (s_cnt < T)):
            m.d.sync += s_cnt.eq(s_cnt + 1)
            with m.If((s_cnt == 0) | gt):
                m.d.sync += m_t.eq(s)
        # the tile-end marker travels as long as the score path, so it arrives after the last score
        marker = delay_valid(m, tile_end, self.timing["score"], name="tile_end_d")
        desc = SyncFIFO(width=sw + (T).bit_length() + 1, depth=2)
        m.submodules.tile_fifo = desc
        m.d.comb += [desc.w_data.eq(Cat(m_t, s_cnt, s_par)), desc.w_en.eq(marker)]
        with m.If(marker):
            m.d.sync += [s_cnt.eq(0), s_par.eq(~s_par)]
        return s_rd, desc

    def _p_sequencer(self, m, s_rd, desc):
        """P sequencer: p_j = exp(s_j - m_t) for each score of a tile, into the P FIFO.  Returns
        the P FIFO and its head's fields ``j`` (p_j), ``mt``, ``first``, ``last``."""
        cfg = self.cfg
        T, acc, od, aw, sw = cfg.tile_tokens, cfg.acc, cfg.op_depth, cfg.acc.width, SCORE.width
        seq_busy = Signal(name="pseq_busy")
        seq_j = Signal(range(T + 1), name="pseq_j")
        seq_n = Signal(range(T + 1), name="pseq_n")
        seq_m = Signal(sw, name="pseq_m")
        seq_par = Signal(name="pseq_par")
        with m.If(~seq_busy & desc.r_rdy):
            m.d.comb += desc.r_en.eq(1)
            m.d.sync += [seq_busy.eq(1), seq_j.eq(0), seq_m.eq(desc.r_data[:sw]),
                         seq_n.eq(desc.r_data[sw:sw + (T).bit_length()]),
                         seq_par.eq(desc.r_data[-1])]
        seq_fire = Signal(name="pseq_fire")
        m.d.comb += [seq_fire.eq(seq_busy), s_rd.addr.eq(seq_par * T + seq_j)]
        with m.If(seq_busy):
            m.d.sync += seq_j.eq(seq_j + 1)
            with m.If(seq_j == seq_n - 1):
                m.d.sync += seq_busy.eq(0)
        tags = {"first": seq_j == 0, "last": seq_j == seq_n - 1, "mt": seq_m}

        # The score memory's read (LUT-RAM, 2 T words, at the sequencer's count) joins the
        # subtraction's register placement, so that with enough op_depth (9 and up at 16 tokens
        # a tile) a register lands right after it at no cost in latency.  Without one, the
        # count's fan-out into the RAM, the read and the subtraction's magnitude compare make one
        # path: pam_device's critical path on ECP5 at op_depth 12 (pu1.pseq_j to
        # pu1.pexp_sub_p0_e_big).
        @levels(LV_MUX * lv_log(2 * T))
        def score_read(m, x):
            return dict(x)
        p_r, p_valid, tg = exp_diff(m, acc, od, s_rd.data, seq_m, valid=seq_fire, side=tags,
                                    name="pexp", pre=score_read)
        p_fifo = SyncFIFO(width=aw + sw + 2, depth=2 * T)
        m.submodules.p_fifo = p_fifo
        m.d.comb += [p_fifo.w_data.eq(Cat(p_r, tg["mt"], tg["first"], tg["last"])),
                     p_fifo.w_en.eq(p_valid)]
        return p_fifo, {"j": p_fifo.r_data[:aw], "mt": p_fifo.r_data[aw:aw + sw],
                        "first": p_fifo.r_data[aw + sw], "last": p_fifo.r_data[aw + sw + 1]}

    def _v_issue(self, m, kv, p_fifo, p):
        """The O_t and O memories and the V issue: a V beat leaves the V FIFO when its token's
        p_j is at the P FIFO's head and no merge holds the fma array; also the in-flight token
        count.  Returns the memory ports and the V issue signals."""
        L, B, aw = self.cfg.lanes, self.cfg.beats, self.cfg.acc.width
        v_fifo, in_flight = kv["v_fifo"], kv["in_flight"]
        ot_mem = Memory(shape=aw * L, depth=B, init=[])
        o_mem = Memory(shape=aw * L, depth=B, init=[])
        m.submodules.o_tile = ot_mem
        m.submodules.o_accum = o_mem
        ot_wr, ot_rd = ot_mem.write_port(), ot_mem.read_port(domain="comb")
        o_wr, o_rd = o_mem.write_port(), o_mem.read_port(domain="comb")
        vb = Signal(range(B), name="v_beat")
        merge_busy = Signal(name="merge_busy")
        v_issue = Signal(name="v_issue")
        v_data = v_fifo.r_data[:16 * L]
        v_last = v_fifo.r_data[16 * L]
        m.d.comb += v_issue.eq(v_fifo.r_rdy & p_fifo.r_rdy & ~merge_busy)
        m.d.comb += v_fifo.r_en.eq(v_issue)
        with m.If(v_issue):
            m.d.sync += vb.eq(Mux(vb == B - 1, 0, vb + 1))
            with m.If(vb == B - 1):
                m.d.comb += p_fifo.r_en.eq(1)
        with m.If(kv["k_fire"] & (kv["kb"] == 0)):
            with m.If(~(v_issue & (vb == B - 1))):
                m.d.sync += in_flight.eq(in_flight + 1)
        with m.Elif(v_issue & (vb == B - 1)):
            m.d.sync += in_flight.eq(in_flight - 1)
        mem = {"ot_wr": ot_wr, "ot_rd": ot_rd, "o_wr": o_wr, "o_rd": o_rd}
        return mem, {"vb": vb, "merge_busy": merge_busy, "issue": v_issue, "data": v_data,
                     "last": v_last}

    def _fma_array(self, m, mem, v, p, mseq) -> dict:
        """The L fused multiply-adds shared by the V update (O_t[b] = fma(p_j, v, O_t[b])) and the
        tile merge (swap form of the merge, beat by beat), with their write-back.  Returns the
        array's valid and tags, the delayed issue (``issue_d``, ``v_go``) and the drain beat."""
        cfg = self.cfg
        L, B, acc, od, aw = cfg.lanes, cfg.beats, cfg.acc, cfg.op_depth, cfg.acc.width
        ot_wr, ot_rd, o_wr, o_rd = mem["ot_wr"], mem["ot_rd"], mem["o_wr"], mem["o_rd"]
        vb, mseq_busy, mseq_b = v["vb"], mseq["busy"], mseq["beat"]
        # V-beat conversion happens before the fma: delay the other operands to match
        vconv = _to_acc(m, cfg, [_lane(v["data"], i, 16) for i in range(L)], v["issue"], "vc")
        issue_d = delay(m, {"vb": vb, "p": p["j"], "tfirst": p["first"],
                            "tlast": p["last"] & (vb == B - 1), "slast": v["last"],
                            "mt": p["mt"]}, self.timing["conv"], name="vi")
        v_go = delay_valid(m, v["issue"], self.timing["conv"], name="vi_valid")
        m.d.comb += ot_rd.addr.eq(Mux(mseq_busy, mseq_b, issue_d["vb"]))
        drain_b = Signal(range(B), name="drain_beat")
        m.d.comb += o_rd.addr.eq(Mux(mseq_busy, mseq_b, drain_b))
        zero, one = Const(0, aw), Const(acc.one, aw)

        # The operand selection joins each fma's register placement (float_op's ``pre``): it
        # reads the memories at the sequencer's beat and the P FIFO, and its selects fan out to
        # every lane, so with enough op_depth a register lands right after it.
        @levels(LV_MUX * (lv_log(max(B, 2 * cfg.tile_tokens)) + 3))
        def select(m, x):
            # V mode: fma(p, v, first_token ? +0 : O_t); merge mode: swap form of the merge
            ot, o = x["ot"], x["o"]
            return {"a": Mux(x["busy"], Mux(x["first"], ot, Mux(x["swap"], o, ot)), x["p"]),
                    "b": Mux(x["busy"], Mux(x["first"], one, x["g"]), x["v"]),
                    "c": Mux(x["busy"], Mux(x["first"], zero, Mux(x["swap"], ot, o)),
                             Mux(x["tfirst"], zero, ot))}
        flags = {"busy": mseq_busy, "first": mseq["first"], "swap": mseq["swap"], "g": mseq["g"],
                 "p": issue_d["p"], "tfirst": issue_d["tfirst"]}
        side = {"merge": mseq_busy, "beat": Mux(mseq_busy, mseq_b, issue_d["vb"]),
                "tlast": issue_d["tlast"], "slast": issue_d["slast"],
                "mt": issue_d["mt"], "mlast": mseq_b == B - 1}
        outs, fma_valid, fma_tag = [], None, None
        fma_go = v_go | mseq_busy
        for i in range(L):
            x = {"ot": _lane(ot_rd.data, i, aw), "o": _lane(o_rd.data, i, aw), "v": vconv[i],
                 **flags}
            r, fv, ft = float_op(m, "fma", acc, od, x, valid=fma_go if i == 0 else None,
                                 side=side if i == 0 else None, name=f"vfma{i}", pre=select,
                                 fire=fma_go)
            outs.append(r["r"])
            if i == 0:
                fma_valid, fma_tag = fv, ft
        result = Cat(*outs)
        m.d.comb += [ot_wr.addr.eq(fma_tag["beat"]), ot_wr.data.eq(result),
                     ot_wr.en.eq(fma_valid & ~fma_tag["merge"]),
                     o_wr.addr.eq(fma_tag["beat"]), o_wr.data.eq(result),
                     o_wr.en.eq(fma_valid & fma_tag["merge"])]
        return {"valid": fma_valid, "tag": fma_tag, "issue_d": issue_d, "v_go": v_go,
                "drain_b": drain_b}

    def _tile_l(self, m, fma):
        """l_t = l_t + p_j, once per token (at its first V beat); the operand selection joins
        the add's register placement, as the fma array's does.  Returns l_t."""
        acc, od = self.cfg.acc, self.cfg.op_depth
        issue_d, zero = fma["issue_d"], Const(0, acc.width)
        l_t = Signal(acc.width, name="tile_l")

        @levels(LV_MUX * (lv_log(2 * self.cfg.tile_tokens) + 1))
        def select(m, x):
            return {"a": Mux(x["tfirst"], zero, x["l"]), "b": x["p"]}
        r, lv, _ = float_op(m, "add", acc, od, {"l": l_t, "p": issue_d["p"],
                                                "tfirst": issue_d["tfirst"]},
                            valid=fma["v_go"] & (issue_d["vb"] == 0), name="tile_l_add",
                            pre=select)
        with m.If(lv):
            m.d.sync += l_t.eq(r["r"])
        return l_t

    def _tile_merge(self, m, fma, l_t, v, p, mseq):
        """Tile merge: when the tile's last V beat is written back, merge_stats on (m_t, l_t),
        then the merge sequencer walks the B beats through the fma array.  Returns the set's
        (m, l) registers."""
        cfg = self.cfg
        B, acc, od, aw, sw = cfg.beats, cfg.acc, cfg.op_depth, cfg.acc.width, SCORE.width
        fma_valid, fma_tag = fma["valid"], fma["tag"]
        merge_busy, mseq_busy, mseq_b = v["merge_busy"], mseq["busy"], mseq["beat"]
        new_set = Signal(init=1, name="new_set")
        tile_done = fma_valid & ~fma_tag["merge"] & fma_tag["tlast"]
        ms = merge_stats(m, acc, od, valid=tile_done, first=new_set, m_in=fma_tag["mt"], l_in=l_t,
                         name="tile_merge")
        with m.If(tile_done):
            m.d.sync += new_set.eq(fma_tag["slast"])
        # V issue stops after a tile's last beat until the merge has read O_t
        with m.If(v["issue"] & p["last"] & (v["vb"] == B - 1)):
            m.d.sync += merge_busy.eq(1)
        # remember whether the tile in the merge pipeline ends the set
        slast_pipe = delay_valid(m, fma_tag["slast"] & tile_done, self.timing["merge"],
                                 name="slast_d")
        m_out = Signal(sw, name="out_m")
        l_out = Signal(aw, name="out_l")
        with m.If(ms["valid"]):
            m.d.sync += [mseq_busy.eq(1), mseq_b.eq(0), mseq["g"].eq(ms["g"]),
                         mseq["swap"].eq(ms["swap"]), mseq["first"].eq(ms["first"]),
                         mseq["last"].eq(slast_pipe), m_out.eq(ms["m"]), l_out.eq(ms["l"])]
        with m.If(mseq_busy):
            m.d.sync += mseq_b.eq(mseq_b + 1)
            with m.If(mseq_b == B - 1):
                m.d.sync += [mseq_busy.eq(0), merge_busy.eq(0)]
        return m_out, l_out

    def _drain(self, m, fma, mseq, o_rd, drain_pending, m_out, l_out):
        """Drain: after the set's last merge beat is written, O streams out with m and l."""
        B, fma_tag, drain_b = self.cfg.beats, fma["tag"], fma["drain_b"]
        draining = Signal(name="draining")
        with m.If(fma["valid"] & fma_tag["merge"] & fma_tag["mlast"] & mseq["last"]):
            m.d.sync += draining.eq(1)
        m.d.comb += [self.o.valid.eq(draining), self.o.payload.data.eq(o_rd.data),
                     self.o.payload.m.eq(m_out), self.o.payload.l.eq(l_out)]
        with m.If(self.o.valid & self.o.ready):
            m.d.sync += drain_b.eq(Mux(drain_b == B - 1, 0, drain_b + 1))
            with m.If(drain_b == B - 1):
                m.d.sync += [draining.eq(0), drain_pending.eq(0)]


def _lane(value, i, w):
    return value[i * w:(i + 1) * w]


def _to_acc(m, cfg, values, fire, name):
    """fp16 lanes -> acc lanes (free-running converts; none when acc is fp16); ``fire``: the
    V issue, the cycles the lanes hold a beat the fmas take."""
    if cfg.acc.width == 16:
        return values
    return [float_op(m, "convert", cfg.acc, cfg.op_depth, {"a": x}, src=FP16,
                     name=f"{name}{i}", fire=fire)[0]["r"] for i, x in enumerate(values)]


def _merge_seq_state(cfg) -> dict:
    """The merge sequencer's registers: busy, beat, and the held merge results (g, swap, first)
    and whether the merged tile ends the set (last)."""
    return {"busy": Signal(name="mseq_busy"), "beat": Signal(range(cfg.beats), name="mseq_beat"),
            "g": Signal(cfg.acc.width, name="merge_g"), "swap": Signal(name="merge_swap"),
            "first": Signal(name="merge_first"), "last": Signal(name="merge_last")}


PU_PRESETS = {**PU_TIER_PRESETS,
              "hbm_fp32": {**PU_TIER_PRESETS["hbm"], "acc": "fp32", "op_depth": 2}}
# the netlist clocks of the tier presets; the fp32 accumulator's exponential and fma are slower
PU_CLOCKS = {**TIER_CLOCKS,
             "hbm_fp32": dataclasses.replace(TIER_CLOCKS["hbm"], mhz=HBM_FP32_CLOCK_MHZ)}


UNITS = (HwUnit("pam_pu", "PAM local-attention PU: Q.K, row max, exp, l and O = sum p V in tiles "
                "(i_q, i_kv -> o: O, m, l)", PamPuConfig, PamPu, PU_PRESETS, pu_cycles,
                paper="PAM §5.2.1, Alg. 1 Local_Attention", clocks=PU_CLOCKS, formal=pu_environment,
                activity=pu_activity_model,
                # op_depth 12: the depth it needs for 100 MHz on ECP5, whose placement takes
                # up to 10 minutes
                synth_bench={"set": {"lanes": 4, "head_dim": 64, "op_depth": 12},
                             "timeout_s": 1200}),)
