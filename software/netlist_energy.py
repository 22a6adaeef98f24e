"""The netlist cross-check of the energy table: gate count x toggle activity x toggle energy.

The energy table (:mod:`pimforge.hw.core.energy`) prices a job's actions with first-order
figures (Horowitz's 45 nm operation energies, scaled by C V^2).  This module gives a second,
independent estimate of the same job from *our* netlist, to show the table is in the right
range for the hardware pimforge builds:

* **gate count**: the generic synthesis flow's NAND2 equivalents of the unit's logic
  (``stat -tech cmos`` transistors / 4, :mod:`pimforge.synth.area`); SRAM macros are not gates;
* **activity**: the unit's cocotb bench runs on Verilator with waves on
  (``PIMFORGE_WAVES``, :func:`pimforge.sim.harness.runner.waves_requested`), and the VCD gives
  the value changes per bit of the design's signals (the clock, the reset and the activity
  probes' counters left out, each bit once however many names it has);
* **energy per toggle**: the table's switched energy of one NAND2-equivalent output toggle at
  the node (:meth:`~pimforge.hw.core.energy.EnergyTable.toggle_fj`).

A job's netlist energy is toggles x (NAND2 eq. / traced bits) x energy per toggle: the RTL
signals' mean toggle rate taken for every gate.  This is an estimate and says so: glitches,
the clock tree, wires and the gates' real fan-outs are not modelled, and the RTL's named and
intermediate signals stand in for the gates.  The table's value of the same job is the
probes' action counts (``PhaseResult.actions``) priced by the table.  Both are divided by the
job's operations (float operations for the float units, tokens for ``pam_pu``) and reported
side by side with their ratio, at 45 nm and ASAP7; the unit's activity model of the same job,
priced the same way, is reported beside them.

``pimforge bench --only energy`` runs :data:`CASES` and writes ``energy.json`` and
``energy.md``.
"""
from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pimforge.base.errors import ToolError
from pimforge.base.files import write_atomic
from pimforge.hw.core.energy import component_of, table
from pimforge.sim.harness.runner import run_unit
from pimforge.synth.run import SynthJob, synthesize

__all__ = ["Case", "CASES", "NODES", "vcd_toggles", "cross_check", "netlist_benchmark",
           "energy_line", "render", "EXCLUDED_SIGNALS", "ESTIMATE_NOTE"]

NODES = ("45nm", "asap7")

# Not the gates' activity: the clock and reset (driven by the bench, two toggles a cycle or
# none); the probes' counters, which the harness adds to the simulated top only (synthesis never
# sees them); and the words of memories (``mem[3]``: Verilator traces an array element by
# element), which synthesis keeps as SRAM macros outside the gate count and whose accesses the
# table prices as actions of their own.
EXCLUDED_SIGNALS = re.compile(r"^(clk|rst)$|pf_probe_|\[\d+\]$")

ESTIMATE_NOTE = ("an estimate: the RTL signals' mean toggle rate taken for every NAND2-equivalent "
                 "gate of the netlist, no glitches, clock tree or wires")


@dataclass(frozen=True)
class Case:
    """One cross-check: a unit at a preset, the bench's keyword arguments and what one
    operation is (``per``: ``"op"`` counts the float operations the probes saw, ``"token"``
    the tokens of the job)."""

    unit: str
    preset: str
    bench: dict
    per: str = "op"

    @property
    def label(self) -> str:
        return f"{self.unit} {self.preset}"


# The float units' benches (corners, random operands, then a stall phase) at a few thousand
# operations, and the 16-lane PU on token sets of a partial, a full and an odd tile count.
CASES = (Case("fp_add", "fp16", {"n_random": 2000}),
         Case("fp_mul", "fp16", {"n_random": 2000}),
         Case("fp_fma", "fp16", {"n_random": 2000}),
         Case("fp_add", "fp32", {"n_random": 2000}),
         Case("fp_exp", "fp32", {"n_random": 2000}),
         Case("pam_pu", "hbm", {"sets": (5, 16, 37), "stalls": False}, per="token"))


# -- the VCD ---------------------------------------------------------------------------------

def _bits(text: str) -> int:
    """A VCD vector value as an integer (x and z read as 0: Verilator writes neither)."""
    return int(text.translate(_XZ), 2)


_XZ = str.maketrans("xXzZ", "0000")


def vcd_toggles(path, exclude=EXCLUDED_SIGNALS) -> dict:
    """Value changes of a VCD: ``{"bits", "toggles", "cycles", "signals"}``.

    ``bits`` is the width summed over distinct identifier codes (one signal with several names,
    a port seen in two scopes, counts once) whose names ``exclude`` matches none of;
    ``toggles`` the bit flips of those signals after their first value; ``cycles`` the rising
    edges of the signal named ``clk``."""
    widths, names = {}, {}
    values: dict = {}
    toggles = cycles = 0
    clock = None
    with open(path) as fh:
        for line in fh:
            if line.startswith("$enddefinitions"):
                break
            tok = line.split()
            if tok and tok[0] == "$var":
                code, name = tok[3], tok[4]
                widths[code] = int(tok[2])
                names.setdefault(code, []).append(name)
        keep = {c for c, ns in names.items() if not any(exclude.search(n) for n in ns)}
        clock = next((c for c, ns in names.items() if "clk" in ns), None)
        for line in fh:
            c0 = line[0]
            if c0 == "b" or c0 == "B":
                val, code = line[1:].split()
                if code in keep:
                    new = _bits(val)
                    old = values.get(code)
                    if old is not None:
                        toggles += (old ^ new).bit_count()
                    values[code] = new
            elif c0 in "01xXzZ":
                code = line[1:].strip()
                new = 1 if c0 == "1" else 0
                if code == clock:
                    cycles += new and values.get(code) == 0
                    values[code] = new
                elif code in keep:
                    old = values.get(code)
                    if old is not None:
                        toggles += old ^ new
                    values[code] = new
    return {"bits": sum(widths[c] for c in keep), "toggles": toggles, "cycles": cycles,
            "signals": len(keep)}


@contextlib.contextmanager
def _waves():
    """``PIMFORGE_WAVES=1`` for the block (the harness writes ``dump.vcd``)."""
    old = os.environ.get("PIMFORGE_WAVES")
    os.environ["PIMFORGE_WAVES"] = "1"
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("PIMFORGE_WAVES", None)
        else:
            os.environ["PIMFORGE_WAVES"] = old


# -- one case --------------------------------------------------------------------------------

def _ops(case: Case, job, actions: dict) -> int:
    """The job's operations: float operations the probes counted, or the PU's tokens."""
    if case.per == "token":
        return len(job.phases) * sum(case.bench["sets"])
    return sum(n for k, n in actions.items() if k.startswith("op:"))


def _model_actions(case: Case, unit, cfg, phases: int, ops: int) -> dict | None:
    """The same job's actions from the unit's activity model (``None`` without one): one
    ``activity(cfg, n)`` per token set of each phase for the PU, else one for all operations."""
    if unit.activity is None:
        return None
    jobs = [n for _ in range(phases) for n in case.bench["sets"]] if case.per == "token" else [ops]
    out: dict = {}
    for n in jobs:
        for k, v in unit.activity(cfg, n).items():
            out[k] = out.get(k, 0) + v
    return out


def cross_check(case: Case, units: dict, seed: int = 1) -> dict:
    """The netlist estimate and the table's value per operation of ``case``, at :data:`NODES`.

    ``units`` maps names to registry units (with their benches)."""
    unit = units[case.unit]
    cfg = unit.preset_config(case.preset)
    rep = synthesize(SynthJob(unit, cfg, case.preset), ["generic"], {"generic": None})
    g = rep["targets"]["generic"]
    job = unit.bench(cfg, np.random.default_rng(seed), seed=seed, **case.bench)
    with _waves():
        res = run_unit(unit, cfg, job, seed=seed, label=case.label)
    run_dir = Path(res.log).parent
    if not res.passed:
        raise ToolError(f"{case.label}: the bench failed; see {res.log}")
    vcd = vcd_toggles(run_dir / "dump.vcd")
    shutil.rmtree(run_dir, ignore_errors=True)   # a VCD of a PU is tens of MB
    actions: dict = {}
    for p in res.phases:
        for k, n in p.actions.items():
            actions[k] = actions.get(k, 0) + n
    ops = _ops(case, job, actions)
    if not ops:
        raise ToolError(f"{case.label}: the probes counted no float operation to divide by")
    model = _model_actions(case, unit, cfg, len(job.phases), ops)
    gate_toggles = vcd["toggles"] * g["nand2_eq"] / vcd["bits"]
    out = {"unit": case.unit, "preset": case.preset, "per": case.per, "ops": ops,
           "config": rep["config"], "nand2_eq": g["nand2_eq"], "memory_bits": g["memory_bits"],
           "vcd": vcd, "toggle_rate": vcd["toggles"] / (vcd["bits"] * vcd["cycles"]),
           "gate_toggles_per_op": gate_toggles / ops,
           "actions_per_op": {k: n / ops for k, n in sorted(actions.items()) if n},
           "nodes": {}}
    for node in NODES:
        tab = table(node)
        netlist_pj = gate_toggles * tab.toggle_fj() * 1e-3 / ops
        table_pj = sum(tab.pj(k) * n for k, n in actions.items()) / ops
        model_pj = None if model is None else sum(tab.pj(k) * n for k, n in model.items()) / ops
        compute_pj = sum(tab.pj(k) * n for k, n in actions.items()
                         if component_of(k) == "compute") / ops
        out["nodes"][node] = {"toggle_fj": tab.toggle_fj(), "netlist_pj": netlist_pj,
                              "table_pj": table_pj, "table_compute_pj": compute_pj,
                              "ratio": netlist_pj / table_pj if table_pj else None,
                              "ratio_compute": netlist_pj / compute_pj if compute_pj else None,
                              "model_pj": model_pj,
                              "ratio_model": netlist_pj / model_pj if model_pj else None}
    if not any(component_of(k) == "compute" for k in actions):
        out["note"] = "the probes counted no float operation: the table's value is SRAM only"
    return out


# -- the benchmark ---------------------------------------------------------------------------

def _ratio(x) -> str:
    return "-" if x is None else f"{x:.4g}"


def render(results: dict) -> str:
    """Markdown: one row per case and node."""
    lines = ["# Netlist energy cross-check (an estimate)", "",
             f"Netlist: NAND2 eq. (generic flow) x toggles per traced bit (Verilator VCD of the "
             f"bench) x energy per NAND2-equivalent toggle; {ESTIMATE_NOTE}. Table: the probes' "
             "action counts priced by the energy table. Per operation: per float operation, "
             "per token for pam_pu. `ratio` is netlist / table; `ratio (compute)` leaves the "
             "table's SRAM accesses out, which the gate count does not hold; `model pJ` prices "
             "the unit's activity model of the same job instead of the probes' counts.", "",
             "| case | per | NAND2 eq. | toggle rate | node | fJ/toggle | netlist pJ | table pJ "
             "| ratio | ratio (compute) | model pJ | ratio (model) |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for label, r in results.items():
        for node, n in r["nodes"].items():
            lines.append(f"| {label} | {r['per']} | {r['nand2_eq']:,.0f} | {r['toggle_rate']:.4f} "
                         f"| {node} | {n['toggle_fj']:g} | {n['netlist_pj']:.4g} | "
                         f"{n['table_pj']:.4g} | {_ratio(n['ratio'])} | "
                         f"{_ratio(n['ratio_compute'])} | {_ratio(n['model_pj'])} | "
                         f"{_ratio(n['ratio_model'])} |")
    notes = [f"- {label}: {r['note']}" for label, r in results.items() if r.get("note")]
    if notes:
        lines += [""] + notes
    return "\n".join(lines) + "\n"


def netlist_benchmark(out, units: dict, progress=print, cases=CASES) -> dict:
    """Run every case of ``cases`` (``units``: the registry's table, units with their
    benches); writes ``out`` (JSON) and the same name with ``.md``."""
    results = {}
    for case in cases:
        progress(case.label)
        results[case.label] = cross_check(case, units)
    out = Path(out)
    report = {"note": ESTIMATE_NOTE, "nodes": list(NODES), "results": results}
    write_atomic({out: json.dumps(report, indent=2) + "\n", out.with_suffix(".md"): render(results)},
                 lambda path, err: f"energy output '{path}' cannot be written: {err}")
    return report


def energy_line(label: str, r: dict) -> str:
    """One line of ``pimforge bench --only energy``."""
    return f"{label}: " + "; ".join(
        f"{node} netlist {n['netlist_pj']:.3g} pJ vs table {n['table_pj']:.3g} pJ per {r['per']} "
        f"(ratio {_ratio(n['ratio'])}; activity model {_ratio(n['ratio_model'])})"
        for node, n in r["nodes"].items()) + " (an estimate)"
