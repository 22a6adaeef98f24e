"""``hermes_act``: the activation unit of the Hermes NDP-DIMM (Hermes §IV-A): ReLU and softmax
over a vector of ``n`` fp16 elements, ``lanes`` (U) elements a beat.

Streams.  ``i`` carries ``data`` (U x fp16), ``count`` (valid elements of the beat, read on the
``last`` beat only: 1..U; every other beat is full), ``op``
(:data:`~pimforge.hw.hermes.streams.ACT_OPS`: 0 ReLU, 1 softmax; read on a vector's first beat) and
``last``.  ``o`` carries ``data``, ``count`` (U, or the vector's count on its last beat) and
``last``; lanes past ``count`` are +0.

Numerics (:mod:`pimforge.sim.golden.hermes.act` bit for bit):

* ReLU: ``x`` if its sign is clear or it is a NaN (kept as it is, payload and sign), else +0;
  so relu(-0) = +0 and relu(-inf) = +0.
* Softmax, in ``acc`` (fp32 by default, fp16 as the paper's units; fp16 inputs convert to it
  exactly): ``m`` = the maximum (fp16 comparator tree over a beat's lanes, pairs (0, 1),
  (2, 3), ..., a level a cycle, padding -inf; then a running maximum over the beats,
  ``t if greater(t, m) else m``: -0 < +0, a NaN never wins); ``e = exp(acc(x) - acc(m))``;
  the adder tree sums a beat's ``e`` (padding +0) in the same pairs, and beat ``k`` adds into
  partial sum ``k mod Q`` (Q = ``partials``; partials start at -0, the exact additive
  identity); Z is the pairwise tree of the Q partials, adjacent pairs first (Q = 4:
  ``Z = (p0 + p1) + (p2 + p3)``); one reciprocal ``r = 1/Z``; ``y = fp16(e * r)``.  IEEE
  rules carry through: a NaN or +inf input (inf - inf), or an all -inf vector, gives NaN
  everywhere, as float64 softmax does.

Microarchitecture (one vector at a time, softmax in three passes over the buffered vector)::

    i ─┬─ ReLU (1 register) ──────────────────────────────────────────────┐
       └─ vector buffer (max_len / U beats x U fp16) ─┐                    │
       └─ U-lane max tree ─► running max m            │ read at U a cycle  │
                          pass 2: U x exp(x - m) ─► adder tree ─► Q partials ─► Z ─► 1/Z
                          pass 3: U x exp(x - m) ─► U x (e * 1/Z) ─► fp16 ─┴─► out FIFO ─► o

* A partial is revisited every Q cycles of pass 2 and written back ``op_depth + 1`` cycles
  after its read, so ``op_depth <= partials - 1``; Z's tree is ``log2 Q`` adder levels.
* The exp units serve both passes (the paper's 256 exp units, 256 adders, 256 multipliers, a
  comparator tree, an adder tree and one divider, here a reciprocal).
* Flow control is only at the inputs: an ``i`` ReLU beat and a pass-3 read each take a credit
  of the output FIFO (returned when its ``o`` beat leaves); the pipelines are free-running.
  After a softmax's last beat ``i`` waits until that vector's last output beat is in the FIFO
  (the buffer is free and the outputs stay in order).  Vectors longer than ``max_len`` are not
  supported by softmax (the buffer address wraps); ReLU streams any length.
"""
from __future__ import annotations

from amaranth.hdl import Array, Cat, Module, Mux, Signal
from amaranth.lib.wiring import In, Out

from pimforge.base.formats import FP16
from pimforge.base.numerics import log2_exact
from pimforge.hw.core.activity import Memory
from pimforge.hw.core.component import PimComponent
from pimforge.hw.core.fanout import SplitFifo
from pimforge.hw.core.pipeline import levels
from pimforge.hw.core.unit import HwUnit
from pimforge.hw.fp.core import LV_MUX, lv_log
from pimforge.hw.fp.ops import delay, delay_valid, float_op
from pimforge.hw.fp.softmax import greater
from pimforge.hw.hermes.act_timing import act_cycle_model, act_timing, act_unit_activity
from pimforge.hw.hermes.config import ACT_PRESETS, NDP_CLOCK, HermesActConfig
from pimforge.hw.hermes.streams import ACT_OPS, act_signatures

__all__ = ["HermesAct"]

NEG_INF16 = 0xFC00
NEG_ZERO = {16: 0x8000, 32: 0x80000000}


def _lane(value, j, w=16):
    return value[j * w:(j + 1) * w]


def _float_lanes(m, kind, fmt, od, lanes, operands, valid, side, name, src=None):
    """One free-running ``kind`` per lane (``operands(j)`` gives lane j's); lane 0 carries the
    valid and the tag, every lane's probe fires on it (lanes past a beat's count too: they
    compute on padding).  Returns ``(results, valid, side)``."""
    out, v_out, s_out = [], None, None
    for j in range(lanes):
        r, v, s = float_op(m, kind, fmt, od, operands(j), valid=valid if j == 0 else None,
                           side=side if j == 0 else None, src=src, name=f"{name}{j}",
                           fire=valid)
        out.append(r["r"])
        if j == 0:
            v_out, s_out = v, s
    return out, v_out, s_out


def _add_tree(m, fmt, od, row, valid, side, name):
    """Pairwise adder tree over ``row`` (a power of two long): (0, 1), (2, 3), ..."""
    lvl = 0
    while len(row) > 1:
        pairs = row
        row, valid, side = _float_lanes(m, "add", fmt, od, len(pairs) // 2,
                                        lambda k: {"a": pairs[2 * k], "b": pairs[2 * k + 1]},
                                        valid, side, f"{name}{lvl}_")
        lvl += 1
    return row[0], valid, side


class HermesAct(PimComponent):
    """Hermes activation unit (§IV-A): ``i`` (fp16 vectors, ReLU or softmax) in, ``o`` out.

    ReLU takes one ``i`` beat and gives one ``o`` beat a cycle, ``latency`` = 2 cycles after its
    input; softmax streams a vector in once at a beat a cycle and gives it out at a beat a cycle
    after two more passes over its buffer (:func:`~pimforge.hw.hermes.act_timing.act_schedule`,
    :func:`~pimforge.hw.hermes.act_timing.act_cycles`).

    Parameters
    ----------
    cfg : HermesActConfig
    """

    UNIT = "hermes_act"

    def __init__(self, cfg: HermesActConfig):
        i, o = act_signatures(cfg.lanes)
        super().__init__(cfg, {"i": In(i), "o": Out(o)})

    @property
    def timing(self) -> dict:
        return act_timing(self.cfg)

    @property
    def latency(self) -> int:
        """Cycles from a ReLU ``i`` beat to its ``o`` beat (no stalls)."""
        return self.timing["relu"] + 1

    @property
    def throughput(self) -> float:
        """Beats per cycle: ReLU in and out, and each softmax pass, at steady state."""
        return 1.0

    def manifest(self) -> dict:
        """The base manifest plus ``timing`` (:func:`~pimforge.hw.hermes.act_timing.act_timing`),
        ``lanes``, ``ops`` (the
        ``op`` codes) and ``sum_partials`` (the config's ``partials``)."""
        return {**super().manifest(), "timing": self.timing, "lanes": self.cfg.lanes,
                "ops": list(ACT_OPS), "sum_partials": self.cfg.partials}

    # ------------------------------------------------------------------------------------------
    def elaborate(self, platform):
        m = Module()
        ctl = self._input(m)
        m_run = self._max(m, ctl)
        rd, seq = self._sequencer(m, ctl)
        es, ev, et = self._exps(m, rd, seq, m_run)
        r_pulse, r_reg = self._sum(m, es, ev, et, seq)
        m.d.comb += seq["go3"].eq(r_pulse)
        self._output(m, ctl, seq, es, ev, et, r_reg)
        return m

    def _input(self, m):
        """``i``: the op of the vector, credits, the buffer write and the busy flag."""
        cfg = self.cfg
        U = cfg.lanes
        i, p = self.i, self.i.payload
        depth = self.timing["out_fifo"]
        first = Signal(init=1, name="vec_first")
        op_reg = Signal(name="vec_op")
        soft = Signal(name="is_softmax")
        busy = Signal(name="softmax_busy")            # set on a softmax's last beat
        used = Signal(range(depth + 1), name="out_credits_used")
        fire = Signal(name="i_fire")
        m.d.comb += [soft.eq(Mux(first, p.op, op_reg)),
                     i.ready.eq(~busy & (soft | (used < depth))),
                     fire.eq(i.valid & i.ready)]
        with m.If(fire):
            m.d.sync += [first.eq(p.last), op_reg.eq(soft)]
        count = Signal(range(U + 1), name="i_count")
        m.d.comb += count.eq(Mux(p.last, p.count, U))
        keep = Cat(*[count > j for j in range(U)])

        buf = Memory(shape=16 * U, depth=cfg.max_beats, init=[])
        m.submodules.vector_buffer = buf
        wr = buf.write_port()
        wa = Signal(range(cfg.max_beats), name="wr_beat")
        last_beat = Signal(range(cfg.max_beats), name="last_beat")
        last_count = Signal(range(U + 1), name="last_count")
        sfire = fire & soft
        m.d.comb += [wr.addr.eq(wa), wr.data.eq(p.data), wr.en.eq(sfire)]
        with m.If(sfire):
            m.d.sync += wa.eq(Mux(p.last | (wa == cfg.max_beats - 1), 0, wa + 1))
            with m.If(p.last):
                m.d.sync += [last_beat.eq(wa), last_count.eq(count), busy.eq(1)]
        return {"fire": fire, "soft": soft, "sfire": sfire, "first": first, "keep": keep,
                "count": count, "busy": busy, "used": used, "depth": depth, "buf": buf,
                "last_beat": last_beat, "last_count": last_count}

    def _max(self, m, ctl):
        """The lane comparator tree (a level a cycle, padding -inf) and the running maximum."""
        p = self.i.payload
        row = [Mux(ctl["keep"][j], _lane(p.data, j), NEG_INF16) for j in range(self.cfg.lanes)]
        # The accepted beat, masked, is registered before the tree: its first compare no
        # longer follows the input port's count and last (ECP5: `i` to `mlane0_0_x0`, 22 cells).
        r = delay(m, {**{f"x{j}": x for j, x in enumerate(row)}, "first": ctl["first"],
                      "last": p.last}, 1, name="max_in_")
        v = delay_valid(m, ctl["sfire"], 1, name="max_in_v")
        row = [r[f"x{j}"] for j in range(len(row))]
        tag = {"first": r["first"], "last": r["last"]}
        lvl = 0
        while len(row) > 1:
            nxt = {}
            for k in range(len(row) // 2):
                a, b = row[2 * k], row[2 * k + 1]
                nxt[f"x{k}"] = Mux(greater(m, b, a, name=f"mx{lvl}_{k}", fmt=FP16), b, a)
            r = delay(m, {**nxt, **tag}, 1, name=f"mlane{lvl}_")
            v = delay_valid(m, v, 1, name=f"mlane{lvl}_v")
            row = [r[f"x{k}"] for k in range(len(nxt))]
            tag = {k: r[k] for k in tag}
            lvl += 1
        m_run = Signal(16, name="run_max")
        gt = greater(m, row[0], m_run, name="run_gt", fmt=FP16)
        with m.If(v):
            m.d.sync += m_run.eq(Mux(tag["first"] | gt, row[0], m_run))
        self._max_done = v & tag["last"]
        return m_run

    def _sequencer(self, m, ctl):
        """Reads the buffer at a beat a cycle: pass 2 (sum) once the maximum is final, pass 3
        (normalize) once 1/Z is registered and while output credits last."""
        cfg = self.cfg
        U = cfg.lanes
        busy = Signal(name="seq_busy")
        norm = Signal(name="seq_norm")
        k = Signal(range(cfg.max_beats), name="seq_beat")
        go3 = Signal(name="seq_go3")
        last = Signal(name="seq_last")
        issue = Signal(name="seq_issue")
        m.d.comb += [last.eq(k == ctl["last_beat"]),
                     issue.eq(busy & (~norm | (ctl["used"] < ctl["depth"])))]
        with m.If(self._max_done):
            m.d.sync += [busy.eq(1), norm.eq(0), k.eq(0)]
        with m.Elif(go3):
            m.d.sync += [busy.eq(1), norm.eq(1), k.eq(0)]
        with m.Elif(issue):
            m.d.sync += k.eq(k + 1)
            with m.If(last):
                m.d.sync += busy.eq(0)
        rd = ctl["buf"].read_port(domain="sync")
        # read only when issuing: its data is used only in the cycle after an issue
        m.d.comb += [rd.addr.eq(k), rd.en.eq(issue)]
        # beat k's partial: k mod partials (a k narrower than log2 partials is all of k: the
        # partials past max_beats stay -0)
        tag = {"norm": norm, "last": last, "slot": k[:log2_exact(cfg.partials)],
               "count": Mux(last, ctl["last_count"], U)}
        seq = delay(m, tag, 1, name="rd_")
        seq["valid"] = delay_valid(m, issue, 1, name="rd_v")
        seq["take"] = issue & norm                     # a pass-3 read takes an output credit
        seq["first2"] = self._max_done
        seq["go3"] = go3
        return rd, seq

    def _exps(self, m, rd, seq, m_run):
        """``e_j = exp(acc(x_j) - acc(m))`` per lane, shared by passes 2 and 3."""
        cfg = self.cfg
        acc, od = cfg.acc, cfg.op_depth
        tag = {k: seq[k] for k in ("norm", "last", "slot", "count")}
        xs, v = [_lane(rd.data, j) for j in range(cfg.lanes)], seq["valid"]
        m_acc = m_run
        if acc.width != 16:
            xs, v, tag = _float_lanes(m, "convert", acc, od, cfg.lanes, lambda j: {"a": xs[j]},
                                      v, tag, "xcv", src=FP16)
            # m converts beside every beat read's lanes
            r, _, _ = float_op(m, "convert", acc, od, {"a": m_run}, src=FP16, name="mcv",
                               fire=seq["valid"])
            m_acc = r["r"]
        ds, v, tag = _float_lanes(m, "sub", acc, od, cfg.lanes,
                                  lambda j: {"a": xs[j], "b": m_acc}, v, tag, "xsub")
        return _float_lanes(m, "exp", acc, od, cfg.lanes, lambda j: {"a": ds[j]}, v, tag,
                            "exp")

    def _sum(self, m, es, ev, et, seq):
        """Pass 2: the lane adder tree, the ``partials`` partial sums, Z and the one reciprocal.
        Returns the pulse of 1/Z and its register."""
        cfg = self.cfg
        acc, od, w = cfg.acc, cfg.op_depth, cfg.acc.width
        keep = [et["count"] > j for j in range(cfg.lanes)]
        row = [Mux(keep[j], e, 0) for j, e in enumerate(es)]
        s, sv, st = _add_tree(m, acc, od, row, ev & ~et["norm"],
                              {"slot": et["slot"], "last": et["last"]}, "ssum")
        parts = [Signal(w, init=NEG_ZERO[w], name=f"partial{q}") for q in range(cfg.partials)]

        # the partial's select is a priced stage of its add (float_op ``pre``): one parallel
        # select (a case), not a Mux chain, and with enough op_depth a register follows it
        @levels(LV_MUX * lv_log(cfg.partials))
        def select(m, x):
            return {"a": Array(x["parts"])[x["slot"]], "b": x["b"]}
        r, pv, pt = float_op(m, "add", acc, od, {"parts": parts, "slot": st["slot"], "b": s},
                             valid=sv, side={"slot": st["slot"], "last": st["last"]},
                             name="padd", pre=select)
        with m.If(seq["first2"]):
            m.d.sync += [p.eq(NEG_ZERO[w]) for p in parts]
        with m.If(pv):
            for q in range(cfg.partials):
                with m.If(pt["slot"] == q):
                    m.d.sync += parts[q].eq(r["r"])
        done = delay_valid(m, pv & pt["last"], 1, name="psum_done")
        z, zv, _ = _add_tree(m, acc, od, list(parts), done, None, "zsum")
        rz, rv, _ = float_op(m, "recip", acc, od, {"a": z}, valid=zv, name="recip")
        r_reg = Signal(w, name="recip_z")
        with m.If(rv):
            m.d.sync += r_reg.eq(rz["r"])
        return rv, r_reg

    def _output(self, m, ctl, seq, es, ev, et, r_reg):
        """Pass 3 (``fp16(e * 1/Z)``), the ReLU path and the output FIFO."""
        cfg = self.cfg
        U, acc, od = cfg.lanes, cfg.acc, cfg.op_depth
        tag = {"last": et["last"], "count": et["count"]}
        ys, yv, yt = _float_lanes(m, "mul", acc, od, U, lambda j: {"a": es[j], "b": r_reg},
                                  ev & et["norm"], tag, "nmul")
        if acc.width != 16:
            ys, yv, yt = _float_lanes(m, "convert", FP16, od, U, lambda j: {"a": ys[j]}, yv, yt,
                                      "n16_", src=acc)
        ys = [Mux(yt["count"] > j, y, 0) for j, y in enumerate(ys)]
        # ReLU: keep x when its sign is clear or it is a NaN, else +0 (so relu(-0) = +0)
        p = self.i.payload
        relu = []
        for j in range(U):
            x = _lane(p.data, j)
            nan = (x[10:15] == 0x1F) & (x[:10] != 0)
            relu.append(Mux(ctl["keep"][j] & (~x[15] | nan), x, 0))
        rfire = ctl["fire"] & ~ctl["soft"]
        rr = delay(m, {"data": Cat(*relu), "count": ctl["count"], "last": p.last}, 1,
                   name="relu_")
        rv = delay_valid(m, rfire, 1, name="relu_v")
        # the two never write in the same cycle: i waits while a softmax is in the unit
        out = Signal(self.o.payload.shape())
        m.d.comb += [out.data.eq(Mux(rv, rr["data"], Cat(*ys))),
                     out.count.eq(Mux(rv, rr["count"], yt["count"])),
                     out.last.eq(Mux(rv, rr["last"], yt["last"]))]
        with m.If(yv & yt["last"]):
            m.d.sync += ctl["busy"].eq(0)
        # the output FIFO stays in LUT-RAM: as a block RAM its clock-to-out (5.8 ns on ECP5)
        # started the path to the output port (fp16 inside, 16 partials, op_depth 15)
        fifo = SplitFifo([len(out.as_value())], ctl["depth"], "out_fifo", lut_ram=True)
        m.submodules.out_fifo = fifo
        m.d.comb += [fifo.w_data.eq(out.as_value()), fifo.w_en.eq(rv | yv),
                     self.o.payload.eq(fifo.r_data), self.o.valid.eq(fifo.r_rdy),
                     fifo.r_en.eq(self.o.ready)]
        sent = self.o.valid & self.o.ready
        used = ctl["used"]
        m.d.sync += used.eq(used + (rfire | seq["take"]) - sent)


UNITS = (HwUnit("hermes_act", "Hermes NDP-DIMM activation unit: ReLU or softmax over an fp16 "
                "vector, lanes a beat (i -> o)", HermesActConfig, HermesAct, ACT_PRESETS,
                act_cycle_model, paper="Hermes §IV-A", clocks=dict.fromkeys(ACT_PRESETS, NDP_CLOCK),
                activity=act_unit_activity,
                # fp16 inside at 16 partials and op_depth 15: over 100 MHz on ECP5 (with the
                # default fp32 inside, half that)
                synth_bench={"set": {"lanes": 4, "max_len": 64, "acc": "fp16", "partials": 16,
                                     "op_depth": 15}}),)
