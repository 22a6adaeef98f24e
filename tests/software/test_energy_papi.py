"""PAPI's energy on the shared model: every system of ``pimforge model papi`` reports J/token
and power, the breakdown sums to the total, the Fig. 7 power model and one step's joules by hand
from the energy table's entries (the values PAPI's Fig. 7 fit gives, not the code's output)."""
import pytest

from pimforge.software import workloads as wl
from pimforge.software.papi.config import PRESETS, SYSTEMS, PapiModelConfig
from pimforge.software.papi.hardware import gpu_fc, pim_fc, pim_kind, power_w
from pimforge.software.papi.model import run_model
from pimforge.software.papi.reproduce import required_items
from pimforge.software.papi.systems import hw_for, run_batch
from pimforge.software.papi.workload import sample_requests

# the table's entries PAPI uses (hw/core/energy_table.yaml), in pJ (W for static)
BANK_BIT, MAC, XFER = 0.70, 0.25, 0.12          # Fig. 7 fit: bank bit, FPU MAC, X transfer
GPU_FLOP, HBM_BIT, GPU_W, STACK_W = 0.6, 3.9, 90.0, 2.0


@pytest.fixture(scope="module")
def energy():
    res = run_model(PapiModelConfig(**PRESETS["small"]), progress=False)
    return res


def test_every_system_reports_energy(energy):
    e = energy.data["energy"]
    assert set(e) == {"configured", *SYSTEMS}
    for name, r in e.items():
        assert r["j_per_token"] > 0 and r["power_w"] > 0, name
        assert sum(r["breakdown_j"].values()) == pytest.approx(r["j_per_token"], rel=1e-12)
        # a token's energy and time agree with the batch's
        pt = energy.data["point"][name]
        assert r["j_per_token"] == pytest.approx(pt["joules"] / pt["tokens"], rel=1e-9)
        assert r["seconds_per_token"] == pytest.approx(pt["seconds"] / pt["tokens"], rel=1e-12)
    # the GPU systems pay the A100s' HBM and static power, the PIM-only ones none of it
    assert e["A100+AttAcc"]["breakdown_j"]["dram:hbm"] > 0
    assert "gpu" not in e["AttAcc-only"]["breakdown_j"]
    titles = [t.title for t in energy.tables]
    assert any(t.startswith("Energy per output token") for t in titles)
    assert "papi_energy" in [p.name for p in energy.plots]


def test_pim_fc_joules_by_hand():
    # one 4096 x 1024 matrix on 8 tokens: every weight's 16 bits read once from its bank, one
    # MAC and one activation transfer per weight and token
    rows, cols, n = 4096, 1024, 8
    c = pim_fc(pim_kind(4, 1, 0.1025), 30, rows, cols, n, cap=False)
    want = (rows * cols * 16 * BANK_BIT + rows * cols * n * (MAC + XFER)) * 1e-12
    assert c.j == pytest.approx(want, rel=1e-12)


def test_gpu_fc_joules_by_hand():
    rows, cols, n = 8192, 8192, 4
    c = gpu_fc(rows, cols, n)
    flops, bytes_ = 2 * rows * cols * n, 2 * (rows * cols + n * (rows + cols))
    want = (flops * GPU_FLOP + bytes_ * 8 * HBM_BIT) * 1e-12 + 6 * GPU_W * c.s
    assert c.j == pytest.approx(want, rel=1e-12)


def test_fig7c_power_by_hand():
    # 1P1B at the paper's FPU area: 128 banks x 8 dies, one 16-lane FPU each at 666 MHz
    macs = 8 * 128 * 16 * 666e6
    for reuse in (1, 4):
        want = macs * (16 / reuse * BANK_BIT + MAC + XFER) * 1e-12 + STACK_W
        assert power_w(pim_kind(1, 1, 0.1025), reuse) == pytest.approx(want, rel=1e-12)


def test_batch_static_power_over_all_stacks():
    m = wl.get_model("LLaMA-65B")
    inp, out = sample_requests("general-qa", 4, seed=1)
    r = run_batch(hw_for("AttAcc-only"), m, inp, out, 1, 0.0)
    # §7.1: 30 FC-PIM and 60 Attn-PIM stacks, each at its background power the whole batch
    assert r.counts["static:hbm_stack"] == pytest.approx(90 * r.seconds, rel=1e-12)
    e = r.energy()
    assert e.j_per_token == pytest.approx(r.joules / r.tokens, rel=1e-12)
    assert e.breakdown()["static"] == pytest.approx(90 * STACK_W * r.seconds / r.tokens,
                                                    rel=1e-12)


def test_energy_rows_are_required():
    # tests/software/test_papi.py's reproduce run checks every required row has a ratio
    req = required_items()
    for item in ("Fig. 8b: energy efficiency PAPI / A100+AttAcc",
                 "Fig. 8b: energy efficiency PAPI / AttAcc-only",
                 "Fig. 9b: energy efficiency PAPI / A100+AttAcc (general-qa)"):
        assert item in req
