"""hilos_attention: the kernel flow against float64 attention (d_group 1/4/5, lengths, masks,
precomputed scores, four score distributions), masked positions, the command line, and the RTL
top (bit-exact with the DRAM model, stalls, kernel cycles against the bound, cycle model)."""
import json

import numpy as np
import pytest

from conftest import require_sim
from pimforge import api
from pimforge.cli import main
from pimforge.sim.benches.pam.inputs import make_inputs

TOL = 1e-3   # the bound on ||O - O_ref||_inf / ||O_ref||_inf


def _inputs(kind, G, n, d=128, seed=0, hkv=1):
    rng = np.random.default_rng(seed)
    q, k, v = make_inputs(kind, hkv, n, d, rng)
    # the d_group queries of a KV head: the distribution's query, then G - 1 normal ones
    qs = [np.concatenate([q[i:i + 1], rng.standard_normal((G - 1, d)).astype(np.float16)])
          for i in range(hkv)]
    return np.concatenate(qs), k, v


LENGTHS = [1, 127, 128, 129]
KINDS = ["normal", "heavy", "dominant", "equal"]


@pytest.mark.parametrize("G", [1, 4, 5])
@pytest.mark.parametrize("kind", KINDS)
def test_short_lengths_against_float64(G, kind):
    for n in LENGTHS:
        q, k, v = _inputs(kind, G, n, seed=n)
        res = api.hilos_attention(q, k, v)
        assert res.max_rel_err <= TOL, (G, kind, n, res.rel_err)


@pytest.mark.parametrize("G, kind", [
    (5, "normal"), (5, "heavy"),
    *[pytest.param(g, k, marks=pytest.mark.slow) for g in (1, 4, 5) for k in KINDS
      if (g, k) not in ((5, "normal"), (5, "heavy"))]])
def test_8192_tokens_against_float64(G, kind):
    q, k, v = _inputs(kind, G, 8192, seed=3)
    res = api.hilos_attention(q, k, v)
    assert res.max_rel_err <= TOL, res.rel_err


def _with_precomputed(G, n_k, c, d=128, seed=5, hkv=2):
    """K of the n_k stored tokens; the host's scores of the c newest (their K never reaches the
    kernel), computed in float64 from fp16 inputs."""
    q, k, v = _inputs("normal", G, n_k + c, d, seed, hkv)
    qf = q.astype(np.float64)
    pre = np.stack([k[i // G, n_k:].astype(np.float64) @ qf[i] / np.sqrt(d)
                    for i in range(len(q))])
    return q, k[:, :n_k], v, pre


@pytest.mark.parametrize("G", [1, 4, 5])
def test_masks_and_precomputed_scores(G):
    rng = np.random.default_rng(G)
    q, k, v, pre = _with_precomputed(G, 200, 16)
    mask = rng.random((2, 216)) < 0.3
    res = api.hilos_attention(q, k, v, mask=mask, precomputed=pre)
    assert res.max_rel_err <= TOL, res.rel_err
    # the precomputed scores matter: dropping them (as if masked) changes O
    full = np.concatenate([mask, np.ones((2, 16), dtype=bool)], axis=1)[:, :216]
    full[:, 200:] = True
    other = api.hilos_attention(q, k, v, mask=full, precomputed=pre)
    assert not np.array_equal(other.o, res.o)


def test_masked_positions_leave_o_bit_identical():
    """Changing masked K rows, V rows and precomputed scores changes nothing."""
    rng = np.random.default_rng(11)
    q, k, v, pre = _with_precomputed(4, 150, 8, hkv=1)
    mask = rng.random(158) < 0.4
    a = api.hilos_attention(q, k, v, mask=mask, precomputed=pre)
    k2, v2, p2 = k.copy(), v.copy(), pre.copy()
    km = mask[:150]
    k2[0, km] = rng.standard_normal((km.sum(), 128)) * 100
    v2[0, mask] = 6e4    # (the flow takes finite inputs; the golden test uses Inf)
    p2[:, mask[150:]] = 1e4
    b = api.hilos_attention(q, k2, v2, mask=mask, precomputed=p2)
    assert np.array_equal(a.o.view(np.uint16), b.o.view(np.uint16))


def test_all_masked_gives_zero():
    q, k, v = _inputs("normal", 2, 40)
    res = api.hilos_attention(q, k, v, mask=np.ones(40, dtype=bool))
    assert not res.o.any()


def test_fp16_scores_option_is_the_papers_format():
    """fp16 scores (the paper's format) work on normal inputs but lose 1e-3 on heavy tails: the
    reason the default is fp32 (hw/hilos/config.py)."""
    q, k, v = _inputs("normal", 4, 1024)
    assert api.hilos_attention(q, k, v, score_fmt="fp16").max_rel_err <= TOL
    q, k, v = _inputs("heavy", 1, 8192, seed=3)
    assert api.hilos_attention(q, k, v, score_fmt="fp16").max_rel_err > TOL


# ---------------------------------------------------------------------------------------------
# command line

def _save(tmp_path, **arrays):
    paths = {}
    for name, a in arrays.items():
        p = tmp_path / f"{name}.npy"
        np.save(p, a)
        paths[name] = str(p)
    return paths


def test_cli_golden_with_mask_and_precomputed(tmp_path, capsys):
    q, k, v, pre = _with_precomputed(4, 100, 4)
    mask = np.zeros((2, 104), dtype=bool)
    mask[:, 7] = True
    p = _save(tmp_path, q=q, k=k, v=v, m=mask, p=pre)
    out, rep = tmp_path / "o.npy", tmp_path / "r.json"
    rc = main(["run", "hilos-attention", "--q", p["q"], "--k", p["k"], "--v", p["v"],
               "--mask", p["m"], "--precomputed", p["p"], "--out", str(out),
               "--report", str(rep)])
    assert rc == 0
    o = np.load(out)
    assert o.shape == (8, 128) and o.dtype == np.float16
    api_o = api.hilos_attention(q, k, v, mask=mask, precomputed=pre).o
    assert np.array_equal(o.view(np.uint16), api_o.view(np.uint16))
    r = json.loads(rep.read_text())
    assert r["d_group"] == 4 and r["precomputed"] == 4 and r["max_rel_err"] <= TOL
    assert "d_group 4" in capsys.readouterr().out


@pytest.mark.parametrize("change, msg", [
    ({"q": np.zeros((3, 128), np.float32)}, "d_group = Hq / Hkv"),
    ({"v": np.zeros((2, 50, 128), np.float32)}, "without --precomputed"),
    ({"m": np.zeros(7, dtype=bool)}, "mask must have shape"),
    ({"m": np.full(100, 0.5)}, "mask has dtype"),
    ({"k": np.zeros((2, 100, 96), np.float32), "v": np.zeros((2, 100, 96), np.float32),
      "q": np.zeros((4, 96), np.float32)}, "d=96"),
])
def test_cli_errors_are_one_line(tmp_path, capsys, change, msg):
    q, k, v = _inputs("normal", 2, 100, hkv=2)
    arrays = {"q": q, "k": k, "v": v, "m": np.zeros(100, dtype=bool)}
    arrays.update(change)
    p = _save(tmp_path, **arrays)
    out = tmp_path / "o.npy"
    rc = main(["run", "hilos-attention", "--q", p["q"], "--k", p["k"], "--v", p["v"],
               "--mask", p["m"], "--out", str(out)])
    err = capsys.readouterr().err
    assert rc == 2 and msg in err and err.count("\n") == 1, err
    assert not out.exists()


def test_cli_bad_block_and_backend(tmp_path, capsys):
    q, k, v = _inputs("normal", 1, 10)
    p = _save(tmp_path, q=q, k=k, v=v)
    base = ["run", "hilos-attention", "--q", p["q"], "--k", p["k"], "--v", p["v"], "--out",
            str(tmp_path / "o.npy")]
    assert main(base + ["--block", "100"]) == 2
    assert "--block must be one of 32, 64, 128" in capsys.readouterr().err
    assert main(base + ["--backend", "fpga"]) == 2
    assert "unknown backend" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------
# the RTL top: one small config in the default run (8-element beats, d = 64, block 32, d_group 2)

SMALL = {"beat_elems": 8, "head_dim": 64, "block": 32, "d_group": 2}


def _cfg(**kw):
    return api.config("hilos_attention", overrides={**SMALL, **kw})


def _run(cfg, job):
    require_sim("verilator")
    res = api.run_bench("hilos_attention", cfg, job=job)
    assert res.passed, f"hilos_attention RTL does not match the golden model:\n{res.summary()}" \
                       f"\nlog: {res.log}"
    return res


@pytest.fixture(scope="module")
def small_run():
    """Default jobs (n = 1, masks, precomputed scores) without and with random stalls on every
    stream, DRAM latency 20 cycles."""
    cfg = _cfg()
    return cfg, _run(cfg, api.get_unit("hilos_attention").bench(cfg, np.random.default_rng(1)))


def test_rtl_matches_golden_with_and_without_stalls(small_run):
    from pimforge.sim.benches.hilos.attention import DEFAULT_JOBS
    cfg, res = small_run
    assert [p.name for p in res.phases] == ["no stalls", "random stalls p=0.3"]
    per_job = cfg.d_group * cfg.row_beats
    assert len(res.phases[0].received["o"]) == len(DEFAULT_JOBS) * per_job


def test_rtl_reads_scores_only_after_writing_them(small_run):
    """The DRAM model's read-after-write rule held: every score beat was read back after the
    kernel had written it (the harness enforces it; this checks the stamps)."""
    _, res = small_run
    for ph in res.phases:
        w, r = ph.out_stamps["o_s"], ph.in_stamps["i_s"]
        assert len(w) == len(r) and all(b > a + 20 for a, b in zip(w, r))


def test_cycle_model_within_2_percent_of_default_bench(small_run):
    from pimforge.hw.hilos.attention import kernel_schedule
    from pimforge.sim.benches.hilos.attention import DEFAULT_JOBS
    cfg, res = small_run
    jobs = [(n_k, n_k + c) for n_k, c, _ in DEFAULT_JOBS]
    model = kernel_schedule(cfg, jobs, latency=20)["cycles"]
    assert abs(model - res.phases[0].cycles) <= 0.02 * res.phases[0].cycles, \
        (model, res.phases[0].cycles)


@pytest.fixture(scope="module")
def kernel_run():
    """12 KV heads x 512 tokens back to back, DRAM at one beat per cycle per port."""
    from pimforge.sim.benches.hilos.attention import attention_phase, random_job
    from pimforge.sim.harness.job import Job
    cfg = _cfg()
    rng = np.random.default_rng(3)
    jobs = [random_job(cfg, rng, 512) for _ in range(12)]
    return cfg, _run(cfg, Job([attention_phase(cfg, jobs)])), [(512, 512)] * 12


def test_kernel_within_1_10_of_the_bound(kernel_run):
    """QK^T of job h+1 overlaps pass 2 and S.V of job h, so the kernel takes about (J + 1) / J
    times max(QK^T beats, S.V beats, softmax pass cycles); J = 12 here."""
    from pimforge.hw.hilos.attention import bound_parts, kernel_bound
    cfg, res, shape = kernel_run
    ph = res.phases[0]
    bound = kernel_bound(cfg, shape)
    parts = bound_parts(cfg, shape)
    assert bound == parts["qk_beats"] == 12 * 512 * cfg.row_beats
    assert ph.cycles <= 1.10 * bound, (ph.cycles, bound)


def test_kernel_consumes_k_and_v_at_one_beat_per_cycle(kernel_run):
    cfg, res, _ = kernel_run
    ph = res.phases[0]
    for s in ("i_k", "i_v"):
        st = ph.in_stamps[s]
        assert len(st) / (st[-1] + 1 - st[0]) >= 0.97, s


def test_kernel_cycle_model_within_2_percent(kernel_run):
    from pimforge.hw.hilos.attention import attention_cycles
    cfg, res, _ = kernel_run
    model = attention_cycles(cfg, 512, 12)
    assert abs(model - res.phases[0].cycles) <= 0.02 * res.phases[0].cycles


def test_checker_catches_a_one_bit_error():
    from pimforge.sim.benches.hilos.attention import attention_phase, random_job
    from pimforge.sim.harness.job import Job
    cfg = _cfg()
    ph = attention_phase(cfg, [random_job(cfg, np.random.default_rng(2), 20)])
    ph.expected["o"]["data"][1] ^= 1 << 5
    require_sim("verilator")
    res = api.run_bench("hilos_attention", cfg, job=Job([ph]))
    assert not res.passed
    assert any("transfer #1" in e for e in res.phases[0].errors)


def test_cli_rtl_backend_equals_golden(tmp_path):
    """`run hilos-attention --backend rtl` on the small hardware config: the RTL's O is the
    golden flow's O bit for bit."""
    q, k, v, pre = _with_precomputed(2, 45, 3, d=64, hkv=2)
    mask = np.random.default_rng(4).random(48) < 0.2
    p = _save(tmp_path, q=q, k=k, v=v, m=mask, p=pre)
    outs = {}
    for backend in ("golden", "rtl"):
        out = tmp_path / f"{backend}.npy"
        assert main(["run", "hilos-attention", "--q", p["q"], "--k", p["k"], "--v", p["v"],
                     "--mask", p["m"], "--precomputed", p["p"], "--block", "32",
                     "--beat-elems", "8", "--backend", backend, "--out", str(out)]) == 0
        outs[backend] = np.load(out).view(np.uint16)
    assert np.array_equal(outs["golden"], outs["rtl"])


def test_presets_and_manifest():
    unit = api.get_unit("hilos_attention")
    assert list(unit.presets) == ["hilos_dgroup1", "hilos_dgroup4", "hilos_dgroup5"]
    for g in (1, 4, 5):
        cfg = unit.preset_config(f"hilos_dgroup{g}")
        assert (cfg.d_group, cfg.block, cfg.beat_elems) == (g, 128, 32)
    assert unit.preset_config("hilos_dgroup5").lanes == 2      # the paper's exp unroll of two
    man = api.elaborate("hilos_attention", _cfg())[1]
    assert set(man["streams"]) == {"i_q", "i_k", "i_pre", "o_s", "i_s", "i_v", "o"}
    assert man["mac_lanes"] == {"qk_gemv": 16, "sv_gemv": 16}


@pytest.mark.parametrize("overrides, field", [
    ({"block": 96}, "block"), ({"beat_elems": 64}, "beat_elems"), ({"d_group": 9}, "d_group"),
    ({"head_dim": 256}, "head_dim"), ({"score_fmt": "bf16"}, "score_fmt"),
    ({"block": 32, "beat_elems": 32}, "block"),
])
def test_bad_config_names_the_field(overrides, field):
    from pimforge.base.errors import ConfigError
    with pytest.raises(ConfigError) as e:
        api.config("hilos_attention", overrides=overrides)
    assert e.value.field == field and "hilos_attention" in str(e.value)


@pytest.mark.slow
@pytest.mark.parametrize("preset", ["hilos_dgroup1", "hilos_dgroup4", "hilos_dgroup5"])
def test_rtl_presets(preset):
    """The paper's presets (d = 128, 512-bit beats, block 128): default jobs with stalls."""
    cfg = api.get_unit("hilos_attention").preset_config(preset)
    _run(cfg, api.get_unit("hilos_attention").bench(cfg, np.random.default_rng(1)))


