"""One page per unit, from its declaration (:class:`pimforge.hw.core.unit.HwUnit`), its config
class's fields and the manifest of its default config and of each preset."""
from __future__ import annotations

import dataclasses
import sys

from pimforge.base.config import config_to_dict
from pimforge.hw.catalog import UNIT_MODULES
from pimforge.registry import units

from . import markdown as md
from .docstrings import rst_block

_KINDS = {int: "int", float: "float", bool: "bool", str: "str", "format": "float format"}
_MANIFEST_KEYS = {"manifest_version", "unit", "top", "parameters", "clock", "reset",
                  "reset_active", "streams", "latency", "throughput", "timing"}


def _ref(obj) -> str:
    """The dotted name of a documented function or class, or None for a lambda."""
    qual = getattr(obj, "__qualname__", "")
    if not qual or "<" in qual:
        return None
    return f"{obj.__module__}.{qual}"


def _fields(unit) -> str:
    cls = unit.config_cls
    defaults = config_to_dict(unit.default_config())
    docs = cls.field_docs()
    rows = []
    for f in dataclasses.fields(cls):
        doc, allowed = docs.get(f.name, ("", ""))
        kind = f.metadata.get("kind") if f.metadata else None
        kind = _KINDS.get(kind, getattr(kind, "__name__", str(kind or "")))
        rows.append([md.code(f.name), kind, md.value(defaults[f.name]), md.text(allowed),
                     md.text(doc)])
    return md.table(["field", "type", "default", "allowed", "description"], rows)


def _clock(clock) -> dict:
    return clock.as_dict() if hasattr(clock, "as_dict") else dict(clock)


def _presets(unit) -> str:
    if not unit.presets:
        return "The unit has no presets; every field starts at its default.\n"
    rows = []
    for name, over in unit.presets.items():
        overrides = ", ".join(f"{md.code(k)} = {md.value(v)}" for k, v in over.items())
        clock = unit.clocks.get(name)
        if clock is None:
            mhz, where = "", ""
        else:
            c = _clock(clock)
            mhz = f"{c['mhz']:g} ({md.text(c['target'])})"
            where = md.text(c["source"])
            if c.get("paper_mhz") is not None:
                where += f"; paper: {c['paper_mhz']:g} MHz, {md.text(c.get('paper_source', ''))}"
        rows.append([md.code(name), overrides or "(the defaults)", mhz, where])
    return md.table(["preset", "overrides", "clock, MHz", "where the clock comes from"], rows)


def _streams(manifest) -> str:
    out = [f"Clock {md.code(manifest['clock'])}, reset {md.code(manifest['reset'])} "
           f"(active {manifest['reset_active']}).  Every port is a valid/ready stream "
           "(Amaranth's `lib.stream`); payload fields are listed from the least significant "
           "bit.\n"]
    for port, s in manifest["streams"].items():
        sigs = ", ".join(md.code(s[k]) for k in ("payload", "valid", "ready") if s.get(k))
        out.append(f"### {md.code(port)}: {s['direction']}, {s['width']} bits\n\n"
                   f"Verilog: {sigs}.\n")
        rows = [[md.code(f["name"]), f["offset"], f["width"], md.code(f["format"])]
                for f in s.get("fields", [])]
        out.append(md.table(["field", "offset", "width", "format"], rows))
    return "\n".join(out)


def _performance(unit, manifest) -> str:
    rows = [["(default)", manifest["latency"], md.value(manifest["throughput"])]]
    for name in unit.presets:
        m = unit.factory(unit.preset_config(name)).manifest()
        rows.append([md.code(name), m["latency"], md.value(m["throughput"])])
    out = ["Latency in cycles from an input transfer to its output, throughput in transfers "
           "per cycle, as the generated component states them (its `latency` and "
           "`throughput` properties, also in the manifest).\n",
           md.table(["config", "latency", "throughput"], rows)]
    if manifest.get("timing"):
        out.append("\nThe latency's stages (default config, cycles):\n")
        out.append(md.table(["stage", "cycles"], [[md.code(k), md.value(v)]
                                                  for k, v in manifest["timing"].items()]))
    extra = [[md.code(k), md.value(v)] for k, v in manifest.items() if k not in _MANIFEST_KEYS]
    if extra:
        out.append("\nOther facts in the manifest (default config):\n")
        out.append(md.table(["key", "value"], extra))
    return "\n".join(out)


def _described(app, obj, what: str, none: str) -> str:
    """A section body: a link to ``obj`` and its docstring, or ``none``."""
    if obj is None:
        return none + "\n"
    ref = _ref(obj)
    if ref is None:
        module = obj.__module__
        return (f"An inline function of {{mod}}`{module}` (it has no docstring of its own; see "
                "the generator module).\n")
    head = f"{{func}}`{ref}`\n\n" if what == "function" else f"{{class}}`{ref}`\n\n"
    return head + (rst_block(app, obj, obj.__module__, what) or "(no docstring)\n")


def _formal(app, formal) -> str:
    """The formal environment and the docstring of its module, which states the assumptions
    and properties (the function's own docstring is often one line that points there)."""
    if formal is None:
        return ("Stream rules only: `pimforge prove` checks the valid/ready transfer rules on "
                "every port, with no unit-specific environment.\n")
    module = sys.modules[formal.__module__]
    return "\n".join([_described(app, formal, "function", ""),
                      f"From {{mod}}`{module.__name__}`:\n",
                      rst_block(app, module, module.__name__, "module")])


def _commands(name: str, preset) -> str:
    rows = [(f"pimforge generate {name} --out build/{name}", "Verilog and the manifest")]
    if preset:
        rows.append((f"pimforge generate {name} --preset {preset} --out build/{preset}",
                     "the same for a preset"))
    rows += [(f"pimforge test {name}", "the cocotb bench against the golden model"),
             (f"pimforge synth {name}", "synthesis reports (area, logic depth)"),
             (f"pimforge prove {name}", "the formal proof")]
    return md.shell(*rows)


def unit_page(app, unit) -> str:
    """The MyST page of one unit."""
    cfg = unit.default_config()
    comp = unit.factory(cfg)
    manifest = comp.manifest()
    name = unit.name
    module = UNIT_MODULES[name]
    facts = [("Paper", md.text(unit.paper) if unit.paper else "(not given)"),
             ("Generator", f"{{mod}}`{module}`"),
             ("Component", f"{{class}}`{_ref(type(comp))}`"),
             ("Config", f"{{class}}`{_ref(unit.config_cls)}`"),
             ("Verilog top", md.code(manifest["top"]))]
    preset = next(iter(unit.presets), None)
    parts = [
        f"# {name}\n\n{md.text(unit.summary)}\n",
        "\n".join(f"- **{key}**: {val}" for key, val in facts) + "\n",
        "## Config fields\n",
        "Set them with `--set FIELD=VALUE`, a YAML file (`--config`), or start from a preset "
        f"(`--preset`); `pimforge config {name}` prints the resolved config.\n",
        _fields(unit),
        "## Presets\n",
        _presets(unit),
        "## Ports\n",
        _streams(manifest),
        "## Latency and throughput\n",
        _performance(unit, manifest),
        "## Cycle model\n",
        "The cycle count of a job of back-to-back operations; the unit's tests check it "
        "against the RTL's.\n",
        _described(app, unit.cycle_model, "function", "The unit declares no cycle model."),
        "## Activity model\n",
        "The actions (float operations, SRAM accesses) of the same job, which the energy model "
        "prices ({doc}`/guide/energy`); the unit's tests check them against the RTL's probe "
        "counts.\n",
        _described(app, unit.activity, "function", "The unit declares no activity model."),
        "## Formal environment\n",
        _formal(app, unit.formal),
        "## Commands\n",
        _commands(name, preset),
    ]
    return "\n".join(parts)


def unit_pages(app) -> dict:
    """``{"units/<name>.md": page}`` for every unit, plus ``units/index.md``."""
    pages = {}
    rows = []
    for name, unit in units().items():
        pages[f"units/{name}.md"] = unit_page(app, unit)
        rows.append([f"[{name}]({name}.md)", md.text(unit.summary),
                     md.text(unit.paper) if unit.paper else ""])
    index = ["# Units\n",
             f"pimforge generates {len(rows)} units.  Each page below is generated from the "
             "unit's declaration, its config class and its manifest.\n",
             md.table(["unit", "summary", "paper"], rows),
             "```{toctree}\n:hidden:\n\n" + "\n".join(units()) + "\n```\n"]
    pages["units/index.md"] = "\n".join(index)
    return pages
