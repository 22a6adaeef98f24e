"""Checks every system model's command line shares (``pimforge model`` / ``reproduce``), used by
``tests/software/test_<system>.py``."""
import json
import subprocess
import sys

import pytest

from pimforge.hw.core.energy import table


def cli(*args) -> subprocess.CompletedProcess:
    """``python -m pimforge ARGS`` in a fresh process."""
    return subprocess.run([sys.executable, "-m", "pimforge", *args], capture_output=True,
                          text=True, timeout=300)


def check_bad_input_one_line(system: str, setting: str, field: str, out) -> None:
    """A bad ``--set`` ends with one line naming the field, status 2 and no output."""
    p = cli("model", system, "--set", setting, "--out", str(out))
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert f"'{field}'" in p.stderr and not out.exists()


def check_reproduce_rows(system: str, required, files, out) -> dict:
    """``reproduce SYSTEM`` writes its JSON, Markdown and ``files``; every required row has
    ours and a ratio, every miss of the +-20% aim names its cause, and it runs under 60 s.
    Returns the JSON."""
    p = cli("reproduce", system, "--quiet", "--out", str(out))
    assert p.returncode == 0, p.stderr
    data = json.loads((out / "reproduce.json").read_text())
    rows = {r["item"]: r for r in data["rows"]}
    for item in required:
        r = rows[item]
        assert r["ours"] is not None and r["ratio"] is not None and r["paper"]
        if not r["within_20pct"]:
            assert "miss:" in r["note"], item          # every miss names its cause
    assert data["seconds"] < 60
    for f in ("reproduce.md", *files):
        assert (out / f).exists(), f
    return data


def check_energy_priced(energy: dict, node: str = "45nm") -> None:
    """Each system's breakdown adds up to count x price over its actions, each counted once
    (the price by hand from the table entry: pJ per action, or W for a ``static:`` key)."""
    t = table(node)
    for name, e in energy.items():
        total = 0.0
        for key, n in e["counts"].items():
            ent = t.entry(key)
            total += n * ent.pj if ent.unit == "W" else n * ent.pj * 1e-12
        assert sum(e["breakdown_j"].values()) == pytest.approx(total, rel=1e-12), name
        assert e["j_per_token"] == pytest.approx(total, rel=1e-12), name
