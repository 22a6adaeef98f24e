"""PAPI system model (pimforge.software.papi): §3 / eq. 1 intensities, eqs. 3-4, the Fig. 7
power cap, the coupling to the papi_pu cycle model and to the scheduler's golden model, RLP
over a static batch, alpha at our own crossover, PAPI against its static placements, config
errors and the command line."""
import json

import numpy as np
import pytest
from system_checks import check_bad_input_one_line, check_reproduce_rows, cli

from pimforge.base.errors import ConfigError
from pimforge.hw.papi.perf import PU_CLOCK_MHZ, pu_gemv_cycles
from pimforge.software import workloads as wl
from pimforge.software.papi.config import POWER_BUDGET_W, PapiModelConfig
from pimforge.software.papi.hardware import (
    background_w, bank_bound, banks_per_die, pim_attention, pim_fc, pim_kind, power_w
)
from pimforge.software.papi.model import run_model
from pimforge.software.papi.pim_time import gemv_seconds
from pimforge.software.papi.reproduce import required_items
from pimforge.software.papi.sched import placements
from pimforge.software.papi.systems import (
    calibrate_alpha, fc_layer, hw_for, run_batch, run_system
)
from pimforge.software.papi.workload import (
    attention_intensity, fc_intensity, fc_intensity_estimate, sample_requests
)

LL = wl.get_model("LLaMA-65B")


# --- §3 and §5.1: arithmetic intensity ---------------------------------------------------------
def test_fc_intensity_eq1_and_section3():
    # eq. 1 by hand: n h^2 2 / ((2 n h + h^2) 2) = n h / (2 n + h)
    assert fc_intensity(4, 8, 7168) == pytest.approx(32 * 7168 / (64 + 7168))
    assert fc_intensity(4, 8, 7168) == pytest.approx(31.7, abs=0.05)       # §3.3, OPT-30B
    assert fc_intensity(1, 1, 12288) == pytest.approx(12288 / 12290)
    # eq. 2: AI ~ RLP x TLP for GPT-3 175B's h, a little above the exact value at large n
    for r, t in ((4, 1), (16, 4), (64, 8)):
        exact = fc_intensity(r, t, 12288)
        assert fc_intensity_estimate(r, t) == r * t
        assert 1.0 <= r * t / exact < 1.1


def test_attention_intensity():
    # 4 T L d FLOPs over 2 B x (2 L d + 2 T d + 2 T L): T=8, d=128, L=128 -> 8 x 128 / 144
    assert attention_intensity(8, 128, 128) == pytest.approx(8 * 128 / 144)
    assert attention_intensity(8, 128) == pytest.approx(7.0, rel=0.03)     # §3.3
    assert attention_intensity(1, 128, 4096) < 1.0                          # memory-bound
    assert attention_intensity(8, 128) > attention_intensity(2, 128)       # grows with TLP


# --- eqs. 3-4 and the power model (Fig. 7) -----------------------------------------------------
def test_eq4_gives_96_banks():
    assert bank_bound(4, 0.1025) == pytest.approx(121 / (0.41 + 0.83))
    assert 97 < bank_bound(4, 0.1025) < 98
    assert banks_per_die(4, 0.1025) == 96
    assert pim_kind(4, 1, 0.1025).capacity == pytest.approx(12 * 2 ** 30)  # §7.1: 12 GB
    assert banks_per_die(1, 0.1025) == 128 and banks_per_die(0.5, 0.1025) == 128
    assert banks_per_die(4, 0.2) < 96 and banks_per_die(4, 0.05) == 96


def test_fig7c_power():
    k = {n: pim_kind(f, b, 0.1025) for n, (f, b) in
         {"1P1B": (1, 1), "1P2B": (1, 2), "4P1B": (4, 1)}.items()}
    assert power_w(k["1P1B"], 1) > POWER_BUDGET_W          # §6.2: 1P1B over the budget
    assert power_w(k["1P2B"], 1) < POWER_BUDGET_W
    assert power_w(k["4P1B"], 1) > POWER_BUDGET_W
    assert power_w(k["4P1B"], 4) < POWER_BUDGET_W          # §6.1: reuse >= 4 fits
    assert all(power_w(k["4P1B"], r) > power_w(k["4P1B"], 2 * r) for r in (1, 2, 4, 8))


@pytest.mark.parametrize("n", [1, 4, 64])
def test_power_cap_respected(n):
    for f, b in ((1, 1), (4, 1), (1, 2)):
        kind = pim_kind(f, b, 0.1025)
        c = pim_fc(kind, 30, 8192, 8192, n, cap=True)
        assert c.j / 30 / c.s <= POWER_BUDGET_W - background_w() + 1e-6
        assert c.s >= pim_fc(kind, 30, 8192, 8192, n, cap=False).s
    ctx = np.full(8, 1024)
    a = pim_attention(pim_kind(1, 1, 0.1025), 60, LL, ctx, 1, cap=True)
    assert a.s >= pim_attention(pim_kind(1, 1, 0.1025), 60, LL, ctx, 1, cap=False).s


# --- the couplings ----------------------------------------------------------------------------------
def test_pim_time_is_the_cycle_model():
    for r, c, u, f, b in ((16, 8192, 4, 4, 1), (3, 128, 8, 1, 2), (64, 1024, 1, 1, 1)):
        assert gemv_seconds(r, c, u, f, b) == pu_gemv_cycles(r, c, u, fpus=f, banks=b) / \
            (PU_CLOCK_MHZ * 1e6)


def test_scheduler_fc_on_pim_below_alpha_gpu_above():
    eos = [0, 0, 2, 0, 3, 3]                # batch 8: RLP 8, 8, 8, 6, 6, 3
    got = placements(8, 2, 12, eos, "dynamic")
    want = ["gpu" if r * 2 > 12 else "pim" for r in (8, 8, 8, 6, 6, 3)]
    assert got == want == ["gpu", "gpu", "gpu", "pim", "pim", "pim"]
    assert placements(8, 2, 12, eos, "gpu") == ["gpu"] * 6


def test_rlp_falls_with_finished_requests():
    inp, out = sample_requests("creative-writing", 16, seed=3)
    r = run_batch(hw_for("PAPI"), LL, inp, out, 2, 20.0, decode_only=True)
    assert r.rlp[0] == 16 and r.rlp[-1] >= 1
    assert all(b <= a for a, b in zip(r.rlp, r.rlp[1:]))
    steps = -(-out // 2)
    assert r.rlp == [int((steps > k).sum()) for k in range(int(steps.max()))]
    assert r.tokens == out.sum()
    # FC moves to FC-PIM once RLP x TLP falls to alpha
    assert r.gpu_iters == sum(1 for v in r.rlp if v * 2 > 20)


def test_samples_deterministic():
    a = sample_requests("general-qa", 500, seed=1)
    assert (a[0] == sample_requests("general-qa", 500, seed=1)[0]).all()
    cw, qa = sample_requests("creative-writing", 4000)[1], sample_requests("general-qa", 4000)[1]
    assert cw.mean() > qa.mean() and cw.min() >= 8


# --- alpha and PAPI against its static placements ---------------------------------------------------
def test_alpha_at_the_crossover():
    cal = calibrate_alpha(LL)
    a = int(cal["alpha"])
    assert cal["consistent"] and cal["crossover"] == a + 1
    hw = hw_for("PAPI")

    def t(n, where):
        return sum(c.s for c in fc_layer(hw, LL.name, n, where))

    assert t(a, "pim") <= t(a, "gpu")
    assert t(a + 1, "pim") > t(a + 1, "gpu")


@pytest.mark.parametrize("batch,spec", [(4, 1), (64, 4), (128, 2)])
def test_papi_never_slower_than_both_static_placements(batch, spec):
    alpha = calibrate_alpha(LL)["alpha"]
    kw = dict(alpha=alpha, batches=1, seed=0)
    papi = run_system("PAPI", LL, "general-qa", batch, spec, **kw).seconds
    gpu = run_system("PAPI", LL, "general-qa", batch, spec, fc="gpu", **kw).seconds
    pim = run_system("PAPI", LL, "general-qa", batch, spec, fc="pim", **kw).seconds
    assert papi <= max(gpu, pim) * (1 + 1e-9)
    assert papi <= min(gpu, pim) * 1.02          # and within 2% of the better one


# --- config -------------------------------------------------------------------------------------------
def test_config_errors_name_the_field():
    with pytest.raises(ConfigError, match="'fpu_area_mm2'"):
        PapiModelConfig(fpu_area_mm2=40.0)
    with pytest.raises(ConfigError, match="'batch'"):
        PapiModelConfig(batch=0)
    with pytest.raises(ConfigError, match="'model'"):
        PapiModelConfig(model="GPT-5")
    with pytest.raises(ConfigError, match="'scheduler'"):
        PapiModelConfig(scheduler="random")
    assert PapiModelConfig(fpu_area_mm2=0.2).fpu_area_mm2 == 0.2
    with pytest.raises(ConfigError, match="'fpu_area_mm2'"):     # 64 banks: 175B does not fit
        run_model(PapiModelConfig(model="GPT-3-175B", fpu_area_mm2=0.2, sweep="none"), False)


# --- command line --------------------------------------------------------------------------------------


def test_cli_model_writes_files(tmp_path):
    p = cli("model", "papi", "--preset", "small", "--set", "sweep=spec", "--quiet", "--out",
             str(tmp_path))
    assert p.returncode == 0, p.stderr
    data = json.loads((tmp_path / "model.json").read_text())
    assert data["data"]["point"]["configured"]["tokens_per_s"] > 0
    assert data["data"]["alpha"]["used"] > 0 and data["assumptions"]
    for f in ("model.md", "papi_point.png", "papi_spec.png"):
        assert (tmp_path / f).exists()


def test_cli_bad_input_one_line(tmp_path):
    check_bad_input_one_line("papi", "fpu_area_mm2=50", "fpu_area_mm2", tmp_path / "x")


def test_cli_reproduce_rows(tmp_path):
    check_reproduce_rows("papi", required_items(),
                         ("papi_fig8a.png", "papi_fig10b.png", "papi_headlines.png"), tmp_path)
