"""`pimforge synth` power: dynamic from the activity model and the energy table over the
cycle model's time, static from the area, at the preset clock or the ASAP7 estimate."""
import dataclasses
import json

import pytest

from pimforge.hw.core.energy import table
from pimforge.hw.core.unit import PresetClock
from pimforge.registry import get_unit
from pimforge.synth import report, run

# the run's synthesis cache (conftest.py): fp_add fp16 is the netlist tests/test_synth.py makes
pytestmark = pytest.mark.usefixtures("synth_cache")

N = 1000            # ops of the job: not POWER_OPS, so that the job size is really an argument
ADD_PJ_45NM = 0.4   # Horowitz, ISSCC 2014: a 16-bit float add at 45 nm
ASAP7_FACTOR = (7 / 45) * (0.7 / 0.9) ** 2   # C V^2 from 45 nm, 0.9 V to 7 nm, 0.7 V


def _add_unit(**changes):
    """fp_add with a stated activity: one fp16 add per operation."""
    return dataclasses.replace(get_unit("fp_add"),
                               activity=lambda cfg, n: {"op:add:e5m10": n}, **changes)


def _synth(unit, preset="fp16"):
    job = run.SynthJob(unit, unit.preset_config(preset), preset)
    return run.synthesize(job, ["generic"], {"generic": None})


def test_fp_add_power_is_the_hand_arithmetic():
    rep = _synth(_add_unit())
    g = rep["targets"]["generic"]
    cfg = get_unit("fp_add").preset_config("fp16")
    # no preset clock: the critical path's ASAP7 estimate, 36 ps a level + 86 ps of flip-flop
    mhz = 1e6 / (g["timing"]["levels"] * 36 + 75 + 11)
    p = run.unit_power(_add_unit(), cfg, None, g, n_ops=N)
    assert p["node"] == "asap7" and p["clock_mhz"] == pytest.approx(mhz, abs=0.05)
    seconds = (N + cfg.pipeline_depth) / (p["clock_mhz"] * 1e6)
    joules = N * ADD_PJ_45NM * ASAP7_FACTOR * 1e-12
    assert p["energy_j"] == pytest.approx(joules, rel=1e-9)
    assert p["dynamic_w"] == pytest.approx(joules / seconds, rel=1e-9)
    assert p["static_w"] == pytest.approx(g["areas"]["asap7"]["total_um2"] * 5.0e-8, rel=1e-9)
    assert p["total_w"] == pytest.approx(p["dynamic_w"] + p["static_w"], rel=1e-12)
    # the report carries the POWER_OPS job, and both renderings show it
    r = rep["power"]
    assert r["ops"] == run.POWER_OPS and r["dynamic_w"] == pytest.approx(
        run.POWER_OPS * ADD_PJ_45NM * ASAP7_FACTOR * 1e-12 * r["clock_mhz"] * 1e6
        / (run.POWER_OPS + cfg.pipeline_depth), rel=1e-9)
    json.dumps(rep)
    assert "## Power (ASAP7 estimate)" in report.render(rep)
    row = report.summary_rows([rep])[0]
    assert row["power_w"] == pytest.approx(r["total_w"])
    assert "| power |" in report.summary([rep])


def test_preset_clock_sets_the_time_and_fpga_clock_the_node():
    unit = _add_unit(clocks={"fp16": PresetClock(250.0, "a stated clock")})
    rep = _synth(unit)
    p, g = rep["power"], rep["targets"]["generic"]
    assert p["clock_mhz"] == 250.0 and p["node"] == "asap7"
    assert p["dynamic_w"] == pytest.approx(
        run.POWER_OPS * ADD_PJ_45NM * ASAP7_FACTOR * 1e-12 * 250e6 / (run.POWER_OPS + 2), rel=1e-9)
    fpga = _add_unit(clocks={"fp16": PresetClock(250.0, "a stated clock", target="FPGA")})
    q = run.unit_power(fpga, fpga.preset_config("fp16"), {"mhz": 250.0, "source": "s",
                                                          "target": "FPGA"}, g)
    assert q["node"] == "45nm" and q["area_node"] == "nangate45"
    assert q["energy_j"] == pytest.approx(run.POWER_OPS * ADD_PJ_45NM * 1e-12, rel=1e-9)
    assert q["static_w"] == pytest.approx(table("45nm").static_w(
        g["areas"]["nangate45"]["total_um2"]))


def test_no_activity_model_reports_static_only():
    unit = dataclasses.replace(get_unit("fp_add"), activity=None)
    rep = _synth(unit)
    p = rep["power"]
    assert p["note"] == "no activity model" and p["dynamic_w"] is None
    assert p["static_w"] > 0
    assert "dynamic: no activity model" in report.render(rep)
    assert "static (no activity model)" in report.summary([rep])


def test_a_job_the_config_cannot_run_is_reported():
    """An activity or cycle model that rejects the job leaves the report standing, with the
    reason, and static power only."""
    def too_big(cfg, n):
        raise ValueError(f"{n} operations do not fit")
    unit = dataclasses.replace(get_unit("fp_add"), cycle_model=too_big)
    p = _synth(unit)["power"]
    assert p["dynamic_w"] is None and p["static_w"] > 0
    assert p["note"] == f"no dynamic power for a job of {run.POWER_OPS} operations: ValueError: " \
                        f"{run.POWER_OPS} operations do not fit"


def test_fp_add_own_activity_model_is_one_add_per_op():
    """The declared activity model gives the power of one fp16 add per operation."""
    unit = get_unit("fp_add")
    p = _synth(unit)["power"]
    assert p["actions"] == {"op:add:e5m10": run.POWER_OPS}
    assert p["energy_j"] == pytest.approx(run.POWER_OPS * ADD_PJ_45NM * ASAP7_FACTOR * 1e-12)
