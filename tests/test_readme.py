"""The README stays a short front page: at most 200 lines, a quick start of exactly two commands,
and a unit table that is the catalog's, row for row.

The table's rows are computed from :data:`pimforge.hw.catalog.HW_UNITS` here, never copied from
the README; ``python tests/test_readme.py`` prints the table to paste after changing a unit.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

from pimforge.hw.catalog import HW_UNITS, UNIT_MODULES

README = Path(__file__).resolve().parent.parent / "README.md"
MAX_LINES = 200
QUICK_START = ["make demo", "make test"]
TABLE_HEADER = ["| unit | area | what it is |", "|---|---|---|"]


def _cell(text: str) -> str:
    """A table cell: '|' would end the cell and '<eos>' would read as an HTML tag."""
    return re.sub(r"<(?=[A-Za-z/])", "&lt;", text.replace("|", "\\|"))


def unit_rows() -> list[str]:
    """One row per unit of the catalog, in catalog order: name, area (the generator's package
    under ``pimforge.hw``) and the declaration's one-line summary."""
    rows = []
    for name, unit in HW_UNITS.items():
        area = UNIT_MODULES[name].split(".")[2]
        rows.append(f"| `{name}` | {area} | {_cell(unit.summary)} |")
    return rows


def _lines() -> list[str]:
    return README.read_text(encoding="utf-8").splitlines()


def _section(lines: list[str], title: str) -> list[str]:
    start = lines.index(f"## {title}")
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    return lines[start + 1:end]


def readme_table(lines: list[str]) -> list[str]:
    """The README's unit table: the rows after its header, up to the first non-table line."""
    start = lines.index(TABLE_HEADER[0])
    assert lines[start + 1] == TABLE_HEADER[1], "the unit table's header has no separator row"
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append(line)
    return rows


def test_readme_is_short():
    n = len(_lines())
    assert n <= MAX_LINES, f"README.md has {n} lines; at most {MAX_LINES} (move the rest to docs/)"


def test_quick_start_is_exactly_two_commands():
    section = _section(_lines(), "Quick start")
    blocks = re.findall(r"^```[^\n]*\n(.*?)^```", "\n".join(section) + "\n", re.M | re.S)
    assert blocks, "the Quick start section has no code block"
    commands = [line.strip() for line in blocks[0].splitlines() if line.strip()]
    assert commands == QUICK_START


def test_unit_table_matches_the_catalog():
    have, want = readme_table(_lines()), unit_rows()
    missing = [r for r in want if r not in have]
    extra = [r for r in have if r not in want]
    assert not missing and not extra, (
        f"README unit table is stale; missing rows: {missing}; rows not in the catalog: {extra}. "
        "Run `python tests/test_readme.py` and paste its table.")
    assert have == want, "README unit table rows are not in catalog order"
    assert len(have) == len(HW_UNITS)


def test_the_table_check_can_fail():
    rows = unit_rows()
    lines = ["# x", *TABLE_HEADER, *rows[1:], "", "after"]
    assert readme_table(lines) != rows
    changed = [rows[0].replace("|", "| changed", 2), *rows[1:]]
    assert changed != rows


if __name__ == "__main__":
    sys.stdout.write("\n".join([*TABLE_HEADER, *unit_rows()]) + "\n")
