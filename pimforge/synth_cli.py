"""``pimforge synth UNIT | all | compare | stages``: the command behind
:mod:`pimforge.synth.run`."""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

from pimforge import api
from pimforge.base.cliargs import add_config_arguments, config_args, given_config_options
from pimforge.base.errors import ToolError, UserError
from pimforge.base.files import check_out_dir, write_outputs
from pimforge.registry import get_unit, units
from pimforge.synth import flows, report
from pimforge.synth.compare import run_compare
from pimforge.synth.run import SynthJob, synthesize_many
from pimforge.synth.stages import run_stages

__all__ = ["add_arguments", "run_cli", "parse_targets", "MAX_JOBS"]


MAX_JOBS = 1024     # parallel syntheses: far above any machine's cores, below a fork bomb


def add_arguments(q) -> None:
    q.add_argument("unit", help="a unit (see `pimforge list`), 'all' for every preset of every "
                   "unit, 'compare' for the table against the papers' published costs, or "
                   "'stages' for every float operator's deepest stage at each pipeline depth")
    add_config_arguments(q)
    q.add_argument("--target", default="generic", metavar="T[,T...]",
                   help="generic (gates, CMOS transistors, um^2 at sky130/Nangate45/ASAP7), "
                        "xcup (UltraScale+ LUT/FF/CARRY8/DSP/BRAM/URAM) or ecp5 (LUT4/FF/MULT18/"
                        "EBR and nextpnr fmax); comma-separated for several (default generic)")
    q.add_argument("--device", help="xcup: " + ", ".join(flows.XCUP_DEVICES) + " (default ku15p); "
                   "ecp5: 25k, 45k or 85k with an optional speed grade -6/-7/-8 (default 85k-6)")
    q.add_argument("--out", default="build/synth", metavar="DIR",
                   help="output directory for report.json and report.md (default build/synth)")
    q.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                   help="syntheses run in parallel (default: the number of cores)")
    q.add_argument("--units", metavar="U[,U...]", help="with 'all': only these units")
    q.add_argument("--flat", action="store_true",
                   help="synthesize the whole flattened netlist at once instead of each distinct "
                        "float operator once plus the unit around them (slower; a cross-check)")
    q.add_argument("--no-cache", action="store_true",
                   help="synthesize again even when a cached result exists")
    q.add_argument("--update-table", action="store_true",
                   help="with 'stages': also rewrite the committed table the docs show "
                        "(synth/stage_depths.json) and print the rows whose levels changed")


def parse_targets(text: str, device: str | None) -> tuple:
    """``(targets, devices)`` from ``--target`` and ``--device``, with one-line errors."""
    targets = [t.strip() for t in text.split(",") if t.strip()]
    if not targets:
        raise UserError(f"--target: got {text!r}; allowed: {', '.join(flows.TARGETS)}")
    for t in targets:
        if t not in flows.TARGETS:
            raise UserError(f"--target: unknown target '{t}'; allowed: {', '.join(flows.TARGETS)}")
    fpga = [t for t in targets if t != "generic"]
    if device is not None and len(fpga) != 1:
        raise UserError("--device needs exactly one FPGA target (xcup or ecp5) in --target")
    devices = {t: flows.resolve_device(t, device if t in fpga else None) for t in targets}
    return list(dict.fromkeys(targets)), devices


def _jobs_for(args) -> list:
    if args.unit == "all":
        if given_config_options(args):
            raise UserError("synth all takes no --preset, --config or --set (it runs every preset)")
        table = units()
        names = sorted(table)
        if args.units:
            names = [n.strip() for n in args.units.split(",") if n.strip()]
            for n in names:
                get_unit(n)  # one-line error for an unknown unit
        jobs = []
        for n in names:
            u = table[n]
            presets = list(u.presets) or [None]
            for p in presets:
                cfg = u.preset_config(p) if p else u.default_config()
                jobs.append(SynthJob(u, cfg, p or "default", flat=args.flat))
        return jobs
    if args.units:
        raise UserError("--units applies to 'synth all' only")
    u = get_unit(args.unit)
    cfg = api.config(args.unit, **config_args(args))
    label = args.preset or "default"
    if args.config or args.set:
        label += " (custom)"
    return [SynthJob(u, cfg, label, flat=args.flat, preset=args.preset)]


def _progress(msg: str) -> None:
    print(f"  {msg}", flush=True)


def run_cli(args) -> int:
    if not 1 <= args.jobs <= MAX_JOBS:
        raise UserError(f"--jobs must be a positive integer up to {MAX_JOBS}, not {args.jobs}")
    targets, devices = parse_targets(args.target, args.device)
    if args.update_table and args.unit != "stages":
        raise UserError("--update-table applies to 'synth stages' only")
    if args.unit in ("compare", "stages") and given_config_options(args):
        raise UserError(f"synth {args.unit} takes no --preset, --config or --set")
    if args.unit == "compare":
        return run_compare(Path(args.out), args.jobs, not args.no_cache, _progress)
    if args.unit == "stages":
        return run_stages(Path(args.out), args.jobs, not args.no_cache, args.update_table,
                          _progress)
    jobs = _jobs_for(args)
    out = check_out_dir(Path(args.out), "--out")  # fail before hours of synthesis, not after
    print(f"synthesizing {len(jobs)} config(s) for {', '.join(targets)} on {args.jobs} "
          f"worker(s); cache {'off' if args.no_cache else 'on'}", flush=True)
    t0 = time.perf_counter()
    reports = synthesize_many(jobs, targets, devices, args.jobs, not args.no_cache, _progress)
    wall = time.perf_counter() - t0
    failed = [r for r in reports if r.get("error")]
    if args.unit != "all":
        rep = reports[0]
        if rep.get("error"):
            raise ToolError(rep["error"])
        files = {"report.json": json.dumps(rep, indent=1), "report.md": report.render(rep)}
        for path in write_outputs(out, files):
            print(f"wrote {path}")
        print(report.summary(reports), end="")
        return 0
    files = {}
    for rep in reports:
        sub = f"{rep['unit']}/{rep['label']}"
        files[f"{sub}/report.json"] = json.dumps(rep, indent=1)
        files[f"{sub}/report.md"] = report.render(rep)
    summary = report.summary(reports)
    files["summary.md"] = (f"# pimforge synth all ({', '.join(targets)})\n\n{summary}\n"
                           f"{len(jobs)} configs, wall time {wall:.1f} s on {args.jobs} "
                           f"worker(s).\n")
    files["summary.json"] = json.dumps({"targets": targets, "wall_s": round(wall, 1),
                                        "jobs": args.jobs, "rows": report.summary_rows(reports)},
                                       indent=1)
    write_outputs(out, files)
    print(summary, end="")
    print(f"{len(jobs)} configs in {wall:.1f} s; wrote {out}/summary.md and one report per "
          f"config under {out}/<unit>/<preset>/")
    if failed:
        print(f"{len(failed)} failed; see their report.md")
        return 1
    return 0
