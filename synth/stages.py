"""``pimforge synth stages``: the deepest stage of every float operator at each pipeline depth.

A float operator's registers buy frequency only where they cut its critical path, so what a
depth buys is measured, not estimated: each standalone operator (``fp_add`` ... ``fp_recip``, per
format) is synthesized with the generic flow at every depth of :data:`DEPTHS`, and a row keeps
the deepest register-to-register stage in gate levels, its ASAP7 clock estimate
(:func:`~pimforge.synth.timing.asap7_delay_ps`), NAND2 equivalents and flip-flops.

The measured table is committed (:data:`TABLE_PATH`) so the docs can show it without running a
synthesis; each row carries a fingerprint of the Verilog it was measured on, and the tests
recompute fingerprints, so a change to an operator that leaves the table stale fails until
``pimforge synth stages --update-table`` measures it again.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import time
from pathlib import Path

from pimforge.base.errors import ToolError
from pimforge.base.files import check_out_dir, write_atomic, write_outputs
from pimforge.hw.catalog import HW_UNITS
from pimforge.synth import flows
from pimforge.synth.run import SynthJob, synthesize_many
from pimforge.synth.timing import ASAP7_TIMING, asap7_delay_ps

__all__ = ["OPERATORS", "DEPTHS", "TABLE_PATH", "LEVEL_BUDGET", "levels_within", "operator_jobs",
           "fingerprint", "measure", "load_table", "deepest", "render", "run_stages"]

# (unit, preset): every operator kind and format of the library (fp_sub is fp_add's datapath)
OPERATORS = ([(u, f) for u in ("fp_add", "fp_mul", "fp_fma", "fp_cmp")
              for f in ("fp16", "bf16", "fp32")]
             + [("fp_convert", p) for p in ("fp16_to_fp32", "bf16_to_fp32", "fp32_to_fp16",
                                            "fp32_to_bf16", "fp16_to_bf16", "bf16_to_fp16")]
             + [(u, f) for u in ("fp_exp", "fp_log", "fp_recip") for f in ("fp16", "fp32")])
# pipeline depths measured: each unit's up to its config's limit (16, or 24 for the functions)
DEPTHS = (1, 2, 3, 4, 6, 8, 12, 16, 24)
TABLE_PATH = Path(__file__).with_name("stage_depths.json")


def levels_within(mhz: float) -> int:
    """The most gate levels a stage may have to meet ``mhz`` at the ASAP7 estimate."""
    t = ASAP7_TIMING
    return int((1e6 / mhz - t["clk_to_q_ps"] - t["setup_ps"]) // t["level_ps"])


# The papers' fastest units run at 1 GHz: the table marks the stages deeper than that allows.
LEVEL_BUDGET = levels_within(1000.0)


def _depths(unit) -> list:
    hi = {f.name: f for f in dataclasses.fields(unit.config_cls)}["pipeline_depth"].metadata["hi"]
    return [d for d in DEPTHS if d <= hi]


def operator_jobs(operators=OPERATORS) -> list:
    """One :class:`~pimforge.synth.run.SynthJob` per operator and depth, labelled
    ``<preset> d<depth>``."""
    jobs = []
    for name, preset in operators:
        unit = HW_UNITS[name]
        base = unit.preset_config(preset)
        for d in _depths(unit):
            cfg = dataclasses.replace(base, pipeline_depth=d)
            jobs.append(SynthJob(unit, cfg, f"{preset} d{d}", preset=preset))
    return jobs


def fingerprint(job: SynthJob) -> str:
    """The first 16 hex digits of the SHA-256 of the job's Verilog and the flow version."""
    text, _, _ = job.elaborate(job.flat_run)  # the elaboration the synthesis ran on
    return hashlib.sha256((flows.FLOW_VERSION + "\n" + text).encode()).hexdigest()[:16]


def _row(job: SynthJob, rep: dict) -> dict:
    g = rep["targets"]["generic"]
    levels = g["timing"]["levels"]
    return {"unit": job.unit.name, "preset": job.preset, "depth": job.cfg.pipeline_depth,
            "levels": levels, "asap7_mhz": round(1e6 / asap7_delay_ps(levels), 1),
            "nand2": g["transistors"] // 4, "flip_flops": g["flip_flops"],
            "fingerprint": fingerprint(job)}


def measure(jobs: list, workers: int, use_cache: bool = True, progress=None) -> list:
    """Synthesize ``jobs`` (generic target) and return their rows; a failed synthesis raises."""
    devices = {"generic": flows.resolve_device("generic", None)}
    reports = synthesize_many(jobs, ["generic"], devices, workers, use_cache, progress)
    for rep in reports:
        if rep.get("error"):
            raise ToolError(f"{rep['unit']} {rep['label']}: {rep['error']}")
    return [_row(j, r) for j, r in zip(jobs, reports)]


def load_table(path: Path = TABLE_PATH) -> list:
    """The committed rows (empty when the table has not been measured)."""
    if not Path(path).exists():
        return []
    return json.loads(Path(path).read_text())["rows"]


def deepest(rows: list) -> dict:
    """``{(unit, preset): row}``: each operator's row at the largest depth it was measured."""
    out = {}
    for r in rows:
        key = (r["unit"], r["preset"])
        if key not in out or r["depth"] > out[key]["depth"]:
            out[key] = r
    return out


def render(rows: list) -> str:
    """A Markdown table: one line per operator and format, one column per depth, each cell the
    deepest stage's gate levels (bold where it exceeds :data:`LEVEL_BUDGET`)."""
    depths = sorted({r["depth"] for r in rows})
    by = {}
    for r in rows:
        by.setdefault((r["unit"], r["preset"]), {})[r["depth"]] = r
    head = "| operator | format | " + " | ".join(f"d={d}" for d in depths) + " |"
    lines = [head, "|" + "---|" * (len(depths) + 2)]
    for (unit, preset), cells in by.items():
        vals = []
        for d in depths:
            r = cells.get(d)
            if r is None:
                vals.append("")
            else:
                lv = r["levels"]
                vals.append(f"**{lv}**" if lv > LEVEL_BUDGET else str(lv))
        lines.append(f"| `{unit}` | {preset} | " + " | ".join(vals) + " |")
    return "\n".join(lines) + "\n"


def run_stages(out: Path, workers: int, use_cache: bool, update: bool, progress) -> int:
    """Measure every operator at every depth; write ``stages.json`` and ``stages.md`` to
    ``out``, and with ``update`` the committed table too."""
    out = check_out_dir(out, "--out")
    jobs = operator_jobs()
    print(f"synth stages: {len(jobs)} syntheses of {len(OPERATORS)} operators on {workers} "
          f"worker(s)", flush=True)
    t0 = time.perf_counter()
    rows = measure(jobs, workers, use_cache, progress)
    wall = time.perf_counter() - t0
    data = json.dumps({"flow_version": flows.FLOW_VERSION, "level_budget": LEVEL_BUDGET,
                       "rows": rows}, indent=1) + "\n"
    md = render(rows)
    for path in write_outputs(out, {"stages.json": data, "stages.md": md}):
        print(f"wrote {path}")
    if update:
        old = {(r["unit"], r["preset"], r["depth"]): r["levels"] for r in load_table()}
        changed = [f"  {r['unit']} {r['preset']} d{r['depth']}: levels "
                   f"{old.get((r['unit'], r['preset'], r['depth']))} -> {r['levels']}"
                   for r in rows if old.get((r["unit"], r["preset"], r["depth"])) != r["levels"]]
        write_atomic({TABLE_PATH: data},
                     lambda path, err: f"stage table '{path}' cannot be written: {err}")
        print("\n".join(changed) if changed else "no change in levels")
        print(f"wrote {TABLE_PATH}")
    print(md, end="")
    print(f"({wall:.1f} s)")
    return 0
