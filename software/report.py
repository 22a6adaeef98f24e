"""Results of the system model and how they are written: JSON, Markdown tables, PNG plots.

A model run returns a :class:`ModelResult`: tables (rows of cells), plots (named series) and the
raw data as plain JSON.  ``reproduce`` returns :class:`Row` objects, one per headline figure of a
paper, with the paper's value, ours, their ratio and the cause of any miss.  :func:`write_result`
writes everything all-or-nothing into an output directory.
"""
from __future__ import annotations

import io
import json
import math
import sys
import time
from dataclasses import asdict, dataclass, field

import numpy as np

from pimforge.base.files import write_outputs

__all__ = ["Table", "Plot", "Row", "ModelResult", "Progress", "write_result", "fmt", "rows_table",
           "plain", "FIDELITY", "plot_png"]

FIDELITY = 0.20     # the aim: every headline within +-20% of the paper


@dataclass
class Table:
    title: str
    columns: list
    rows: list
    note: str = ""

    def markdown(self) -> str:
        out = [f"### {self.title}", ""]
        if self.note:
            out += [self.note, ""]
        out.append("| " + " | ".join(str(c) for c in self.columns) + " |")
        out.append("|" + "---|" * len(self.columns))
        for r in self.rows:
            out.append("| " + " | ".join(fmt(c) for c in r) + " |")
        return "\n".join(out) + "\n"


@dataclass
class Plot:
    """``kind`` ``bar`` (grouped bars: ``groups`` on the x axis, one bar per series),
    ``stacked`` (one bar per group, the series stacked in order), ``line``
    (``x`` values shared by every series) or ``scatter`` (each series an ``(xs, ys)`` pair,
    drawn as points, or as a line if its label is in ``lines``).  ``series`` maps a label to
    its y values (None or NaN draws nothing, e.g. OOM); ``labels`` optionally writes a text
    above each bar."""

    name: str
    title: str
    kind: str
    xlabel: str
    ylabel: str
    series: dict
    groups: list = field(default_factory=list)
    x: list = field(default_factory=list)
    logy: bool = False
    labels: dict = field(default_factory=dict)
    hlines: list = field(default_factory=list)      # dashed reference lines (y values)
    lines: list = field(default_factory=list)       # scatter: series drawn as lines


@dataclass
class Row:
    """One headline figure: ``paper`` and ``ours`` in ``unit``; ``note`` says how ours is
    derived and, when the ratio misses +-20%, the modeled cause."""

    item: str
    paper: float
    ours: float | None
    unit: str = "x"
    source: str = ""
    note: str = ""

    @property
    def ratio(self) -> float | None:
        if self.ours is None or not self.paper:
            return None
        return self.ours / self.paper

    @property
    def within(self) -> bool | None:
        r = self.ratio
        return None if r is None else abs(r - 1.0) <= FIDELITY

    def as_dict(self) -> dict:
        d = asdict(self)
        d["ratio"] = self.ratio
        d["within_20pct"] = self.within
        return d


def rows_table(rows: list, title: str) -> Table:
    return Table(title, ["source", "item", "paper", "ours", "ours / paper", "within 20%", "note"],
                 [[r.source, r.item, f"{fmt(r.paper)} {r.unit}".strip(),
                   "-" if r.ours is None else f"{fmt(r.ours)} {r.unit}".strip(),
                   "-" if r.ratio is None else f"{r.ratio:.2f}",
                   "-" if r.within is None else ("yes" if r.within else "no"), r.note]
                  for r in rows])


@dataclass
class ModelResult:
    system: str
    title: str
    config: dict
    tables: list
    plots: list
    data: dict
    rows: list = field(default_factory=list)          # reproduce only
    assumptions: list = field(default_factory=list)   # (parameter, value, why)
    seconds: float = 0.0

    def to_json(self) -> dict:
        """Plain JSON: NaN (OOM) and infinities become null, NumPy scalars Python numbers."""
        return plain({"system": self.system, "title": self.title, "config": self.config,
                      "seconds": round(self.seconds, 3),
                      "rows": [r.as_dict() for r in self.rows],
                      "tables": [asdict(t) for t in self.tables],
                      "assumptions": [{"parameter": p, "value": v, "why": w}
                                      for p, v, w in self.assumptions],
                      "data": self.data})

    def markdown(self) -> str:
        out = [f"# {self.title}", ""]
        if self.config:
            out.append("Parameters: " + ", ".join(f"`{k}={v}`" for k, v in self.config.items()))
            out.append("")
        if self.rows:
            out.append(rows_table(self.rows, "Headline results: paper vs ours").markdown())
            hit = sum(1 for r in self.rows if r.within)
            known = sum(1 for r in self.rows if r.within is not None)
            out.append(f"{hit} of {known} figures within +-{FIDELITY:.0%} of the paper.\n")
        for t in self.tables:
            out.append(t.markdown())
        if self.plots:
            out.append("### Plots\n")
            out += [f"- `{p.name}.png`: {p.title}" for p in self.plots]
            out.append("")
        if self.assumptions:
            out.append(Table("Parameters the papers do not give (values chosen)",
                             ["parameter", "value", "why"],
                             [list(a) for a in self.assumptions]).markdown())
        out.append(f"Model run time: {self.seconds:.1f} s.\n")
        return "\n".join(out)


def fmt(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        if math.isnan(v):
            return "OOM"
        a = abs(v)
        if a == 0:
            return "0"
        if a >= 1000:
            return f"{v:,.0f}"
        if a >= 100:
            return f"{v:.1f}"
        if a >= 1:
            return f"{v:.2f}"
        return f"{v:.3g}"
    return str(v)


def _png(plot: Plot) -> bytes:
    # matplotlib is imported here, not at the top: it costs about a second, and only the
    # commands that draw plots need it (Agg: no display)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    width = min(14.0, max(6.0, 0.45 * len(plot.groups) + 2.0))
    fig, ax = plt.subplots(figsize=(width, 4.5), dpi=110)
    if plot.kind == "stacked":
        xs = np.arange(len(plot.groups))
        bottom = np.zeros(len(plot.groups))
        for name, ys in plot.series.items():
            ys = np.nan_to_num(np.array([np.nan if v is None else v for v in ys], float))
            ax.bar(xs, ys, 0.6, bottom=bottom, label=name)
            bottom += ys
        ax.set_xticks(xs)
        ax.set_xticklabels(plot.groups, rotation=30, ha="right", fontsize=8)
    elif plot.kind == "bar":
        names = list(plot.series)
        n = max(1, len(names))
        width = 0.8 / n
        xs = np.arange(len(plot.groups))
        for i, name in enumerate(names):
            ys = np.array([np.nan if v is None else v for v in plot.series[name]], float)
            bars = ax.bar(xs + (i - (n - 1) / 2) * width, np.nan_to_num(ys, nan=0.0), width,
                          label=name)
            labels = plot.labels.get(name)
            for j, b in enumerate(bars):
                x = b.get_x() + b.get_width() / 2
                if np.isnan(ys[j]):          # OOM: no bar; the label sits on the x axis
                    ax.annotate("OOM", (x, 0.01), xycoords=("data", "axes fraction"),
                                ha="center", va="bottom", fontsize=6, rotation=90,
                                color=b.get_facecolor())
                elif labels and labels[j] is not None:
                    ax.annotate(str(labels[j]), (x, b.get_height()), ha="center",
                                va="bottom", fontsize=6, rotation=90)
        ax.set_xticks(xs)
        ax.set_xticklabels(plot.groups, rotation=30, ha="right", fontsize=8)
    elif plot.kind == "scatter":
        for name, (xs, ys) in plot.series.items():
            ax.plot(xs, ys, marker="o", label=name,
                    linestyle="-" if name in plot.lines else "none")
    else:
        for name, ys in plot.series.items():
            ys = [np.nan if v is None else v for v in ys]
            ax.plot(plot.x, ys, marker="o", label=name)
    for y in plot.hlines:
        ax.axhline(y, color="grey", linestyle="--", linewidth=0.8)
    if plot.logy:
        ax.set_yscale("log")
    ax.set_title(plot.title, fontsize=10)
    ax.set_xlabel(plot.xlabel)
    ax.set_ylabel(plot.ylabel)
    ax.grid(axis="y", alpha=0.3)
    if plot.series:
        ax.legend(fontsize=7)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return buf.getvalue()


def plot_png(plot: Plot) -> bytes:
    """The plot as PNG bytes (Agg)."""
    return _png(plot)


def headline_plot(result: ModelResult) -> Plot | None:
    """The reproduce rows drawn: ours over the paper's value for every row with a value."""
    rows = [r for r in result.rows if r.ours is not None and r.paper and r.ours > 0]
    if not rows:
        return None
    return Plot(f"{result.system}_headlines", f"{result.system.upper()}: ours / paper per "
                "headline result (dashed: the +-20% aim)", "bar", "", "ours / paper",
                {"ours / paper": [r.ratio for r in rows]},
                groups=[r.item[:40] for r in rows], logy=True,
                labels={"ours / paper": [f"{r.ratio:.2f}" for r in rows]},
                hlines=[1 - FIDELITY, 1.0, 1 + FIDELITY])


def write_result(result: ModelResult, out, stem: str) -> list:
    """Write ``stem.json``, ``stem.md`` and one PNG per plot into ``out`` (with the reproduce
    rows, also ``<system>_headlines.png``), all or nothing."""
    head = headline_plot(result)
    if head is not None and all(p.name != head.name for p in result.plots):
        result.plots.append(head)
    files = {f"{stem}.json": json.dumps(result.to_json(), indent=2, allow_nan=False) + "\n",
             f"{stem}.md": result.markdown()}
    for p in result.plots:
        files[f"{p.name}.png"] = _png(p)
    return write_outputs(out, files)


def plain(o):
    """``o`` as strict JSON data: mapping keys as strings, tuples and arrays as lists, NumPy
    scalars as Python numbers, NaN and infinities (OOM, no result) as None."""
    if isinstance(o, dict):
        return {str(k): plain(v) for k, v in o.items()}
    if isinstance(o, (list, tuple, np.ndarray)):
        return [plain(v) for v in o]
    if isinstance(o, (bool, np.bool_)):
        return bool(o)
    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, (float, np.floating)):
        return float(o) if math.isfinite(o) else None
    return o


class Progress:
    """A progress bar on stderr for sweeps: ``with Progress(total, 'label') as p: p.step()``.
    Quiet when ``enabled`` is false (tests, the API)."""

    def __init__(self, total: int, label: str, enabled: bool = True, stream=None):
        self.total, self.label, self.enabled = max(1, total), label, enabled
        self.stream = stream or sys.stderr
        self.done = 0
        self.t0 = time.monotonic()

    def __enter__(self):
        self._draw()
        return self

    def step(self, what: str = ""):
        self.done += 1
        self._draw(what)

    def _draw(self, what: str = ""):
        if not self.enabled:
            return
        if not getattr(self.stream, "isatty", lambda: False)():
            # a log, not a terminal: one line per tenth of the way
            tenth = max(1, self.total // 10)
            if self.done and (self.done % tenth == 0 or self.done == self.total):
                self.stream.write(f"{self.label}: {self.done}/{self.total} "
                                  f"({time.monotonic() - self.t0:.1f} s) {what}\n")
                self.stream.flush()
            return
        frac = min(1.0, self.done / self.total)
        bar = "#" * int(frac * 30)
        el = time.monotonic() - self.t0
        self.stream.write(f"\r{self.label} [{bar:<30}] {self.done}/{self.total} {el:5.1f}s "
                          f"{what[:40]:<40}")
        self.stream.flush()

    def __exit__(self, *exc):
        if self.enabled and getattr(self.stream, "isatty", lambda: False)():
            self.stream.write("\n")
            self.stream.flush()
        return False
