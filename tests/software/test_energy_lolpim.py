"""LoL-PIM's energy: every system of ``pimforge model lolpim`` reports J/token and power, the
breakdown sums to the total, and one AiM and one GPU token by hand from the model's shape and
the energy table's entries."""
import math

import pytest

from pimforge.software import workloads as wl
from pimforge.software.lolpim.config import PRESETS, LolpimModelConfig
from pimforge.software.lolpim.energy import energy_result
from pimforge.software.lolpim.model import run_model
from pimforge.software.lolpim.systems import Knobs, run_system

AIM_BIT, HBM_BIT, FLOP, PCIE, CHIP_W, GPU_W = 0.55, 3.9, 0.6, 5.0, 0.75, 90.0


def _pj(kind, p):
    """Horowitz's fp16 / fp32 add or mul scaled to precision p by the table's power law."""
    lo, hi = {"add": (0.4, 0.9), "mul": (1.1, 3.7)}[kind]
    return lo * (p / 11) ** (math.log(hi / lo) / math.log(24 / 11))


BF16_MAC = _pj("add", 8) + _pj("mul", 8)


@pytest.fixture(scope="module")
def small():
    return run_model(LolpimModelConfig(**PRESETS["small"]), progress=False)


def test_every_system_reports_energy(small):
    e = small.data["energy"]
    fit = {k for k, r in small.data["point"].items() if r["batch"]}
    assert set(e) == fit and "LoL-PIM(123)" in e and "GPU-HBM" in e
    for name, r in e.items():
        assert r["j_per_token"] > 0 and r["power_w"] > 0, name
        assert sum(r["breakdown_j"].values()) == pytest.approx(r["j_per_token"], rel=1e-12)
    assert "dram:aim" in e["LoL-PIM(123)"]["breakdown_j"]
    assert "dram:hbm" in e["GPU-HBM"]["breakdown_j"]
    assert "lolpim_energy" in [p.name for p in small.plots]


def _by_hand_common(m, r):
    h = m.hidden
    return 8 * 2 * h * (m.layers * 4 * (r.tp - 1) + (r.pp - 1)) * PCIE    # all-reduces, hops


def test_aim_token_by_hand():
    m = wl.get_model("Qwen1.5-7B")
    r = run_system("LoL-PIM(123)", m, "Musique", 2, Knobs(batches=1))
    weights = m.layers * (m.attn_params + m.ffn_matrix_params) + m.vocab * m.hidden
    kv = m.layers * 2 * m.heads * m.head_dim * r.context       # every query head reads K, V
    want = ((weights + kv) * (16 * AIM_BIT + BF16_MAC) + _by_hand_common(m, r)) * 1e-12 \
        + 2 * 8 * 8 * CHIP_W * r.cycle_s / r.batch             # 2 nodes x 8 modules x 8 chips
    assert energy_result("LoL-PIM(123)", m, r, 2).j_per_token == pytest.approx(want, rel=1e-9)


def test_gpu_token_by_hand():
    m = wl.get_model("Qwen1.5-7B")
    r = run_system("GPU-HBM", m, "Musique", 2, Knobs(batches=1))
    weights = m.layers * (m.attn_params + m.ffn_matrix_params) + m.vocab * m.hidden
    # the weights once per micro-batch, K and V once per KV head
    bits = 16 * (r.micro_batches * weights / r.batch
                 + m.layers * 2 * m.kv_heads * m.head_dim * r.context)
    flops = 2 * weights + 4 * m.layers * m.heads * m.head_dim * r.context
    want = (bits * HBM_BIT + flops * FLOP + _by_hand_common(m, r)) * 1e-12 \
        + 2 * GPU_W * r.cycle_s / r.batch
    assert energy_result("GPU-HBM", m, r, 2).j_per_token == pytest.approx(want, rel=1e-9)
