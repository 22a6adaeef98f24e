"""Every unit's family is where docs/dev/anatomy.md says, by one naming rule.

For a generator at ``hw/<area>/<module>.py`` (it declares the unit in ``UNITS``):

* config class in ``hw/<area>/config.py``;
* cycle model in ``hw/<area>/<module>_timing.py`` (or the shared
  :func:`~pimforge.hw.core.pipeline.streaming_cycles` of a one-stream pipeline);
* activity model beside the cycle model (or the float library's shared
  :func:`~pimforge.hw.fp.core.streaming_activity`);
* formal environment, if any, in ``hw/<area>/<module>_formal.py``;
* stream layouts of the area in ``hw/<area>/streams.py``, and no ``stream.Signature(`` anywhere
  else in the area; the area's performance model, if any, in ``hw/<area>/perf.py``;
* golden model ``sim/golden/<area>/<module>.py``, or the module the golden package's
  ``GOLDEN_MODULES`` names for it (one model may serve several units); no re-export stubs;
* bench ``sim/benches/<area>/<module>.py`` (it lists the unit in ``BENCHES``);
* tests ``tests/<area>/test_<module>.py``;
* the declaration states its paper section, clocks only for its own presets, and a synthesis
  benchmark config of the known keys.
"""
import ast
import importlib
import re
from pathlib import Path

import pytest

from pimforge.hw.catalog import GENERATORS, HW_UNITS, UNIT_MODULES
from pimforge.hw.core.pipeline import streaming_cycles
from pimforge.hw.core.unit import PresetClock
from pimforge.registry import units
from pimforge.sim.benches.catalog import BENCH_MODULES

ROOT = Path(__file__).resolve().parents[1]
NAMES = sorted(HW_UNITS)
AREAS = sorted({m.split(".")[2] for m in UNIT_MODULES.values()})
GENERATOR_FILES = {tuple(m.split(".")[2:]) for m in UNIT_MODULES.values()}
# An area's other modules (shared blocks, memory and channel descriptors) are free to name.
SUFFIXES = ("_timing", "_formal")
BENCH_KEYS = {"preset", "set", "timeout_s", "skip"}


def _area_module(name: str) -> tuple:
    parts = UNIT_MODULES[name].split(".")
    assert parts[:2] == ["pimforge", "hw"] and len(parts) == 4, UNIT_MODULES[name]
    return parts[2], parts[3]


def _golden_module(area: str, module: str) -> str:
    pkg = importlib.import_module(f"pimforge.sim.golden.{area}")
    return getattr(pkg, "GOLDEN_MODULES", {}).get(module, module)


def test_every_unit_is_registered_once():
    declared = [u.name for mod in GENERATORS for u in mod.UNITS]
    assert len(declared) == len(set(declared)) == len(units()) == 28
    assert len(GENERATORS) == len(set(GENERATORS))


@pytest.mark.parametrize("name", NAMES)
def test_family_follows_the_rule(name):
    area, module = _area_module(name)
    gen = importlib.import_module(f"pimforge.hw.{area}.{module}")
    unit = HW_UNITS[name]
    assert unit in gen.UNITS
    assert unit.config_cls.__module__ == f"pimforge.hw.{area}.config"
    assert (unit.cycle_model is streaming_cycles
            or unit.cycle_model.__module__ == f"{gen.__name__}_timing"), unit.cycle_model
    assert unit.activity is not None, f"{name}: no activity model"
    assert unit.activity.__module__ in (f"{gen.__name__}_timing", "pimforge.hw.fp.core"), \
        unit.activity
    if unit.formal is not None:
        assert unit.formal.__module__ == f"{gen.__name__}_formal", unit.formal
    golden = _golden_module(area, module)
    assert (ROOT / "sim" / "golden" / area / f"{golden}.py").is_file(), golden
    importlib.import_module(f"pimforge.sim.golden.{area}.{golden}")
    bench = [m for m in BENCH_MODULES if name in m.BENCHES]
    assert [m.__name__ for m in bench] == [f"pimforge.sim.benches.{area}.{module}"]
    assert units()[name].bench is bench[0].BENCHES[name]
    assert (ROOT / "tests" / area / f"test_{module}.py").is_file()


@pytest.mark.parametrize("name", NAMES)
def test_declaration_is_complete(name):
    unit = HW_UNITS[name]
    assert unit.paper.strip(), f"{name}: no paper section"
    assert set(unit.clocks) <= set(unit.presets), f"{name}: clocks for unknown presets"
    assert all(isinstance(c, PresetClock) and c.mhz > 0 and c.source for c in unit.clocks.values())
    assert set(unit.synth_bench) <= BENCH_KEYS, unit.synth_bench
    preset = unit.synth_bench.get("preset")
    assert preset is None or preset in unit.presets, preset
    if "set" in unit.synth_bench:
        unit.config(preset, unit.synth_bench["set"])      # a config the unit accepts


@pytest.mark.parametrize("area", AREAS)
def test_area_pieces_are_named_by_the_rule(area):
    """``<module>_timing`` / ``<module>_formal`` belong to a generator of the same area; no other
    module is named for timing, formal, streams or performance."""
    for path in sorted((ROOT / "hw" / area).glob("*.py")):
        stem = path.stem
        for suffix in SUFFIXES:
            if stem.endswith(suffix):
                assert (area, stem[:-len(suffix)]) in GENERATOR_FILES, \
                    f"hw/{area}/{path.name}: no generator hw/{area}/{stem[:-len(suffix)]}.py"
        if any(w in stem for w in ("timing", "formal", "stream", "perf")):
            assert stem.endswith(SUFFIXES) or stem in ("streams", "perf"), f"hw/{area}/{path.name}"


@pytest.mark.parametrize("area", AREAS)
def test_stream_layouts_live_in_streams(area):
    for path in sorted((ROOT / "hw" / area).glob("*.py")):
        if path.name != "streams.py":
            assert not re.search(r"\bSignature\(", path.read_text()), \
                f"hw/{area}/{path.name} builds a stream signature; it belongs in streams.py"


@pytest.mark.parametrize("area", AREAS)
def test_golden_modules_are_models_not_stubs(area):
    """Every golden module defines something of its own (a re-export stub would only import)."""
    for path in sorted((ROOT / "sim" / "golden" / area).glob("*.py")):
        if path.name == "__init__.py":
            continue
        tree = ast.parse(path.read_text())
        own = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef, ast.Assign))
               and not (isinstance(n, ast.Assign) and n.targets[0].id == "__all__")]
        assert own, f"sim/golden/{area}/{path.name} only re-exports"


def _shared_modules() -> set:
    """The modules docs/dev/anatomy.md lists as an area's shared modules."""
    text = (ROOT / "docs" / "dev" / "anatomy.md").read_text()
    section = text.split("## Shared modules", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"^\| `(hw/\w+/\w+\.py)` \|", section, flags=re.M))


def test_other_modules_are_the_documented_shared_ones():
    listed = _shared_modules()
    found = set()
    for area in AREAS:
        for path in sorted((ROOT / "hw" / area).glob("*.py")):
            stem = path.stem
            if (area, stem) in GENERATOR_FILES or stem in ("__init__", "config", "streams", "perf"):
                continue
            if stem.endswith(SUFFIXES) and (area, stem.rsplit("_", 1)[0]) in GENERATOR_FILES:
                continue
            found.add(f"hw/{area}/{path.name}")
    assert found == listed, {"undocumented": sorted(found - listed), "gone": sorted(listed - found)}
