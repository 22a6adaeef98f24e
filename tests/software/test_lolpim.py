"""LoL-PIM system model (pimforge.software.lolpim): request sampling and batches by capacity,
static vs DPA vs lazy allocation, HFA vs ITPP, ping-pong, the pipeline and its all-reduces, the
coupling to the AiM cycle model, config errors and the command line."""
import json
import math

import numpy as np
import pytest
from system_checks import check_bad_input_one_line, check_reproduce_rows, cli

from pimforge.base.errors import ConfigError
from pimforge.hw.lolpim.aim import AIM_CLOCK_MHZ
from pimforge.hw.lolpim.perf import kernel_cycles
from pimforge.software import workloads as wl
from pimforge.software.lolpim.aim_time import channel_gemv_seconds
from pimforge.software.lolpim.config import NODE, TASKS, LolpimModelConfig, system_setup
from pimforge.software.lolpim.pim import (
    BYTES, attention_s, capacity_tokens, pim_batch, pim_point, stage_weight_bytes, stages,
    tp_allreduce_s, tp_choices
)
from pimforge.software.lolpim.pipeline import allreduce_s
from pimforge.software.lolpim.reproduce import required_items
from pimforge.software.lolpim.systems import Knobs, run_system
from pimforge.software.lolpim.workload import footprint, form_batches, sample_inputs

Q7 = wl.get_model("Qwen1.5-7B")
Q72 = wl.get_model("Qwen1.5-72B")
KN = Knobs(batches=1)


# --- workload (Table 2, §5) ------------------------------------------------------------------------
def test_samples_clipped_deterministic_and_near_table2():
    for name, t in TASKS.items():
        a = sample_inputs(name, 4000, seed=1)
        assert (a == sample_inputs(name, 4000, seed=1)).all()
        assert (a != sample_inputs(name, 4000, seed=2)).any()
        assert a.min() >= t.min and a.max() <= t.max
        assert abs(a.mean() - t.mean) < 0.05 * t.mean


@pytest.mark.parametrize("task", list(TASKS))
def test_batches_fill_capacity_and_dpa_beats_static(task):
    cap = 2.0e6                                   # KV tokens
    sizes = {}
    for alloc in ("static", "dpa", "lazy"):
        bs = form_batches(task, alloc, cap, max_context=32768, chunk=256, count=3, seed=0)
        for b in bs:
            assert b.need.sum() <= cap                          # never over capacity
            assert b.need.sum() + 32768 > cap                   # full: one more would not fit
            assert (b.need >= b.ctx).all()                      # the KV fits its allocation
            if alloc == "lazy":
                assert (b.need == footprint("lazy", b.ctx, b.ctx, 32768, 256)).all()
        sizes[alloc] = np.mean([b.size for b in bs])
    assert sizes["static"] == cap // 32768
    assert sizes["lazy"] >= sizes["dpa"] >= sizes["static"]
    # Fig. 4: growth bounded by how much smaller than 32K the smallest request is
    assert 1.0 <= sizes["lazy"] / sizes["static"] <= 32768 / TASKS[task].min + 1


def test_oom_when_weights_do_not_fit():
    assert math.isnan(pim_point(Q72, "Musique", 2, **system_setup("LoL-PIM(123)")).tokens_per_s)
    assert math.isnan(run_system("GPU-GDDR", Q72, "Musique", 2, KN).tokens_per_s)


def test_weight_and_kv_bytes_conserved():
    modules = 4 * NODE.modules
    for tp in tp_choices(Q7, modules):
        st = stages(Q7, modules, tp)
        assert sum(st.layer_counts()) == Q7.layers
        w = stage_weight_bytes(Q7, st)
        whole = (Q7.layers * (Q7.attn_params + Q7.ffn_matrix_params) + Q7.vocab * Q7.hidden)
        assert sum(w) == pytest.approx(whole * BYTES)
        # every module: its weights + its share of the KV of the capacity fit its 8 GB
        cap = capacity_tokens(Q7, st, NODE.module_bytes)
        for n, ws in zip(st.layer_counts(), w):
            kv = cap * n * 2 * Q7.kv_heads * Q7.head_dim * BYTES / tp
            assert ws / tp + kv <= NODE.module_bytes * (1 + 1e-9)


# --- the AiM channel (the ping-pong unit's cycle model) ---------------------------------------------
def test_channel_time_is_the_cycle_model():
    for r, c in ((1024, 128), (8, 16384), (256, 688)):
        for pp in (False, True):
            assert channel_gemv_seconds(r, c, pp) == kernel_cycles(r, c, pingpong=pp) / \
                (AIM_CLOCK_MHZ * 1e6)


def test_pingpong_never_slower():
    for r in (1, 8, 64, 256, 2048):
        for c in (16, 128, 1000, 4096, 16384):
            assert channel_gemv_seconds(r, c, True) <= channel_gemv_seconds(r, c, False)
    for s in ("PIM", "LoL-PIM(12)"):
        on = dict(system_setup(s), pingpong=True)
        off = dict(system_setup(s), pingpong=False)
        assert pim_point(Q7, "Musique", 4, batches=1, **on).tokens_per_s >= \
            pim_point(Q7, "Musique", 4, batches=1, **off).tokens_per_s


# --- partitioning (§4) --------------------------------------------------------------------------------
def test_itpp_beats_hfa_at_large_tp():
    ctx = sample_inputs("Musique", 8, seed=0)
    for tp in (8, 32):        # 4 and 1 heads per module: HFA leaves channels idle
        assert attention_s(Q7, tp, "itpp", True, ctx) < attention_s(Q7, tp, "hfa", True, ctx)
        itpp = pim_batch(Q7, ctx, 16, tp, "itpp", True)
        hfa = pim_batch(Q7, ctx, 16, tp, "hfa", True)
        assert itpp.tokens_per_s > hfa.tokens_per_s


def test_attention_grows_with_context():
    short, long_ = np.full(4, 4096), np.full(4, 16384)
    for part in ("itpp", "hfa"):
        a, b = attention_s(Q7, 4, part, True, short), attention_s(Q7, 4, part, True, long_)
        assert 3.0 < b / a < 4.5


# --- pipeline and communication -------------------------------------------------------------------------
def test_bubbles_when_batch_below_pp():
    ctx = sample_inputs("Musique", 4, seed=0)
    r = pim_batch(Q7, ctx, 4, 1, "itpp", True)              # PP 32, 4 requests
    assert r.parts["bubble"] > 0.5 * r.cycle_s
    ctx = sample_inputs("Musique", 64, seed=0)
    r = pim_batch(Q7, ctx, 4, 4, "itpp", True)              # PP 8, 64 requests
    assert r.parts["bubble"] < 0.05 * r.cycle_s


def test_allreduce():
    assert allreduce_s(1e6, 1, 1e9) == 0.0
    assert tp_allreduce_s(1e6, 8) < tp_allreduce_s(1e6, 16)     # crossing a 10 GB/s node link
    assert tp_allreduce_s(1e6, 16) < tp_allreduce_s(1e6, 128)


def test_throughput_scales_with_capacity():
    lol = [run_system("LoL-PIM(123)", Q7, "Musique", n, KN).tokens_per_s for n in (2, 4, 8, 16)]
    assert all(b > 1.3 * a for a, b in zip(lol, lol[1:]))
    pim = [run_system("PIM", Q7, "Musique", n, KN).tokens_per_s / n for n in (2, 16)]
    assert pim[1] < pim[0]            # the TP-only baseline loses per-node throughput (§8.2)


def test_lolpim_steps_improve_on_table8_points():
    for m, n in ((Q7, 4), (Q72, 16)):
        tps = [run_system(s, m, "Musique", n, KN).tokens_per_s for s in
               ("PIM", "LoL-PIM(1)", "LoL-PIM(12)", "LoL-PIM(123)")]
        assert tps == sorted(tps)


# --- config ------------------------------------------------------------------------------------------------
def test_config_errors_name_the_field():
    with pytest.raises(ConfigError, match="'tp'"):
        LolpimModelConfig(nodes=4, tp=3)
    with pytest.raises(ConfigError, match="'tp'"):
        LolpimModelConfig(nodes=4, tp=16, partition="hfa", tp_only=True)
    with pytest.raises(ConfigError, match="'nodes'"):
        LolpimModelConfig(nodes=0)
    with pytest.raises(ConfigError, match="'model'"):
        LolpimModelConfig(model="GPT-5")
    assert LolpimModelConfig(nodes=4, tp=32, partition="hfa", tp_only=True).tp == 32


# --- command line ----------------------------------------------------------------------------------------


def test_cli_model_writes_files(tmp_path):
    p = cli("model", "lolpim", "--preset", "small", "--set", "sweep=tp_pp", "--quiet", "--out",
             str(tmp_path))
    assert p.returncode == 0, p.stderr
    data = json.loads((tmp_path / "model.json").read_text())
    assert data["data"]["point"]["configured"]["tokens_per_s"] > 0
    assert data["assumptions"]
    for f in ("model.md", "lolpim_point.png", "lolpim_tp_pp.png"):
        assert (tmp_path / f).exists()


def test_cli_bad_input_one_line(tmp_path):
    check_bad_input_one_line("lolpim", "tp=3", "tp", tmp_path / "x")


def test_cli_reproduce_rows(tmp_path):
    check_reproduce_rows("lolpim", required_items(),
                         ("lolpim_fig9.png", "lolpim_fig11.png", "lolpim_headlines.png"), tmp_path)
