"""Critical path and logic depth per pipeline stage of a generic gate netlist.

The generic flow writes its mapped netlist with ``write_json``; :func:`analyze` walks it once in
topological order and gives every net the number of gates on the longest combinational path
into it, counted the way ``ltp -noff`` counts (every ``$_*`` gate one level; flip-flops,
memories and black boxes end one path and start the next; constant inputs start nothing).  So
its maximum is the flow's ``logic_depth``.

Paths start at input port bits, flip-flop outputs and memory or black-box outputs, and end at
flip-flop D inputs, output port bits and memory or black-box inputs.  The report names the
critical path's start and end by their register or port names (``pipe1_sum[3]``) and groups
the end registers into pipeline stages (:func:`stage_of`).

:func:`clock_check` turns levels into an ASAP7 delay estimate (:data:`ASAP7_TIMING`) and
compares it with a clock period.

:func:`ready_paths` follows the handshake: from every input port bit named ``*__ready`` (a stream
output's back-pressure, ``o__ready``) the longest combinational path, and which ``*__ready`` /
``*__valid`` output ports it reaches without a register in between.  A unit whose ``o__ready``
reaches its ``i__ready`` chains its neighbours' ready logic into one path; a skid buffer or
credit counter breaks it (none reached).  Black boxes end these paths too: the float operators
are free-running and take no ``ready``.
"""
from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path

__all__ = ["analyze", "analyze_file", "stage_of", "ASAP7_TIMING", "asap7_delay_ps",
           "clock_check", "merge", "ready_paths"]

# Sequential gate types of Yosys's internal cell library: a path ends at their inputs.
_SEQ = re.compile(r"^\$_(DFF|DFFE|SDFF|SDFFE|SDFFCE|ALDFF|ALDFFE|DFFSR|DFFSRE|DLATCH|DLATCHSR|SR)_")
# A pipeline-stage token inside a register name: Amaranth's `pipe0_x`, our operators'
# `p1_x` and `<name>_p2_x`, `s3_x`, `stage4_x`.
_STAGE_TOKEN = re.compile(r"^(p|pipe|s|st|stage)\d+$")
_BIT = re.compile(r"\[\d+\]$")
_NUMBER = re.compile(r"\d+$")
_READY = re.compile(r"__ready$")               # Amaranth's stream ports: o__ready, i_k__ready
_HANDSHAKE = re.compile(r"__(ready|valid)$")
STAGES_KEPT = 200  # per report: the deepest stage groups (a PAM device has hundreds)

# ASAP7 delays (ps) from the 7.5-track standard-cell library's NLDM tables, RVT, typical corner,
# 0.7 V, 25 C: asap7sc7p5t_SIMPLE_RVT_TT_nldm_211120.lib and asap7sc7p5t_SEQ_RVT_TT_nldm_220123.lib
# as OpenROAD-flow-scripts ships them (flow/platforms/asap7/lib; INVx1 from
# asap7sc7p5t_INVBUF_RVT_TT_nldm_201020.lib); the PDK is Clark et al.,
# "ASAP7: A 7-nm finFET predictive process design kit", Microelectronics Journal 53 (2016)
# 105-115.
# * One level: NAND2xp5_ASAP7_75t_R, input A, rising output (its slower edge), 40 ps input slew,
#   2.88 fF load -- the table point nearest a fan-out of four INVx1 inputs (4 x 0.62 fF):
#   36.2 ps.  At 20 ps slew the mean of both edges is 27 ps, and an INVx1 driving four of
#   itself about 19 ps.  The generic netlist's levels are AND/OR/XOR/MUX gates as well as
#   NAND/NOR/NOT, and no wire is modelled, so we take the slow NAND2 edge as a conservative
#   figure for an average level, not the fast one.
# * Flip-flop: DFFHQx4_ASAP7_75t_R (the library's positive-edge D flip-flop with a true Q):
#   clock-to-Q 75.2 ps (rising Q, 20 ps clock slew, 2.88 fF) plus setup 10.5 ps (20 ps slews).
ASAP7_TIMING = {
    "level_ps": 36.0, "clk_to_q_ps": 75.0, "setup_ps": 11.0,
    "text": "ASAP7 (RVT, TT, 0.7 V, 25 C; asap7sc7p5t NLDM libraries): 36 ps per gate level "
            "(NAND2xp5 slower edge at a fan-out-of-four load, 40 ps input slew) + 86 ps per "
            "stage for the flip-flop (DFFHQx4 clock-to-Q 75 ps + setup 11 ps); no wires, no "
            "clock skew",
}


def stage_of(name: str) -> str:
    """The pipeline stage a register belongs to, from its name.

    The bit index goes; within the last hierarchy level the name is cut after its last stage
    token (``p1``, ``pipe0``, ``s2``, ``stage3``), so every field of a stage's register lands
    in one group; the trailing number of every other token (a lane, an instance, a tree level)
    becomes ``*``, so the same stage of every lane is one group: ``lt0_3_p0_e_big[4]``,
    ``lt1_0_p0_small`` -> ``lt*_*_p0``; ``fma2_p1_sign`` -> ``fma*_p1``.  A name with no stage
    token keeps its base name, numbers starred (``drain_beat``, ``count1`` -> ``count*``);
    Amaranth's anonymous ``$123`` signals are ``(unnamed)``.  The table's deepest end still
    names the one register.
    """
    base = _BIT.sub("", name)
    parts = base.split(".")
    leaf = parts[-1].split("_")
    for i in range(len(leaf) - 1, -1, -1):
        if _STAGE_TOKEN.match(leaf[i]):
            leaf = leaf[:i + 1]
            break
    parts[-1] = "_".join(leaf)
    parts = ["_".join(t if _STAGE_TOKEN.match(t) else _NUMBER.sub("*", t) for t in p.split("_"))
             for p in parts]
    group = ".".join(parts)
    return "(unnamed)" if group.startswith("$") or not group.strip("*_.") else group


def _bit_names(mod: dict, wanted) -> dict:
    """bit -> the most readable name, for the bits in ``wanted``: public before hidden, no
    ``$`` before ``$``, a register (a wire with an ``init`` value: Amaranth gives every
    register one) before other wires, a wire before a port, then the shortest."""
    ports = set(mod.get("ports", {}))
    best = {}
    for name, net in mod.get("netnames", {}).items():
        bits = net["bits"]
        rank = None
        for i, b in enumerate(bits):
            if b not in wanted:
                continue
            if rank is None:
                rank = (net.get("hide_name", 0), "$" in name,
                        "init" not in net.get("attributes", {}), name in ports, len(name))
            old = best.get(b)
            if old is None or rank < old[0]:
                best[b] = (rank, f"{name}[{i}]" if len(bits) > 1 else name)
    return {b: v[1] for b, v in best.items()}


def _ints(bits) -> list:
    return [b for b in bits if b.__class__ is int]


class _Graph:
    """The combinational gates of one module, their levels and the path end points."""

    def __init__(self, mod: dict):
        self.mod = mod
        self.ends = []        # (bit, end point name, kind)
        self.source_name = {}  # bit -> start point name (flip-flop, memory, black box)
        ins, outs, boundary = [], [], []
        for cname, cell in mod.get("cells", {}).items():
            ctype, conns = cell["type"], cell["connections"]
            if ctype.startswith("$_") and not _SEQ.match(ctype):
                y = conns.get("Y")
                if y is not None:  # every combinational gate of Yosys's library: one output Y
                    outs.append(_ints(y))
                    ins.append([b for p, bs in conns.items() if p != "Y" for b in bs
                                if b.__class__ is int])
                    continue
                dirs = cell.get("port_directions", {})
                ins.append(_ints(b for p, bs in conns.items() if dirs.get(p) == "input"
                                 for b in bs))
                outs.append(_ints(b for p, bs in conns.items() if dirs.get(p) == "output"
                                  for b in bs))
            elif ctype != "$scopeinfo":
                boundary.append((cname, cell))
        wanted = {b for _, cell in boundary if _SEQ.match(cell["type"])
                  for b in _ints(cell["connections"].get("Q", []))}
        self.names = _bit_names(mod, wanted)
        for cname, cell in boundary:
            self._boundary(cname, cell, cell["type"], cell.get("port_directions", {}),
                           cell["connections"])
        for pname, port in mod.get("ports", {}).items():
            bits = port["bits"]
            for i, b in enumerate(bits):
                if b.__class__ is not int:
                    continue
                label = f"{pname}[{i}]" if len(bits) > 1 else pname
                if port["direction"] == "output":
                    self.ends.append((b, label, "output"))
                else:
                    self.source_name.setdefault(b, label)
        self.ins, self.outs = ins, outs
        self.order = []       # the gates in topological order
        self.level, self.pred, self.loops = self._levels()

    def _boundary(self, cname, cell, ctype, dirs, conns):
        """Record a flip-flop's, memory's or black box's inputs as ends, outputs as starts."""
        if _SEQ.match(ctype):
            q = _ints(conns.get("Q", []))
            name = self.names.get(q[0], cname) if q else cname
            for b in _ints(conns.get("D", [])):
                self.ends.append((b, name, "register"))
            for b in q:
                self.source_name[b] = self.names.get(b, name)
            return
        if ctype == "$mem_v2":
            label = "memory " + str(cell.get("parameters", {}).get("MEMID", cname)).lstrip("\\")
        else:
            label = f"{cname.lstrip(chr(92))} ({ctype.lstrip(chr(92))})"
        for port, bits in conns.items():
            for b in _ints(bits):
                if dirs.get(port) == "output":
                    self.source_name[b] = f"{label}.{port}"
                elif port not in ("CLK", "RD_CLK", "WR_CLK", "clk"):
                    self.ends.append((b, f"{label}.{port}", "memory" if ctype == "$mem_v2"
                                      else "black box"))

    def _levels(self):
        """Kahn's algorithm over the gates: level[bit] = gates on the longest path into it."""
        driver = {}
        for c, outs in enumerate(self.outs):
            for b in outs:
                driver[b] = c
        readers = defaultdict(list)
        indeg = [0] * len(self.ins)
        for c, ins in enumerate(self.ins):
            for b in ins:
                if b in driver:
                    readers[b].append(c)
                    indeg[c] += 1
        level, pred = {}, {}
        ready = [c for c, d in enumerate(indeg) if d == 0]
        done = 0
        while ready:
            c = ready.pop()
            done += 1
            self.order.append(c)
            best, via = -1, None
            for b in self.ins[c]:
                lv = level.get(b, 0)
                if lv > best:
                    best, via = lv, b
            lv = best + 1 if via is not None else 0   # constant inputs only: a source
            for b in self.outs[c]:
                level[b] = lv
                pred[b] = via
                for r in readers.get(b, ()):
                    indeg[r] -= 1
                    if indeg[r] == 0:
                        ready.append(r)
        return level, pred, len(self.ins) - done

    def start_of(self, bit) -> str:
        while self.pred.get(bit) is not None:
            bit = self.pred[bit]
        if bit in self.source_name:
            return self.source_name[bit]
        # an undriven net or a gate with constant inputs only: rare, so looked up one at a time
        return _bit_names(self.mod, {bit}).get(bit, f"net {bit}")


def analyze(netlist: dict, top: str) -> dict:
    """Longest paths of module ``top`` of a Yosys JSON netlist; see the module docstring.

    Returns ``levels`` (the critical path's gates), its ``start`` and ``end`` names and
    ``end_kind``, ``stages`` (one row per end group, deepest first: ``stage``, ``levels``,
    ``bits``, ``start``, ``end``), ``gates`` and ``loops`` (gates left on a combinational
    loop, normally 0)."""
    mod = netlist["modules"][top]
    g = _Graph(mod)
    hs = ready_paths(g)
    groups = {}
    for bit, name, kind in g.ends:
        lv = g.level.get(bit, 0)
        key = stage_of(name) if kind == "register" else {"output": "(outputs)"}.get(
            kind, name.split(".")[0])
        row = groups.get(key)
        if row is None:
            groups[key] = row = {"stage": key, "kind": kind, "levels": -1, "bits": 0}
        row["bits"] += 1
        if lv > row["levels"]:
            row.update(levels=lv, end=name, _bit=bit)
    stages = sorted(groups.values(), key=lambda r: (-r["levels"], r["stage"]))
    for row in stages[:STAGES_KEPT]:
        row["start"] = g.start_of(row.pop("_bit"))
    for row in stages[STAGES_KEPT:]:
        row.pop("_bit")
    crit = stages[0] if stages else None
    return {"levels": crit["levels"] if crit else 0,
            "start": crit["start"] if crit else None, "end": crit["end"] if crit else None,
            "end_kind": crit["kind"] if crit else None,
            "stages": stages[:STAGES_KEPT], "stage_groups": len(stages),
            "gates": len(g.ins), "loops": g.loops, "ready_paths": hs}


def ready_paths(g: _Graph) -> dict:
    """The combinational paths that start at ``*__ready`` input ports (one more walk over
    ``g``'s gates in topological order, carrying per net the longest path from each of them).

    Returns ``inputs``: per ready input, ``port``, ``levels`` (gates on its longest path to any
    end, ``None`` when it drives nothing), ``end`` and ``reaches`` (handshake output port ->
    gates on the longest path to it; 0 = a plain wire); ``levels``, ``start`` and ``end`` of the
    deepest of them; ``ready_to_ready`` (the longest ready-input-to-ready-output path, ``None``
    when no ready output is reached) with its ``ready_start`` and ``ready_end``."""
    mod = g.mod
    srcs, dist = [], {}   # dist: net -> {ready input index: gates on the longest path}
    for pname, port in mod.get("ports", {}).items():
        if port["direction"] == "input" and _READY.search(pname):
            for b in _ints(port["bits"]):
                dist.setdefault(b, {})[len(srcs)] = 0
            srcs.append(pname)
    if srcs:
        for c in g.order:
            acc = None
            for b in g.ins[c]:
                d = dist.get(b)
                if d:
                    acc = {} if acc is None else acc
                    for k, lv in d.items():
                        if lv >= acc.get(k, 0):
                            acc[k] = lv + 1
            if acc:
                for b in g.outs[c]:
                    dist[b] = acc
    rows = [{"port": p, "levels": None, "end": None, "reaches": {}} for p in srcs]
    for bit, name, kind in g.ends:
        for k, lv in dist.get(bit, {}).items():
            row = rows[k]
            if row["levels"] is None or lv > row["levels"]:
                row.update(levels=lv, end=name)
            port = _BIT.sub("", name)
            if kind == "output" and _HANDSHAKE.search(port) and lv >= row["reaches"].get(port, -1):
                row["reaches"][port] = lv
    out = {"inputs": rows, "levels": None, "start": None, "end": None,
           "ready_to_ready": None, "ready_start": None, "ready_end": None}
    for row in rows:
        if row["levels"] is not None and (out["levels"] is None or row["levels"] > out["levels"]):
            out.update(levels=row["levels"], start=row["port"], end=row["end"])
        for port, lv in row["reaches"].items():
            deepest = out["ready_to_ready"]
            if _READY.search(port) and (deepest is None or lv > deepest):
                out.update(ready_to_ready=lv, ready_start=row["port"], ready_end=port)
    return out


def analyze_file(path: Path, top: str) -> dict:
    return analyze(json.loads(Path(path).read_text()), top)


def merge(parts: list) -> dict:
    """One timing view of a hierarchical synthesis: ``parts`` = ``[(label, timing)]`` (the unit
    around its operators with label ``None``, then each distinct operator).  The critical path
    is the deepest part's; every part's stages are listed, an operator's under its label."""
    stages = []
    best = None
    for label, t in parts:
        if not t:
            continue
        for row in t["stages"]:
            stages.append(dict(row, stage=f"[{label}] {row['stage']}") if label else row)
        if best is None or t["levels"] > best[1]["levels"]:
            best = (label, t)
    if best is None:
        return {}
    label, t = best
    out = {k: t[k] for k in ("levels", "start", "end", "end_kind")}
    if label:
        out["start"], out["end"] = f"[{label}] {t['start']}", f"[{label}] {t['end']}"
    stages.sort(key=lambda r: (-r["levels"], r["stage"]))
    out.update(stages=stages[:STAGES_KEPT], stage_groups=len(stages),
               gates=sum(t["gates"] for _, t in parts if t),
               loops=sum(t["loops"] for _, t in parts if t),
               note="paths that cross an operator boundary are not joined")
    # the operators take no ready: the handshake paths are the unit's own
    out["ready_paths"] = next((t.get("ready_paths") for label, t in parts if label is None and t),
                              None)
    return out


def asap7_delay_ps(levels: int) -> float:
    """Estimated register-to-register delay of ``levels`` gate levels at ASAP7."""
    t = ASAP7_TIMING
    return levels * t["level_ps"] + t["clk_to_q_ps"] + t["setup_ps"]


def clock_check(timing: dict, clock: dict) -> dict:
    """Each stage's ASAP7 delay estimate against the period of ``clock`` (``{"mhz", "source",
    "target"}``, :meth:`pimforge.hw.core.unit.PresetClock.as_dict`); ``met`` when every stage fits."""
    period = 1e6 / clock["mhz"]
    t = ASAP7_TIMING
    stages = [{"stage": r["stage"], "levels": r["levels"],
               "delay_ps": round(asap7_delay_ps(r["levels"])),
               "met": asap7_delay_ps(r["levels"]) <= period} for r in timing.get("stages", [])]
    critical = asap7_delay_ps(timing["levels"])
    return {"clock_mhz": clock["mhz"], "period_ps": round(period, 1), "source": clock["source"],
            "target": clock.get("target", "ASIC"), "model": t["text"],
            "level_ps": t["level_ps"], "flip_flop_ps": t["clk_to_q_ps"] + t["setup_ps"],
            "max_levels": max(0, int((period - t["clk_to_q_ps"] - t["setup_ps"]) // t["level_ps"])),
            "levels": timing["levels"], "delay_ps": round(critical),
            "estimated_fmax_mhz": round(1e6 / critical, 1), "met": critical <= period,
            "failing_stages": sum(1 for s in stages if not s["met"]), "stages": stages,
            "note": timing.get("note"),
            **({"paper_mhz": clock["paper_mhz"], "paper_source": clock.get("paper_source"),
                "paper_met": critical <= 1e6 / clock["paper_mhz"]}
               if clock.get("paper_mhz") else {})}
