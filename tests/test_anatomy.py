"""Every unit's family is where the README's "Anatomy of a unit" says, by one rule.

For a generator at ``hw/<area>/<module>.py`` (it declares the unit in ``UNITS``, with its config
class, presets and cycle model): the golden model is ``sim/golden/<area>/<module>.py``, the bench
``sim/benches/<area>/<module>.py`` (it lists the unit in ``BENCHES``) and the tests
``tests/<area>/test_<module>.py``.
"""
import importlib
from pathlib import Path

import pytest

from pimforge.hw.catalog import GENERATORS, HW_UNITS, UNIT_MODULES
from pimforge.hw.core.pipeline import streaming_cycles
from pimforge.registry import units
from pimforge.sim.benches.catalog import BENCH_MODULES

ROOT = Path(__file__).resolve().parents[1]
NAMES = sorted(HW_UNITS)


def _area_module(name: str) -> tuple:
    parts = UNIT_MODULES[name].split(".")
    assert parts[:2] == ["pimforge", "hw"] and len(parts) == 4, UNIT_MODULES[name]
    return parts[2], parts[3]


def test_every_unit_is_registered_once():
    declared = [u.name for mod in GENERATORS for u in mod.UNITS]
    assert len(declared) == len(set(declared)) == len(units()) == 28


@pytest.mark.parametrize("name", NAMES)
def test_family_follows_the_rule(name):
    area, module = _area_module(name)
    gen = importlib.import_module(f"pimforge.hw.{area}.{module}")
    unit = HW_UNITS[name]
    assert unit in gen.UNITS
    assert unit.config_cls.__module__ == f"pimforge.hw.{area}.config"
    # the cycle model sits next to the generator (or is the shared one of one-stream pipelines)
    assert unit.cycle_model.__module__ in (gen.__name__, f"{gen.__name__}_timing") \
        or unit.cycle_model is streaming_cycles
    importlib.import_module(f"pimforge.sim.golden.{area}.{module}")
    bench = [m for m in BENCH_MODULES if name in m.BENCHES]
    assert [m.__name__ for m in bench] == [f"pimforge.sim.benches.{area}.{module}"]
    assert units()[name].bench is bench[0].BENCHES[name]
    assert (ROOT / "tests" / area / f"test_{module}.py").is_file()

