"""The committed snapshot of every ``pimforge reproduce`` row: ``software/<system>/baseline.json``.

The system models are deterministic for a seed, so every reproduced number (``ours``) and every
paper value of a row is pinned in a baseline: ``tests/software/test_reproduce_baseline.py`` fails
when a row moves by more than ``REL_TOL``, and ``pimforge reproduce SYSTEM
--update-baseline`` rewrites the file and prints the diff, so that each change to a model's
numbers is deliberate and shows in review.

Rows are keyed by their item text (the row id).  A row whose value is a wall time, or derived
from one, cannot be pinned; its system's ``reproduce`` module names it in ``WALL_CLOCK_ROWS``
(item -> why), and the baseline lists it under ``excluded``.
"""
from __future__ import annotations

import inspect
import json
import math
import os
from dataclasses import dataclass
from pathlib import Path

from pimforge.base.errors import UserError
from pimforge.base.files import write_atomic
from pimforge.software.report import plain

__all__ = ["REL_TOL", "BASELINE_SEED", "FIELDS", "Change", "baseline_path", "wall_clock_rows",
           "rows_result", "snapshot", "load_baseline", "changes", "merge", "diff_lines",
           "update_baseline", "update_command"]

# The models are plain double-precision arithmetic on seeded inputs: a rerun gives the same bits.
# Another NumPy or CPU may sum in another order (pairwise or SIMD reductions), which moves a
# result by a few ulp (~1e-15 relative) per reduction; 1e-9 leaves six orders of magnitude for
# that, and is still far below any change of a model parameter (halving one bandwidth moves
# rows by tens of percent; a 0.1% change of a constant moves them by ~1e-3).
REL_TOL = 1e-9
BASELINE_SEED = 0           # the default of `pimforge reproduce --seed`
FIELDS = ("paper", "ours", "unit")
BASELINE_NAME = "baseline.json"


@dataclass
class Change:
    """One difference between a baseline and a new snapshot: ``field`` is one of
    ``FIELDS``, or ``"row"`` for a row added (``old`` None) or removed (``new`` None)."""

    row: str
    field: str
    old: object
    new: object

    @property
    def relative(self) -> float | None:
        """``(new - old) / abs(old)`` for two numbers, else None."""
        a, b = self.old, self.new
        if not (_number(a) and _number(b)):
            return None
        if a == b:
            return 0.0
        return math.inf if a == 0 else (b - a) / abs(a)

    def line(self) -> str:
        if self.field == "row":
            if self.old is None:
                return f"{self.row!r}: added: {_values(self.new)}"
            return f"{self.row!r}: removed (was {_values(self.old)})"
        rel = self.relative
        tail = "" if rel is None else f", relative change {rel:+.3e}"
        return f"{self.row!r}: {self.field} {self.old!r} -> {self.new!r}{tail}"


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _values(entry: dict) -> str:
    return ", ".join(f"{k} {entry.get(k)!r}" for k in FIELDS)


def baseline_path(reproduce_module) -> Path:
    """The baseline next to the system's ``reproduce`` module."""
    return Path(reproduce_module.__file__).with_name(BASELINE_NAME)


def wall_clock_rows(reproduce_module) -> dict:
    """The system's rows left out of the baseline (item -> why): wall times."""
    return dict(getattr(reproduce_module, "WALL_CLOCK_ROWS", {}))


def rows_result(reproduce_module, seed: int = BASELINE_SEED, progress: bool = False):
    """``reproduce`` with what the rows need only (PAM's sensitivity table reruns the model
    seven times and gives no row)."""
    params = inspect.signature(reproduce_module.reproduce).parameters
    kw = {"with_sensitivity": False} if "with_sensitivity" in params else {}
    return reproduce_module.reproduce(progress=progress, seed=seed, **kw)


def snapshot(system: str, rows, excluded: dict) -> dict:
    """The baseline document of ``rows`` (:class:`~pimforge.software.report.Row`), without the
    ``excluded`` items."""
    out = {}
    for r in rows:
        if r.item in out:
            raise ValueError(f"reproduce {system}: two rows named {r.item!r}; row ids must be "
                             f"unique")
        if r.item not in excluded:
            out[r.item] = {"paper": plain(r.paper), "ours": plain(r.ours), "unit": r.unit}
    return {"system": system, "seed": BASELINE_SEED, "rel_tol": REL_TOL,
            "update": update_command(system),
            "excluded": {k: excluded[k] for k in sorted(excluded)}, "rows": out}


def update_command(system: str) -> str:
    return f"pimforge reproduce {system} --update-baseline"


def load_baseline(path) -> dict | None:
    """The baseline at ``path``, or None if there is none yet."""
    path = Path(path)
    if not path.exists():
        return None
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise UserError(f"baseline '{path}' cannot be read: {e}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("rows"), dict):
        raise UserError(f"baseline '{path}': no 'rows' mapping; rewrite it with "
                        f"--update-baseline")
    return doc


def _close(a, b, rtol: float) -> bool:
    if _number(a) and _number(b):
        return a == b or abs(a - b) <= rtol * max(abs(a), abs(b))
    return a == b


def changes(old_rows: dict, new_rows: dict, rtol: float = REL_TOL) -> list:
    """Every :class:`Change` beyond ``rtol`` from ``old_rows`` to ``new_rows`` (row id ->
    fields), in the new rows' order, then the removed rows."""
    out = []
    for row, entry in new_rows.items():
        if row not in old_rows:
            out.append(Change(row, "row", None, entry))
            continue
        for f in FIELDS:
            if not _close(old_rows[row].get(f), entry.get(f), rtol):
                out.append(Change(row, f, old_rows[row].get(f), entry.get(f)))
    out += [Change(row, "row", entry, None) for row, entry in old_rows.items()
            if row not in new_rows]
    return out


def merge(old_rows: dict, new_rows: dict, rtol: float = REL_TOL) -> dict:
    """``new_rows`` with the old value kept wherever it is within ``rtol``: an update rewrites
    only what moved, so that summation noise does not churn the file."""
    out = {}
    for row, entry in new_rows.items():
        prev = old_rows.get(row, {})
        out[row] = {f: prev[f] if f in prev and _close(prev[f], entry[f], rtol) else entry[f]
                    for f in FIELDS}
    return out


def diff_lines(system: str, found: list) -> list:
    """The update's report: one line per change, or "no change"."""
    if not found:
        return [f"{system}: no change"]
    return [f"{system}: {len(found)} change(s):"] + [f"  {c.line()}" for c in found]


def update_baseline(system: str, reproduce_module, progress: bool = False) -> list:
    """Rerun ``system``'s rows at the baseline seed, rewrite its baseline, return the diff's
    lines."""
    path = baseline_path(reproduce_module)
    if path.exists() and not os.access(path, os.W_OK):
        raise UserError(f"baseline '{path}' is not writable")
    old = load_baseline(path) or {"rows": {}, "excluded": {}}
    res = rows_result(reproduce_module, progress=progress)
    excluded = wall_clock_rows(reproduce_module)
    doc = snapshot(system, res.rows, excluded)
    found = changes(old["rows"], doc["rows"])
    doc["rows"] = merge(old["rows"], doc["rows"])
    lines = diff_lines(system, found)
    if old.get("excluded", {}) != doc["excluded"]:
        lines.append(f"  excluded rows (wall times): {sorted(old.get('excluded', {}))} -> "
                     f"{sorted(doc['excluded'])}")
    text = json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        write_atomic({path: text})
        lines.append(f"  wrote {path}")
    return lines
