"""Energy of the PAM systems (PAM §7.3, Fig. 11): every system reports J/token, the parts add
up, the reproduce energy rows exist with ratios, and steps of known counts priced by hand
from the table's figures."""
from __future__ import annotations

import math

import pytest
from system_checks import check_energy_priced

from pimforge.hw.core.energy import table
from pimforge.software import workloads as wl
from pimforge.software.pam.config import PamModelConfig
from pimforge.software.pam.energy import FIG11_CASES, figure11, step_energy
from pimforge.software.pam.model import run_model
from pimforge.software.pam.reproduce import PAPER_FIG11, energy_rows


@pytest.fixture(scope="module")
def point():
    """The ``small`` preset's point, no sweeps (about a second)."""
    return run_model(PamModelConfig(model="Qwen2.5-32B", dataset="ShareGPT", batch=64,
                                    sweep="none"), progress=False)


@pytest.fixture(scope="module")
def f11():
    return figure11()


def test_every_system_reports_energy(point):
    energy = point.data["energy"]
    ran = {s for s, v in point.data["systems"].items() if not v["oom"]}
    assert set(energy) == ran and "PAM" in ran and "vLLM-offloading" in ran
    for name, e in energy.items():
        assert e["j_per_token"] > 0 and e["power_w"] > 0, name
        assert e["power_w"] == pytest.approx(e["j_per_token"] / e["seconds_per_token"])
    assert "pam_energy" in {p.name for p in point.plots}


def test_breakdown_sums_to_the_priced_counts(point):
    """The components add up to count x price over every action, each action counted once."""
    check_energy_priced(point.data["energy"])


def test_parts_do_not_double_count(f11):
    t = table("45nm")
    for row in f11.values():
        for e, _ in row.values():
            if e is not None:
                assert sum(t.joules(p) for p in e.parts.values()) == pytest.approx(
                    e.j_per_token, rel=1e-12)


def _llama():
    return PamModelConfig(model="LLaMA3-70B"), wl.get_model("LLaMA3-70B")


def test_vllm_offloading_step_by_hand():
    """vLLM-offloading, LLaMA3-70B, 4 requests of 1,000 context tokens, 1 GB of KV half in
    HBM and half in DDR, a 0.1 s step, on the 8 H100s (tensor 4 x pipeline 2), 40 HBM stacks
    and 40 DIMMs."""
    cfg, m = _llama()
    r = {"oom": False, "batch": 4, "time": 0.1, "kv_bytes": 1e9, "shares": [0.5, 0.5, 0.0],
         "attention": 0.05, "migration": 0.0}
    e = step_energy("vLLM-offloading", r, cfg, 1000.0)
    gemm = (2 * 69501714432 * 4 * 0.6                      # FLOPs at 0.6 pJ
            + 8 * 70552387584 * 2 * 2 * 3.9                # fp16 weights, read by 2 stages
            + 8 * 2 * 80 * 4 * 8192 * 2 * 2 * 3 * 1.3)     # all-reduces over NVLink
    attention = (8 * 0.5e9 * 3.9 + 8 * 0.5e9 * 15.0        # KV from HBM and DDR
                 + 8 * 0.5e9 * 5.0                         # DDR's half over PCIe
                 + 4 * 4 * 80 * 64 * 128 * 1000 * 0.6)     # QK^T and S.V FLOPs
    static = (8 * 150.0 + 40 * 2.0 + 40 * 3.0) * 0.1       # H100s, HBM stacks, DIMMs
    hand = ((gemm + attention) * 1e-12 + static) / 4
    assert e.j_per_token == pytest.approx(hand, rel=1e-12)
    assert e.seconds == pytest.approx(0.025)


def test_pim_tier_reads_and_pu_work_by_hand():
    """PAM with 1,000 K/V row reads on HBM alone, in 16-token jobs: 4 d bytes a row at
    AttAcc's 0.55 pJ/bit, d widening multiplies a row (its Q.K), d fmas (its S.V)."""
    cfg, m = _llama()
    empty = {"token_reads": 0.0, "job_tokens": 0.0, "ru_requests": 0.0, "ru_partials": 0}
    hbm = {**empty, "token_reads": 1000.0, "job_tokens": 16.0}
    r = {"oom": False, "batch": 1, "time": 0.0, "shares": [1.0, 0.0, 0.0],
         "parts": {"hbm": hbm, "ddr": empty, "ssd": empty}, "transfer_bytes": [0.0, 0.0, 0.0],
         "final_requests": 0.0, "final_partials": 1, "attention": 0.0, "migration": 0.0}
    e = step_energy("PAM", r, cfg, 1000.0)
    att = e.parts["attention"]
    assert att["dram:hbm_bank:bit"] == 1000 * 4 * 128 * 8
    assert att["op:mul_wide:e8m23"] == pytest.approx(1000 * 128)
    assert att["op:fma:e5m10"] >= 1000 * 128
    assert table("45nm").breakdown(att)["dram:hbm_bank"] == pytest.approx(
        1000 * 4 * 128 * 8 * 0.55e-12)


def test_energy_rows_exist_with_ratios(f11):
    rows = energy_rows(f11)
    items = [r.item for r in rows]
    assert len(items) == 2 * len(PAPER_FIG11) + 2 and len(set(items)) == len(items)
    for r in rows:
        assert r.ratio is not None and math.isfinite(r.ratio), r.item
        if r.within is False:
            assert r.note, f"a miss needs its cause: {r.item}"
    assert set(f11) == {(m, d, b) for (m, d), b in FIG11_CASES.items()}
    # PAM uses less energy per token than vLLM-offloading in every case (PAM §7.3)
    for row in f11.values():
        assert row["PAM"][0].j_per_token < row["vLLM-offloading"][0].j_per_token
