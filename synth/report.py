"""Readable synthesis reports: ``report.md`` per unit config and a summary table for many."""
from __future__ import annotations

from pimforge.synth import area

__all__ = ["render", "summary", "summary_rows"]


def _n(x, digits=0) -> str:
    if x is None:
        return "-"
    if isinstance(x, float) and digits:
        return f"{x:,.{digits}f}"
    return f"{round(x):,}"


def _pct(x) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def _generic_md(r: dict) -> list:
    lines = ["## Generic gates (Yosys `synth` + ABC)", "",
             f"- cells: {_n(r['cells'])} ({_n(r['flip_flops'])} flip-flops, {r['latches']} latches)",
             f"- CMOS transistors (`stat -tech cmos`): {_n(r['transistors'])}; "
             f"NAND2 equivalents (4 transistors each): {_n(r['nand2_eq'])}",
             f"- logic depth (`ltp -noff`): {r['logic_depth']} gates"
             + ("" if r.get("flow", "flat") == "flat" else
                " (the deepest of the unit and each operator; paths that cross an operator's "
                "boundary are not joined: `--flat` measures them)"),
             f"- memories: {len(r['memories'])}, {_n(r['memory_bits'])} bits; model: "
             f"{r['memory_model']}", "",
             "| node | NAND2 (um^2) | logic (um^2) | memory (um^2) | total (um^2) | total (mm^2) |",
             "|---|---|---|---|---|---|"]
    for node, a in r["areas"].items():
        lines.append(f"| {area.NODES[node]['label']} | {r['nodes'][node]} | {_n(a['logic_um2'])} | "
                     f"{_n(a['memory_um2'])} | {_n(a['total_um2'])} | {a['total_um2'] / 1e6:.4f} |")
    b = r["breakdown"]
    lines += ["", "Area breakdown (PAM 7.5's form):", "",
              "| part | NAND2 eq. | share |", "|---|---|---|",
              f"| compute datapath (float operators) | {_n(b['datapath_nand2'])} | {_pct(b['datapath'])} |",
              f"| storage (SRAM macros) | {_n(b['storage_nand2'])} | {_pct(b['storage'])} |",
              f"| control and staging (the rest) | {_n(b['control_nand2'])} | {_pct(b['control'])} |"]
    if b.get("note"):
        lines.append(f"\n{b['note']}.")
    if b.get("capped"):
        lines.append("\nThe operators synthesized on their own exceed the unit's logic (constant "
                     "operands and unused flags are optimized inside the unit); datapath capped.")
    if r["operators"]:
        lines += ["", "| float operator | count | NAND2 eq. each |", "|---|---|---|"]
        lines += [f"| {o['op']} | {o['count']} | {_n(o['nand2_each'])} |" for o in r["operators"]]
    lines += _timing_md(r.get("timing"))
    if r["memories"]:
        lines += ["", "| memory | words x bits | copies | bits | ports (r/w) |",
                  "|---|---|---|---|---|"]
        lines += [f"| {m['name']} | {m['depth']} x {m['width']} | {m.get('copies', 1)} | "
                  f"{_n(m['bits'] * m.get('copies', 1))} | "
                  f"{m['read_ports']}/{m['write_ports']}{' (ROM)' if m['rom'] else ''} |"
                  for m in r["memories"]]
    return lines


STAGE_ROWS = 12  # stage groups shown in report.md (report.json keeps up to 200)


def _timing_md(t: dict | None) -> list:
    """The critical path and the deepest pipeline stages of a generic result."""
    if not t:
        return []
    lines = ["", f"Critical path: {t['levels']} gate levels from `{t['start']}` to `{t['end']}` "
             f"({t['end_kind']})" + (f"; {t['note']}" if t.get("note") else "") + ".", "",
             "| stage (end registers) | levels | bits | deepest end | from |",
             "|---|---|---|---|---|"]
    for row in t["stages"][:STAGE_ROWS]:
        lines.append(f"| {row['stage']} | {row['levels']} | {row['bits']} | `{row['end']}` | "
                     f"`{row.get('start', '-')}` |")
    if t["stage_groups"] > STAGE_ROWS:
        lines.append(f"\n{t['stage_groups'] - STAGE_ROWS} shallower stage groups are in "
                     "report.json.")
    return lines + _ready_md(t.get("ready_paths"))


def _ready_md(h: dict | None) -> list:
    """One line on the handshake: how far ``*__ready`` inputs reach before a register."""
    if not h or not h["inputs"]:
        return []
    if h["levels"] is None:
        deepest = "drive no logic"
    else:
        deepest = f"reach at most {h['levels']} gate levels (`{h['start']}` to `{h['end']}`)"
    if h["ready_to_ready"] is None:
        chain = "no ready output depends combinationally on a ready input"
    else:
        chain = (f"ready to ready: {h['ready_to_ready']} gate levels (`{h['ready_start']}` to "
                 f"`{h['ready_end']}`)")
    return ["", f"Ready paths: the {len(h['inputs'])} `*__ready` input(s) {deepest}; {chain}."]


def _clock_md(c: dict) -> list:
    verdict = "met" if c["met"] else f"NOT met: {c['failing_stages']} stage group(s) too deep"
    lines = ["## Clock check (ASAP7 estimate)", "",
             f"- preset clock: {c['clock_mhz']:g} MHz ({c['period_ps']:g} ps), {c['source']}; "
             f"target {c['target']}",
             f"- model: {c['model']}",
             f"- at most {c['max_levels']} levels per stage fit the period",
             f"- critical path: {c['levels']} levels, {c['delay_ps']} ps, about "
             f"{c['estimated_fmax_mhz']:g} MHz: **{verdict}**"
             + (f" ({c['note']}; `--flat` joins them)" if c.get("note") else "")]
    if c.get("paper_mhz"):
        lines.append(f"- the paper's clock: {c['paper_mhz']:g} MHz ({c['paper_source']}): "
                     + ("met" if c["paper_met"] else "**not reached** by this netlist"))
    lines += ["",
              "| stage | levels | ASAP7 delay (ps) | fits |", "|---|---|---|---|"]
    rows = [s for s in c["stages"] if not s["met"]] or c["stages"][:3]
    lines += [f"| {s['stage']} | {s['levels']} | {s['delay_ps']} | {'yes' if s['met'] else 'no'} |"
              for s in rows[:STAGE_ROWS]]
    if c["target"] != "ASIC":
        lines.append(f"\nThe paper's clock is for an {c['target']}; the ASAP7 check only bounds "
                     "the logic depth.")
    return lines


def _w(x) -> str:
    """Watts in the unit that reads best (W, mW or uW)."""
    if x is None:
        return "-"
    if abs(x) >= 1:
        return f"{x:.3g} W"
    return f"{x * 1e3:.3g} mW" if abs(x) >= 1e-3 else f"{x * 1e6:.3g} uW"


def _power_md(p: dict) -> list:
    """Power at the clock under the activity model (``report["power"]``)."""
    node = "ASAP7" if p["node"] == "asap7" else p["node"]
    lines = [f"## Power ({node} estimate)", "",
             f"- clock: {p['clock_mhz']:g} MHz ({p['clock_source']})",
             f"- static: {_w(p['static_w'])}, the leakage of {_n(p['area_um2'])} um^2 "
             f"({p['area_node']} area, logic and SRAM)"]
    if p["dynamic_w"] is None:
        return lines + [f"- dynamic: {p['note']}"]
    lines += [f"- dynamic: {_w(p['dynamic_w'])}: {p['energy_j'] * 1e12:,.1f} pJ for a job of "
              f"{p['ops']} operations (`activity(cfg, {p['ops']})`) in {p['cycles']:,} cycles "
              f"(`cycle_model`)",
              f"- total: **{_w(p['total_w'])}**", "",
              "| component | pJ per job | share of dynamic |", "|---|---|---|"]
    lines += [f"| {c} | {j * 1e12:,.1f} | {_pct(j / p['energy_j'] if p['energy_j'] else None)} |"
              for c, j in p["breakdown_j"].items()]
    return lines + ["", f"Energy per action from `{p['table']}` (`pimforge model --describe` "
                    "prints it with its sources)."]


def _xcup_md(r: dict) -> list:
    u = r["utilization"]
    lines = [f"## AMD UltraScale+ (`synth_xilinx -family xcup -uram`), % of {r['device']}", "",
             "| LUT | FF | CARRY8 | DSP48E2 | BRAM36 | URAM | LUT levels |", "|---|---|---|---|---|---|---|",
             f"| {_n(r['LUT'])} ({_pct(u['LUT'])}) | {_n(r['FF'])} ({_pct(u['FF'])}) | "
             f"{_n(r['CARRY8'])} | {_n(r['DSP48E2'])} ({_pct(u['DSP48E2'])}) | "
             f"{r['BRAM36']:g} ({_pct(u['BRAM36'])}) | {_n(r['URAM'])} ({_pct(u['URAM'])}) | "
             f"{r['lut_levels']} |", "",
             f"LUTs include {_n(r['LUT_as_memory'])} used as memory. LUT levels: the longest "
             "chain of LUT, MUXF and carry cells between registers, RAMs or DSPs. CARRY8: Yosys maps carry "
             "chains to CARRY4 halves, counted two to a CARRY8."]
    return lines


def _ecp5_md(r: dict) -> list:
    fmax = f"{r['fmax_mhz']:.1f} MHz" if r.get("fmax_mhz") else "-"
    lines = [f"## Lattice ECP5 (`synth_ecp5` + nextpnr-ecp5), {r['device']}", "",
             "| LUT4 | FF | MULT18 | EBR | fmax |", "|---|---|---|---|---|",
             f"| {_n(r['LUT4'])} | {_n(r['FF'])} | {_n(r['MULT18'])} | {_n(r['EBR'])} | {fmax} |", "",
             f"Placed and routed inside a harness ({r['harness']}); fmax is nextpnr's figure "
             f"for the clock. LUT mapping: {r.get('lut_mapper', 'ABC9')}."]
    cp = r.get("critical_path")
    if cp:
        lines.append(f"\nCritical path: `{cp['start']}` to `{cp['end']}`, {cp['logic_levels']} "
                     f"logic cells ({cp['logic_ns']:.2f} ns) and {cp['routing_segments']} routing "
                     f"hops ({cp['routing_ns']:.2f} ns), clock-to-Q {cp['clk_to_q_ns']:.2f} ns, "
                     f"setup {cp['setup_ns']:.2f} ns: {cp['total_ns']:.2f} ns in all.")
    if r.get("note"):
        lines.append(f"\n{r['note']}.")
    return lines


def render(report: dict) -> str:
    """Markdown for one unit config."""
    lines = [f"# Synthesis report: {report['unit']} ({report['label']})", ""]
    if report.get("error"):
        return "\n".join(lines + [f"FAILED: {report['error']}", ""])
    cfg = ", ".join(f"{k}={v}" for k, v in report["config"].items())
    lines += [f"Config: {cfg}", ""]
    tools = {}
    for t, r in report["targets"].items():
        tools.update(r.get("key", {}).get("tools", {}))
    lines += ["Tools: " + ", ".join(f"{k} {v}" for k, v in sorted(tools.items())), ""]
    if report.get("clock_check"):
        lines += _clock_md(report["clock_check"]) + [""]
    if report.get("power"):
        lines += _power_md(report["power"]) + [""]
    renderers = {"generic": _generic_md, "xcup": _xcup_md, "ecp5": _ecp5_md}
    for t, r in report["targets"].items():
        lines += renderers[t](r) + [""]
        lines.append(f"_Flow: {r.get('flow', 'flat')}. {'Cached result' if r['cached'] else 'Synthesized'} "
                     f"in {r['elapsed_s']:.1f} s; work directory {r['workdir']}_")
        lines.append("")
    return "\n".join(lines)


def summary_rows(reports: list) -> list:
    """One flat dict per report: the headline figure of each target."""
    rows = []
    for rep in reports:
        row = {"unit": rep["unit"], "config": rep["label"], "error": rep.get("error")}
        t = rep.get("targets", {})
        if "generic" in t:
            g = t["generic"]
            row.update({"nand2_eq": g["nand2_eq"], "memory_bits": g["memory_bits"],
                        "asap7_um2": g["areas"]["asap7"]["total_um2"],
                        "nangate45_um2": g["areas"]["nangate45"]["total_um2"],
                        "logic_depth": g["logic_depth"],
                        "datapath": g["breakdown"]["datapath"]})
        if "xcup" in t:
            x = t["xcup"]
            row.update({k: x[k] for k in ("LUT", "FF", "DSP48E2", "BRAM36", "URAM")})
            row["lut_levels"] = x["lut_levels"]
        if "ecp5" in t:
            e = t["ecp5"]
            row.update({"LUT4": e["LUT4"], "ecp5_FF": e["FF"], "MULT18": e["MULT18"],
                        "EBR": e["EBR"], "fmax_mhz": e.get("fmax_mhz")})
        c = rep.get("clock_check")
        if c:
            row.update({"clock_mhz": c["clock_mhz"], "clock_met": c["met"],
                        "asap7_fmax_mhz": c["estimated_fmax_mhz"]})
        p = rep.get("power")
        if p:
            row.update({"power_w": p["total_w"], "static_w": p["static_w"],
                        "dynamic_w": p["dynamic_w"], "power_node": p["node"],
                        "power_mhz": p["clock_mhz"]})
        rows.append(row)
    return rows


_COLUMNS = [("nand2_eq", "NAND2 eq."), ("memory_bits", "SRAM bits"), ("asap7_um2", "ASAP7 um^2"),
            ("nangate45_um2", "Nangate45 um^2"), ("logic_depth", "depth"), ("datapath", "datapath"),
            ("LUT", "LUT"), ("FF", "FF"), ("DSP48E2", "DSP"), ("BRAM36", "BRAM36"), ("URAM", "URAM"),
            ("lut_levels", "LUT lvls"), ("LUT4", "LUT4"), ("ecp5_FF", "ECP5 FF"),
            ("MULT18", "MULT18"), ("EBR", "EBR"), ("fmax_mhz", "fmax MHz"),
            ("clock_mhz", "preset clock: ASAP7 est."), ("power_w", "power")]


def summary(reports: list) -> str:
    """A Markdown table with one row per unit config and the columns that were measured."""
    rows = summary_rows(reports)
    cols = [(k, h) for k, h in _COLUMNS if any(k in r for r in rows)]
    lines = ["| unit | config | " + " | ".join(h for _, h in cols) + " |",
             "|---|---|" + "---|" * len(cols)]
    for r in rows:
        if r["error"]:
            lines.append(f"| {r['unit']} | {r['config']} | FAILED: {r['error']} |")
            continue
        cells = []
        for k, _ in cols:
            v = r.get(k)
            if k == "datapath":
                cells.append(_pct(v))
            elif k == "clock_mhz":
                verdict = "met" if r.get("clock_met") else "NOT met"
                cells.append("-" if v is None else
                             f"{v:g} MHz: {verdict} ({r['asap7_fmax_mhz']:g})")
            elif k == "fmax_mhz":
                cells.append(f"{v:.1f}" if v else "no fit" if "LUT4" in r else "-")
            elif k == "power_w":
                cells.append(_w(v) if v is not None else
                             f"{_w(r['static_w'])} static (no activity model)")
            elif k == "BRAM36":
                cells.append("-" if v is None else f"{v:g}")
            else:
                cells.append(_n(v))
        lines.append(f"| {r['unit']} | {r['config']} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
