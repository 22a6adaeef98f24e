"""``pimforge sweep SPEC``: the command line of the design-space sweep."""
from __future__ import annotations

import os
import sys
from pathlib import Path

from pimforge.base.errors import UserError
from pimforge.base.files import check_out_dir
from pimforge.sweep.report import (
    best_per_metric, best_table, front_table, fronts, pareto, write_sweep
)
from pimforge.sweep.run import check_scheduler, run_sweep
from pimforge.sweep.spec import SYSTEM_METRICS, UNIT_METRICS, load_spec, shipped_specs

__all__ = ["add_arguments", "run_cli", "HELP", "MAX_WORKERS", "MAX_RETRIES"]

HELP = ("design-space sweep of a unit or system model on Dask distributed: synthesis, cycle "
        "model, system model and RTL metrics per point; CSV/JSON/Markdown table, Pareto plots")


MAX_WORKERS = 1024   # LocalCluster processes: far above any machine's cores
MAX_RETRIES = 100    # worker deaths one point survives


def add_arguments(q) -> None:
    q.description = (HELP + ".  Each point is a Dask task (an embedded LocalCluster, or "
                     "--scheduler); finished points are stored under OUT/points and skipped "
                     "by a rerun; a failed point is reported and the sweep goes on.")
    q.add_argument("spec", help="a sweep spec (YAML: unit or system, preset, fixed, axes, "
                   "metrics, workload, clock_mhz; docs/guide/sweeps.md) or a shipped "
                   f"spec: {', '.join(sorted(shipped_specs()))}")
    q.add_argument("--out", metavar="DIR", help="output directory for sweep.csv, sweep.json, "
                   "sweep.md, the Pareto PNGs and points/ (default build/sweep/<spec name>)")
    q.add_argument("--scheduler", metavar="tcp://HOST:PORT",
                   help="use this running Dask scheduler and its workers instead of an "
                        "embedded LocalCluster")
    q.add_argument("--workers", type=int, default=os.cpu_count() or 1, metavar="N",
                   help="worker processes of the embedded LocalCluster (one thread each; "
                        "default: the number of cores)")
    q.add_argument("--cache", metavar="DIR",
                   help="synthesis cache directory shared by every task (default "
                        "$PIMFORGE_SYNTH_CACHE or build/synth-cache); on a remote cluster give "
                        "a directory every worker sees")
    q.add_argument("--serial", action="store_true",
                   help="evaluate the points one by one in this process, without Dask")
    q.add_argument("--retries", type=int, default=3, metavar="N",
                   help="worker deaths a point's task survives before it is reported as failed "
                        "(Dask's allowed-failures, default 3; a dying worker also counts against "
                        "a task Dask had queued on it)")
    q.add_argument("--quiet", action="store_true", help="no progress bar")
    q.epilog = (f"metrics of a unit sweep: {', '.join(UNIT_METRICS)}; of a system sweep: "
                f"{', '.join(SYSTEM_METRICS)}.  Exit status 1 when a point failed (the "
                f"outputs are still written), 2 on bad input.")


def _summary(run, spec) -> str:
    out = [front_table(pareto(run.rows, x, y), x, y, title, spec).markdown()
           for _, x, y, title in fronts(spec.metrics)]
    best = best_per_metric(run.rows, spec.metrics)
    if best:
        out.append(best_table(best).markdown())
    return "\n".join(out)


def run_cli(args) -> int:
    spec = load_spec(args.spec)
    check_scheduler(args.scheduler)
    if not 1 <= args.workers <= MAX_WORKERS:
        raise UserError(f"--workers: got {args.workers}; allowed: an integer in 1..{MAX_WORKERS}")
    if not 0 <= args.retries <= MAX_RETRIES:
        raise UserError(f"--retries: got {args.retries}; allowed: an integer in 0..{MAX_RETRIES}")
    if args.cache:
        check_out_dir(Path(args.cache), "--cache")
    out = check_out_dir(Path(args.out or Path("build/sweep") / spec.name), "--out")
    how = "serial" if args.serial else (args.scheduler or f"LocalCluster of {args.workers} "
                                                          f"worker(s)")
    print(f"sweep {spec.title}: {len(spec.points)} points x "
          f"{', '.join(spec.metrics)} on {how}", flush=True)
    run = run_sweep(spec, out, scheduler=args.scheduler, workers=args.workers,
                    cache=args.cache, serial=args.serial, retries=args.retries,
                    progress=not args.quiet)
    paths = write_sweep(run, spec, out)
    print(_summary(run, spec), end="")
    print(f"{run.ran} points run, {run.resumed} resumed from {out}/points, "
          f"{len(run.failed)} failed, in {run.wall_s:.1f} s")
    for r in run.failed:
        print(f"  point {r['point']} "
              f"({', '.join(f'{k}={v}' for k, v in r['values'].items())}): {r['error']}",
              file=sys.stderr)
    print("wrote " + ", ".join(str(p) for p in paths))
    return 1 if run.failed else 0

