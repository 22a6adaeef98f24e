"""The curated mutation table: small source changes that the suite must catch.

Every ``tests/mutations/*.yaml`` file is a list of rows (docs/dev/verification.md, "Curated
mutations"): ``name``, ``file`` (repository-relative), ``original`` (text that occurs exactly once
in ``file``), ``mutated`` (its replacement), ``command`` (``{python}`` stands for this Python),
``why`` and optionally ``long`` (the catching test is in ``make test-long`` only, so the command
runs with ``PIMFORGE_LONG=1``).

The default run checks the table itself: every row still applies to today's code (its original
text is there exactly once) and its command names test files that exist, so a refactor cannot
leave a row pointing at nothing.  ``make test-long`` applies each row in a temporary copy of the
tracked files and runs its command there: the command must fail (exit 1) on the mutated copy and
pass (exit 0) on the unmutated one, so a row can neither be caught by accident nor by a command
that always fails.  One row alone::

    PIMFORGE_LONG=1 .venv/bin/python -m pytest tests/test_mutations.py -k <name>
"""
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
TABLE_DIR = ROOT / "tests" / "mutations"
KEYS = {"name", "file", "original", "mutated", "command", "why"}
OPTIONAL = {"long"}
# The package's folders as installed (setup.py's package-dir): in a copy, links inside its
# ``pimforge/`` make it the whole package, found first both from the copy's root (``python -m``
# puts the working directory first) and through PYTHONPATH.
TOPS = ("hw", "sim", "software", "synth")
NAME = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")


def load_table() -> list:
    """Every row of every table file, in file then row order, with its table file's name."""
    rows = []
    for path in sorted(TABLE_DIR.glob("*.yaml")):
        data = yaml.safe_load(path.read_text()) or []
        assert isinstance(data, list), f"{path.name}: a table is a YAML list of rows"
        for i, row in enumerate(data):
            assert isinstance(row, dict), f"{path.name} row {i}: a row is a mapping"
            rows.append(dict(row, table=path.name))
    return rows


ROWS = load_table()


def _row_id(row) -> str:
    return str(row.get("name", "?"))


def test_table_has_rows():
    assert ROWS, "tests/mutations/*.yaml holds no row"


def test_names_unique():
    names = [r.get("name") for r in ROWS]
    dups = sorted({n for n in names if names.count(n) > 1})
    assert not dups, f"mutation names used twice: {dups}"


@pytest.mark.parametrize("row", ROWS, ids=_row_id)
def test_row_applies(row):
    """The row's keys, its text (exactly once in its file) and its command's test files."""
    where = f"{row['table']}: {row.get('name')}"
    keys = set(row) - {"table"}
    assert KEYS <= keys <= KEYS | OPTIONAL, \
        f"{where}: keys {sorted(keys)}; required {sorted(KEYS)}, optional {sorted(OPTIONAL)}"
    assert NAME.match(row["name"]), f"{where}: a name is kebab-case"
    assert isinstance(row.get("long", False), bool), f"{where}: long is true or false"
    assert str(row["why"]).strip(), f"{where}: say why the row exists"
    path = ROOT / row["file"]
    assert path.is_file(), f"{where}: no file {row['file']}"
    count = path.read_text().count(row["original"])
    assert count == 1, f"{where}: the original text occurs {count} times in {row['file']}"
    assert row["mutated"] != row["original"], f"{where}: the mutation changes nothing"
    argv = shlex.split(row["command"])
    assert argv[0] == "{python}", f"{where}: a command starts with {{python}}"
    for arg in argv[1:]:
        name = arg.split("::")[0]
        if name.startswith("tests/"):
            assert (ROOT / name).exists(), f"{where}: the command names {name}, which is missing"


# --- applying the rows (make test-long) -------------------------------------------------------

def _tracked_files() -> list:
    """The tracked files and the new ones git does not ignore (the working tree as it is)."""
    out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                         cwd=ROOT, capture_output=True, check=True)
    return sorted({p for p in out.stdout.decode().split("\0") if p})


def _copy_tree(dest: Path) -> Path:
    """The tracked files (as they are in the working tree) copied to ``dest/repo``, with links
    ``pimforge/hw`` -> ``hw`` and so on, so that ``import pimforge`` there imports the copy as
    the installed package would."""
    repo = dest / "repo"
    for rel in _tracked_files():
        src = ROOT / rel
        if src.is_file():
            target = repo / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, target)
    for top in TOPS:
        (repo / "pimforge" / top).symlink_to(Path("..") / top)
    return repo


def _run(row, repo: Path) -> subprocess.CompletedProcess:
    argv = [sys.executable if a == "{python}" else a for a in shlex.split(row["command"])]
    env = dict(os.environ, PYTHONPATH=str(repo), PYTHONDONTWRITEBYTECODE="1",
               # content-keyed caches (Verilator models, float operators): shared, still exact
               PIMFORGE_BUILD=os.environ.get("PIMFORGE_BUILD", str(ROOT / "build")))
    env.pop("PYTEST_XDIST_WORKER", None)
    env.pop("PYTEST_ADDOPTS", None)
    if row.get("long"):
        env["PIMFORGE_LONG"] = "1"
    else:
        env.pop("PIMFORGE_LONG", None)
    return subprocess.run(argv, cwd=repo, env=env, capture_output=True, text=True)


def _tail(proc) -> str:
    text = (proc.stdout + proc.stderr).strip().splitlines()
    return "\n".join(text[-25:])


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    return _copy_tree(tmp_path_factory.mktemp("mutations-pristine"))


_PASSED: set = set()


@pytest.mark.slow
@pytest.mark.parametrize("row", ROWS, ids=_row_id)
def test_mutation_caught(row, pristine, tmp_path):
    key = (row["command"], bool(row.get("long")))
    if key not in _PASSED:
        base = _run(row, pristine)
        assert base.returncode == 0, \
            f"unmutated, `{row['command']}` must pass; exit {base.returncode}:\n{_tail(base)}"
        _PASSED.add(key)
    repo = _copy_tree(tmp_path)
    path = repo / row["file"]
    text = path.read_text()
    assert text.count(row["original"]) == 1
    path.write_text(text.replace(row["original"], row["mutated"]))
    proc = _run(row, repo)
    assert proc.returncode == 1, \
        (f"{row['name']} ({row['file']}) not caught: `{row['command']}` exited "
         f"{proc.returncode}, not 1:\n{_tail(proc)}")
