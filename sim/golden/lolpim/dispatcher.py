"""Golden model of ``lolpim_dispatcher`` (LoL-PIM §5.2-5.3): a DPA program, the configuration
buffer and the Va2Pa table expanded to the exact stream of PIM commands and the run's status.

An interpreter in the paper's terms, written apart from the RTL's pipeline: a Dyn-Loop repeats
its next LE words LB = ceil(T_cur / 2**shift) times; a Dyn-Modi makes one operand of the next
word virtual (``base + coef * repetition``); a virtual row is translated through the Va2Pa
table of the run's request.  The run stops at the first error in execution order and issues
nothing from that word on (encoding and codes: :mod:`pimforge.hw.lolpim.dpa`).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from pimforge.hw.lolpim.dpa import (
    KINDS, OPS, PIM_OPS, STATUS, loop_bound, map_fields, run_fields, unpack, word_fields
)

__all__ = ["Outcome", "dispatch", "Session", "OUT_NAMES"]

OUT_NAMES = ("op", "row", "col", "layer", "pc", "iter")


class _Stop(Exception):
    def __init__(self, code: str, index: int):
        super().__init__(code)
        self.code, self.index = STATUS[code], index


@dataclass
class Outcome:
    """The commands of one run (dicts of ``OUT_NAMES``) and its status (code, index); ``lb``
    and ``le`` record every executed Dyn-Loop's (pc, LB, LE)."""

    commands: list = field(default_factory=list)
    code: int = 0
    index: int = 0
    loops: list = field(default_factory=list)


def _decode(cfg, w: int) -> dict:
    op = w & 7
    kind = "loop" if op == OPS["dyn_loop"] else "modi" if op == OPS["dyn_modi"] else "pim"
    return unpack(word_fields(cfg)[kind], w)


def _issue(cfg, out, d, pc, it, layer, modi, request, va2pa):
    """One PIM command: apply the pending Dyn-Modi and translate a virtual row."""
    row, col = d["row"], d["col"]
    if modi is not None:
        target, coef, _ = modi
        if target == 0:
            vrow = row + coef * it
            if vrow >= cfg.vrows:
                raise _Stop("operand_range", pc)
            valid, prow = va2pa.get(request * cfg.vrows + vrow, (0, 0))
            if not valid:
                raise _Stop("va2pa_miss", pc)
            row = prow
        else:
            col = col + coef * it
            if col >= 1 << cfg.col_bits:
                raise _Stop("operand_range", pc)
    out.commands.append({"op": d["op"], "row": row, "col": col, "layer": layer, "pc": pc,
                         "iter": it})


def _layer(cfg, program, run, layer, va2pa, out):
    n, pc = run["length"], 0
    loop = None                     # [start, end, lb, repetition]
    modi = None                     # (target, coef, pc of the Dyn-Modi)
    while pc < n:
        d = _decode(cfg, program.get(pc, 0))
        op = d["op"]
        in_body_end = loop is not None and pc == loop[1]
        if modi is not None and op not in PIM_OPS:
            raise _Stop("bad_modi", modi[2])
        if op > OPS["dyn_modi"]:
            raise _Stop("bad_opcode", pc)
        if op == OPS["dyn_modi"]:
            if in_body_end or pc == n - 1:
                raise _Stop("bad_modi", pc)
            modi = (d["target"], d["coef"], pc)
        elif op == OPS["dyn_loop"]:
            if loop is not None:
                raise _Stop("nested_loop", pc)
            if d["le"] == 0 or pc + d["le"] >= n:
                raise _Stop("loop_range", pc)
            lb = loop_bound(run["t_cur"], d["shift"])
            if lb > cfg.max_lb:
                raise _Stop("loop_bound", pc)
            out.loops.append((pc, lb, d["le"]))
            if lb == 0:
                pc += d["le"] + 1
            else:
                loop = [pc + 1, pc + d["le"], lb, 0]
                pc += 1
            continue
        else:
            _issue(cfg, out, d, pc, loop[3] if loop else 0, layer, modi, run["request"], va2pa)
            modi = None
        if in_body_end and loop[3] + 1 < loop[2]:
            loop[3] += 1
            pc = loop[0]
        else:
            if in_body_end:
                loop = None
            pc += 1


def dispatch(cfg, program: dict, run: dict, va2pa: dict) -> Outcome:
    """One run: ``program`` maps index -> DPA word, ``run`` is the configuration buffer
    (:func:`~pimforge.hw.lolpim.dpa.run_fields`), ``va2pa`` maps ``request * vrows + vrow`` ->
    (valid, physical row)."""
    out = Outcome(index=run["length"])
    if run["layer"] >= run["layers"] or run["request"] >= cfg.requests or \
            run["length"] > cfg.cmd_depth:
        out.code, out.index = STATUS["bad_config"], 0
        return out
    try:
        for layer in range(run["layer"], run["layers"]):
            _layer(cfg, program, run, layer, va2pa, out)
    except _Stop as stop:
        out.code, out.index = stop.code, stop.index
    return out


class Session:
    """Host writes replayed in order (the unit's ``i``): the command buffer and the Va2Pa
    table as the writes leave them, and every run's :class:`Outcome`."""

    def __init__(self, cfg):
        self.cfg, self.program, self.va2pa, self.runs = cfg, {}, {}, []

    def write(self, kind: int, addr: int, data: int):
        cfg = self.cfg
        if kind == KINDS["cmd"] and addr < cfg.cmd_depth:
            self.program[addr] = data & ((1 << cfg.word_bits) - 1)
        elif kind == KINDS["map"] and addr < cfg.map_depth:
            e = unpack(map_fields(cfg), data)
            self.va2pa[addr] = (e["valid"], e["prow"])
        elif kind == KINDS["run"]:
            self.runs.append(dispatch(cfg, self.program, unpack(run_fields(cfg), data),
                                      self.va2pa))

    def replay(self, beats) -> "Session":
        for b in beats:
            self.write(*b)
        return self

    def expected(self) -> tuple:
        """(``o`` field lists, ``o_status`` field lists) of every run so far."""
        o = {k: [c[k] for r in self.runs for c in r.commands] for k in OUT_NAMES}
        return o, {"code": [r.code for r in self.runs], "index": [r.index for r in self.runs]}
