"""A sweep spec: what to vary, what to measure.  YAML in, a checked :class:`SweepSpec` out::

    unit: pam_pu                # a unit (`pimforge list`) or `system: pam|hilos|...`
    preset: hbm                 # optional: the config every point starts from
    fixed: {tile_tokens: 16}    # optional: fields set on every point
    axes:                       # field -> a list, or a range {from, to, step} / {from, to, times}
      lanes: [2, 4]
      op_depth: {from: 1, to: 3}
    metrics: [nand2, fmax, cycles, tokens_per_s]
    workload: {ops: 1024}       # cycle model: ops (tokens, operations) per job
    clock_mhz: fmax             # tokens/s clock: a number, or fmax (the measured ECP5 fmax)
    ecp5_device: 85k-6          # optional, as `pimforge synth --device`
    xcup_device: ku15p          # optional

Every mistake is a one-line :class:`~pimforge.base.errors.UserError` that names the field and what is allowed.
Points are checked here, before any work: each one builds a validated config.
"""
from __future__ import annotations

import hashlib
import itertools
import json
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from pimforge.base.config import config_to_dict, layered_config, load_yaml
from pimforge.base.errors import UserError
from pimforge.hw.catalog import HW_UNITS
from pimforge.registry import get_unit
from pimforge.software.cli import SYSTEMS, system_module
from pimforge.synth import flows

__all__ = ["SweepSpec", "Point", "METRICS", "UNIT_METRICS", "SYSTEM_METRICS", "load_spec",
           "parse_spec", "shipped_specs", "MODEL_SYSTEM"]

# metric -> (what it is, where it comes from); the order is the table's column order
UNIT_METRICS = {
    "nand2": "NAND2 equivalents (generic synthesis: Yosys + ABC, CMOS transistors / 4)",
    "asap7_um2": "area in um^2 at ASAP7 (generic synthesis: logic plus SRAM bits)",
    "depth": "logic depth in gate levels (generic synthesis)",
    "fmax": "maximum frequency in MHz (ECP5: synth_ecp5 then nextpnr-ecp5, seed 1)",
    "lut": "LUTs on UltraScale+ (synth_xilinx -family xcup)",
    "dsp": "DSP48E2 on UltraScale+ (synth_xilinx -family xcup)",
    "cycles": "cycles of a job of workload.ops back-to-back operations (the unit's cycle model)",
    "tokens_per_s": "workload.ops / cycles x clock_mhz: tokens (operations) per second",
    "utilization": "cycles at the steady-state rate over all cycles of the job: "
                   "(c(2n) - c(n)) / c(n), the rest being fill, drain and per-job overheads",
    "energy_per_op": "pJ per operation at ASAP7: the unit's activity model on a job of "
                     "workload.ops ops, priced by the energy table (pimforge model --describe)",
    "power": "W at clock_mhz: the job's dynamic energy over its cycles, plus ASAP7 leakage of "
             "its area when asap7_um2 is measured too",
    "rtl": "the cocotb bench on Verilator against the golden model (pass or fail)",
}
SYSTEM_METRICS = {
    "model_tokens_per_s": "the system model's decoding throughput (tokens/s) of model_system "
                          "at the workload of the point's config",
    "model_j_per_token": "the system model's energy per output token (J) of model_system",
    "model_power": "the system model's average decoding power (W) of model_system",
}
METRICS = {**UNIT_METRICS, **SYSTEM_METRICS}

# the design each system model is about: the system whose tokens/s the sweep reports by default
MODEL_SYSTEM = {"pam": "PAM", "hilos": "HILOS({smartssds})", "hermes": "Hermes",
                "lolpim": "configured", "papi": "configured"}

_KEYS = {"unit", "system", "preset", "fixed", "axes", "metrics", "workload", "clock_mhz",
         "ecp5_device", "xcup_device", "model_system", "rtl_seed", "title"}
MAX_POINTS = 10_000


@dataclass(frozen=True)
class Point:
    """One point: ``values`` (axis -> value), its config as a dict and its content hash."""

    index: int
    values: dict
    config: dict
    key: str


@dataclass
class SweepSpec:
    name: str
    kind: str                       # "unit" or "system"
    target: str                     # the unit or system name
    preset: str | None
    fixed: dict
    axes: dict                      # axis -> list of values
    metrics: list
    ops: int = 1024
    clock_mhz: float | str | None = None
    ecp5_device: str | None = None
    xcup_device: str | None = None
    model_system: str | None = None
    rtl_seed: int = 1
    title: str = ""
    points: list = field(default_factory=list)

    def task(self) -> dict:
        """What a worker needs to evaluate a point: plain data, no registry objects."""
        return {"kind": self.kind, "target": self.target, "metrics": list(self.metrics),
                "ops": self.ops, "clock_mhz": self.clock_mhz, "ecp5_device": self.ecp5_device,
                "xcup_device": self.xcup_device, "model_system": self.model_system,
                "rtl_seed": self.rtl_seed}


def _err(where: str, msg: str) -> UserError:
    return UserError(f"sweep spec '{where}': {msg}")


def _range(where, axis, r: dict) -> list:
    extra = set(r) - {"from", "to", "step", "times"}
    if extra or "from" not in r or "to" not in r or ("step" in r and "times" in r):
        raise _err(where, f"axes.{axis}: a range is {{from, to}} with step (added, default 1) or "
                          f"times (multiplied), not {sorted(r)}")
    lo, hi = r["from"], r["to"]
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool)
               for v in (lo, hi, r.get("step", 1), r.get("times", 2))):
        raise _err(where, f"axes.{axis}: from, to, step and times must be numbers")
    if "times" in r:
        if r["times"] <= 1 or lo <= 0:
            raise _err(where, f"axes.{axis}: times must be > 1 and from > 0")
        out, v = [], lo
        while v <= hi and len(out) <= MAX_POINTS:
            out.append(v)
            v = v * r["times"]
        return out
    step = r.get("step", 1)
    if step <= 0:
        raise _err(where, f"axes.{axis}: step must be > 0, not {step}")
    n = int((hi - lo) / step + 1e-9) + 1 if hi >= lo else 0
    if n > MAX_POINTS:
        raise _err(where, f"axes.{axis}: {n} values; allowed: at most {MAX_POINTS}")
    return [lo + i * step for i in range(n)]


def _axes(where, axes) -> dict:
    if not isinstance(axes, dict) or not axes:
        raise _err(where, "axes: a mapping of field -> list of values or range {from, to, step}")
    out = {}
    for axis, vals in axes.items():
        if isinstance(vals, dict):
            vals = _range(where, axis, vals)
        elif not isinstance(vals, list):
            vals = [vals]
        if not vals:
            raise _err(where, f"axes.{axis}: no values; give a non-empty list or range")
        if len(set(map(repr, vals))) != len(vals):
            raise _err(where, f"axes.{axis}: repeated values in {vals}")
        out[str(axis)] = vals
    return out


def _metrics(where, kind, metrics) -> list:
    allowed = UNIT_METRICS if kind == "unit" else SYSTEM_METRICS
    if isinstance(metrics, str):
        metrics = [metrics]
    if not isinstance(metrics, list) or not metrics:
        raise _err(where, f"metrics: a list; allowed: {', '.join(allowed)}")
    for m in metrics:
        if m not in allowed:
            raise _err(where, f"metrics: unknown metric {m!r} for a {kind} sweep; allowed: "
                              f"{', '.join(allowed)}")
    return [m for m in allowed if m in metrics]


def _clock(where, data, unit_name, preset, metrics):
    clock = data.get("clock_mhz")
    if clock is None and preset:
        stated = HW_UNITS[unit_name].clocks.get(preset) if unit_name in HW_UNITS else None
        clock = stated.mhz if stated else None      # a system sweep's preset states no clock
    if clock is None:
        for m in ("tokens_per_s", "power"):
            if m in metrics:
                raise _err(where, f"clock_mhz: {m} needs a clock; allowed: a number of MHz "
                                  f"or 'fmax' (with the fmax metric)")
        return None
    if clock == "fmax":
        if "fmax" not in metrics:
            raise _err(where, "clock_mhz: 'fmax' needs the fmax metric in metrics")
        return clock
    if isinstance(clock, bool) or not isinstance(clock, (int, float)) or not 0 < clock <= 1e5:
        raise _err(where, f"clock_mhz: got {clock!r}; allowed: a number in (0, 100000] or 'fmax'")
    return float(clock)


def _point_key(kind, target, config, task) -> str:
    text = json.dumps({"kind": kind, "target": target, "config": config, "task": task},
                      sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _unit_points(spec: SweepSpec, where: str) -> list:
    unit = get_unit(spec.target)
    names = list(spec.axes)
    pts = []
    for i, combo in enumerate(itertools.product(*spec.axes.values())):
        values = dict(zip(names, combo))
        cfg = unit.config(spec.preset, (spec.fixed, "fixed"), (values, "axes"))
        pts.append(config_to_dict(cfg))
    return pts


def _system_points(spec: SweepSpec, where: str) -> list:
    mod = system_module(spec.target)
    cls = getattr(mod, SYSTEMS[spec.target][1])
    # the model's own sweeps around the point cost time and give no column: off unless asked
    base = {"sweep": "none"} if "sweep" in cls.__dataclass_fields__ else {}
    pts = []
    for combo in itertools.product(*spec.axes.values()):
        values = dict(zip(spec.axes, combo))
        cfg = layered_config(cls, mod.PRESETS, spec.preset, (base, "defaults"),
                             (spec.fixed, "fixed"), (values, "axes"), owner=f"model {spec.target}")
        pts.append(config_to_dict(cfg))
    return pts


def _devices(where, data, metrics) -> tuple:
    ecp5 = data.get("ecp5_device")
    xcup = data.get("xcup_device")
    try:
        if ecp5 is not None:
            flows.resolve_device("ecp5", str(ecp5))
        if xcup is not None:
            flows.resolve_device("xcup", str(xcup))
    except UserError as e:
        raise _err(where, str(e)) from None
    return (None if ecp5 is None else str(ecp5)), (None if xcup is None else str(xcup))


def _int_field(where, data, name, default, lo, hi) -> int:
    v = data.get(name, default)
    if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
        raise _err(where, f"{name}: got {v!r}; allowed: an integer in {lo}..{hi}")
    return v


def parse_spec(data, where: str = "<spec>") -> SweepSpec:
    """Check a spec mapping and enumerate its points (each a validated config)."""
    if not isinstance(data, dict):
        raise _err(where, f"the top level must be a mapping, not a {type(data).__name__}")
    unknown = sorted(set(data) - _KEYS)
    if unknown:
        raise _err(where, f"unknown key '{unknown[0]}'; allowed: {', '.join(sorted(_KEYS))}")
    if ("unit" in data) == ("system" in data):
        raise _err(where, f"give exactly one of unit (see `pimforge list`) or system "
                          f"({', '.join(SYSTEMS)})")
    kind = "unit" if "unit" in data else "system"
    target = str(data[kind])
    if kind == "unit":
        get_unit(target)
    elif target not in SYSTEMS:
        raise _err(where, f"system: unknown system '{target}'; allowed: {', '.join(SYSTEMS)}")
    fixed = data.get("fixed") or {}
    if not isinstance(fixed, dict):
        raise _err(where, "fixed: a mapping of field: value")
    for k in fixed:
        if k in (data.get("axes") or {}):
            raise _err(where, f"fixed: field '{k}' is also an axis; give it in one place")
    metrics = _metrics(where, kind, data.get("metrics"))
    workload = data.get("workload") or {}
    if not isinstance(workload, dict) or set(workload) - {"ops"}:
        raise _err(where, "workload: a mapping with ops (operations per job)")
    preset = data.get("preset")
    spec = SweepSpec(Path(where).stem, kind, target, None if preset is None else str(preset),
                     fixed, _axes(where, data.get("axes")), metrics,
                     ops=_int_field(where, workload, "ops", 1024, 1, 10 ** 9),
                     clock_mhz=_clock(where, data, target, preset, metrics),
                     rtl_seed=_int_field(where, data, "rtl_seed", 1, 0, 2 ** 31 - 1),
                     title=str(data.get("title") or f"{kind} {target}"))
    spec.ecp5_device, spec.xcup_device = _devices(where, data, metrics)
    if kind == "system":
        spec.model_system = data.get("model_system") or MODEL_SYSTEM[target]
    n = 1
    for v in spec.axes.values():
        n *= len(v)
    if n > MAX_POINTS:
        raise _err(where, f"axes: {n} points; allowed: at most {MAX_POINTS}")
    try:
        configs = (_unit_points if kind == "unit" else _system_points)(spec, where)
    except UserError as e:
        raise _err(where, str(e)) from None
    task = spec.task()
    spec.points = [Point(i, dict(zip(spec.axes, combo)), cfg,
                         _point_key(kind, target, cfg, task))
                   for i, (combo, cfg) in enumerate(zip(itertools.product(*spec.axes.values()),
                                                        configs))]
    return spec


def shipped_specs() -> dict:
    """name -> path of the specs that install with pimforge (``pimforge/sweep/specs``)."""
    root = resources.files("pimforge.sweep.specs")
    return {p.name[:-5]: Path(str(p)) for p in root.iterdir() if p.name.endswith(".yaml")}


def load_spec(name_or_path) -> SweepSpec:
    """A spec from a YAML file, or a shipped spec by name (:func:`shipped_specs`)."""
    path = Path(name_or_path)
    shipped = shipped_specs()
    if not path.exists() and str(name_or_path) in shipped:
        path = shipped[str(name_or_path)]
    elif not path.exists():
        raise UserError(f"sweep spec '{name_or_path}' does not exist; give a YAML file or a "
                        f"shipped spec: {', '.join(sorted(shipped))}")
    try:
        data = load_yaml(path)
    except UserError as e:
        raise UserError(str(e).replace("config file", "sweep spec", 1)) from None
    return parse_spec(data, str(path))
