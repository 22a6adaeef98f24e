"""The measured stage-depth table of the float operators (synth/stages.py)."""
from __future__ import annotations

import json

import pytest

from pimforge.cli import main
from pimforge.synth import flows, stages

TABLE = stages.load_table()
BY_KEY = {(r["unit"], r["preset"], r["depth"]): r for r in TABLE}
JOBS = {(j.unit.name, j.preset, j.cfg.pipeline_depth): j for j in stages.operator_jobs()}


def test_table_covers_every_operator_and_depth():
    assert set(BY_KEY) == set(JOBS)
    assert json.loads(stages.TABLE_PATH.read_text())["flow_version"] == flows.FLOW_VERSION


# At its deepest depth every operator's deepest stage fits a 1 GHz period at the ASAP7
# estimate: the library's stages are fine enough for the papers' 1 GHz units.
def test_every_operator_fits_one_ghz_at_its_deepest_depth():
    deepest = stages.deepest(TABLE)
    assert set(deepest) == set(stages.OPERATORS)
    for key, r in deepest.items():
        assert r["depth"] == max(d for (u, p, d) in BY_KEY if (u, p) == key)
    over = {k: r["levels"] for k, r in deepest.items() if r["levels"] > stages.LEVEL_BUDGET}
    assert not over, over
    # (period - 86 ps of flip-flop) / 36 ps a level, counted independently of the module
    assert stages.LEVEL_BUDGET == int((1000 - 86) / 36) == 25
    assert (stages.levels_within(666), stages.levels_within(500)) == (39, 53)


# A stale table fails here: every operator's Verilog at its deepest depth and at depth 4 (where
# the placement, not only the stage list, decides the registers) must be the one measured.
@pytest.mark.parametrize("unit, preset", stages.OPERATORS)
def test_table_was_measured_on_todays_verilog(unit, preset):
    depths = [d for (u, p, d) in JOBS if (u, p) == (unit, preset)]
    for depth in {4, max(depths)}:
        key = (unit, preset, depth)
        assert stages.fingerprint(JOBS[key]) == BY_KEY[key]["fingerprint"], (
            f"{key}: rerun pimforge synth stages --update-table")


# Two cheap rows measured again end to end: the table holds what the flow reports.
@pytest.mark.parametrize("depth", [2, 4])
def test_rows_match_a_fresh_synthesis(depth):
    key = ("fp_add", "fp16", depth)
    (row,) = stages.measure([JOBS[key]], 1)
    assert row == BY_KEY[key]


def test_render_marks_stages_over_the_budget():
    rows = [{"unit": "fp_add", "preset": "fp16", "depth": 1, "levels": 26},
            {"unit": "fp_add", "preset": "fp16", "depth": 2, "levels": 25}]
    md = stages.render(rows)
    assert "| `fp_add` | fp16 | **26** | 25 |" in md and "d=1 | d=2" in md


def test_stages_takes_no_config(capsys, tmp_path):
    assert main(["synth", "stages", "--set", "fmt=fp32", "--out", str(tmp_path / "o")]) == 2
    assert "synth stages takes no --preset" in capsys.readouterr().err
    assert main(["synth", "fp_add", "--update-table", "--out", str(tmp_path / "o")]) == 2
    assert "--update-table applies to 'synth stages' only" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()
