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


def quick_start(lines: list[str]) -> list[str]:
    """The commands of the first code block under "## Quick start"."""
    section = _section(lines, "Quick start")
    blocks = re.findall(r"^```[^\n]*\n(.*?)^```", "\n".join(section) + "\n", re.M | re.S)
    assert blocks, "the Quick start section has no code block"
    return [line.strip() for line in blocks[0].splitlines() if line.strip()]


def test_quick_start_is_exactly_two_commands():
    assert quick_start(_lines()) == QUICK_START


def test_a_longer_quick_start_is_caught():
    lines = ["# x", "## Quick start", "", "```", "make venv", "make demo", "make test", "```",
             "## Next"]
    assert quick_start(lines) != QUICK_START


def table_problems(lines: list[str]) -> list[str]:
    """What is wrong with the unit table in ``lines``, against the catalog (empty: nothing)."""
    have, want = readme_table(lines), unit_rows()
    problems = [f"missing row: {r}" for r in want if r not in have]
    problems += [f"row not in the catalog: {r}" for r in have if r not in want]
    if not problems and have != want:
        problems.append("rows not in catalog order")
    return problems


def test_unit_table_matches_the_catalog():
    problems = table_problems(_lines())
    assert not problems, ("README unit table is stale (run `python tests/test_readme.py` and "
                          "paste its table):\n" + "\n".join(problems))
    assert len(readme_table(_lines())) == len(HW_UNITS)


def test_a_stale_table_is_caught():
    rows = unit_rows()
    good = ["# x", *TABLE_HEADER, *rows, "", "after"]
    assert table_problems(good) == []
    dropped = [r for r in rows if "`hermes_gemv`" not in r]
    assert table_problems(["# x", *TABLE_HEADER, *dropped]) == [
        f"missing row: {next(r for r in rows if '`hermes_gemv`' in r)}"]
    renamed = [rows[0].replace("adder", "summer"), *rows[1:]]
    assert len(table_problems(["# x", *TABLE_HEADER, *renamed])) == 2
    swapped = [rows[1], rows[0], *rows[2:]]
    assert table_problems(["# x", *TABLE_HEADER, *swapped]) == ["rows not in catalog order"]


if __name__ == "__main__":
    sys.stdout.write("\n".join([*TABLE_HEADER, *unit_rows()]) + "\n")
