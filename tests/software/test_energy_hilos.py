"""Energy of the HILOS systems (HILOS §6.3, Fig. 17a, Table 3): every system reports J/token,
the parts add up, the reproduce energy rows exist with ratios, and one step's joules by hand
from the table's figures."""
from __future__ import annotations

import math

import pytest
from system_checks import check_energy_priced

from pimforge.software import devices as dev
from pimforge.software import workloads as wl
from pimforge.software.hilos.config import HOST_DIMMS, N_FLEX_SSD, PAGE, HilosModelConfig
from pimforge.software.hilos.energy import accelerator_power, figure17, step_energy
from pimforge.software.hilos.model import run_model
from pimforge.software.hilos.reproduce import PAPER_POWER, fig17_rows, table3_power_rows
from pimforge.software.hilos.step import StepTime, step_flex_ssd
from pimforge.hw.core.energy import table


@pytest.fixture(scope="module")
def point():
    """The default model point, no sweeps (a fraction of a second)."""
    return run_model(HilosModelConfig(sweep="none"), progress=False)


@pytest.fixture(scope="module")
def f17():
    return figure17()


def test_every_system_reports_energy(point):
    energy = point.data["energy"]
    systems = set(point.data["point"])
    assert systems | {"HILOS(8) units"} == set(energy)
    for name, e in energy.items():
        assert e["j_per_token"] > 0 and e["power_w"] > 0, name
        # power is J/token over s/token
        assert e["power_w"] == pytest.approx(e["j_per_token"] / e["seconds_per_token"])
    assert any(t.title.startswith("Energy per output token") for t in point.tables)
    assert "hilos_energy" in {p.name for p in point.plots}


def test_breakdown_sums_to_the_priced_counts(point):
    """The components add up to count x price over every action, each action counted once."""
    check_energy_priced(point.data["energy"])


def test_parts_do_not_double_count(f17):
    t = table("45nm")
    for row in f17.values():
        for e in row.values():
            if e is None:
                continue
            parts = sum(t.joules(p) for p in e.parts.values())
            assert parts == pytest.approx(e.j_per_token, rel=1e-12)


def test_one_step_by_hand():
    """A step of known counts: 1e12 HBM bits at 3.9 pJ, 1e11 PCIe bits at 5 pJ, a 90 W GPU
    and four 13 W SSDs for the 1 s step, 0.5 s of 160 W extra CPU power, eight d_group = 1
    FPGAs at Table 3's 11.25 W; two tokens."""
    st = StepTime("x", 2, {"flash": 1.0}, {}, actions={"dram:hbm:bit": 1e12,
                                                       "link:pcie:bit": 1e11},
                  devices={"static:gpu": 1, "static:ssd": 4},
                  active={"static:cpu_active": 0.5},
                  kernel={"d_group": 1, "head_dim": 128, "jobs": 0, "n_stored": 1,
                          "n_precomputed": 0, "devices": 8, "seconds": 0.0})
    e = step_energy(st)
    hand = (3.9 + 0.5 + 90.0 + 4 * 13.0 + 0.5 * 160.0 + 8 * 11.25) / 2
    assert e.j_per_token == pytest.approx(hand, rel=1e-12)
    assert e.power_w == pytest.approx(hand / 0.5)
    # bottom-up, with no jobs: the FPGAs' 3 W static instead of Table 3's 11.25 W
    units = step_energy(st, "units")
    assert units.j_per_token == pytest.approx(hand - 8 * (11.25 - 3.0) / 2, rel=1e-12)


def test_flex_ssd_step_counts_by_hand():
    """FLEX(SSD), OPT-30B, s = 8K, b = 4, n = 64: the KV cache, the new entries' pages and Q/O
    over PCIe; the weights over the GPU link, into HBM and back; the SSDs at 13 W."""
    m = wl.get_model("OPT-30B")
    b, s, n = 4, 8192, 64
    st = step_flex_ssd(m, dev.GPUS["A100"], b, s, n)
    kv = b * (s + n / 2) * 2 * m.layers * m.heads * m.head_dim * 2
    pages = b * m.layers * m.heads * 2 * PAGE
    q_o = b * m.layers * m.heads * m.head_dim * 2 * 2
    w = m.params * 2
    assert st.actions["link:pcie:bit"] == pytest.approx(8 * (w + kv + pages + q_o))
    assert st.actions["dram:hbm:bit"] == pytest.approx(8 * 2 * w)
    assert st.actions["dram:ddr4:bit"] == pytest.approx(8 * (w + 2 * kv))
    assert st.devices == {"static:gpu": 1, "static:cpu": 1, "static:ddr4_dimm": HOST_DIMMS,
                          "static:ssd": N_FLEX_SSD}


def test_accelerator_power_grows_with_d_group():
    p = {g: accelerator_power(g) for g in PAPER_POWER}
    assert all(v["static"] == 3.0 for v in p.values())
    assert 0 < p[1]["dynamic"] < p[4]["dynamic"] < p[5]["dynamic"]
    # same DRAM-paced job time: d_group queries share each K and V row
    assert p[1]["seconds"] == pytest.approx(p[5]["seconds"])


def test_energy_rows_exist_with_ratios(f17):
    rows = fig17_rows(f17) + table3_power_rows()
    items = [r.item for r in rows]
    assert len(items) == 8 and len(set(items)) == 8
    for r in rows:
        assert r.ratio is not None and math.isfinite(r.ratio), r.item
        if r.within is False:
            assert r.note, f"a miss needs its cause: {r.item}"
    by = {r.item: r for r in rows}
    # §6.3: HILOS is more energy-efficient than FLEX(SSD) everywhere on the grid
    assert by["Fig 17a: FLEX(SSD) energy / HILOS(8) energy, least over the grid "
              "(paper: > 1)"].ours > 1.0
    assert "FPGA" in by["Table 3: accelerator on-chip power, d_group = 1"].note
