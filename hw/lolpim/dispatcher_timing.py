"""Cycle model of ``lolpim_dispatcher`` (:mod:`pimforge.hw.lolpim.dispatcher`): the cycle of
every host write, command and status of a session without stalls.

The sequencer spends one cycle per program word it fetches (in execution order: a loop body
once per repetition), two more per Dyn-Loop (the redirect from S2 drops two fetches) and one
per layer end.  A PIM command fetched in cycle f leaves in cycle f + 5; the status follows the
run's last cycle (its final layer end) by 6 cycles (the pipeline drains, then the FSM reports),
and ``i`` takes its next write the cycle after the status.  A bad configuration reports the
cycle after the run's write.  The model covers runs that end without an error (it walks the
program's loops, not its Va2Pa lookups).
"""
from __future__ import annotations

from pimforge.hw.core.activity import mem_action
from pimforge.hw.lolpim.config import DispatcherConfig
from pimforge.hw.lolpim.dpa import (
    KINDS, OPS, loop_bound, pack, run_fields, unpack, word, word_fields
)

__all__ = ["dispatch_schedule", "run_slots", "FIRST_COMMAND_LATENCY", "dispatcher_cycles",
           "run_reads", "dispatcher_activity", "dispatcher_unit_activity"]

LOOP_SLOTS = 3       # the Dyn-Loop's fetch and the two fetches its redirect drops
OUT_DELAY = 5        # fetch -> S1 -> S2 -> S3 -> S4 -> O
STATUS_DELAY = 6     # last sequencer cycle -> drained (5) -> status


def _op(cfg, w: int) -> int:
    return w & 7            # the opcode: the word's 3 low bits


def run_slots(cfg: DispatcherConfig, program: dict, run: dict) -> tuple:
    """(sequencer cycles of the run, offsets of its commands' fetches) for a run that ends
    without an error; ``program`` maps index -> DPA word."""
    loop_word = word_fields(cfg)["loop"]
    slot, fetches = 0, []
    for _layer in range(run["layer"], run["layers"]):
        pc = 0
        while pc < run["length"]:
            w = program.get(pc, 0)
            if _op(cfg, w) == OPS["dyn_loop"]:
                f = unpack(loop_word, w)
                slot += LOOP_SLOTS
                lb = loop_bound(run["t_cur"], f["shift"])
                for _ in range(lb):
                    for q in range(pc + 1, pc + f["le"] + 1):
                        if _op(cfg, program.get(q, 0)) < 3:
                            fetches.append(slot)
                        slot += 1
                pc += f["le"] + 1
                continue
            if _op(cfg, w) < 3:
                fetches.append(slot)
            slot += 1
            pc += 1
        slot += 1                                # the layer's end
    return slot, fetches


def run_reads(cfg: DispatcherConfig, program: dict, run: dict) -> tuple:
    """(command-buffer reads, Va2Pa reads) of a run that ends without an error.

    The command buffer is read once per fetch: each word in execution order (a loop body once
    per repetition), and the two fetches a Dyn-Loop's redirect drops, but for the second when
    it would be the end of the layer (no word there to fetch).  The Va2Pa table is read once
    per PIM command whose row a Dyn-Modi modifies (target 0), the translated ones."""
    fields = word_fields(cfg)
    reads, lookups = 0, 0
    for _layer in range(run["layer"], run["layers"]):
        pc, row_modi = 0, False
        body = []
        while pc < run["length"]:
            w = program.get(pc, 0)
            if _op(cfg, w) == OPS["dyn_loop"]:
                f = unpack(fields["loop"], w)
                reads += 2 + (pc + 2 != run["length"])
                body = [program.get(q, 0) for q in range(pc + 1, pc + f["le"] + 1)]
                body *= loop_bound(run["t_cur"], f["shift"])
                pc += f["le"] + 1
            else:
                body = [w]
                pc += 1
            for bw in body:
                reads += 1
                if _op(cfg, bw) == OPS["dyn_modi"]:
                    row_modi = unpack(fields["modi"], bw)["target"] == 0
                elif _op(cfg, bw) < 3:
                    lookups += row_modi
                    row_modi = False
    return reads, lookups


def dispatcher_activity(cfg: DispatcherConfig, beats: list) -> dict:
    """The actions of a session of host writes ``(kind, addr, data)`` whose runs end without an
    error (as :func:`dispatch_schedule`): a write of the command buffer or the Va2Pa table per
    host write of that kind inside it, and each run's reads (:func:`run_reads`).  A run with a
    bad configuration reads nothing.  Stalls change none of them: the sequencer and both read
    enables wait for the same advance."""
    cmd = (cfg.cmd_depth, cfg.word_bits)
    va2pa = (cfg.map_depth, cfg.map_bits)
    counts = dict.fromkeys([mem_action(a, *shape) for shape in (cmd, va2pa)
                            for a in ("write", "read")], 0)
    program = {}
    for kind, addr, data in beats:
        if kind == KINDS["cmd"] and addr < cfg.cmd_depth:
            program[addr] = data
            counts[mem_action("write", *cmd)] += 1
        elif kind == KINDS["map"] and addr < cfg.map_depth:
            counts[mem_action("write", *va2pa)] += 1
        elif kind == KINDS["run"]:
            run = unpack(run_fields(cfg), data)
            if run["layer"] >= run["layers"] or run["request"] >= cfg.requests or \
                    run["length"] > cfg.cmd_depth:
                continue
            reads, lookups = run_reads(cfg, program, run)
            counts[mem_action("read", *cmd)] += reads
            counts[mem_action("read", *va2pa)] += lookups
    return counts


def dispatch_schedule(cfg: DispatcherConfig, beats: list) -> dict:
    """Cycles (from the first host write, at 0) of a session of host writes ``(kind, addr,
    data)`` offered back to back with every output always ready: ``{"i": [...], "o": [...],
    "o_status": [...]}``."""
    program, t = {}, 0
    out = {"i": [], "o": [], "o_status": []}
    for kind, addr, data in beats:
        out["i"].append(t)
        if kind == KINDS["cmd"]:
            program[addr] = data
        if kind != KINDS["run"]:
            t += 1
            continue
        run = unpack(run_fields(cfg), data)
        if run["layer"] >= run["layers"] or run["request"] >= cfg.requests or \
                run["length"] > cfg.cmd_depth:
            out["o_status"].append(t + 1)
            t += 2
            continue
        slots, fetches = run_slots(cfg, program, run)
        first = t + 1                            # the sequencer's first cycle
        out["o"] += [first + f + OUT_DELAY for f in fetches]
        status = first + slots - 1 + STATUS_DELAY
        out["o_status"].append(status)
        t = status + 1
    return out


FIRST_COMMAND_LATENCY = 6     # run transfer -> S0 -> S1 -> S2 -> S3 -> S4 -> O


def dispatcher_cycles(cfg: DispatcherConfig, n_ops: int) -> int:
    """Cycles from the first host write to the status of a straight program of ``n_ops``
    DOT-PROD commands run once (one layer): the writes, one cycle per command, the layer end and
    the pipeline (:func:`~pimforge.hw.lolpim.dispatcher_timing.dispatch_schedule`)."""
    return dispatch_schedule(cfg, _straight(cfg, n_ops))["o_status"][-1] + 1


def _straight(cfg: DispatcherConfig, n_ops: int) -> list:
    beats = [(KINDS["cmd"], k, word(cfg, "dot_prod", row=k, col=k)) for k in range(n_ops)]
    beats.append((KINDS["run"], 0, pack(run_fields(cfg), layers=1, length=n_ops)))
    return beats


def dispatcher_unit_activity(cfg: DispatcherConfig, n_ops: int) -> dict:
    """``HwUnit.activity``: :func:`dispatcher_activity` of :func:`dispatcher_cycles`' session
    (``n_ops`` writes, then ``n_ops`` reads of the command buffer, no lookup)."""
    return dispatcher_activity(cfg, _straight(cfg, n_ops))
