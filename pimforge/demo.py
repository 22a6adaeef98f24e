"""``make demo``: generate every unit, run one bench, print a summary."""
from __future__ import annotations

import time
from pathlib import Path

from pimforge import api
from pimforge.config import config_to_dict


def run_demo(out="build/demo") -> int:
    out = Path(out)
    table = api.units()
    print(f"== pimforge demo: generating {len(table)} units into {out}/")
    rows = []
    for name, unit in sorted(table.items()):
        cfg = unit.default_config()
        t0 = time.perf_counter()
        paths = api.generate(name, cfg, out / name)
        verilog = paths[0].read_text()
        _, manifest, _ = api.elaborate(name, cfg)
        ports = ", ".join(f"{s}:{v['direction']}" for s, v in manifest["streams"].items())
        params = " ".join(f"{k}={v}" for k, v in config_to_dict(cfg).items())
        rows.append((name, params, manifest["latency"], manifest["throughput"], ports,
                     verilog.count("\n"), time.perf_counter() - t0))
        print(f"  {name:<12} {paths[0]}")
    print()
    head = ("unit", "default config", "latency", "ops/cycle", "streams", "Verilog lines")
    widths = [max(len(str(r[i])) for r in rows + [head]) for i in range(6)]
    line = "  ".join(f"{h:<{w}}" for h, w in zip(head, widths))
    print(line)
    print("-" * len(line))
    for r in rows:
        print("  ".join(f"{str(v):<{w}}" for v, w in zip(r[:6], widths)))
    print()
    unit, preset = "fp_add", "fp32"
    cfg = api.config(unit, preset=preset)
    print(f"== cocotb bench: {unit} ({preset}) on Verilator against the golden model, "
          f"corners + 20000 random, then random stalls on both sides")
    res = api.run_bench(unit, cfg, seed=1)
    print(res.summary())
    verdict = "PASS" if res.passed else "FAIL"
    print(f"{verdict}: {res.simulated_cycles} cycles in {res.wall_s:.2f} s "
          f"({res.cycles_per_second:,.0f} simulated cycles/s)")
    return 0 if res.passed else 1
