"""Input-side response of ``lolpim_dispatcher`` (:mod:`pimforge.hw.lolpim.dispatcher`).

Each run write on ``i`` (kind ``run``) is answered by one status on ``o_status``; the other host
writes owe none.  (Its commands on ``o`` do not count: how many a run issues depends on the
program's loops and on where an error stops it.)  The latencies are the cycle model's
(:func:`~pimforge.hw.lolpim.dispatcher_timing.dispatch_schedule`), by the kind of run, each from
the run's transfer to its status:

* a bad configuration (layer not below layers, request or length out of range): its status;
* a one-layer run of length 0, and one of length 1 whose word 0 (a shadow bit of the host's
  writes) is not a Dyn-Loop: its status, measured on that run;
* any other run: the longest the sequencer can take, ``max_layers`` layers of the costliest
  program of ``cmd_depth`` words (every word a Dyn-Loop, or one Dyn-Loop whose body of the other
  words repeats the largest legal LB), then the pipeline's drain.  Where that exceeds what the
  check can time (:data:`~pimforge.hw.core.formal.MAX_RESPONSE`) such a run still owes its
  status but is not tracked.

A run write the dispatcher takes while a run or its status is under way is dropped: its status
never comes.
"""
from __future__ import annotations

from amaranth.hdl import Const, Signal

from pimforge.hw.core.formal import MAX_RESPONSE, Owed, Response
from pimforge.hw.lolpim.config import DispatcherConfig
from pimforge.hw.lolpim.dispatcher_timing import LOOP_SLOTS, STATUS_DELAY, dispatch_schedule
from pimforge.hw.lolpim.dpa import KINDS, OPS, pack, run_fields, word

__all__ = ["status_latencies", "dispatcher_response"]


def status_latencies(cfg: DispatcherConfig) -> dict:
    """Cycles from a run write to its status (module docstring): ``bad``, ``empty`` (length 0),
    ``one`` (length 1, word 0 not a Dyn-Loop) and ``any``."""
    rf = run_fields(cfg)

    def status(beats):
        s = dispatch_schedule(cfg, beats)
        return s["o_status"][-1] - s["i"][-1]
    run = KINDS["run"]
    lat = {"bad": status([(run, 0, pack(rf, layer=1, layers=1))]),
           "empty": status([(run, 0, pack(rf, layers=1, length=0))]),
           "one": status([(KINDS["cmd"], 0, word(cfg, "dot_prod")),
                          (run, 0, pack(rf, layers=1, length=1))])}
    # the sequencer's slots of one layer (dispatcher_timing.run_slots): a word 1, a Dyn-Loop
    # LOOP_SLOTS plus LB per body word, the layer's end 1; the largest LB that is not an error
    d, lb = cfg.cmd_depth, min(cfg.max_lb, (1 << cfg.t_bits) - 1)
    layer = max(d, LOOP_SLOTS * d, LOOP_SLOTS + lb * (d - 1)) + 1
    lat["any"] = cfg.max_layers * layer + STATUS_DELAY
    return lat


def dispatcher_response(cfg: DispatcherConfig) -> Response:
    """One status per run write (module docstring)."""
    lat = status_latencies(cfg)
    fields = {}
    off = 0
    for name, width in run_fields(cfg):
        fields[name] = (off, width)
        off += width

    def owed(m, ports):
        i = ports.i
        kind, addr, data = i.payload.kind, i.payload.addr, i.payload.data
        take = i.valid & i.ready
        f = {n: data[o:o + w] for n, (o, w) in fields.items()}
        word0_loop = Signal(name="resp_word0_loop")
        with m.If(take & (kind == KINDS["cmd"]) & (addr == 0)):
            m.d.sync += word0_loop.eq(data[:3] == OPS["dyn_loop"])
        run = take & (kind == KINDS["run"])
        bad = (f["layer"] >= f["layers"]) | (f["request"] >= cfg.requests) | \
            (f["length"] > cfg.cmd_depth)
        one_layer = f["layers"] == f["layer"] + 1
        empty = one_layer & (f["length"] == 0)
        one = one_layer & (f["length"] == 1) & ~word0_loop
        good = run & ~bad
        any_ok = Const(int(lat["any"] <= MAX_RESPONSE))
        return ([Owed(run & bad, lat["bad"]), Owed(good & empty, lat["empty"]),
                 Owed(good & one, lat["one"]),
                 Owed(good & ~empty & ~one, min(lat["any"], MAX_RESPONSE), any_ok)],
                Const(1))
    return Response("o_status", owed)
