"""``run llm`` reports J/token and power for SmolLM2-135M on every system, with its
baselines', and the summary prints them."""
from __future__ import annotations

import math

import pytest

from pimforge import api
from pimforge.software.llm.run import summary
from pimforge.software.llm.systems import SYSTEM_NAMES

PROMPT = "The capital of France is"


@pytest.fixture(scope="module")
def report():
    return api.run_llm(PROMPT, systems=SYSTEM_NAMES, tokens=3, layers=2)


@pytest.mark.parametrize("name", SYSTEM_NAMES)
def test_every_system_reports_energy_per_token(report, name):
    e = report["systems"][name]["timing"]["energy"]
    assert e["j_per_token"] > 0 and math.isfinite(e["j_per_token"])
    assert e["power_w"] > 0 and math.isfinite(e["power_w"])
    assert e["baselines"] and all(v > 0 for v in e["baselines"].values())
    assert e["source"]


def test_the_summary_prints_each_systems_energy(report):
    text = summary(report)
    assert text.count("  energy: ") == len(SYSTEM_NAMES)
    assert " per token (" in text


def test_hermes_static_power_is_the_gpus_and_dimms(report):
    """Hermes' static energy per token: the RTX 4090's 60 W and each DIMM's 3 W (the
    table's entries) over the run's seconds per token."""
    t = report["systems"]["hermes"]["timing"]
    e = t["energy"]
    static = e["breakdown_j"]["static"]
    assert static == pytest.approx((60.0 + 3.0 * t["dimms"]) * t["s_per_token"], rel=1e-9)
    assert sum(e["breakdown_j"].values()) == pytest.approx(e["j_per_token"], rel=1e-12)
    assert e["power_w"] == pytest.approx(e["j_per_token"] / t["s_per_token"], rel=1e-12)
