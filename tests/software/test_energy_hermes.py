"""Hermes' energy: every system of ``pimforge model hermes`` reports J/token and power, the
breakdown sums to the total, ``hermes_gemv``'s counts over a job's passes, and one baseline's
step by hand from the model's shape and the energy table's entries."""
import math

import pytest

from pimforge.hw.hermes.config import gemv_preset
from pimforge.software import workloads as wl
from pimforge.software.hermes.config import PRESETS, HermesModelConfig
from pimforge.software.hermes.energy import energy_result, gemv_counts
from pimforge.software.hermes.model import run_model
from pimforge.software.hermes.step import run_system

# the table's entries (hw/core/energy_table.yaml), pJ per bit or FLOP, W for static
PCIE, DDR4, GDDR6, FLOP = 5.0, 15.0, 7.5, 0.6
GPU_W, DIMM_W = 60.0, 3.0


@pytest.fixture(scope="module")
def small():
    return run_model(HermesModelConfig(**PRESETS["small"]), progress=False)


def test_every_system_reports_energy(small):
    e = small.data["energy"]
    assert set(e) == set(small.data["point"])           # OPT-13B: every system fits
    for name, r in e.items():
        assert r["j_per_token"] > 0 and r["power_w"] > 0, name
        assert sum(r["breakdown_j"].values()) == pytest.approx(r["j_per_token"], rel=1e-12)
        assert r["seconds_per_token"] == pytest.approx(small.data["point"][name]["step_s"])
    # only the NDP systems compute on the DIMMs; only Hermes remaps over the DIMM-links
    assert "compute" in e["Hermes"]["breakdown_j"] and "compute" in e["Hermes-base"]["breakdown_j"]
    assert "compute" not in e["Accelerate"]["breakdown_j"]
    assert e["Hermes"]["j_per_token"] < e["Hermes-base"]["j_per_token"]
    assert "hermes_energy" in [p.name for p in small.plots]


def test_gemv_counts_cover_every_pass():
    cfg = gemv_preset("hermes")
    d_in, n, b = 5000, 300, 1            # 79 beats of 64: two passes of at most 64
    c = gemv_counts("hermes", "rows", d_in, 1024, b, n)
    mul = [v for k, v in c.items() if k.startswith("op:mul")]
    # every weight beat issues once per vector group, each issue all V x E multipliers
    assert mul == [n * math.ceil(d_in / cfg.beat_elems) * cfg.groups(b) * cfg.vec_lanes
                   * cfg.beat_elems]


def test_accelerate_step_by_hand():
    cfg = HermesModelConfig(**PRESETS["small"])
    m = wl.get_model("OPT-13B")
    run = run_system("Accelerate", m, 1, cfg)
    h, L = 5120, 40
    layer = (3 * h * h + 2 * 20480 * h + h * h) * 2          # QKV, FFN up + down, projection
    head = m.vocab * h * 2
    load = (L - run.info["gpu_layers"]) * layer                # streamed over PCIe each step
    kv = 192 * m.kv_bytes_per_token                            # context 128 + 128 / 2
    flops = 2 * (L * layer + head) / 2 + m.attention_flops(192)
    want = (8 * load * (PCIE + DDR4 + GDDR6) + 8 * (L * layer + head + kv) * GDDR6
            + flops * FLOP) * 1e-12 + run.step * (GPU_W + cfg.dimms * DIMM_W)
    assert energy_result("Accelerate", m, 1, cfg, run).j_per_token == pytest.approx(want,
                                                                                   rel=1e-9)
