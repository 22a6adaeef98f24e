"""HILOS system model (pimforge.software.hilos): the paper's closed forms checked by hand,
the kernel time against the ``hilos_attention`` cycle model, OOM reporting, determinism, config
validation and a reproduce smoke run."""
import dataclasses
import json
import math
import subprocess
import sys
import time

import pytest

from pimforge.base.errors import ConfigError
from pimforge.hw.hilos.attention_timing import kernel_schedule
from pimforge.hw.hilos.config import HilosAttentionConfig
from pimforge.software import devices as dev
from pimforge.software import workloads as wl
from pimforge.software.hilos.config import B_PCI, PAGE_WRITE_OP_S, PRESETS, HilosModelConfig
from pimforge.software.hilos.formulas import (
    alpha_opt, kernel_group, round_pow2, t_effective, traffic_ratio, writeback_cost, xcache_times
)
from pimforge.software.hilos.model import run_model
from pimforge.software.hilos.reproduce import reproduce
from pimforge.software.hilos.step import StepTime, hilos_alpha, step_flex_dram, step_hilos


# --- eq. 3 -------------------------------------------------------------------------------------
def test_traffic_ratio_eq3_by_hand():
    # s = 1000, h = 4096: (4*1000*4096 + 4*4096) / (2*4096 + 6*4096)
    #   = (16,384,000 + 16,384) / 32,768 = 16,400,384 / 32,768 = 500.5 = (1000 + 1) / 2
    assert traffic_ratio(1000, 4096) == pytest.approx(500.5)
    # s = 1: (4 + 4) / 8 = 1 (no benefit for one token)
    assert traffic_ratio(1, 7) == pytest.approx(1.0)


# --- alpha (§4.2) ------------------------------------------------------------------------------
def test_alpha_formula_by_hand():
    # 2 * 8 / (24 + 8) = 16 / 32 = 0.5
    assert alpha_opt(8.0, 24.0) == pytest.approx(0.5)
    # 2 * 8 / (48 + 8) = 16 / 56 = 0.2857...
    assert alpha_opt(8.0, 48.0) == pytest.approx(16 / 56)
    # 2 * 8 / (12 + 8) = 0.8
    assert alpha_opt(8.0, 12.0) == pytest.approx(0.8)
    # X-cache not smaller than the KV cache (r = S_KV / S_X = 0.4): no X-cache
    assert alpha_opt(8.0, 24.0, kv_over_x=0.4) == 0.0


def test_alpha_power_of_two_rounding():
    assert round_pow2(0.5) == 0.5
    assert round_pow2(16 / 56) == 0.25     # |0.286 - 0.25| = 0.036 < |0.286 - 0.5| = 0.214
    assert round_pow2(0.8) == 1.0          # |0.8 - 1| = 0.2 < |0.8 - 0.5| = 0.3
    assert round_pow2(0.7) == 0.5          # |0.7 - 0.5| = 0.2 < |0.7 - 1| = 0.3
    assert round_pow2(0.1) == 0.125        # |0.1 - 0.125| = 0.025 < |0.1 - 0.0625| = 0.0375
    assert round_pow2(0.0) == 0.0


def test_hilos_alpha_per_device_count():
    m = wl.get_model("OPT-175B")
    p2p = dev.SMARTSSD.p2p_bw
    b_pci = 8 * p2p / 3            # §6.4: B_SSD / B_PCI = 3 at 8 devices
    # N = 8: 2 B_PCI / (8 p2p + B_PCI) = 2 (8/3) / (8 + 8/3) = (16/3) / (32/3) = 0.5
    assert hilos_alpha(m, 8) == 0.5
    # N = 16: (16/3) / (16 + 8/3) = (16/3) / (56/3) = 0.2857 -> 0.25
    assert hilos_alpha(m, 16) == 0.25
    assert B_PCI == pytest.approx(b_pci)
    assert hilos_alpha(m, 8, alpha=0.3) == 0.3
    assert hilos_alpha(m, 8, xcache=False) == 0.0


def test_xcache_times_and_max_rule():
    # alpha 0.5, s 1000, h 100, B_SSD 3, B_PCI 1, C_GPU 1e4:
    # T_PCI = 0.5*1000*100*2 / 1 = 100,000
    # T_GPU = 0.5*1000*100^2*2 / 1e4 = 1,000
    # T_SSD = (0.5*1000*100*2 + 0.5*2*1000*100*2) / 3 = (100,000 + 200,000) / 3 = 100,000
    t_gpu, t_ssd, t_pci = xcache_times(0.5, 1000, 100, 3.0, 1.0, 1e4)
    assert (t_gpu, t_ssd, t_pci) == pytest.approx((1000.0, 100000.0, 100000.0))
    assert t_effective(t_gpu, t_ssd, t_pci) == pytest.approx(100000.0)
    # a slow GPU (C_GPU = 1): T_GPU = 0.5*1000*1e4*2 = 1e7 dominates
    t = xcache_times(0.5, 1000, 100, 3.0, 1.0, 1.0)
    assert t_effective(*t) == pytest.approx(1e7)


def test_step_time_is_max_of_overlapped_plus_serial():
    st = StepTime("x", 4, {"a": 1.0, "b": 3.0}, {"c": 0.5})
    assert st.step == pytest.approx(3.5)        # max(1, 3) + 0.5
    assert st.bound == "b"
    # 4 sequences x 10 tokens / (10 steps x 3.5 s) = 40 / 35
    assert st.throughput(10, False) == pytest.approx(40 / 35)


# --- delayed writeback (§4.3) ------------------------------------------------------------------
def test_writeback_cost_by_hand():
    # c = 16: 16 x 256 B = 4096 B = one page per spill -> 100 entries x 4096 / 16 = 25,600 B
    assert writeback_cost(16, 100) == pytest.approx(25600)
    # c = 4: 1,024 B spill still takes a whole page -> 100 x 4096 / 4 = 102,400 B (4x)
    assert writeback_cost(4, 100) == pytest.approx(102400)
    # c = 32: 8,192 B = two pages -> 100 x 8192 / 32 = 25,600 B
    assert writeback_cost(32, 100) == pytest.approx(25600)


def test_writeback_tradeoff_in_c():
    m, gpu = wl.get_model("OPT-66B"), dev.GPUS["A100"]

    def st(c):
        return step_hilos(m, gpu, 16, 32768, 64, 8, alpha=0.5, c=c)

    # host work grows with the buffered tokens (c - 1) / 2
    assert st(1).serial["host_buffer"] < st(16).serial["host_buffer"] < st(64).serial["host_buffer"]
    # partial-page spills cost flash time below c = 16 (same reads up to (c-1)/2 tokens)
    assert st(2).parts["ssd"] > st(16).parts["ssd"]
    # the best c lies strictly inside the sweep (neither extreme)
    tps = [st(c).throughput(64, False) for c in (1, 2, 4, 8, 16, 32, 64, 128)]
    best = max(range(len(tps)), key=tps.__getitem__)
    assert 0 < best < len(tps) - 1


def test_ans_without_writeback_pays_sync_writes():
    m, gpu = wl.get_model("OPT-30B"), dev.GPUS["A100"]
    st = step_hilos(m, gpu, 16, 8192, 64, 8, xcache=False, writeback=False)
    # entries: b * layers * kv_heads * (K and V) = 16 * 48 * 56 * 2 = 86,016 writes, each one
    # page op of max(4096 B / 2 GB/s, PAGE_WRITE_OP_S)
    t_page = max(4096 / 2.0e9, PAGE_WRITE_OP_S)
    assert st.serial["sync_kv_write"] == pytest.approx(86016 * t_page)
    wb = step_hilos(m, gpu, 16, 8192, 64, 8, xcache=False, writeback=True)
    assert "sync_kv_write" not in wb.serial
    assert wb.throughput(64, False) > st.throughput(64, False)


# --- kernel time from the cycle model ----------------------------------------------------------
def test_kernel_time_is_cycles_over_clock():
    cfg = HilosAttentionConfig(d_group=1, head_dim=128)
    cycles5 = kernel_schedule(cfg, [(1001, 1001)] * 5)["cycles"]
    # 5 jobs back to back at 296 MHz, without the FPGA DRAM limit
    compute_only = dataclasses.replace(dev.SMARTSSD, dram_bw=0.0)
    assert compute_only.kernel_time(1, 128, 5, 1001) == pytest.approx(cycles5 / 296e6)
    # with it: 5 jobs x 1001 tokens x (K + V) x 128 x 2 B over 62% of 19.2 GB/s (11.9 GB/s),
    # 2.56 MB / 11.9 GB/s = 215 us > 5 x ~4,200 cycles / 296 MHz = ~71 us
    dram = 5 * 1001 * 2 * 128 * 2 / 11.9e9
    assert dram > cycles5 / 296e6
    assert dev.SMARTSSD.kernel_time(1, 128, 5, 1001) == pytest.approx(dram)
    # in the system model: GLaM-143B (32 layers, 32 KV heads, d_group 1), b = 5, N = 32
    # devices, no X-cache, no buffering, s = 1000, n = 2 -> context 1000 + 2/2 = 1001 tokens,
    # 5 * 32 / 32 = 5 jobs per device per layer -> 32 layers * cycles5 / 296 MHz
    m, gpu = wl.get_model("GLaM-143B"), dev.GPUS["A100"]
    st = step_hilos(m, gpu, 5, 1000, 2, 32, xcache=False, writeback=False)
    assert st.parts["kernel"] == pytest.approx(32 * dram)


def test_kernel_group_mapping():
    assert kernel_group(1) == (1, 1)
    assert kernel_group(5) == (5, 1)
    assert kernel_group(16) == (8, 2)     # 16 = 8 x 2 passes
    assert kernel_group(12) == (6, 2)     # largest divisor <= 8 of 12 is 6


# --- OOM, determinism, config ------------------------------------------------------------------
def test_flex_dram_oom_is_reported_not_raised():
    m, gpu = wl.get_model("OPT-175B"), dev.GPUS["A100"]
    # KV per token 2 * 96 layers * 96 heads * 128 * 2 B = 4,718,592 B; one sequence of
    # 131,072 + 64 tokens = 6.19e11 B > 512 GB of DRAM -> OOM at batch 1
    st = step_flex_dram(m, gpu, 16, 131072, 64)
    assert st.oom and st.batch == 0
    assert math.isnan(st.throughput(64, False))
    res = run_model(HilosModelConfig(model="OPT-175B", context=131072, sweep="none"),
                      progress=False)
    row = [r for r in res.tables[0].rows if r[0] == "FLEX(DRAM)"][0]
    assert row[1] == "OOM" and math.isnan(row[2])
    assert math.isnan(res.data["point"]["FLEX(DRAM)"]["throughput"])
    assert res.to_json()["data"]["point"]["FLEX(DRAM)"]["throughput"] is None   # JSON null


def test_deterministic():
    cfg = HilosModelConfig(**PRESETS["small"])
    a = run_model(cfg, progress=False).to_json()
    b = run_model(cfg, progress=False).to_json()
    a.pop("seconds"), b.pop("seconds")
    assert a == b


@pytest.mark.parametrize("field,value", [("model", "GPT-5"), ("smartssds", 0),
                                         ("alpha", 1.5), ("gpu", "V100"), ("sweep", "everything"),
                                         ("batch", 0)])
def test_bad_config_names_field(field, value):
    with pytest.raises(ConfigError) as e:
        HilosModelConfig(**{field: value})
    assert f"'{field}'" in str(e.value) and "allowed" in str(e.value)


def test_presets_build():
    assert "default" in PRESETS
    for over in PRESETS.values():
        HilosModelConfig(**over)


def test_run_model_default_fast_and_complete():
    t0 = time.monotonic()
    res = run_model(HilosModelConfig(), progress=False)
    assert time.monotonic() - t0 < 10
    names = {p.name for p in res.plots}
    assert {"hilos_context", "hilos_devices", "hilos_alpha", "hilos_spill"} <= names
    assert res.data["alpha_sweep"]["best"] == 0.5


def test_reproduce_smoke():
    t0 = time.monotonic()
    res = reproduce(progress=False)
    assert time.monotonic() - t0 < 30
    assert len(res.rows) >= 15
    for r in res.rows:
        assert r.paper and r.ours is not None, r.item
        assert math.isfinite(r.ratio), r.item
        assert r.source.startswith("HILOS"), r.item
    assert res.assumptions


# --- command line --------------------------------------------------------------------------------
def _cli(*args):
    return subprocess.run([sys.executable, "-m", "pimforge", *args], capture_output=True,
                          text=True)


def test_cli_model_and_reproduce_hilos(tmp_path):
    p = _cli("model", "hilos", "--preset", "small", "--set", "smartssds=4", "--quiet",
             "--out", str(tmp_path / "m"))
    assert p.returncode == 0, p.stderr
    data = json.loads((tmp_path / "m" / "model.json").read_text())
    assert data["config"]["smartssds"] == 4
    assert (tmp_path / "m" / "model.md").read_text().startswith("# ")
    assert any(f.suffix == ".png" for f in (tmp_path / "m").iterdir())
    p = _cli("reproduce", "hilos", "--quiet", "--out", str(tmp_path / "r"))
    assert p.returncode == 0, p.stderr
    def bad(token):
        raise ValueError(f"non-standard JSON constant {token}")
    rows = json.loads((tmp_path / "r" / "reproduce.json").read_text(),
                      parse_constant=bad)["rows"]
    assert any(r["item"].startswith("Table 3") for r in rows)
    assert (tmp_path / "r" / "hilos_headlines.png").read_bytes()[:4] == b"\x89PNG"
    p = _cli("model", "hilos", "--set", "smartssds=99", "--out", str(tmp_path / "x"))
    assert p.returncode == 2 and "field 'smartssds'" in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1 and not (tmp_path / "x").exists()
