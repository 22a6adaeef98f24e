"""``two_pass_softmax``: the statistics-aggregation and normalization units of HILOS (§4.4,
Algorithm 1, Fig. 7b and 7c), one job (a query group's row of scores) at a time.

The numerics are :func:`pimforge.sim.golden.hilos.two_pass_softmax.two_pass_softmax` bit for bit; the beat order
is the row-block order of :mod:`pimforge.hw.hilos.streams` (U = ``lanes`` scores a beat, a row
block = ``block_beats`` (BB) beats of one query, the G = ``d_group`` queries' row blocks in turn).

Microarchitecture::

    i ─► fp32 ─► MASK ─┬─► block buffer (2 row blocks, x and keep)       Fig. 7b, Alg. 1 l. 2-9
                       │          │ read again at U/cycle once m_B is known
                       └─► max tree ─► m_B ─► U x exp(x - m_B) ─► adder tree ─► S_B
                          (lanes, then                              (same shape)   │
                           beats)                     G x merge_stats (l. 5-9) ◄───┘
                                                         │ recip(Z_g)
                                   stats FIFO (m_g, 1/Z_g per query; 2 jobs) ◄─┘
                                        │
    i_s ─► fp32 ─► U x exp(x - m_g) ─► x 1/Z_g ─► fp16 ─► MASK ─► out FIFO ─► o   Fig. 7c, l. 10-11

* Pass 1 never stalls on its own: the trees and the exponentials are free-running, the block
  buffer holds a row block until its maximum ``m_B`` is known (the tree takes ``log2 block``
  cycles, less than the ``BB`` cycles of the next row block, so two row blocks suffice), and a
  query's ``merge_stats`` sees a new ``(m_B, S_B)`` only every ``G x BB`` cycles.  The only input
  flow control is on a job's ``last`` beat: it is taken only when the stats FIFO will have room
  (fewer than two jobs between their last pass-1 beat and their last pass-2 beat).
* The maximum is a comparator tree in the golden order (``b if greater(b, a) else a``, -0 < +0,
  a NaN never wins), one cycle a level; padding lanes (keep = 0) enter as -inf, their
  exponentials as +0.  The sum tree pairs the same elements with fp32 adders.
* Per query and job, ``merge_stats`` (PAM's online-softmax update, fp32) keeps ``(m, Z)``; one
  shared reciprocal unit turns each merge result into ``1/Z``; the job's final row block (query
  G-1) pushes every query's ``(m, 1/Z)`` into the two-entry stats FIFO, so pass 1 of job h+1
  runs while pass 2 of job h reads its statistics.
* Pass 2 accepts ``i_s`` only when the job's statistics are in the FIFO and a credit counter
  guarantees room in the output FIFO, so back-pressure on ``o`` never loses a beat.
"""
from __future__ import annotations

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib.wiring import In, Out

from pimforge.base.formats import FP16, FP32
from pimforge.base.numerics import log2_exact, mask_bits
from pimforge.hw.core.activity import SyncFIFO
from pimforge.hw.core.component import PimComponent
from pimforge.hw.core.memories import buffer
from pimforge.hw.core.unit import HwUnit
from pimforge.hw.fp.ops import beat_tree, delay, delay_valid, float_op
from pimforge.hw.fp.softmax import greater, merge_interval, merge_stats
from pimforge.hw.hilos.config import HILOS_PRESETS, KERNEL_CLOCK, TwoPassSoftmaxConfig
from pimforge.hw.hilos.streams import score_signature, y_signature
from pimforge.hw.hilos.two_pass_softmax_timing import (
    STATS_JOBS, softmax_cycles, softmax_job_activity, softmax_timing
)

__all__ = ["TwoPassSoftmax"]

NEG_INF32 = 0xFF800000


def _lane(value, j, w):
    return value[j * w:(j + 1) * w]


def _to_fp32(m, values, valid, side, name, fmt, od):
    """Score lanes in ``fmt`` to fp32 (exact; free-running converts, none for fp32 scores)."""
    if fmt.width == 32:
        return list(values), valid, side
    out, v_out, s_out = [], None, None
    for j, x in enumerate(values):
        r, v, s = float_op(m, "convert", FP32, od, {"a": x}, src=fmt,
                           valid=valid if j == 0 else None,
                           side=side if j == 0 else None, name=f"{name}{j}", fire=valid)
        out.append(r["r"])
        if j == 0:
            v_out, s_out = v, s
    return out, v_out, s_out


def _lane_exp_diff(m, od, a, b, lead, *, valid, side, name):
    """``exp(a - b)`` of one score lane: the golden ``exp_diff`` in fp32, a subtraction and the
    exponential (the two operations :func:`~pimforge.hw.fp.softmax.exp_diff` builds, with the
    same names).  Lane 0 (``lead`` None) carries ``valid`` and ``side``; another lane carries
    neither, and its operations' probes fire on lane 0's valids at the same stages (``lead``).
    Returns ``(exp, valid, side, lead)``."""
    if lead is None:
        d, dv, ds = float_op(m, "sub", FP32, od, {"a": a, "b": b}, valid=valid, side=side,
                             name=f"{name}_sub")
        e, ev, es = float_op(m, "exp", FP32, od, {"a": d["r"]}, valid=dv, side=ds,
                             name=f"{name}_exp")
        return e["r"], ev, es, (valid, dv)
    d = float_op(m, "sub", FP32, od, {"a": a, "b": b}, name=f"{name}_sub", fire=lead[0])[0]
    e = float_op(m, "exp", FP32, od, {"a": d["r"]}, name=f"{name}_exp", fire=lead[1])[0]
    return e["r"], None, None, lead


def _max2(m, a, b, name):
    """The golden max of a pair: ``b if greater(b, a) else a``."""
    return Mux(greater(m, b, a, name=name), b, a)


class TwoPassSoftmax(PimComponent):
    """HILOS two-pass softmax (§4.4, Alg. 1): ``i`` (pass 1 scores) and ``i_s`` (the same job's
    scores again, pass 2) in, ``o`` (fp16 softmax outputs, the beat order of ``i_s``) out.

    Pass 1 takes one ``i`` beat per cycle at steady state; pass 2 takes one ``i_s`` beat and gives
    one ``o`` beat per cycle.  ``latency`` is the cycles from a job's last ``i`` beat to its first
    ``o`` beat when ``i_s`` is offered at once and nothing stalls: ``stats + normalize + 2``
    (:func:`~pimforge.hw.hilos.two_pass_softmax_timing.softmax_timing`); an ``o`` beat leaves
    ``normalize + 1`` cycles after its ``i_s`` beat.

    Parameters
    ----------
    cfg : TwoPassSoftmaxConfig
    """

    UNIT = "two_pass_softmax"

    def __init__(self, cfg: TwoPassSoftmaxConfig):
        U = cfg.lanes
        super().__init__(cfg, {
            "i": In(score_signature(U, cfg.score_fmt)),
            "i_s": In(score_signature(U, cfg.score_fmt)),
            "o": Out(y_signature(U)),
        })

    @property
    def timing(self) -> dict:
        return softmax_timing(self.cfg)

    @property
    def latency(self) -> int:
        """Cycles from a job's last ``i`` beat to its first ``o`` beat (no stalls)."""
        t = self.timing
        return t["stats"] + t["normalize"] + 2

    @property
    def throughput(self) -> float:
        """Beats per cycle of each pass at steady state (``i``, and ``i_s`` -> ``o``)."""
        return 1.0

    def manifest(self) -> dict:
        man = super().manifest()
        man["timing"] = self.timing
        man["lanes"] = self.cfg.lanes
        man["block_beats"] = self.cfg.block_beats
        man["stats_fifo_jobs"] = STATS_JOBS
        return man

    # ------------------------------------------------------------------------------------------
    # The sections are added in this order, which (with the signal names) fixes the Verilog.
    def elaborate(self, platform):
        cfg = self.cfg
        m = Module()
        assert cfg.d_group * cfg.block_beats >= merge_interval(cfg.op_depth), \
            "a query's merge inputs come every G x BB cycles"
        # ================= pass 1: statistics aggregation (Fig. 7b, Alg. 1 lines 2-9) =========
        pop, xs, v, tg = self._pass1_input(m)
        br = self._block_buffer(m, xs, v, tg)
        m_blk, m_valid, mtag = self._max_tree(m, xs, v, tg)
        es, v, et = self._block_exps(m, br, m_blk, m_valid, mtag)
        s_blk, s_valid, stag = self._sum_tree(m, es, v, et)
        stats = self._stats(m, s_blk, s_valid, stag)
        # ================= pass 2: normalization (Fig. 7c, Alg. 1 lines 10-11) ================
        s_fire, used, ntag = self._pass2_input(m, stats, pop)
        self._normalize(m, s_fire, used, ntag)
        return m

    def _pass1_input(self, m):
        """``i``: stats FIFO credits, the row-block counters, the scores to fp32 and MASK
        (Alg. 1 line 3).  Returns the stats FIFO's pop strobe (driven by pass 2) and the fp32
        scores with their valid and tag (``kb``, ``g``, ``first``, ``last``, ``slot``,
        ``keep``, ``mask``)."""
        cfg = self.cfg
        U, G, BB, od = cfg.lanes, cfg.d_group, cfg.block_beats, cfg.op_depth
        fmt, sw = cfg.score_fmt, cfg.score_fmt.width
        mask_x = Const(mask_bits(cfg.mask_value), 32)
        i, p = self.i, self.i.payload
        pending = Signal(range(STATS_JOBS + 1), name="jobs_pending")    # stats FIFO credits
        pop = Signal(name="stats_pop")
        # a job's last beat waits until its statistics are sure to find room in the FIFO
        m.d.comb += i.ready.eq(~p.last | (pending < STATS_JOBS))
        i_fire = Signal(name="i_fire")
        m.d.comb += i_fire.eq(i.valid & i.ready)
        m.d.sync += pending.eq(pending + (i_fire & p.last) - pop)

        slots = self.timing["buffer_blocks"]
        kb = Signal(range(BB), name="beat_in_block")
        qg = Signal(range(G), name="query")
        first_grp = Signal(init=1, name="first_block")   # the job's first block of every query
        slot = Signal(range(slots), name="buffer_slot")
        block_end = Signal(name="block_end")
        m.d.comb += block_end.eq((kb == BB - 1) | p.last)
        with m.If(i_fire):
            m.d.sync += kb.eq(Mux(block_end, 0, kb + 1))
            with m.If(block_end):
                m.d.sync += slot.eq(Mux(slot == slots - 1, 0, slot + 1))
                m.d.sync += qg.eq(Mux(p.last | (qg == G - 1), 0, qg + 1))
                with m.If(p.last):
                    m.d.sync += first_grp.eq(1)
                with m.Elif(qg == G - 1):
                    m.d.sync += first_grp.eq(0)

        tags = {"kb": kb, "g": qg, "first": first_grp, "last": p.last, "slot": slot,
                "keep": p.keep, "mask": p.mask}
        xs, v, tg = _to_fp32(m, [_lane(p.data, j, sw) for j in range(U)], i_fire, tags, "cvt",
                             fmt, od)
        # MASK (Alg. 1 line 3): a masked position scores mask_value
        xs = [Mux(tg["keep"][j] & tg["mask"][j], mask_x, x) for j, x in enumerate(xs)]
        return pop, xs, v, tg

    def _block_buffer(self, m, xs, v, tg):
        """Block buffer: row blocks in slots of BB beats, x and keep of each beat.  Returns its
        read port (registered, so that the buffer can be block RAM: ``_block_exps`` gives
        it each address a cycle ahead)."""
        U, BB = self.cfg.lanes, self.cfg.block_beats
        slots = self.timing["buffer_blocks"]
        buf = buffer(m, "block_buffer", 33 * U, slots * BB)
        bw = buf.write_port()
        br = buf.read_port()
        m.d.comb += [bw.addr.eq(tg["slot"] * BB + tg["kb"]), bw.data.eq(Cat(*xs, tg["keep"])),
                     bw.en.eq(v)]
        return br

    def _max_tree(self, m, xs, v, tg):
        """Max tree: lanes (pairs (x0, x1), (x2, x3), ...), then beats (held/have per level);
        padding is -inf.  Returns the row block's maximum, its valid and its tag (``g``,
        ``first``, ``last``, ``slot``)."""
        BB = self.cfg.block_beats
        row = [Mux(tg["keep"][j], x, NEG_INF32) for j, x in enumerate(xs)]
        mtag = {k: tg[k] for k in ("g", "first", "last", "slot")}
        lvl = 0
        while len(row) > 1:
            nxt = {f"x{k}": _max2(m, row[2 * k], row[2 * k + 1], f"mx{lvl}_{k}")
                   for k in range(len(row) // 2)}
            r = delay(m, {**nxt, **mtag}, 1, name=f"mlane{lvl}_")
            v = delay_valid(m, v, 1, name=f"mlane{lvl}_v")
            row = [r[f"x{k}"] for k in range(len(nxt))]
            mtag = {k: r[k] for k in mtag}
            lvl += 1

        def max_level(held, x, valid, lvl):
            nonlocal mtag
            r = delay(m, {"x": _max2(m, held, x, f"mb{lvl}"), **mtag}, 1, name=f"mbeat{lvl}_")
            x = r.pop("x")
            mtag = r
            return x, delay_valid(m, valid, 1, name=f"mbeat{lvl}_v")
        m_blk, m_valid = beat_tree(m, row[0], v, log2_exact(BB), 32, max_level, "mbeat")
        return m_blk, m_valid, mtag

    def _block_exps(self, m, br, m_blk, m_valid, mtag):
        """Second read of the row block at U per cycle (BB cycles; row blocks are >= BB apart)
        and ``e_j = exp(x_j - m_B)``.  Returns the exponentials, the first lane's valid and its
        tag (``m``, ``g``, ``first``, ``last``, ``keep``)."""
        cfg = self.cfg
        U, G, BB, od = cfg.lanes, cfg.d_group, cfg.block_beats, cfg.op_depth
        slots = self.timing["buffer_blocks"]
        seq_busy = Signal(name="exp_busy")
        seq_k = Signal(range(BB), name="exp_beat")
        seq = {"m": Signal(32, name="exp_m"), "g": Signal(range(G), name="exp_g"),
               "first": Signal(name="exp_first"), "last": Signal(name="exp_last"),
               "slot": Signal(range(slots), name="exp_slot")}
        with m.If(m_valid):
            m.d.sync += [seq_busy.eq(1), seq_k.eq(0), seq["m"].eq(m_blk)]
            m.d.sync += [seq[k].eq(mtag[k]) for k in ("g", "first", "last", "slot")]
        with m.Elif(seq_busy):
            m.d.sync += seq_k.eq(seq_k + 1)
            with m.If(seq_k == BB - 1):
                m.d.sync += seq_busy.eq(0)
        # the read is registered: address the beat the sequencer holds in the next cycle (a
        # new row block's first beat, or the next beat; past a row block's last beat, unused)
        with m.If(m_valid):
            m.d.comb += br.addr.eq(mtag["slot"] * BB)
        with m.Else():
            m.d.comb += br.addr.eq(seq["slot"] * BB + seq_k + 1)
        # and reads only when the sequencer will hold a beat (exp_busy in the next cycle): the
        # exponentials use the word only then
        m.d.comb += br.en.eq(m_valid | (seq_busy & (seq_k != BB - 1)))
        keep_rd = br.data[32 * U:]
        etag = {"m": seq["m"], "g": seq["g"], "first": seq["first"], "last": seq["last"],
                "keep": keep_rd}
        es, v, et, lead = [], None, None, None
        for j in range(U):
            e, ev, s, lead = _lane_exp_diff(m, od, _lane(br.data, j, 32), seq["m"], lead,
                                            valid=seq_busy, side=etag if j == 0 else None,
                                            name=f"e{j}")
            es.append(e)
            if j == 0:
                v, et = ev, s
        return es, v, et

    def _sum_tree(self, m, es, v, et):
        """The adder tree ``S_B`` over lanes, then beats.  Returns the row block's sum, its valid
        and its tag (``m``, ``g``, ``first``, ``last``)."""
        BB, od = self.cfg.block_beats, self.cfg.op_depth
        # padding adds +0 (Alg. 1 line 4 over the real positions only)
        row = [Mux(et["keep"][j], e, 0) for j, e in enumerate(es)]
        stag = {k: et[k] for k in ("m", "g", "first", "last")}
        lvl = 0
        while len(row) > 1:
            nxt, nv, nt = [], None, None
            for k in range(len(row) // 2):
                r, rv, rt = float_op(m, "add", FP32, od, {"a": row[2 * k], "b": row[2 * k + 1]},
                                     valid=v if k == 0 else None,
                                     side=stag if k == 0 else None, name=f"slane{lvl}_{k}",
                                     fire=v)
                nxt.append(r["r"])
                if k == 0:
                    nv, nt = rv, rt
            row, v, stag, lvl = nxt, nv, nt, lvl + 1

        def sum_level(held, x, valid, lvl):
            nonlocal stag
            r, valid, stag = float_op(m, "add", FP32, od, {"a": held, "b": x}, valid=valid,
                                      side=stag, name=f"sbeat{lvl}")
            return r["r"], valid
        s_blk, s_valid = beat_tree(m, row[0], v, log2_exact(BB), 32, sum_level, "sbeat")
        return s_blk, s_valid, stag

    def _stats(self, m, s_blk, s_valid, stag):
        """Streaming update (Alg. 1 lines 5-9): one merge_stats per query, then ``1/Z``; the
        job's statistics go into the stats FIFO, which this returns."""
        cfg = self.cfg
        G, od, tm = cfg.d_group, cfg.op_depth, self.timing
        merges = [merge_stats(m, FP32, od, valid=s_valid & (stag["g"] == g), first=stag["first"],
                              m_in=stag["m"], l_in=s_blk, name=f"merge{g}") for g in range(G)]
        mt = delay(m, {"g": stag["g"], "last": stag["last"]}, tm["merge"], name="mtag")
        mv = delay_valid(m, s_valid, tm["merge"], name="mtag_v")
        m_sel, z_sel = merges[0]["m"], merges[0]["l"]
        for g in range(1, G):
            m_sel = Mux(mt["g"] == g, merges[g]["m"], m_sel)
            z_sel = Mux(mt["g"] == g, merges[g]["l"], z_sel)
        # 1/Z of every merge result; the job's final one (query G-1) completes the statistics
        r, rv, rt = float_op(m, "recip", FP32, od, {"a": z_sel}, valid=mv,
                             side={"m": m_sel, "g": mt["g"], "last": mt["last"]}, name="recip")
        bank_m = [Signal(32, name=f"stat_m{g}") for g in range(G - 1)]
        bank_r = [Signal(32, name=f"stat_r{g}") for g in range(G - 1)]
        for g in range(G - 1):
            with m.If(rv & (rt["g"] == g)):
                m.d.sync += [bank_m[g].eq(rt["m"]), bank_r[g].eq(r["r"])]
        m.submodules.stats_fifo = stats = SyncFIFO(width=64 * G, depth=STATS_JOBS)
        m.d.comb += [stats.w_data.eq(Cat(*bank_m, rt["m"], *bank_r, r["r"])),
                     stats.w_en.eq(rv & rt["last"])]
        return stats

    def _pass2_input(self, m, stats, pop):
        """``i_s``: output credits, the row-block counters, the pop of the job's statistics and
        the query's ``m`` and ``1/Z``.  Returns the fire strobe, the credits used and the tag
        (``m``, ``r``, ``keep``, ``mask``, ``last``)."""
        cfg = self.cfg
        G, BB = cfg.d_group, cfg.block_beats
        s_in, sp = self.i_s, self.i_s.payload
        depth = self.timing["out_fifo"]
        used = Signal(range(depth + 1), name="out_credits_used")
        m.d.comb += s_in.ready.eq(stats.r_rdy & (used < depth))
        s_fire = Signal(name="i_s_fire")
        m.d.comb += s_fire.eq(s_in.valid & s_in.ready)
        kb2 = Signal(range(BB), name="norm_beat_in_block")
        qg2 = Signal(range(G), name="norm_query")
        end2 = Signal(name="norm_block_end")
        m.d.comb += end2.eq((kb2 == BB - 1) | sp.last)
        with m.If(s_fire):
            m.d.sync += kb2.eq(Mux(end2, 0, kb2 + 1))
            with m.If(end2):
                m.d.sync += qg2.eq(Mux(sp.last | (qg2 == G - 1), 0, qg2 + 1))
        m.d.comb += [pop.eq(s_fire & sp.last), stats.r_en.eq(pop)]
        m_g = _lane(stats.r_data, 0, 32)
        r_g = _lane(stats.r_data, G, 32)
        for g in range(1, G):
            m_g = Mux(qg2 == g, _lane(stats.r_data, g, 32), m_g)
            r_g = Mux(qg2 == g, _lane(stats.r_data, G + g, 32), r_g)
        ntag = {"m": m_g, "r": r_g, "keep": sp.keep, "mask": sp.mask, "last": sp.last}
        return s_fire, used, ntag

    def _normalize(self, m, s_fire, used, ntag):
        """``y_j = fp16(exp(x_j - m) * recip(Z))`` per lane, the output FIFO and ``o``."""
        cfg = self.cfg
        U, od = cfg.lanes, cfg.op_depth
        fmt, sw = cfg.score_fmt, cfg.score_fmt.width
        sp = self.i_s.payload
        depth = self.timing["out_fifo"]
        xs, v, nt = _to_fp32(m, [_lane(sp.data, j, sw) for j in range(U)], s_fire, ntag, "ncvt",
                             fmt, od)
        # lanes 1.. carry no valid; their probes fire on lane 0's (lead, mul_v, cvt_v)
        ys, vy, yt, lead = [], None, None, None
        for j, x in enumerate(xs):
            side = nt if j == 0 else None
            e, ev, s, lead = _lane_exp_diff(m, od, x, nt["m"], lead, valid=v, side=side,
                                            name=f"n{j}")
            if j == 0:
                nt2, mul_v = s, ev
            y, yv, s = float_op(m, "mul", FP32, od, {"a": e, "b": nt2["r"]},
                                valid=ev, side=nt2 if j == 0 else None, name=f"nmul{j}",
                                fire=mul_v)
            if j == 0:
                nt3, cvt_v = s, yv
            h, hv, s = float_op(m, "convert", FP16, od, {"a": y["r"]}, src=FP32, valid=yv,
                                side=nt3 if j == 0 else None, name=f"n16_{j}", fire=cvt_v)
            ys.append(h["r"])
            if j == 0:
                vy, yt = hv, s
        # masked positions and padding give +0 (Alg. 1 line 11)
        ys = [Mux(yt["keep"][j] & ~yt["mask"][j], y, 0) for j, y in enumerate(ys)]
        out = Signal(self.o.payload.shape())
        m.d.comb += [out.data.eq(Cat(*ys)), out.keep.eq(yt["keep"]), out.mask.eq(yt["mask"]),
                     out.last.eq(yt["last"])]
        m.submodules.out_fifo = ofifo = SyncFIFO(width=len(out.as_value()), depth=depth)
        m.d.comb += [ofifo.w_data.eq(out.as_value()), ofifo.w_en.eq(vy),
                     self.o.payload.eq(ofifo.r_data), self.o.valid.eq(ofifo.r_rdy),
                     ofifo.r_en.eq(self.o.ready)]
        sent = self.o.valid & self.o.ready
        m.d.sync += used.eq(used + s_fire - sent)


UNITS = (HwUnit("two_pass_softmax", "HILOS two-pass softmax: block max, exp-sum and streaming "
                "update, then exp(x - m) / Z (i, i_s -> o)", TwoPassSoftmaxConfig, TwoPassSoftmax,
                HILOS_PRESETS, softmax_cycles, paper="HILOS §4.4, Alg. 1, Fig. 7b and 7c",
                activity=softmax_job_activity,
                clocks=dict.fromkeys(HILOS_PRESETS, KERNEL_CLOCK),
                # op_depth 16, its deepest (100 MHz on ECP5); placement takes up to 26 minutes
                synth_bench={"set": {"beat_elems": 8, "head_dim": 64, "block": 32, "d_group": 1, "op_depth": 16},
                             "timeout_s": 2400}),)
