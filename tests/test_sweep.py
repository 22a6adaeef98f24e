"""``pimforge sweep``: a real two-worker LocalCluster gives the serial run's results, a task
whose worker dies runs again, a point that keeps killing its worker is reported (not a crash),
a rerun skips finished points, the Pareto fronts follow their definition, and bad input ends
with one line and no outputs."""
import csv
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import cloudpickle
import pytest
import yaml
from distributed import LocalCluster

from pimforge.cli import main
from pimforge.registry import get_unit
from pimforge.software.cli import model_config, system_module
from pimforge.sweep.evaluate import evaluate_point
from pimforge.sweep.report import best_per_metric, pareto, sweep_files
from pimforge.sweep.run import run_sweep
from pimforge.sweep.spec import load_spec, parse_spec, shipped_specs
from pimforge.synth.run import SynthJob, cache_dir, synthesize

# the task functions below travel to the workers by value: this module is not importable there
cloudpickle.register_pickle_by_value(sys.modules[__name__])

SYNTH_SPEC = {"unit": "fp_add", "axes": {"fmt": ["fp16", "bf16"], "pipeline_depth": [1, 2]},
              "metrics": ["nand2", "depth", "cycles", "tokens_per_s", "utilization"],
              "workload": {"ops": 500}, "clock_mhz": 400}
CYCLE_SPEC = {"unit": "pam_pu", "axes": {"lanes": [2, 4], "head_dim": [64, 128]},
              "metrics": ["cycles", "utilization", "tokens_per_s"], "workload": {"ops": 256},
              "clock_mhz": 666}


def _metrics(run) -> dict:
    return {tuple(r["values"].items()): r["metrics"] for r in run.rows}


def test_two_workers_equal_the_serial_run(tmp_path):
    spec = parse_spec(SYNTH_SPEC, "fp_add_grid")
    # separate synthesis caches: the distributed run synthesizes every point itself
    dist = run_sweep(spec, tmp_path / "dist", workers=2, cache=tmp_path / "cache_a",
                     progress=False)
    serial = run_sweep(spec, tmp_path / "serial", serial=True, cache=tmp_path / "cache_b",
                       progress=False)
    assert dist.workers == 2 and not dist.failed and not serial.failed
    assert [r["status"] for r in dist.rows] == ["ok"] * 4
    assert {r["worker"].split(":")[1] for r in dist.rows}.isdisjoint({str(os.getpid())})
    assert [r["values"] for r in dist.rows] == [r["values"] for r in serial.rows]
    assert _metrics(dist) == _metrics(serial)
    # one point against `pimforge synth`'s own API and the unit's cycle model, outside the sweep
    unit = get_unit("fp_add")
    row = dist.rows[3]
    cfg = unit.config(None, row["values"])
    with cache_dir(tmp_path / "cache_a"):
        rep = synthesize(SynthJob(unit, cfg, "check"), ["generic"], {"generic": None})
    assert row["metrics"]["nand2"] == round(rep["targets"]["generic"]["nand2_eq"], 1)
    assert row["metrics"]["cycles"] == unit.cycle_model(cfg, 500)


def _killer(task, config, cache):
    """Kill this worker process: the point lanes=2, head_dim=128 always, the points with
    head_dim=64 the first time they run (a marker file remembers it), the others never."""
    marker = Path(cache) / f"killed-{config['lanes']}-{config['head_dim']}"
    always = (config["lanes"], config["head_dim"]) == (2, 128)
    if always or (config["head_dim"] == 64 and not marker.exists()):
        marker.touch()
        os.kill(os.getpid(), signal.SIGKILL)
    return evaluate_point(task, config, cache)


def test_a_killed_worker_task_runs_again(tmp_path):
    spec = parse_spec(dict(CYCLE_SPEC, axes={"lanes": [2, 4, 8], "head_dim": [64, 128]}), "pu")
    easy = parse_spec(dict(CYCLE_SPEC, axes={"lanes": [2, 4, 8], "head_dim": [64]}), "pu")
    cache = tmp_path / "cache"
    cache.mkdir()
    # three deaths in all, so no point is blamed more than three times (a dying worker also
    # blames a task Dask had moved onto it): with retries=3 every point must come through
    run = run_sweep(easy, tmp_path / "dist", workers=2, cache=cache, retries=3,
                    progress=False, evaluate=_killer)
    serial = run_sweep(spec, tmp_path / "serial", serial=True, cache=cache, progress=False)
    assert sorted(p.name for p in cache.glob("killed-*")) == \
        ["killed-2-64", "killed-4-64", "killed-8-64"]
    assert [r["status"] for r in run.rows] == ["ok"] * 3
    want = {tuple(r["values"].values()): r["metrics"] for r in serial.rows}
    assert all(r["metrics"] == want[tuple(r["values"].values())] for r in run.rows)
    # a point that kills every worker it runs on is reported as failed; the sweep goes on
    lethal = parse_spec(dict(CYCLE_SPEC, axes={"lanes": [2], "head_dim": [128]}), "pu")
    dead = run_sweep(lethal, tmp_path / "dist", workers=2, cache=cache, retries=1,
                     progress=False, evaluate=_killer)
    assert [r["status"] for r in dead.rows] == ["failed"] and dead.failed == dead.rows
    assert "KilledWorker" in dead.rows[0]["error"]
    # the failed point was not stored: a rerun of the whole grid runs only it (and the new
    # head_dim=128 points), and resumes the three stored ones
    again = run_sweep(spec, tmp_path / "dist", serial=True, cache=cache, progress=False)
    assert (again.ran, again.resumed, again.failed) == (3, 3, [])
    assert _metrics(again) == _metrics(serial)


def _must_not_run(task, config, cache):
    raise AssertionError("a stored point ran again")


def test_rerun_skips_finished_points_and_extends_a_grid(tmp_path):
    spec = parse_spec(CYCLE_SPEC, "pu")
    first = run_sweep(spec, tmp_path / "out", serial=True, progress=False)
    again = run_sweep(spec, tmp_path / "out", serial=True, progress=False,
                      evaluate=_must_not_run)
    assert (again.ran, again.resumed) == (0, 4)
    assert _metrics(again) == _metrics(first)
    bigger = dict(CYCLE_SPEC, axes={"lanes": [2, 4, 8], "head_dim": [64, 128]})
    grown = run_sweep(parse_spec(bigger, "pu"), tmp_path / "out", serial=True, progress=False)
    assert (grown.ran, grown.resumed) == (2, 4)
    # another workload is another evaluation: nothing is reused
    other = run_sweep(parse_spec(dict(CYCLE_SPEC, workload={"ops": 512}), "pu"),
                      tmp_path / "out", serial=True, progress=False)
    assert other.ran == 4


def _row(i, **m):
    return {"point": i, "status": "ok", "values": {"i": i}, "metrics": m}


def test_pareto_front_and_best_follow_their_definition():
    rows = [_row(0, nand2=100, tokens_per_s=10, fmax=50),
            _row(1, nand2=200, tokens_per_s=30, fmax=40),   # more area, more throughput
            _row(2, nand2=150, tokens_per_s=10, fmax=60),   # dominated by 0 in throughput
            _row(3, nand2=300, tokens_per_s=30, fmax=70),   # dominated by 1 in throughput
            _row(4, nand2=100, tokens_per_s=5, fmax=80),    # dominated by 0 in throughput
            {"point": 5, "status": "failed", "values": {"i": 5}, "error": "x"}]
    assert [r["point"] for r in pareto(rows, "nand2", "tokens_per_s")] == [0, 1]
    assert [r["point"] for r in pareto(rows, "nand2", "fmax")] == [4]
    best = {m: (g, v, p) for m, g, v, p in best_per_metric(rows, ["nand2", "tokens_per_s"])}
    assert best == {"nand2": ("min", 100, [0, 4]), "tokens_per_s": ("max", 30, [1, 3])}


def test_cli_writes_table_plot_and_resumes(tmp_path, capsys):
    spec = tmp_path / "pu.yaml"
    spec.write_text(yaml.safe_dump(dict(CYCLE_SPEC, metrics=["cycles", "tokens_per_s"]),
                               sort_keys=False))
    out = tmp_path / "out"
    assert main(["sweep", str(spec), "--out", str(out), "--serial", "--quiet"]) == 0
    files = {p.name for p in out.iterdir()}
    assert {"sweep.csv", "sweep.json", "sweep.md", "points"} <= files
    rows = list(csv.DictReader((out / "sweep.csv").open()))
    assert [(r["lanes"], r["head_dim"]) for r in rows] == [("2", "64"), ("2", "128"),
                                                           ("4", "64"), ("4", "128")]
    data = json.loads((out / "sweep.json").read_text())
    assert [int(r["cycles"]) for r in rows] == [p["metrics"]["cycles"] for p in data["points"]]
    assert "Best per metric" in (out / "sweep.md").read_text()
    assert main(["sweep", str(spec), "--out", str(out), "--serial", "--quiet"]) == 0
    assert "0 points run, 4 resumed" in capsys.readouterr().out


def test_area_and_fmax_fronts_are_drawn(tmp_path):
    spec = parse_spec(dict(SYNTH_SPEC, metrics=["nand2", "fmax", "tokens_per_s"],
                           clock_mhz="fmax"), "x")
    rows = [dict(_row(p.index, nand2=100 + p.index, fmax=50 - p.index,
                      tokens_per_s=1e6 - p.index), values=p.values) for p in spec.points]
    run = type("Run", (), {"rows": rows, "ran": 4, "resumed": 0, "failed": [], "wall_s": 1.0,
                           "scheduler": "test", "workers": 1})()
    files = sweep_files(run, spec)
    assert files["pareto_area_throughput.png"][:4] == b"\x89PNG"
    assert files["pareto_fmax_area.png"][:4] == b"\x89PNG"
    assert json.loads(files["sweep.json"])["pareto"]["pareto_fmax_area"]["points"] == [0]


def test_shipped_specs_parse():
    specs = shipped_specs()
    assert {"pam_pu", "hilos_kernel", "fp_add_fmax"} <= set(specs)
    assert set(load_spec("pam_pu").axes) == {"lanes", "head_dim", "op_depth", "acc"}
    assert set(load_spec("hilos_kernel").axes) == {"d_group", "beat_elems", "block"}


BAD = [
    ("malformed-yaml", "unit: [fp_add\n", ["malformed YAML"]),
    ("top-level-list", "- fp_add\n", ["top level must be a mapping"]),
    ("unknown-unit", "unit: fp_nope\naxes: {x: [1]}\nmetrics: [cycles]\n",
     ["unknown unit 'fp_nope'", "allowed:", "fp_add"]),
    ("unknown-system", "system: tpu\naxes: {x: [1]}\nmetrics: [model_tokens_per_s]\n",
     ["unknown system 'tpu'", "allowed: pam, hilos"]),
    ("unknown-key", "unit: fp_add\naxis: {fmt: [fp16]}\nmetrics: [cycles]\n",
     ["unknown key 'axis'", "allowed:", "axes"]),
    ("unknown-axis", "unit: fp_add\naxes: {lanes: [2]}\nmetrics: [cycles]\n",
     ["unknown field 'lanes' in axes", "allowed: fmt, ftz, pipeline_depth"]),
    ("unknown-metric", "unit: fp_add\naxes: {fmt: [fp16]}\nmetrics: [watts]\n",
     ["unknown metric 'watts'", "allowed: nand2"]),
    ("out-of-range", "unit: fp_add\naxes: {pipeline_depth: [1, 17]}\nmetrics: [cycles]\n",
     ["field 'pipeline_depth': got 17", "an integer in 0..16"]),
    ("bad-range", "unit: fp_add\naxes: {pipeline_depth: {from: 1, to: 3, step: 0}}\n"
     "metrics: [cycles]\n", ["axes.pipeline_depth: step must be > 0"]),
    ("no-clock", "unit: fp_add\naxes: {fmt: [fp16]}\nmetrics: [tokens_per_s]\n",
     ["clock_mhz: tokens_per_s needs a clock", "allowed:"]),
    ("bad-clock", "unit: fp_add\naxes: {fmt: [fp16]}\nmetrics: [cycles]\nclock_mhz: fast\n",
     ["clock_mhz: got 'fast'", "allowed: a number"]),
    ("bad-device", "unit: fp_add\naxes: {fmt: [fp16]}\nmetrics: [fmax]\necp5_device: 99k\n",
     ["unknown ecp5 device '99k'", "allowed:"]),
    ("bad-ops", "unit: fp_add\naxes: {fmt: [fp16]}\nmetrics: [cycles]\nworkload: {ops: 0}\n",
     ["ops: got 0", "allowed: an integer in 1.."]),
]


def _one_error_line(capsys) -> str:
    cap = capsys.readouterr()
    lines = cap.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), cap.err
    assert "Traceback" not in cap.err + cap.out
    return lines[0]


@pytest.mark.parametrize("name, text, fragments", BAD, ids=[b[0] for b in BAD])
def test_bad_spec_is_one_line_and_writes_nothing(tmp_path, capsys, name, text, fragments):
    spec = tmp_path / "spec.yaml"
    spec.write_text(text)
    out = tmp_path / "out"
    assert main(["sweep", str(spec), "--out", str(out), "--serial"]) == 2
    line = _one_error_line(capsys)
    for frag in fragments:
        assert frag in line
    assert not out.exists()


@pytest.mark.parametrize("args, fragment", [
    (["--scheduler", "localhost:8786"], "--scheduler: got 'localhost:8786'; allowed: tcp://"),
    (["--workers", "0"], "--workers: got 0; allowed: an integer in 1..1024"),
    (["--out", "{file}"], "is a file; give a directory path"),
    (["--cache", "{file}/sub"], "cannot be created"),
], ids=["scheduler", "workers", "out-is-a-file", "cache-under-a-file"])
def test_bad_options_are_one_line(tmp_path, capsys, args, fragment):
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump(CYCLE_SPEC, sort_keys=False))
    blocker = tmp_path / "file"
    blocker.write_text("x")
    args = [a.replace("{file}", str(blocker)) for a in args]
    out = tmp_path / "out"
    argv = ["sweep", str(spec), "--serial"] + (args if "--out" in args else
                                               args + ["--out", str(out)])
    assert main(argv) == 2
    assert fragment in _one_error_line(capsys)
    assert not out.exists() and blocker.read_text() == "x"


def test_missing_spec_names_the_shipped_ones(capsys):
    assert main(["sweep", "no_such_spec"]) == 2
    line = _one_error_line(capsys)
    assert "sweep spec 'no_such_spec' does not exist" in line and "pam_pu" in line


def test_system_sweep_reports_the_models_throughput(tmp_path):
    spec = parse_spec({"system": "hilos", "preset": "small",
                       "axes": {"smartssds": [4, 8], "batch": [8, 16]},
                       "metrics": ["model_tokens_per_s"]}, "hilos_sys")
    run = run_sweep(spec, tmp_path / "out", serial=True, progress=False)
    assert not run.failed and len(run.rows) == 4
    for row in run.rows:   # each against `pimforge model hilos` at the same fields
        cfg = model_config("hilos", "small", None, ["sweep=none"] +
                           [f"{k}={v}" for k, v in row["values"].items()])
        res = system_module("hilos", "model").run_model(cfg, progress=False)
        want = res.data["point"][f"HILOS({row['values']['smartssds']})"]["throughput"]
        assert row["metrics"]["model_tokens_per_s"] == round(want, 4)


def test_an_existing_cluster_via_its_scheduler_address(tmp_path):
    spec = parse_spec(CYCLE_SPEC, "pu")
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster:
        run = run_sweep(spec, tmp_path / "dist", scheduler=cluster.scheduler_address,
                        progress=False)
        assert run.workers == 2 and run.scheduler == cluster.scheduler_address
        assert len(cluster.scheduler.workers) == 2     # the sweep leaves the cluster running
    serial = run_sweep(spec, tmp_path / "serial", serial=True, progress=False)
    assert [r["status"] for r in run.rows] == ["ok"] * 4
    assert _metrics(run) == _metrics(serial)


def test_failed_points_are_reported_and_the_outputs_written(tmp_path, capsys):
    spec = tmp_path / "sys.yaml"
    spec.write_text(yaml.safe_dump({"system": "hilos", "preset": "small",
                                    "axes": {"smartssds": [4, 8]},
                                    "metrics": ["model_tokens_per_s"],
                                    "model_system": "HILOS(N={smartssds})"}))
    out = tmp_path / "out"
    assert main(["sweep", str(spec), "--out", str(out), "--serial"]) == 1
    cap = capsys.readouterr()
    assert "Traceback" not in cap.out + cap.err
    assert "2 failed" in cap.out and "'HILOS(N=4)' is not a system" in cap.err
    rows = list(csv.DictReader((out / "sweep.csv").open()))
    assert [r["status"] for r in rows] == ["failed", "failed"]
    assert "allowed: FLEX(DRAM)" in rows[0]["error"]
    assert not list((out / "points").iterdir())      # nothing stored: a rerun tries again


SHARED_KEY = """
import json, sys, time
from pathlib import Path
from pimforge.synth.run import _cached, cache_dir
log = Path(sys.argv[2])

def compute(work):
    with log.open("a") as fh:
        fh.write("computed\\n")
    time.sleep(1.0)            # long enough for the other process to reach the lock
    return {"answer": 42}

with cache_dir(sys.argv[1]):
    res, cached = _cached({"test": "shared key"}, compute)
print(json.dumps([res["answer"], cached]))
"""


def test_processes_sharing_a_cache_compute_a_key_once(tmp_path):
    """Two processes ask for one key at once: one computes it, the other waits on the key's
    file lock and reads the stored result (what sweep workers sharing --cache do)."""
    log = tmp_path / "log"
    procs = [subprocess.Popen([sys.executable, "-c", SHARED_KEY, str(tmp_path / "cache"),
                               str(log)], stdout=subprocess.PIPE, text=True)
             for _ in range(2)]
    outs = sorted(json.loads(p.communicate(timeout=120)[0]) for p in procs)
    assert all(p.returncode == 0 for p in procs)
    assert outs == [[42, False], [42, True]]
    assert log.read_text() == "computed\n"
