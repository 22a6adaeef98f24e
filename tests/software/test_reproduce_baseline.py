"""Every ``pimforge reproduce`` row of the five systems against its committed baseline
(``software/<system>/baseline.json``), within ``REL_TOL`` (1e-9: the models are deterministic
double-precision arithmetic on seeded inputs; the margin is for another NumPy's or CPU's
summation order, see ``software/baseline.py``).  A deliberate change of a model's numbers is
accepted with ``pimforge reproduce SYSTEM --update-baseline``, which rewrites the file and prints
the diff for review.

Each system's rows are computed once (module-scoped fixture, in process): PAM and Hermes take
several seconds each, the other three a few seconds or less.
"""
import json

import pytest

from pimforge import cli
from pimforge.software import baseline as bl
from pimforge.software.cli import SYSTEMS, system_module
from pimforge.software.report import Row


@pytest.fixture(scope="module", params=list(SYSTEMS))
def system_rows(request):
    """(system, reproduce module, rows at the baseline seed, committed baseline)."""
    name = request.param
    mod = system_module(name, "reproduce")
    res = bl.rows_result(mod)
    return name, mod, res.rows, bl.load_baseline(bl.baseline_path(mod))


def test_rows_match_baseline(system_rows):
    name, mod, rows, base = system_rows
    path = bl.baseline_path(mod)
    fix = (f"if the change is deliberate, run `{bl.update_command(name)}` and commit "
           f"{'/'.join(path.parts[-3:])}")
    assert base is not None, f"reproduce {name}: no baseline {path}; {fix}"
    new = bl.snapshot(name, rows, bl.wall_clock_rows(mod))["rows"]
    found = bl.changes(base["rows"], new)
    msgs = []
    for c in found:
        if c.field == "row":
            what = "is new" if c.old is None else "is gone"
            msgs.append(f"row {c.row!r} {what} (baseline {c.old!r}, now {c.new!r})")
        else:
            msgs.append(f"row {c.row!r}: {c.field} was {c.old!r} in the baseline, now {c.new!r} "
                        f"(relative change {c.relative:+.3e}, tolerance {bl.REL_TOL:g})"
                        if c.relative is not None else
                        f"row {c.row!r}: {c.field} was {c.old!r} in the baseline, now {c.new!r}")
    assert not found, (f"reproduce {name}: {len(found)} of {len(new)} row values moved; "
                       f"{fix}:\n  " + "\n  ".join(msgs))


def test_every_row_is_pinned_or_named_as_wall_time(system_rows):
    """No row slips out of the snapshot: each is in the baseline or excluded by name as a wall
    time, and every exclusion names a real row (a renamed row cannot leave a stale one)."""
    name, mod, rows, base = system_rows
    excluded = bl.wall_clock_rows(mod)
    items = [r.item for r in rows]
    assert len(set(items)) == len(items), f"{name}: row ids must be unique"
    assert set(excluded) <= set(items), f"{name}: WALL_CLOCK_ROWS names no row: " \
                                        f"{sorted(set(excluded) - set(items))}"
    assert set(base["rows"]) | set(excluded) == set(items)
    assert not set(base["rows"]) & set(excluded)
    assert base["excluded"] == excluded
    assert base["seed"] == bl.BASELINE_SEED
    # a pinned row carries a number: a row left without one (None) would pin nothing
    assert all(base["rows"][i]["ours"] is not None for i in base["rows"]), name


def test_only_hermes_ilp_time_is_excluded():
    """The wall-clock rows, by name: Hermes' CBC solve time; every other row is modeled."""
    got = {n: sorted(bl.wall_clock_rows(system_module(n, "reproduce"))) for n in SYSTEMS}
    assert got == {"pam": [], "hilos": [], "hermes": ["§IV-B: ILP solve time"], "lolpim": [],
                   "papi": []}


def _rows(**ours):
    return [Row(item, 1.0, v) for item, v in ours.items()]


def test_changes_and_diff_lines():
    old = bl.snapshot("x", _rows(a=2.0, b=3.0, gone=1.0), {})["rows"]
    new = bl.snapshot("x", _rows(a=2.0 * (1 + 0.5 * bl.REL_TOL), b=1.5, new=4.0), {})["rows"]
    found = bl.changes(old, new)
    assert [(c.row, c.field) for c in found] == [("b", "ours"), ("new", "row"), ("gone", "row")]
    assert found[0].relative == pytest.approx(-0.5)
    lines = bl.diff_lines("x", found)
    assert lines[0] == "x: 3 change(s):"
    assert "'b': ours 3.0 -> 1.5, relative change -5.000e-01" in lines[1]
    assert "added" in lines[2] and "removed" in lines[3]
    assert bl.diff_lines("x", []) == ["x: no change"]
    # within the tolerance the old value stays: an update does not churn the file
    assert bl.merge(old, new)["a"]["ours"] == 2.0
    assert bl.merge(old, new)["b"]["ours"] == 1.5
    # None (no value) against a number is a change; None against None is not
    assert bl.changes({"a": {"paper": 1.0, "ours": None, "unit": "x"}},
                      {"a": {"paper": 1.0, "ours": None, "unit": "x"}}) == []
    assert len(bl.changes({"a": {"paper": 1.0, "ours": None, "unit": "x"}},
                          {"a": {"paper": 1.0, "ours": 1.0, "unit": "x"}})) == 1


def test_update_baseline_cli_rewrites_and_prints_the_diff(tmp_path, monkeypatch, capsys):
    """``--update-baseline`` on a doctored copy of HILOS' baseline (the cheapest system):
    prints the doctored row with old, new and relative change, restores the committed
    values, then reports no change."""
    mod = system_module("hilos", "reproduce")
    committed = bl.load_baseline(bl.baseline_path(mod))
    doctored = json.loads(json.dumps(committed))
    row = next(iter(doctored["rows"]))
    doctored["rows"][row]["ours"] *= 2
    path = tmp_path / "baseline.json"
    path.write_text(json.dumps(doctored), encoding="utf-8")
    monkeypatch.setattr(bl, "baseline_path", lambda m: path)
    assert cli.main(["reproduce", "hilos", "--update-baseline", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "hilos: 1 change(s):" in out
    assert f"{row!r}: ours {doctored['rows'][row]['ours']!r} -> " \
           f"{committed['rows'][row]['ours']!r}, relative change -5.000e-01" in out
    assert json.loads(path.read_text(encoding="utf-8")) == committed
    assert cli.main(["reproduce", "hilos", "--update-baseline", "--quiet"]) == 0
    assert capsys.readouterr().out.strip() == "hilos: no change"


@pytest.mark.parametrize("argv, words", [
    (["reproduce", "pam", "--update-baseline", "--seed", "3"], ("--seed", "allowed")),
    (["reproduce", "pam", "--update-baseline", "--out", "x"], ("--out", "not allowed")),
    (["reproduce", "nope", "--update-baseline"], ("unknown system", "allowed")),
    (["reproduce", "all"], ("--update-baseline", "allowed")),
])
def test_update_baseline_bad_options(argv, words, capsys):
    """Rejected before any model run: one line, exit 2."""
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: "), err
    for w in words:
        assert w in err
