"""The sweep's energy metrics: pJ per operation and power from the unit's activity model and
the energy table, and their Pareto front against throughput."""
from __future__ import annotations

import pytest

from pimforge.registry import get_unit
from pimforge.sweep.report import fronts, sweep_files
from pimforge.sweep.run import run_sweep
from pimforge.sweep.spec import parse_spec

ASAP7 = (7 / 45) * (0.7 / 0.9) ** 2       # the table's C V^2 rule from 45 nm


@pytest.fixture(scope="module")
def fp_add_run(tmp_path_factory):
    spec = parse_spec({"unit": "fp_add", "axes": {"fmt": ["fp16", "fp32"]},
                       "metrics": ["tokens_per_s", "energy_per_op", "power"],
                       "workload": {"ops": 1000}, "clock_mhz": 500}, "fp_add_energy")
    out = tmp_path_factory.mktemp("sweep")
    return spec, run_sweep(spec, out / "out", serial=True, progress=False)


def test_energy_per_op_is_horowitz_scaled_to_asap7(fp_add_run):
    """One add per op: Horowitz's 0.4 pJ (fp16) and 0.9 pJ (fp32) at 45 nm, scaled."""
    _, run = fp_add_run
    got = {r["values"]["fmt"]: r["metrics"]["energy_per_op"] for r in run.rows}
    assert got["fp16"] == pytest.approx(0.4 * ASAP7, abs=1e-4)
    assert got["fp32"] == pytest.approx(0.9 * ASAP7, abs=1e-4)


def test_power_is_the_jobs_energy_over_its_time(fp_add_run):
    """No area measured, so no leakage: 1000 adds x pJ over cycles / 500 MHz."""
    _, run = fp_add_run
    unit = get_unit("fp_add")
    for r in run.rows:
        cfg = unit.config(None, (r["values"], "point"))
        pj = {"fp16": 0.4, "fp32": 0.9}[r["values"]["fmt"]] * ASAP7
        seconds = unit.cycle_model(cfg, 1000) / 500e6
        assert r["metrics"]["power"] == pytest.approx(1000 * pj * 1e-12 / seconds, rel=1e-4)


def test_the_energy_throughput_front_is_written(fp_add_run):
    spec, run = fp_add_run
    assert ("pareto_energy_throughput", "energy_per_op", "tokens_per_s",
            "energy against throughput") in fronts(spec.metrics)
    files = sweep_files(run, spec)
    assert "pareto_energy_throughput.png" in files
    assert "energy against throughput" in files["sweep.md"]
