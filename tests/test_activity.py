"""Every float operator a unit builds has an activity probe, and the energy table prices every
action the units can report."""
from __future__ import annotations

from collections import Counter
from functools import lru_cache

import pytest

from pimforge.base.formats import parse_format
from pimforge.hw.catalog import HW_UNITS
from pimforge.hw.core.activity import op_action
from pimforge.hw.core.elaborate import elaborate, elaborate_top
from pimforge.hw.core.energy import table


@lru_cache(maxsize=None)
def _probe_census(name):
    u = HW_UNITS[name]
    # a unit's small preset builds the same code paths as its default, in a fraction of the time
    cfg = u.preset_config("small") if "small" in u.presets else u.default_config()
    _, comp, ops, found = elaborate_top(u, cfg, flat=False, probes=True)
    probed = Counter(p.key for p in found if p.key.startswith("op:"))
    built = Counter()
    for key, n in ops.items():
        built[op_action(key.kind, parse_format(key.fmt))] += n
    action = getattr(comp, "action", None)
    if action is not None:
        built[action] += 1
    return probed, built, tuple(found)


@pytest.mark.parametrize("name", sorted(HW_UNITS))
def test_every_float_operator_has_a_probe(name):
    """A float operator without a probe would fire uncounted, and the unit's energy would miss
    it: the count of op probes equals the operator inventory, kind by kind."""
    probed, built, _ = _probe_census(name)
    assert probed == built, f"{name}: probes {dict(probed)}, operators {dict(built)}"


@pytest.mark.parametrize("name", sorted(HW_UNITS))
def test_the_table_prices_every_probed_action(name):
    _, _, found = _probe_census(name)
    t = table("asap7")
    for p in found:
        assert t.pj(p.key) > 0, p.key


def test_probes_exist_only_in_the_benches_build():
    """``pimforge generate`` and synthesis see the unit unchanged; the bench build has one
    counter port per probe, listed in its manifest."""
    u = HW_UNITS["pam_pu"]
    cfg = u.preset_config("small") if "small" in u.presets else u.default_config()
    text, manifest, _ = elaborate(u, cfg)
    assert "pf_probe" not in text and "probes" not in manifest
    text, manifest, _ = elaborate(u, cfg, probes=True)
    ports = [p["port"] for p in manifest["probes"]]
    assert len(ports) == len(set(ports)) > 10
    assert all(f"output [47:0] {p};" in text for p in ports)
