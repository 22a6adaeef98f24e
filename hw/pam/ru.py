"""``pam_ru``: the reduction unit (PAM Alg. 1 ``Reduction``, lines 15-22; §5.2.2).

The RU merges a request's partials ``(O, m, l)`` one after the other into a running state held
in its scratch buffer, with the golden model's merge (:mod:`pimforge.sim.golden.pam.common`), then sends
the merged partial out; in final mode also ``O / l`` as fp16 and the log-sum-exp ``m + log(l)``.

Datapath (``Bw = head_dim / vector_width`` beats per partial, ``L`` = merge latency)::

    beat b (data) ──► delay line, L cycles (free-running) ──► W fmas ──► scratch[b]
                                            scratch[b] ──────►   ▲      (op_depth cycles)
    beat 0 (m, l, first-of-request) ──► merge_stats ── g, swap, first (held for beats 1..Bw-1)

Each beat reads its scratch entry one cycle before its fmas (synchronous read port, transparent
for the write port) and writes the results back ``op_depth`` cycles later.  The next partial's
beat b arrives at least ``Bw`` cycles after this one, so its read comes ``Bw - op_depth - 1 >= 0``
cycles after this write or later (in the same cycle, the transparent port forwards the written
value): no hazard stall is needed for ``Bw >= 4`` and ``op_depth <= 3`` (checked at elaboration).

After the beat carrying ``last`` has been written and the final statistics are ready (in final
mode: ``recip(l)`` and ``lse = m + log(l)`` computed from the last merge's ``l``; the logarithm
in the accumulator format, converted to fp32 for the sum with the fp32 maximum), a reader
streams the Bw scratch entries, with the scalars, through a back-pressured pipeline to ``o``
(final mode: ``norm = fp16(O * recip(l))``, W multipliers and, with an fp32 accumulator,
W converters).  The input is blocked (``i.ready`` low) from the ``last`` beat until the reader
has read the last entry; then the next request may start while the drain pipeline empties.

Timing (no stalls): input one beat per cycle; a request of P partials has its first output
``P * Bw - 1 + latency`` cycles after its first input beat, where :attr:`PamRu.latency` counts
cycles from the last input beat to the first output beat; the outputs then follow one per cycle.
"""
from __future__ import annotations

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib.wiring import In, Out

from pimforge.base.formats import FP16
from pimforge.base.numerics import SCORE
from pimforge.hw.core.activity import Memory, op_action, probe
from pimforge.hw.core.component import PimComponent
from pimforge.hw.core.fanout import COPY_MARK
from pimforge.hw.core.inventory import record
from pimforge.hw.core.pipeline import build_pipeline, stage_levels
from pimforge.hw.core.unit import HwUnit
from pimforge.hw.fp.convert import convert_stages
from pimforge.hw.fp.mul import mul_stages
from pimforge.hw.fp.ops import delay, delay_valid, float_op, op_latency
from pimforge.hw.fp.softmax import merge_latency, merge_stats
from pimforge.hw.pam.config import PamRuConfig
from pimforge.hw.pam.ru_formal import ru_response
from pimforge.hw.pam.ru_timing import (
    COEF_REG, IN_REG, ru_activity_model, ru_cycle_model, ru_drain_depth, ru_latency, stats_ready
)
from pimforge.hw.pam.streams import partial_signature

__all__ = ["PamRu"]


class _Link:
    """The valid/ready pair between the scratch reader and the drain pipeline."""

    def __init__(self, valid):
        self.valid = valid
        self.ready = Signal(name="drain_ready")


def _per_lane(stage, lanes, keep, rename=None):
    """Apply a scalar stage function to ``lanes`` elements (keys ``e<j>_<key>``), passing the
    ``keep`` keys through; ``rename`` maps this stage's input keys from the previous outputs."""
    rename = rename or {}

    def st(m, v):
        out = {k: v[k] for k in keep}
        for j in range(lanes):
            pre = f"e{j}_"
            sub = {k[len(pre):]: x for k, x in v.items() if k.startswith(pre)}
            sub = {rename.get(k, k): x for k, x in sub.items()}
            out.update({pre + k: x for k, x in stage(m, sub).items()})
        return out
    st.levels = stage_levels(stage)   # the lanes run side by side
    return st


class PamRu(PimComponent):
    """``pam_ru``: the reduction unit (PAM Alg. 1 ``Reduction``, §5.2.2).

    Input stream ``i``: ``data`` (W acc elements of O), ``m`` (fp32), ``l`` (acc), ``last``; each
    partial is Bw = head_dim / W beats (m and l taken from beat 0); ``last`` marks the final beat
    of a request's final partial.  Output stream ``o``: ``data``, ``m``, ``l`` (Bw beats of the merged
    partial) and in final mode also ``norm`` (fp16 O / l) and ``lse`` (m + log l).

    Throughput is one input beat per cycle (no bubbles inside a request) and one output beat per
    cycle; :attr:`latency` is the number of cycles from a request's last input beat to its first
    output beat (see :func:`~pimforge.hw.pam.ru_timing.ru_latency`), so P partials produce their
    first output ``P * Bw - 1 + latency`` cycles after their first input beat.

    Parameters
    ----------
    cfg : PamRuConfig
    """

    UNIT = "pam_ru"

    def __init__(self, cfg):
        acc, w = cfg.acc, cfg.vector_width
        super().__init__(cfg, {
            "i": In(partial_signature(acc, w, last=True)),
            "o": Out(partial_signature(acc, w, final=cfg.final)),
        })

    @property
    def latency(self) -> int:
        return ru_latency(self.cfg)

    @property
    def throughput(self) -> float:
        return 1.0

    @property
    def storage_bytes(self) -> int:
        """Bytes of the O scratch actually used (Bw entries of W acc elements)."""
        return self.cfg.beats * self.cfg.vector_width * self.cfg.acc.width // 8

    def manifest(self) -> dict:
        man = super().manifest()
        man["storage_bytes"] = self.storage_bytes
        return man

    # The sections of the datapath, in the order ``elaborate`` builds them (the order of the
    # statements and the signal names fix the generated Verilog).

    def elaborate(self, platform):
        cfg = self.cfg
        od = cfg.op_depth
        if cfg.beats < op_latency("fma", od) + 1:
            raise ValueError(f"pam_ru: {cfg.beats} beats per partial cannot hide the scratch "
                             f"read-after-write of {op_latency('fma', od) + 1} cycles")
        m = Module()
        ctl = self._input_side(m)
        inp = self._in_reg(m, ctl)
        issue = inp["valid"] & (inp["beat"] == 0)
        ms, coef = self._merge(m, inp, issue)
        fin, in_flight = self._final_stats(m, ms, issue)
        dp, written = self._o_update(m, inp, coef)
        scal, link = self._reader(m, ctl, dp, written, in_flight, fin)
        self._drain(m, dp, scal, link)
        return m

    def _input_side(self, m) -> dict:
        """Beat counter, request start and input blocking (from the ``last`` beat until the
        reader starts)."""
        bw, p = self.cfg.beats, self.i.payload
        beat = Signal(range(bw), name="beat")
        req_first = Signal(init=1, name="req_first")
        pend = Signal(name="pending")            # last beat taken, the reader has not started
        rd_active = Signal(name="rd_active")     # the reader is reading this request's entries
        accept = Signal(name="accept")
        m.d.comb += [self.i.ready.eq(~pend & ~rd_active), accept.eq(self.i.valid & self.i.ready)]
        with m.If(accept):
            m.d.sync += beat.eq(Mux(beat == bw - 1, 0, beat + 1))
            with m.If(p.last):
                m.d.sync += [beat.eq(0), req_first.eq(1), pend.eq(1)]
            with m.Elif(beat == 0):
                m.d.sync += req_first.eq(0)
        return {"beat": beat, "req_first": req_first, "pend": pend, "rd_active": rd_active,
                "accept": accept}

    def _in_reg(self, m, ctl) -> dict:
        """The input register (``IN_REG``): the accepted beat (``m``, ``l``, ``data``, ``last``),
        its beat index and request-start flag, and ``valid``, one cycle after the transfer."""
        p = self.i.payload
        r = delay(m, {"m": p.m, "l": p.l, "data": p.data, "last": p.last, "beat": ctl["beat"],
                      "first": ctl["req_first"]}, IN_REG, name="in_reg")
        return dict(r, valid=delay_valid(m, ctl["accept"], IN_REG, name="in_valid"))

    def _merge(self, m, inp, issue):
        """Statistics: one merge per partial, at its beat 0 (PAM Alg. 1 lines 17-19).  Returns the
        merge's outputs and the fma coefficients (g, swap, first) per lane: registers
        (``COEF_REG``) loaded by the merge's valid and held for the partial's beats, one copy
        per lane (``swap`` and ``first`` select every operand bit of a lane's fma)."""
        acc, od, aw = self.cfg.acc, self.cfg.op_depth, self.cfg.acc.width
        ms = merge_stats(m, acc, od, valid=issue, first=inp["first"], m_in=inp["m"],
                         l_in=inp["l"])
        coef = []
        for j in range(self.cfg.vector_width):
            c = {"g": Signal(aw, name=f"coef_g{COPY_MARK}{j}"),
                 "swap": Signal(name=f"coef_swap{COPY_MARK}{j}"),
                 "first": Signal(name=f"coef_first{COPY_MARK}{j}")}
            with m.If(ms["valid"]):
                m.d.sync += [c[k].eq(ms[k]) for k in c]
            coef.append(c)
        return ms, coef

    def _final_stats(self, m, ms, issue):
        """The request's final statistics (stable from the reader's start to its last read): m,
        l and, in final mode, recip(l) and lse = m + log(l) (PAM Alg. 1 line 21).  Returns them
        and the count of merges whose statistics are still in flight."""
        cfg = self.cfg
        acc, bw, od, aw, sw = cfg.acc, cfg.beats, cfg.op_depth, cfg.acc.width, SCORE.width
        m_fin, l_fin, r_fin, lse_fin = (Signal(wd, name=n) for n, wd in (
            ("m_fin", sw), ("l_fin", aw), ("r_fin", aw), ("lse_fin", sw)))
        with m.If(ms["valid"]):
            m.d.sync += [m_fin.eq(ms["m"]), l_fin.eq(ms["l"])]
        if cfg.final:   # PAM Alg. 1 line 21: recip(l) once, lse = m + log(l)
            rc, rv, _ = float_op(m, "recip", acc, od, {"a": ms["l"]}, valid=ms["valid"],
                                 name="rcp")
            lg, lv, ls = float_op(m, "log", acc, od, {"a": ms["l"]}, valid=ms["valid"],
                                  side={"m": ms["m"]}, name="log")
            log_l = lg["r"]
            if aw != sw:
                cv, lv, ls = float_op(m, "convert", SCORE, od, {"a": log_l}, valid=lv, side=ls,
                                      src=acc, name="log_cvt")
                log_l = cv["r"]
            ad, av, _ = float_op(m, "add", SCORE, od, {"a": ls["m"], "b": log_l}, valid=lv,
                                 name="lse")
            with m.If(rv):
                m.d.sync += r_fin.eq(rc["r"])
            with m.If(av):
                m.d.sync += lse_fin.eq(ad["r"])
            done = av
        else:
            done = ms["valid"]
        in_flight = Signal(range(stats_ready(cfg) // bw + 3), name="stats_in_flight")
        m.d.sync += in_flight.eq(in_flight + issue - done)
        return {"m": m_fin, "l": l_fin, "r": r_fin, "lse": lse_fin}, in_flight

    def _o_update(self, m, inp, coef):
        """O update: delay the beats by the merge latency, then W fmas into the scratch (Alg. 1
        line 20).  Returns the scratch's drain read port and the ``written`` flag (the request's
        last beat is in the scratch)."""
        cfg = self.cfg
        acc, w, bw, od, aw = cfg.acc, cfg.vector_width, cfg.beats, cfg.op_depth, cfg.acc.width
        lat = merge_latency(od, acc) + COEF_REG - 1    # the read cycle; the fmas follow it
        line = {"data": inp["data"], "beat": inp["beat"], "last": inp["last"]}
        d1 = delay(m, line, lat, name="line")
        d2 = delay(m, d1, 1, name="line_rd")
        v1 = delay_valid(m, inp["valid"], lat, name="linev")
        v2 = delay_valid(m, v1, 1, name="line_rdv")
        m.submodules.scratch = scratch = Memory(shape=w * aw, depth=bw, init=[])
        wp = scratch.write_port()
        rp = scratch.read_port(transparent_for=(wp,))
        dp = scratch.read_port()
        # the read is enabled by the beat it serves: its data is used only by that beat's fmas
        # (the next cycle), so it reads once per beat, not in every cycle
        m.d.comb += [rp.addr.eq(d1["beat"]), rp.en.eq(v1)]
        results, wv, ws = [], None, None
        for j in range(w):
            x = d2["data"][j * aw:(j + 1) * aw]
            o = rp.data[j * aw:(j + 1) * aw]
            # first: fma(X, 1, +0); swap: fma(O, g, X); else fma(X, g, O)
            swap, first = coef[j]["swap"], coef[j]["first"]
            ops = {"a": Mux(swap, o, x), "b": coef[j]["g"], "c": Mux(first, 0, Mux(swap, x, o))}
            side = {"beat": d2["beat"], "last": d2["last"]} if j == 0 else None
            f, fv, fs = float_op(m, "fma", acc, od, ops, valid=v2 if j == 0 else None,
                                 side=side, name=f"fma{j}", fire=v2)
            results.append(f["r"])
            if j == 0:
                wv, ws = fv, fs
        m.d.comb += [wp.addr.eq(ws["beat"]), wp.data.eq(Cat(*results)), wp.en.eq(wv)]
        written = Signal(name="written")         # the request's last beat is in the scratch
        with m.If(wv & ws["last"]):
            m.d.sync += written.eq(1)
        return dp, written

    def _reader(self, m, ctl, dp, written, in_flight, fin):
        """Reader: once the last beat is written and the statistics are ready, the Bw scratch
        entries and the scalars go to the drain pipeline.  Returns the scalar registers and the
        link to the drain pipeline."""
        bw, aw, sw = self.cfg.beats, self.cfg.acc.width, SCORE.width
        pend, rd_active = ctl["pend"], ctl["rd_active"]
        go = Signal(name="go")
        m.d.comb += go.eq(written & (in_flight == 0) & ~rd_active)
        reading = rd_active | go
        rd_k = Signal(range(bw), name="rd_k")
        rd_valid = Signal(name="rd_valid")
        link = _Link(rd_valid)
        load = ~rd_valid | link.ready
        scal = {k: Signal(sw if k in ("m", "lse") else aw, name=f"rd_{k}")
                for k in ("m", "l", "r", "lse")}
        m.d.comb += [dp.addr.eq(rd_k), dp.en.eq(load & reading)]
        with m.If(go):
            m.d.sync += [written.eq(0), pend.eq(0), rd_active.eq(1)]
        with m.If(load):
            m.d.sync += rd_valid.eq(reading)
            with m.If(reading):
                m.d.sync += [rd_k.eq(Mux(rd_k == bw - 1, 0, rd_k + 1)),
                             scal["m"].eq(fin["m"]), scal["l"].eq(fin["l"]),
                             scal["r"].eq(fin["r"]), scal["lse"].eq(fin["lse"])]
                with m.If(rd_k == bw - 1):
                    m.d.sync += rd_active.eq(0)
        return scal, link

    def _drain(self, m, dp, scal, link):
        """Drain pipeline (back-pressured) to ``o``: norm = fp16(O * recip(l)) in final mode."""
        cfg = self.cfg
        acc, w, aw = cfg.acc, cfg.vector_width, cfg.acc.width
        keep = ["data", "m", "l"] + (["lse"] if cfg.final else [])
        inputs = {"data": dp.data, "m": scal["m"], "l": scal["l"], "lse": scal["lse"]}
        stages = [lambda m_, v: dict(v)]
        if cfg.final:
            for j in range(w):
                inputs[f"e{j}_a"] = dp.data[j * aw:(j + 1) * aw]
                inputs[f"e{j}_b"] = scal["r"]
            stages = [_per_lane(s, w, keep) for s in mul_stages(acc, False)]
            record("mul", acc, count=w, inline=True)  # inventory for synthesis area breakdowns
            # the entries enter the pipeline one per transfer and each moves through it once:
            # a probe per lane's operator, on the entry transfer
            enter = link.valid & link.ready
            for _ in range(w):
                probe(m, op_action("mul", acc), enter)
            if aw != 16:
                conv = convert_stages(acc, FP16, False)
                record("convert", FP16, acc, count=w, inline=True)
                for _ in range(w):
                    probe(m, op_action("convert", FP16), enter)
                stages += [_per_lane(s, w, keep, {"r": "a"} if k == 0 else None)
                           for k, s in enumerate(conv)]

        def pack(v):
            fields = {"data": v["data"], "m": v["m"], "l": v["l"]}
            if cfg.final:
                fields["norm"] = Cat(*(v[f"e{j}_r"] for j in range(w)))
                fields["lse"] = v["lse"]
            return Cat(*(fields[name] for name, _ in self.o.payload.shape()))

        build_pipeline(m, stages, inputs, ru_drain_depth(cfg), link, self.o, pack)


UNITS = (HwUnit("pam_ru", "PAM reduction unit: merges partials (O, m, l) of a request, PAM Alg. 1 "
                "Reduction (i: data, m, l, last -> o: data, m, l [, norm, lse])",
                PamRuConfig, PamRu, {"final": {"final": True}, "fp32": {"acc": "fp32"}},
                ru_cycle_model, paper="PAM §5.2.2, Alg. 1 lines 15-22", response=ru_response,
                activity=ru_activity_model,
                # op_depth 15: the depth its ECP5 figure needs for 100 MHz
                synth_bench={"set": {"vector_width": 4, "head_dim": 64, "op_depth": 15}}),)
