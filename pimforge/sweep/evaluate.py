"""One sweep point, evaluated where a Dask worker (or the serial loop) runs it.

:func:`evaluate_point` takes plain data (the spec's :meth:`~pimforge.sweep.spec.SweepSpec.task`,
the point's config dict, the synthesis cache directory) and returns plain data, so it pickles
to any worker.  A failure of the point (a tool error, a bad combination of fields) comes back as
``{"error": ...}``; only a dying worker process is left to Dask, which runs the task again.
"""
from __future__ import annotations

import inspect
import os
import time
import traceback

from pimforge import api
from pimforge.base.config import layered_config
from pimforge.base.errors import ToolError, UserError
from pimforge.hw.core.energy import table
from pimforge.registry import get_unit
from pimforge.software.cli import SYSTEMS, system_module
from pimforge.synth import flows
from pimforge.synth.run import SynthJob, cache_dir, synthesize

__all__ = ["evaluate_point", "synth_targets", "RTL_RANDOM_OPS"]

RTL_RANDOM_OPS = 2000   # random stimulus of an RTL check, for the benches that take a count

_TARGET_OF = {"nand2": "generic", "asap7_um2": "generic", "depth": "generic", "fmax": "ecp5",
              "lut": "xcup", "dsp": "xcup"}


def synth_targets(metrics) -> list:
    """The synthesis targets ``metrics`` need, in flow order."""
    need = {_TARGET_OF[m] for m in metrics if m in _TARGET_OF}
    return [t for t in flows.TARGETS if t in need]


def _synth_metrics(task, unit, cfg, cache) -> dict:
    targets = synth_targets(task["metrics"])
    if not targets:
        return {}
    devices = {"generic": None, "ecp5": flows.resolve_device("ecp5", task["ecp5_device"]),
               "xcup": flows.resolve_device("xcup", task["xcup_device"])}
    with cache_dir(cache):
        rep = synthesize(SynthJob(unit, cfg, "sweep"), targets, devices)
    out = {}
    g = rep["targets"].get("generic")
    if g:
        out.update(nand2=round(g["nand2_eq"], 1), depth=g["logic_depth"],
                   asap7_um2=round(g["areas"]["asap7"]["total_um2"], 2))
    e = rep["targets"].get("ecp5")
    if e:
        out["fmax"] = round(e["fmax_mhz"], 2) if e.get("fmax_mhz") else None
        if not e.get("fits", True):
            out["note"] = "does not fit the ECP5 device: no fmax"
    x = rep["targets"].get("xcup")
    if x:
        out.update(lut=x["LUT"], dsp=x["DSP48E2"])
    return out


def _cycle_metrics(task, unit, cfg, measured) -> dict:
    if unit.cycle_model is None:
        raise UserError(f"{unit.name} has no cycle model; drop cycles, tokens_per_s and "
                        f"utilization from metrics")
    n = task["ops"]
    cycles = int(unit.cycle_model(cfg, n))
    out = {"cycles": cycles}
    steady = int(unit.cycle_model(cfg, 2 * n)) - cycles   # n more ops at the streaming rate
    out["utilization"] = round(min(1.0, steady / cycles), 4) if cycles else None
    clock = task["clock_mhz"]
    if clock == "fmax":
        clock = measured.get("fmax")
    out["tokens_per_s"] = round(n / cycles * clock * 1e6, 1) if clock and cycles else None
    return out


def _energy_metrics(task, unit, cfg, measured) -> dict:
    if unit.activity is None:
        raise UserError(f"{unit.name} has no activity model; drop energy_per_op and power "
                        f"from metrics")
    n = task["ops"]
    dyn_j = table("asap7").joules(unit.activity(cfg, n))
    out = {"energy_per_op": float(f"{dyn_j / n * 1e12:.6g}")}
    clock = task["clock_mhz"]
    if clock == "fmax":
        clock = measured.get("fmax")
    if clock and unit.cycle_model is not None:
        seconds = int(unit.cycle_model(cfg, n)) / (clock * 1e6)
        static = table("asap7").static_w(measured.get("asap7_um2") or 0.0)
        out["power"] = float(f"{dyn_j / seconds + static:.6g}")
    return out


def _unit_point(task, config, cache) -> dict:
    unit = get_unit(task["target"])
    cfg = unit.config(None, (config, "point"))
    wanted = task["metrics"]
    out = _synth_metrics(task, unit, cfg, cache)
    if {"cycles", "tokens_per_s", "utilization"} & set(wanted):
        out.update(_cycle_metrics(task, unit, cfg, out))
    if {"energy_per_op", "power"} & set(wanted):
        out.update(_energy_metrics(task, unit, cfg, out))
    if "rtl" in wanted:
        kw = {"n_random": RTL_RANDOM_OPS} if "n_random" in inspect.signature(unit.bench).parameters else {}
        res = api.run_bench(unit.name, cfg, seed=task["rtl_seed"], **kw)
        out["rtl"] = "pass" if res.passed else "FAIL"
        if not res.passed:
            out["note"] = f"RTL check failed; log {res.log}"
    return {k: v for k, v in out.items() if k in wanted or k == "note"}


def _system_point(task, config) -> dict:
    mod = system_module(task["target"])
    cls = getattr(mod, SYSTEMS[task["target"]][1])
    cfg = layered_config(cls, {}, None, (config, "point"), owner=f"model {task['target']}")
    res = system_module(task["target"], "model").run_model(cfg, progress=False)
    systems = res.data.get("point") or res.data.get("systems") or {}
    name = task["model_system"].format(**config)
    if name not in systems:
        raise UserError(f"model_system: '{name}' is not a system of model {task['target']}; "
                        f"allowed: {', '.join(systems)}")
    row = systems[name]
    tps = row.get("tokens_per_s", row.get("throughput"))
    out = {"model_tokens_per_s": None if tps is None or tps != tps else round(float(tps), 4)}
    if {"model_j_per_token", "model_power"} & set(task["metrics"]):
        energy = res.data.get("energy", {}).get(name)
        if energy is None:
            raise UserError(f"model {task['target']} reports no energy for '{name}'; drop "
                            f"model_j_per_token and model_power from metrics")
        out.update(model_j_per_token=energy["j_per_token"], model_power=energy["power_w"])
    return {k: v for k, v in out.items() if k in task["metrics"]}


def evaluate_point(task: dict, config: dict, cache=None) -> dict:
    """The metrics of one point: ``{"metrics": {...}, "seconds", "worker"}`` or, when the point
    fails, ``{"error": "one line", "detail": traceback, ...}``."""
    t0 = time.perf_counter()
    out = {"worker": f"{os.uname().nodename}:{os.getpid()}"}
    try:
        if task["kind"] == "unit":
            out["metrics"] = _unit_point(task, config, cache)
        else:
            out["metrics"] = _system_point(task, config)
    except (UserError, ToolError) as e:
        out["error"] = str(e).splitlines()[0] if str(e) else type(e).__name__
    except Exception as e:  # noqa: BLE001 - a point's failure is reported, never a crash
        out["error"] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}".rstrip()
        out["detail"] = traceback.format_exc(limit=8)
    out["seconds"] = round(time.perf_counter() - t0, 3)
    return out
