"""The PAM system model: its equations against hand-computed values, Algorithm 2 against a
literal one-swap-at-a-time implementation, the scheduler's invariants, the RTL calibration, OOM
handling, determinism, the command line and a reproduce smoke run."""
from __future__ import annotations

import dataclasses
import json
import math
import subprocess
import sys

import numpy as np
import pytest

from pimforge.base.config import ConfigError
from pimforge.hw.catalog import HW_UNITS
from pimforge.hw.hilos.attention_timing import kernel_schedule
from pimforge.hw.hilos.config import HilosAttentionConfig
from pimforge.hw.pam.config import PamPuConfig, PamRuConfig
from pimforge.hw.pam.pu_timing import pu_schedule
from pimforge.hw.pam.ru_timing import ru_cycles
from pimforge.software import calibration as cal
from pimforge.software import devices as dv
from pimforge.software import workloads as wl
from pimforge.software.pam import locality as loc
from pimforge.software.pam.config import ABLATIONS, Hardware, PamModelConfig
from pimforge.software.pam.reproduce import SENSITIVITY, reproduce, sensitivity
from pimforge.software.pam.step import capacity_split, fc_time, request_lengths, step, throughput
from pimforge.software.pam.sweeps import BATCH_GRID, max_batch

# ---------------------------------------------------------------------------------------------
# equations by hand

def test_importance_factor_eq7():
    # I = 0.6 * S + 0.4 * I_prev: [0.6*0 + 0.4*1, 0.6*2 + 0.4*0] = [0.4, 1.2]
    got = loc.importance_update(np.array([1.0, 0.0]), np.array([0.0, 2.0]), 0.6)
    assert got == pytest.approx([0.4, 1.2])


def test_device_importance_score_eq8():
    # HBM holds 1 and 2 -> 1.5; DDR holds 3 -> 3; SSD holds 4 and 6 -> 5
    imp = np.array([1.0, 2.0, 3.0, 4.0, 6.0])
    tier = np.array([0, 0, 1, 2, 2])
    assert loc.device_scores(imp, tier) == pytest.approx([1.5, 3.0, 5.0])
    # an empty tier scores 0
    assert loc.device_scores(imp, np.array([0, 0, 0, 2, 2])) == pytest.approx([2.0, 0.0, 5.0])


def test_balanced_ratios():
    # IS_t ~ R_t / n_t: (100/10) / (1/10) = 100 and (10/10) / (1/10) = 10
    assert loc.balanced_ratios([100.0, 10.0, 1.0], [10, 10, 10]) == pytest.approx((100.0, 10.0))
    # twice the SSD tokens halves SSD's weight: x doubles
    assert loc.balanced_ratios([100.0, 10.0, 1.0], [10, 10, 20]) == pytest.approx((200.0, 20.0))


def test_model_sizes_by_hand():
    m = wl.get_model("LLaMA3-70B")
    h, ffn, kv = 8192, 28672, 8 * 128
    per_layer = 2 * h * h + 2 * h * kv + 3 * h * ffn      # Q, O, K, V, SwiGLU
    assert m.params == 80 * per_layer + 2 * 128256 * h     # untied embedding and LM head
    assert 70.0e9 < m.params < 71.0e9
    assert m.kv_bytes_per_token == 2 * 80 * 8 * 128 * 2    # 327,680 B
    opt = wl.get_model("OPT-175B")
    assert opt.kv_bytes_per_token == 2 * 96 * 96 * 128 * 2
    assert 174e9 < opt.params < 176e9


def test_dataset_means_follow_the_papers():
    inp, out = wl.get_dataset("WildChat").sample(20000, seed=3)
    assert np.mean(inp + out) == pytest.approx(738, rel=0.03)       # PAM §7.2
    lo, hi = wl.get_dataset("Arxiv_sum").sample(2000, seed=1)
    total = lo + hi
    assert total.min() >= 1500 - 1 and total.max() <= 8000 + 1       # PAM §7.1
    a = wl.get_dataset("ShareGPT").sample(100, seed=5)
    b = wl.get_dataset("ShareGPT").sample(100, seed=5)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))


def test_capacity_split_and_oom_by_hand():
    model = wl.get_model("Qwen2.5-32B")
    cfg = PamModelConfig(hbm_stacks=10, ddr_dimms=2, ssds=1, hbm_reserve=0.0)
    hw = Hardware.from_config(cfg)
    hbm_free = 10 * 16e9 - model.weight_bytes            # 160 GB less the weights
    kv = hbm_free + 64e9 + 1e12                          # fills HBM, both DIMMs, 1 TB of SSD
    got = capacity_split(hw, model, kv, 0.0)
    assert got == pytest.approx([hbm_free / kv, 64e9 / kv, 1e12 / kv])
    assert capacity_split(hw, model, hbm_free + 64e9 + 2048e9 + 1e9, 0.0) is None
    assert capacity_split(hw, model, hbm_free + 1e9, 0.0, ("hbm",)) is None


def test_gemm_time_by_hand():
    cfg = PamModelConfig(model="LLaMA3-70B")
    hw = Hardware.from_config(cfg)
    m = wl.get_model("LLaMA3-70B")
    b = 512
    # 8 GPUs = TP 4 x PP 2: 1/8 of the FLOPs each; each of the 2 micro-batches re-reads the
    # stage's 1/8 of the weights; ring all-reduce moves 2 * 3/4 of (b / 2) x 8192 fp16 twice a
    # layer
    flops = 2 * m.active_params * b / 8
    gemm = max(flops / (989.4e12 * 0.7), m.weight_bytes * 2 / 8 / (3.35e12 * 0.85))
    allreduce = 2 * 80 * (b / 2) * 8192 * 2 * (2 * 3 / 4) / (450e9 * 0.9)
    assert fc_time(hw, m, b) == pytest.approx(gemm + allreduce)


def test_vllm_all_in_hbm_by_hand():
    cfg = PamModelConfig(model="Qwen2.5-32B", dataset="ShareGPT")
    lengths = {"ctx": 400.0, "total": 600.0, "out": 200.0}
    r = step("vLLM-offloading", cfg, 32, lengths)
    assert r["shares"] == pytest.approx([1.0, 0.0, 0.0])
    kv = 32 * 400 * (2 * 64 * 8 * 128 * 2)
    assert r["attention"] == pytest.approx(kv / (8 * 3.35e12 * 0.85))


# ---------------------------------------------------------------------------------------------
# Algorithm 2

def _alg2_literal(imp, tier, x, y):
    """PAM Algorithm 2 as written: one swap at a time, recomputing the device scores."""
    tier = tier.copy()

    def scores():
        return loc.device_scores(imp, tier)

    swaps = 0
    while True:
        sh, sd, ss = scores()
        if not (sh + sd) / ss < x + y:
            break
        d = np.flatnonzero(tier == 1)
        s = np.flatnonzero(tier == 2)
        lo, hi = d[np.argmin(imp[d])], s[np.argmax(imp[s])]
        if imp[hi] <= imp[lo]:
            break                          # no swap can raise the ratio any more
        tier[lo], tier[hi] = 2, 1
        swaps += 1
    while True:
        sh, sd, ss = scores()
        if not sh / sd < x / y:
            break
        h = np.flatnonzero(tier == 0)
        d = np.flatnonzero(tier == 1)
        lo, hi = h[np.argmin(imp[h])], d[np.argmax(imp[d])]
        if imp[hi] <= imp[lo]:
            break
        tier[lo], tier[hi] = 1, 0
        swaps += 1
    return tier, swaps


@pytest.mark.parametrize("seed", range(6))
def test_algorithm2_matches_the_literal_loop(seed):
    rng = np.random.default_rng(seed)
    n = 300
    imp = rng.lognormal(0, 1.2, n)
    tier = rng.choice(3, n, p=[0.2, 0.3, 0.5]).astype(np.int8)
    x, y = [(3.0, 2.0), (20.0, 4.0), (1.5, 1.2)][seed % 3]
    want, want_swaps = _alg2_literal(imp, tier, x, y)
    got = tier.copy()
    swaps = loc.schedule_step(imp, got, x, y)
    assert sum(swaps) == want_swaps
    assert np.array_equal(got, want)
    # invariants: no token lost or duplicated, every tier keeps its token count
    assert np.array_equal(np.bincount(got, minlength=3), np.bincount(tier, minlength=3))


def test_algorithm2_is_a_no_op_when_balanced():
    imp = np.array([9.0, 8.0, 2.0, 1.0, 0.5])
    tier = np.array([0, 0, 1, 2, 2], np.int8)
    before = tier.copy()
    assert loc.schedule_step(imp, tier, 1.0, 1.0) == (0, 0)
    assert np.array_equal(tier, before)


def test_fixed_tiling_work_by_hand():
    # tokens 0-19 in HBM, 20-39 in DDR; a tier stores its tokens 16 to a tile in order
    tier = np.array([0] * 20 + [1] * 20, np.int8)
    # token 0 -> HBM tile 0 (16 tokens); token 25 -> DDR rank 5 -> DDR tile 0 (16 tokens)
    assert loc._tiled_work(tier, np.array([0, 25])).tolist() == [16, 16, 0]
    # token 19 -> HBM rank 19 -> the last, partial tile (ranks 16-19: 4 tokens)
    assert loc._tiled_work(tier, np.array([19])).tolist() == [4, 0, 0]
    # two activated tokens in one tile cost one tile
    assert loc._tiled_work(tier, np.array([1, 2, 38])).tolist() == [16, 4, 0]


@pytest.mark.parametrize("policy", loc.POLICIES)
def test_trace_invariants(policy):
    shares = (0.2, 0.3, 0.5)
    p = loc.LocalityParams(drift=0.01)
    tr = loc.simulate(300, 40, shares, policy, ratios=(30.0, 5.0), params=p, seed=4)
    n = tr.tokens
    # sparse attention activates ceil(keep * n) tokens, each exactly once, in some tier
    assert np.array_equal(tr.activated.sum(axis=1), np.ceil(n / 8).astype(int))
    assert tr.fractions().sum() == pytest.approx(1.0)
    # both mappings spread the same activated tokens over the PUs
    load = tr.pu_load.sum(axis=2)
    assert np.array_equal(load[..., 0], tr.activated)
    assert np.array_equal(load[..., 1], tr.activated)
    assert np.all(tr.tiling_factor() >= 1.0 - 1e-12)
    if policy != "pam":
        assert not tr.migrated.any()
    again = loc.simulate(300, 40, shares, policy, ratios=(30.0, 5.0), params=p, seed=4)
    assert np.array_equal(tr.activated, again.activated)
    other = loc.simulate(300, 40, shares, policy, ratios=(30.0, 5.0), params=p, seed=5)
    assert not np.array_equal(tr.pu_load, other.pu_load)


def test_capacities_respected_in_traces(monkeypatch):
    """Every step, no tier holds more tokens than its share allows (the last tier takes the
    rest)."""
    seen = []
    real = loc.schedule_step

    def spy(imp, tier, x, y):
        out = real(imp, tier, x, y)
        seen.append(np.bincount(tier, minlength=3))
        return out

    monkeypatch.setattr(loc, "schedule_step", spy)
    shares = (0.1, 0.3, 0.6)
    loc.simulate(200, 30, shares, "pam", ratios=(50.0, 5.0), seed=2)
    assert len(seen) == 30
    for j, cnt in enumerate(seen):
        n = 200 + j
        assert cnt.sum() == n
        assert cnt[0] <= round(0.1 * n) and cnt[1] <= round(0.3 * n) + 1


def test_lambda_reaches_the_importance_factor(monkeypatch):
    """The config's lambda is the one eq. 7 runs with."""
    seen = []
    real = loc.importance_update

    def spy(i_prev, score, lam=loc.LAMBDA):
        seen.append(lam)
        return real(i_prev, score, lam)

    monkeypatch.setattr(loc, "importance_update", spy)
    loc.simulate(100, 3, (0.3, 0.3, 0.4), "pam", lam=0.25)
    assert seen == [0.25] * 3
    a = loc.simulate(300, 30, (0.2, 0.3, 0.5), "pam", ratios=(50.0, 5.0), lam=0.6, seed=1)
    b = loc.simulate(300, 30, (0.2, 0.3, 0.5), "pam", ratios=(50.0, 5.0), lam=0.1, seed=1)
    assert not np.array_equal(a.migrated, b.migrated)


def test_pam_keeps_important_tokens_high_and_static_does_not():
    shares = (0.2, 0.3, 0.5)
    pam = loc.simulate(600, 60, shares, "pam", ratios=(100.0, 10.0), seed=1).fractions()
    static = loc.simulate(600, 60, shares, "static", seed=1).fractions()
    assert pam[0] > 0.8                  # the activated tokens live in HBM
    assert static[0] < 0.45              # order-filled tiers see them spread as stored


# ---------------------------------------------------------------------------------------------
# calibration by the RTL cycle models

def test_tier_time_is_the_pu_cycle_model():
    tier = dv.PAM_TIERS["ddr"]
    # the DDR tier runs at the clock its pam_pu preset's netlist supports (test_synth_timing)
    assert tier.clock_mhz == HW_UNITS["pam_pu"].clocks["ddr"].mhz and tier.lanes == 4
    cfg = PamPuConfig(lanes=4, head_dim=128, tile_tokens=16)
    one = pu_schedule(cfg, [16])[-1][1] + 1
    five = pu_schedule(cfg, [16] * 5)[-1][1] + 1
    marginal = (five - one) / 4
    assert cal.pu_set_cycles(4, 128, 16) == marginal
    sets = 1e6
    per_pu = sets / (tier.active_pus * tier.devices)
    want = (per_pu * marginal + (one - marginal)) / (tier.clock_mhz * 1e6)
    assert tier.pu_time(128, sets, 16) == pytest.approx(want)
    # power cap: 204 GFLOPS over 2 * 4 lanes * 500 MHz = 51 of the 128 PUs may run
    assert tier.clock_mhz == 500.0 and tier.active_pus == pytest.approx(204e9 / (8 * 500e6))


def test_smartssd_kernel_time_is_the_hilos_cycle_model():
    cfg = HilosAttentionConfig(d_group=4, head_dim=128)
    one = kernel_schedule(cfg, [(2048, 2048)])["cycles"]
    five = kernel_schedule(cfg, [(2048, 2048)] * 5)["cycles"]
    assert cal.hilos_job_cycles(4, 128, 2048) == (five - one) / 4
    compute = (10 * (five - one) / 4 + one - (five - one) / 4) / 296e6
    ssd = dataclasses.replace(dv.SMARTSSD, dram_bw=0.0)        # the cycle model alone
    assert ssd.kernel_time(4, 128, 10, 2048) == pytest.approx(compute)
    # with the FPGA DRAM: 10 jobs x 2048 tokens x (K + V) x 128 x 2 B at 62% of 19.2 GB/s
    dram = 10 * 2048 * 2 * 128 * 2 / (19.2e9 * 11.9 / 19.2)
    assert dv.SMARTSSD.kernel_time(4, 128, 10, 2048) == pytest.approx(max(compute, dram))


def test_ru_merge_cycles_is_the_ru_cycle_model():
    cfg = PamRuConfig(vector_width=16, head_dim=128)
    want = (ru_cycles(cfg, [8] * 5) - ru_cycles(cfg, [8])) / 4
    assert cal.ru_merge_cycles(16, 128, 8) == want


# ---------------------------------------------------------------------------------------------
# the system

def test_pamattention_cost_is_the_slowest_tier_plus_the_reduction():
    """PAM §5: tiers run their local attention in parallel; the step pays the slowest one,
    the transfers of Q and the partials, and the final inter-device merge in an HBM RU."""
    cfg = PamModelConfig(model="LLaMA3-70B", dataset="Arxiv_sum")
    r = step("PAM", cfg, 4096)
    tiers = [r["parts"][t]["time"] for t in ("hbm", "ddr", "ssd")]
    assert sum(t > 0 for t in tiers) >= 2                 # several tiers work
    assert r["attention"] == pytest.approx(max(tiers) + r["comm"] + r["final_reduce"])
    assert r["final_reduce"] > 0
    # the final merge is the RU cycle model: sets = 4096 x 64 heads x 80 layers requests of
    # as many partials as tiers with tokens, over 256 RUs x 40 stacks at the HBM tier's clock
    # (its netlist's), in the RU's final (normalizing) mode
    hbm = dv.PAM_TIERS["hbm"]
    assert hbm.clock_mhz == HW_UNITS["pam_pu"].clocks["hbm"].mhz
    partials = sum(f > 0 for f in r["frac"])
    want = (4096 * 64 * 80 / (256 * 40) * cal.ru_merge_cycles(16, 128, partials, True)
            / (hbm.clock_mhz * 1e6))
    assert cal.ru_merge_cycles(16, 128, partials, True) >= cal.ru_merge_cycles(16, 128, partials)
    assert r["final_reduce"] == pytest.approx(want)
    assert hbm.rus == 256


def test_attacc_reports_oom_not_a_crash():
    cfg = PamModelConfig(model="OPT-175B", dataset="Arxiv_sum")
    r = step("AttAcc", cfg, 64)
    assert r["oom"] and math.isnan(throughput(r))
    assert not step("PAM", cfg, 64)["oom"]        # DDR and SSD hold it


def test_max_batch_is_the_peak_within_the_slo():
    cfg = PamModelConfig(model="LLaMA3-70B", dataset="WildChat")
    b, r = max_batch("vLLM-offloading", cfg, 0.1)
    assert b > 0 and r["time"] <= 0.1 and not r["oom"]
    lengths = request_lengths(cfg.dataset, cfg.seed)
    for g in BATCH_GRID:
        other = step("vLLM-offloading", cfg, g, lengths)
        if not other["oom"] and other["time"] <= 0.1:
            assert throughput(other) <= throughput(r) * 1.001, g
    # a looser SLO never gives less
    b2, r2 = max_batch("vLLM-offloading", cfg, 0.2)
    assert throughput(r2) >= throughput(r)


def test_pam_beats_its_ablations_when_tiers_spill():
    cfg = PamModelConfig(model="LLaMA3-70B", dataset="Arxiv_sum")
    pam = step("PAM", cfg, 4096)
    assert pam["shares"][2] > 0                       # the KV cache reaches the SSDs
    for v in ABLATIONS[1:]:
        assert step("PAM", cfg, 4096, variant=v)["attention"] >= pam["attention"] * 0.999
    assert step("LS-PIM", cfg, 4096)["attention"] > pam["attention"]


def test_config_errors_name_the_field():
    with pytest.raises(ConfigError, match="'keep'"):
        PamModelConfig(keep=2.0)
    with pytest.raises(ConfigError, match="'model'.*LLaMA3-70B"):
        PamModelConfig(model="GPT-5")


def test_runs_are_deterministic_across_processes(tmp_path):
    """Two fresh processes (no shared caches) give the same JSON, traces included."""
    outs = []
    for k in range(2):
        out = tmp_path / f"run{k}"
        p = _cli("model", "pam", "--preset", "offline_llama70b", "--set", "batch=4096",
                 "--set", "sweep=none", "--quiet", "--out", str(out))
        assert p.returncode == 0, p.stderr
        data = json.loads((out / "model.json").read_text())
        data.pop("seconds")
        outs.append(data)
    assert outs[0] == outs[1]
    assert outs[0]["data"]["systems"]["PAM"]["throughput"] > 0
    # and another seed draws other requests and traces
    p = _cli("model", "pam", "--preset", "offline_llama70b", "--set", "batch=4096", "--set",
             "sweep=none", "--set", "seed=3", "--quiet", "--out", str(tmp_path / "seed3"))
    other = json.loads((tmp_path / "seed3" / "model.json").read_text())
    assert other["data"]["systems"]["PAM"] != outs[0]["data"]["systems"]["PAM"]


def test_reproduce_smoke():
    res = reproduce(progress=False, with_sensitivity=False)   # the sensitivity reruns it
    assert len(res.rows) >= 20
    for r in res.rows:
        assert r.paper is not None and r.ours is not None and math.isfinite(r.ours), r.item
        if r.within is False:
            assert r.note, f"a miss needs its cause: {r.item}"
    assert {p.name for p in res.plots} == {"pam_fig9", "pam_fig10", "pam_fig12",
                                           "pam_fig11_llama3_wildchat", "pam_fig11_opt_wildchat",
                                           "pam_fig11_llama3_arxiv_sum",
                                           "pam_fig11_opt_arxiv_sum"}
    assert res.assumptions
    # the sensitivity table's first line (the assumed values) repeats the headline rows' values;
    # its other six lines rerun the model (about 20 s): the long run's test below
    sens = sensitivity(progress=False, labels=[SENSITIVITY[0][0]])
    assert [r[0] for r in sens.rows] == [SENSITIVITY[0][0]]
    base = dict(zip(sens.columns, sens.rows[0]))
    conv = next(r.ours for r in res.rows if r.item.startswith("conversation"))
    assert base["conversation PAM / vLLM"] == pytest.approx(conv)


@pytest.mark.slow
def test_sensitivity_table_every_parameter():
    """Every line of the sensitivity table, in order, with finite gains; the first repeats the
    headline values, and the GPU-efficiency lines move the conversation gain."""
    sens = sensitivity(progress=False)
    assert [r[0] for r in sens.rows] == [lab for lab, _ in SENSITIVITY]
    assert all(math.isfinite(x) for r in sens.rows for x in r[1:])
    col = sens.columns.index("conversation PAM / vLLM")
    gains = {r[0]: r[col] for r in sens.rows}
    assert gains["GPU GEMMs at 100% of peak"] != gains["GPU GEMMs at 35% of peak"]


# ---------------------------------------------------------------------------------------------
# command line

def _strict_json(path):
    """JSON as the standard has it: NaN or Infinity in the file is an error."""
    def bad(token):
        raise ValueError(f"{path}: non-standard JSON constant {token}")
    return json.loads(path.read_text(), parse_constant=bad)


def _cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "pimforge", *args], capture_output=True,
                          text=True, cwd=cwd)


def test_cli_model_writes_json_markdown_and_png(tmp_path):
    out = tmp_path / "m"
    p = _cli("model", "pam", "--preset", "small", "--set", "model=OPT-175B", "--set", "batch=512",
             "--out", str(out))
    assert p.returncode == 0, p.stderr
    data = _strict_json(out / "model.json")
    assert data["config"]["model"] == "OPT-175B"
    assert data["data"]["systems"]["AttAcc"]["oom"] is True        # OOM is reported
    assert data["data"]["systems"]["AttAcc"]["throughput"] is None  # as null, not NaN
    assert "OOM" in (out / "model.md").read_text()
    assert (out / "pam_systems.png").read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize("args, needle", [
    (["model", "pam", "--set", "batchh=3"], "unknown field 'batchh'"),
    (["model", "pam", "--set", "drift=2"], "field 'drift'"),
    (["model", "pam", "--preset", "nope"], "unknown preset 'nope'"),
    (["model", "nope"], "unknown system 'nope'"),
    (["reproduce", "pam", "--seed", "-1"], "--seed"),
])
def test_cli_errors_are_one_line(tmp_path, args, needle):
    p = _cli(*args, "--out", str(tmp_path / "o"))
    assert p.returncode == 2
    assert needle in p.stderr and len(p.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()


def test_cli_output_path_that_is_a_file(tmp_path):
    f = tmp_path / "file"
    f.write_text("x")
    p = _cli("model", "pam", "--preset", "small", "--out", str(f))
    assert p.returncode == 2 and "is a file" in p.stderr


def test_cli_yaml_config(tmp_path):
    y = tmp_path / "c.yaml"
    y.write_text("model: Qwen2.5-32B\nbatch: 16\nsweep: none\nfoo: 1\n")
    p = _cli("model", "pam", "--config", str(y), "--out", str(tmp_path / "o"))
    assert p.returncode == 2 and "unknown field 'foo'" in p.stderr
    y.write_text("model: [\n")
    p = _cli("model", "pam", "--config", str(y), "--out", str(tmp_path / "o"))
    assert p.returncode == 2 and "malformed YAML" in p.stderr
