"""A sweep's results: the table (CSV, JSON, Markdown), the Pareto fronts and their plots, and
the best point per metric.

Two fronts, each drawn as a PNG when its metrics were measured:

- area against throughput: the least area (``nand2``, else ``asap7_um2``, else ``lut``) for
  the most ``tokens_per_s``;
- fmax against area: the least area for the highest ``fmax``.

A point is on a front when no other point is at least as good in both metrics and better in
one.  Failed points and points missing either metric are left out of a front.
"""
from __future__ import annotations

import csv
import io
import json

from pimforge.base.files import write_outputs
from pimforge.software.report import Plot, Table, plain, plot_png
from pimforge.sweep.spec import METRICS

__all__ = ["MINIMIZE", "MAXIMIZE", "pareto", "fronts", "best_per_metric", "sweep_files",
           "table_rows", "write_sweep", "front_table", "best_table"]

MINIMIZE = ("nand2", "asap7_um2", "depth", "lut", "dsp", "cycles", "energy_per_op", "power",
            "model_j_per_token", "model_power")
MAXIMIZE = ("fmax", "tokens_per_s", "utilization", "model_tokens_per_s")


def _num(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and v == v


def pareto(rows: list, x: str, y: str) -> list:
    """The rows on the front of ``x`` and ``y`` (each minimized or maximized as
    :data:`MINIMIZE` / :data:`MAXIMIZE` say), sorted by ``x``."""
    sx = 1 if x in MINIMIZE else -1
    sy = 1 if y in MINIMIZE else -1
    pts = [r for r in rows if r["status"] != "failed"
           and _num(r["metrics"].get(x)) and _num(r["metrics"].get(y))]

    def cost(r):
        return sx * r["metrics"][x], sy * r["metrics"][y]

    front = []
    for r in pts:
        cx, cy = cost(r)
        dominated = any(ox <= cx and oy <= cy and (ox, oy) != (cx, cy)
                        for ox, oy in map(cost, pts))
        if not dominated:
            front.append(r)
    return sorted(front, key=lambda r: (cost(r)[0], cost(r)[1], r["point"]))


def _area_metric(metrics) -> str | None:
    return next((m for m in ("nand2", "asap7_um2", "lut") if m in metrics), None)


def fronts(metrics) -> list:
    """``(name, x, y, title)`` of the fronts these metrics allow."""
    area = _area_metric(metrics)
    out = []
    if area and "tokens_per_s" in metrics:
        out.append(("pareto_area_throughput", area, "tokens_per_s", "area against throughput"))
    if area and "fmax" in metrics:
        out.append(("pareto_fmax_area", area, "fmax", "fmax against area"))
    if "energy_per_op" in metrics and "tokens_per_s" in metrics:
        out.append(("pareto_energy_throughput", "energy_per_op", "tokens_per_s",
                    "energy against throughput"))
    if "model_j_per_token" in metrics and "model_tokens_per_s" in metrics:
        out.append(("pareto_energy_throughput", "model_j_per_token", "model_tokens_per_s",
                    "energy against throughput"))
    return out


def best_per_metric(rows: list, metrics) -> list:
    """``[(metric, direction, best value, [point indices])]`` over the points that ran."""
    out = []
    for m in metrics:
        if m not in MINIMIZE and m not in MAXIMIZE:
            continue
        vals = [(r["metrics"][m], r["point"]) for r in rows
                if r["status"] != "failed" and _num(r["metrics"].get(m))]
        if not vals:
            continue
        best = (min if m in MINIMIZE else max)(v for v, _ in vals)
        out.append((m, "min" if m in MINIMIZE else "max", best,
                    [i for v, i in vals if v == best]))
    return out


def table_rows(run, spec) -> tuple:
    """``(columns, rows)``: point, the axes, every metric, status, error."""
    cols = ["point", *spec.axes, *spec.metrics, "status", "error"]
    rows = []
    for r in run.rows:
        m = r.get("metrics") or {}
        rows.append([r["point"], *(r["values"][a] for a in spec.axes),
                     *(m.get(k) for k in spec.metrics), r["status"],
                     r.get("error") or m.get("note") or ""])
    return cols, rows


def _csv(cols, rows) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(cols)
    for r in rows:
        w.writerow(["" if v is None else v for v in r])
    return buf.getvalue()


def _label(r, spec) -> str:
    return ", ".join(f"{a}={r['values'][a]}" for a in spec.axes)


def front_table(front, x, y, title, spec) -> Table:
    return Table(f"Pareto front: {title} ({x} vs {y})", ["point", *spec.axes, x, y],
                 [[r["point"], *(r["values"][a] for a in spec.axes), r["metrics"][x],
                   r["metrics"][y]] for r in front])


def _plot(name, x, y, title, rows, front, spec) -> Plot:
    pts = [r for r in rows if r["status"] != "failed"
           and _num(r["metrics"].get(x)) and _num(r["metrics"].get(y))]
    series = {"points": ([r["metrics"][x] for r in pts], [r["metrics"][y] for r in pts]),
              "Pareto front": ([r["metrics"][x] for r in front],
                               [r["metrics"][y] for r in front])}
    def axis(m):
        return f"{m} ({'lower' if m in MINIMIZE else 'higher'} is better)"
    return Plot(name, f"{spec.title}: {title}", "scatter", axis(x), axis(y), series,
                lines=["Pareto front"])


def best_table(best: list) -> Table:
    return Table("Best per metric", ["metric", "goal", "best", "points"],
                 [[m, d, v, ", ".join(map(str, pts))] for m, d, v, pts in best])


def markdown(run, spec, cols, rows, front_tables, best) -> str:
    out = [f"# Sweep: {spec.title}", "",
           f"{spec.kind} `{spec.target}`" + (f", preset `{spec.preset}`" if spec.preset else "")
           + (", fixed " + ", ".join(f"`{k}={v}`" for k, v in spec.fixed.items())
              if spec.fixed else "")
           + f"; {len(spec.points)} points over " + ", ".join(f"`{a}`" for a in spec.axes)
           + f"; {run.ran} run ({run.scheduler}), {run.resumed} resumed, "
             f"{len(run.failed)} failed; wall time {run.wall_s:.1f} s.", ""]
    if spec.kind == "unit" and {"cycles", "tokens_per_s"} & set(spec.metrics):
        out += [f"Cycle model workload: {spec.ops} operations per job"
                + (f"; clock {spec.clock_mhz} MHz" if spec.clock_mhz not in (None, "fmax") else
                   "; clock: each point's ECP5 fmax" if spec.clock_mhz == "fmax" else "")
                + ".", ""]
    out.append(Table("Points", cols, rows).markdown())
    for t in front_tables:
        out.append(t.markdown())
    if best:
        out.append(best_table(best).markdown())
    out.append("Metrics: " + "; ".join(f"`{m}`: {METRICS[m]}" for m in spec.metrics) + ".\n")
    return "\n".join(out)


def sweep_files(run, spec) -> dict:
    """``{file name: text or bytes}``: sweep.csv, sweep.json, sweep.md and one PNG per front."""
    cols, rows = table_rows(run, spec)
    front_tables, plots, fronts_json = [], {}, {}
    for name, x, y, title in fronts(spec.metrics):
        front = pareto(run.rows, x, y)
        front_tables.append(front_table(front, x, y, title, spec))
        fronts_json[name] = {"x": x, "y": y, "points": [r["point"] for r in front]}
        if front:
            plots[f"{name}.png"] = plot_png(_plot(name, x, y, title, run.rows, front, spec))
    best = best_per_metric(run.rows, spec.metrics)
    data = {"title": spec.title, "kind": spec.kind, "target": spec.target,
            "preset": spec.preset, "fixed": spec.fixed, "axes": spec.axes,
            "metrics": spec.metrics, "workload_ops": spec.ops, "clock_mhz": spec.clock_mhz,
            "wall_s": run.wall_s, "scheduler": run.scheduler, "workers": run.workers,
            "ran": run.ran, "resumed": run.resumed, "failed": len(run.failed),
            "points": [{k: r.get(k) for k in ("point", "key", "values", "config", "status",
                                              "metrics", "error", "seconds", "worker")}
                       for r in run.rows],
            "pareto": fronts_json,
            "best": [{"metric": m, "goal": d, "value": v, "points": p} for m, d, v, p in best]}
    md = markdown(run, spec, cols, rows, front_tables, best)
    return {"sweep.csv": _csv(cols, rows),
            "sweep.json": json.dumps(plain(data), indent=1, allow_nan=False) + "\n",
            "sweep.md": md, **plots}


def write_sweep(run, spec, out) -> list:
    """Write :func:`sweep_files` into ``out``, all or nothing."""
    return write_outputs(out, sweep_files(run, spec))
