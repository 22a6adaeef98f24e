"""Bench of ``lolpim_dispatcher``: sessions of host writes (DPA program, Va2Pa table, runs) on
``i``; expected: the golden model's PIM commands on ``o`` and each run's ``o_status``
(:mod:`pimforge.sim.golden.lolpim.dispatcher`).

Phases: Table 4's example (LoL-PIM §5.2), a random session (several requests and layers, loops
with LB from T_cur, Dyn-Modi on rows and columns, a Va2Pa update between runs: lazy allocation,
Fig. 6d) without stalls, another with random stalls on every stream, and one run per error
code.
"""
from __future__ import annotations

from pimforge.hw.lolpim.dpa import KINDS, map_fields, pack, run_fields, word
from pimforge.sim.golden.lolpim.dispatcher import Session
from pimforge.sim.harness.job import Job, Phase
from pimforge.sim.harness.stall import StallPattern

__all__ = ["dispatcher_job", "table4_beats", "random_beats", "error_beats", "session_phase",
           "cmd_beats", "map_beat", "run_beat", "TABLE4_VA2PA"]

# Fig. 6c / §5.1: request 1 maps Va 0 -> Pa 22; request 2 maps Va 0 -> 33 and Va 1 -> 34.
TABLE4_VA2PA = {(1, 0): 22, (2, 0): 33, (2, 1): 34}


def cmd_beats(words, base: int = 0) -> list:
    return [(KINDS["cmd"], base + k, w) for k, w in enumerate(words)]


def map_beat(cfg, request: int, vrow: int, prow: int, valid: int = 1) -> tuple:
    return (KINDS["map"], request * cfg.vrows + vrow,
            pack(map_fields(cfg), valid=valid, prow=prow))


def run_beat(cfg, length: int, t_cur: int, request: int, layer: int = 0, layers: int = 1):
    return (KINDS["run"], 0, pack(run_fields(cfg), t_cur=t_cur, request=request, layer=layer,
                                  layers=layers, length=length))


def table4_program(cfg) -> list:
    """One attention step of §5.2: a Dyn-Loop over 256-token rows (``row = T_cur / 256``:
    shift 8) of LE = 4 words: WR-INP, Dyn-Modi (target row, coef 1), DOT-PROD, RD-OUT."""
    return [word(cfg, "dyn_loop", le=4, shift=8), word(cfg, "wr_inp", col=0),
            word(cfg, "dyn_modi", target=0, coef=1), word(cfg, "dot_prod", row=0, col=0),
            word(cfg, "rd_out", col=0)]


def table4_beats(cfg) -> list:
    """Table 4's example: request 2 at T_cur = 300, then request 1 at T_cur = 200."""
    prog = table4_program(cfg)
    return cmd_beats(prog) + [map_beat(cfg, r, v, p) for (r, v), p in TABLE4_VA2PA.items()] + \
        [run_beat(cfg, len(prog), 300, 2), run_beat(cfg, len(prog), 200, 1)]


# every unused bit of a Dyn-Loop or Dyn-Modi word set (``pack`` cuts it to the pad's width):
# the unit must ignore them
PAD_ONES = (1 << 64) - 1


def _pim(cfg, rng, modi: bool, max_rep: int) -> list:
    """A PIM command, with a Dyn-Modi before it when ``modi``; operands stay in range for up
    to ``max_rep`` repetitions."""
    op = ("dot_prod", "rd_out", "wr_inp")[int(rng.integers(3))]
    if not modi:
        return [word(cfg, op, row=int(rng.integers(1 << cfg.row_bits)),
                     col=int(rng.integers(1 << cfg.col_bits)))]
    if rng.random() < 0.6:
        coef = int(rng.integers(0, max(1, (cfg.vrows - 1) // max(1, max_rep - 1)) + 1))
        base = int(rng.integers(0, cfg.vrows - coef * (max_rep - 1)))
        return [word(cfg, "dyn_modi", target=0, coef=coef, pad=PAD_ONES),
                word(cfg, op, row=base, col=0)]
    coef = int(rng.integers(0, 8))
    base = int(rng.integers(0, (1 << cfg.col_bits) - coef * (max_rep - 1)))
    return [word(cfg, "dyn_modi", target=1, coef=coef, pad=PAD_ONES),
            word(cfg, op, row=int(rng.integers(1 << cfg.row_bits)), col=base)]


def random_program(cfg, rng, length: int, max_rep: int = 4) -> list:
    """Straight PIM commands and Dyn-Loops (shift 7 or 8) whose bodies mix PIM commands and
    Dyn-Modi + PIM pairs; at most ``length`` words, operands in range for LB <= ``max_rep``;
    the unused bits of Dyn-Loop and Dyn-Modi words are all set."""
    words = []
    while True:
        if rng.random() < 0.5:
            body = []
            for _ in range(int(rng.integers(1, 5))):
                body += _pim(cfg, rng, rng.random() < 0.6, max_rep)
            item = [word(cfg, "dyn_loop", le=len(body), shift=int(rng.integers(7, 9)),
                         pad=PAD_ONES)] + body
        else:
            item = _pim(cfg, rng, rng.random() < 0.3, 1)
        if len(words) + len(item) > length:
            return words
        words += item


def random_beats(cfg, rng, runs: int = 4, length: int | None = None) -> list:
    """A program, every request's Va2Pa rows (random physical rows), ``runs`` runs of random
    request, T_cur (LB <= 4 at shift 7, 0 included), layers; between runs one request's table
    is remapped (a new chunk, Fig. 6d)."""
    # the whole buffer up to 256 words (Table 5's 32,768-word buffer would only lengthen the run)
    prog = random_program(cfg, rng, min(cfg.cmd_depth, 256) if length is None else length)
    beats = cmd_beats(prog)
    beats += [map_beat(cfg, r, v, int(rng.integers(1 << cfg.row_bits)))
              for r in range(cfg.requests) for v in range(cfg.vrows)]
    for k in range(runs):
        t_cur = 0 if k == 1 else int(rng.integers(1, min(4 << 7, 1 << cfg.t_bits)))
        layers = int(rng.integers(1, min(cfg.max_layers, 3) + 1))
        beats.append(run_beat(cfg, len(prog), t_cur, int(rng.integers(cfg.requests)),
                              int(rng.integers(layers)), layers))
        r = int(rng.integers(cfg.requests))
        beats += [map_beat(cfg, r, v, int(rng.integers(1 << cfg.row_bits)))
                  for v in range(cfg.vrows)]
    return beats


def error_beats(cfg) -> list:
    """One run per error code (the program rewritten before each), then a good run.  Request
    0 maps every virtual row but 8; T_cur = 600 at shift 7 gives LB = 5."""
    def w(op, **f):
        return word(cfg, op, **f)

    def loop(le, shift=7):
        return w("dyn_loop", le=le, shift=shift)

    def modi(target, coef):
        return w("dyn_modi", target=target, coef=coef)

    dot = w("dot_prod", row=1, col=2)
    progs = [
        [dot, loop(2), modi(0, 2), w("dot_prod", row=0, col=1)],    # va2pa_miss (vrow 8)
        [dot, loop(1, shift=0), dot],                               # loop_bound (LB = 600)
        [dot, loop(3), dot, dot],                                   # loop_range (past the end)
        [dot, loop(0), dot],                                        # loop_range (LE = 0)
        [loop(3), dot, loop(1), dot],                               # nested_loop
        [loop(2), modi(0, 4), w("dot_prod", row=1, col=0)],         # operand_range (row 17)
        [loop(2), modi(1, 16), w("rd_out", row=1, col=5)],          # operand_range (col 69)
        [dot, modi(0, 1), modi(1, 1), dot],                         # bad_modi (Modi, Modi)
        [loop(2), dot, modi(0, 1), dot],                            # bad_modi (end of body)
        [dot, modi(0, 1)],                                          # bad_modi (program end)
        [dot, modi(0, 1), loop(1), dot],                            # bad_modi (then a loop)
        [dot, dot | 6, dot],                                        # bad_opcode
    ]
    beats = [map_beat(cfg, 0, v, 40 + v, int(v != 8)) for v in range(cfg.vrows)]
    for prog in progs:
        beats += cmd_beats(prog) + [run_beat(cfg, len(prog), 600, 0)]
    beats.append(run_beat(cfg, 3, 600, 0, layer=2, layers=2))   # bad_config (layer >= layers)
    beats.append(run_beat(cfg, cfg.cmd_depth + 1, 600, 0))      # bad_config (too long)
    beats += cmd_beats([loop(1), dot]) + [run_beat(cfg, 2, 600, 0, layer=1, layers=2)]   # ok
    return beats


def beat_fields(beats) -> dict:
    return {"kind": [b[0] for b in beats], "addr": [b[1] for b in beats],
            "data": [b[2] for b in beats]}


def session_phase(cfg, name: str, beats, stall_p: float = 0.0, seed: int = 0) -> Phase:
    """One phase: the beats on ``i``, the golden commands and statuses expected."""
    o, status = Session(cfg).replay(beats).expected()
    kw = {}
    if stall_p:
        kw = {"valid_stall": {"i": StallPattern.random(stall_p, seed)},
              "ready_stall": {"o": StallPattern.random(stall_p, seed + 1),
                              "o_status": StallPattern.random(stall_p, seed + 2)}}
    return Phase(name, {"i": beat_fields(beats)}, {"o": o, "o_status": status}, **kw)


def dispatcher_job(cfg, rng, seed: int = 1, stall_p: float = 0.3, stalls: bool = True,
                   errors: bool = True, runs: int = 4) -> Job:
    phases = [session_phase(cfg, "table 4", table4_beats(cfg)),
              session_phase(cfg, "random session", random_beats(cfg, rng, runs))]
    if stalls:
        phases.append(session_phase(cfg, f"random stalls p={stall_p}",
                                    random_beats(cfg, rng, runs), stall_p, seed))
    if errors:
        phases.append(session_phase(cfg, "errors", error_beats(cfg), stall_p if stalls else 0.0,
                                    seed + 10))
    return Job(phases)


BENCHES = {"lolpim_dispatcher": dispatcher_job}
