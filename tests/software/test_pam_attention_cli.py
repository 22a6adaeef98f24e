"""`pimforge run pam-attention` as a user drives it: outputs, report, one-line errors, rtl backend."""
import json
import subprocess
import sys

import numpy as np
import pytest
from conftest import require_sim

from pimforge.base.numerics import spread
from pimforge.cli import main
from pimforge.sim.benches.pam.inputs import make_inputs
from pimforge.sim.golden.pam.system import attention_f64


def _save(tmp_path, q, k, v):
    paths = {}
    for name, arr in (("q", q), ("k", k), ("v", v)):
        paths[name] = tmp_path / f"{name}.npy"
        np.save(paths[name], arr)
    return paths


def _argv(paths, out, *extra):
    return ["run", "pam-attention", "--q", str(paths["q"]), "--k", str(paths["k"]),
            "--v", str(paths["v"]), "--out", str(out), *extra]


@pytest.fixture
def inputs(tmp_path):
    q, k, v = make_inputs("normal", 2, 40, 64, np.random.default_rng(3))
    return _save(tmp_path, q, k.astype(np.float32), v)


def test_writes_output_and_report(tmp_path, inputs, capsys):
    out, rep = tmp_path / "res" / "o.npy", tmp_path / "r.json"
    code = main(_argv(inputs, out, "--split", "2:1:1", "--pus", "3:2:1", "--acc", "fp32",
                      "--tile", "4", "--report", str(rep)))
    text = capsys.readouterr().out
    assert code == 0
    o = np.load(out)
    assert o.dtype == np.float16 and o.shape == (2, 64)
    q, k, v = (np.load(inputs[n]).astype(np.float16).astype(np.float64) for n in "qkv")
    report = json.loads(rep.read_text())
    assert report["backend"] == "golden" and report["acc"] == "fp32" and report["tile"] == 4
    assert len(report["per_head"]) == 2
    for h, head in enumerate(report["per_head"]):
        ref = attention_f64(q[h], k[h], v[h], 1 / 8)
        err = np.abs(o[h] - ref).max() / np.abs(ref).max()
        assert err <= 1e-3 and head["rel_err"] == pytest.approx(err, rel=1e-6)
        assert head["tier_tokens"] == {"hbm": 20, "ddr": 10, "ssd": 10}
        assert head["pus"] == {"hbm": 3, "ddr": 2, "ssd": 1}
        assert head["pu_tokens"] == {"hbm": [7, 7, 6], "ddr": [5, 5], "ssd": [10]}
        # lse = log(sum exp(s)) of the float64 scores, to fp32 accumulation accuracy
        s = k[h] @ q[h] / 8
        assert head["lse"] == pytest.approx(np.log(np.exp(s).sum()), abs=1e-4)
        assert head["m"] == pytest.approx(s.max(), abs=1e-4)
        assert head["l"] == pytest.approx(np.exp(s - head["m"]).sum(), rel=1e-4)
    assert "2 head(s), d=64, N=40, split 2:1:1, pus 3:2:1, acc fp32" in text
    assert f"wrote {out}" in text and f"wrote {rep}" in text


def test_defaults_and_summary(tmp_path, inputs, capsys):
    out = tmp_path / "o.npy"
    assert main(_argv(inputs, out)) == 0
    text = capsys.readouterr().out
    assert "split 1:1:1, pus 4:4:4, acc fp16, tile 16, scale 0.125" in text
    assert "head 1: tokens hbm/ddr/ssd 14/13/13" in text
    assert spread(40, [1, 1, 1]) == [14, 13, 13]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["k.npy", "o.npy", "q.npy", "v.npy"]


def test_scale_option(tmp_path, inputs, capsys):
    out = tmp_path / "o.npy"
    assert main(_argv(inputs, out, "--scale", "0.5", "--acc", "fp32")) == 0
    q, k, v = (np.load(inputs[n]).astype(np.float16).astype(np.float64) for n in "qkv")
    ref = attention_f64(q[0], k[0], v[0], 0.5)
    assert np.abs(np.load(out)[0] - ref).max() <= 1e-3 * np.abs(ref).max()


# (id, how to make the arrays / argv, exact message); {dir} is the test's tmp_path
def _arrays(q_shape=(2, 64), k_shape=(2, 40, 64), v_shape=None, dtype=np.float16):
    rng = np.random.default_rng(0)
    return [rng.standard_normal(s).astype(dtype) for s in (q_shape, k_shape, v_shape or k_shape)]


BAD = [
    ("missing-file", {"q": "{dir}/nope.npy"}, [], "Q file '{dir}/nope.npy' does not exist"),
    ("not-npy", {"k": "text"}, [], "K file '{dir}/k.npy' is not a .npy file"),
    ("is-directory", {"v": "{dir}"}, [], "V file '{dir}' is a directory; give a .npy file"),
    ("q-ndim", {"arrays": _arrays(q_shape=(64,))}, [],
     "Q must have 2 dimensions (heads, d), got shape (64,)"),
    ("k-ndim", {"arrays": _arrays(k_shape=(40, 64), v_shape=(2, 40, 64))}, [],
     "K must have 3 dimensions (heads, N, d), got shape (40, 64)"),
    ("kv-mismatch", {"arrays": _arrays(v_shape=(2, 41, 64))}, [],
     "K shape (2, 40, 64) and V shape (2, 41, 64) differ; they must be equal"),
    ("q-k-mismatch", {"arrays": _arrays(q_shape=(3, 64))}, [],
     "Q shape (3, 64) does not match K shape (2, 40, 64); Q must be (heads, d) for K and V of "
     "shape (heads, N, d)"),
    ("d-not-allowed", {"arrays": _arrays(q_shape=(2, 32), k_shape=(2, 40, 32))}, [],
     "head dimension d=32 is not supported; allowed: 64, 128, 256"),
    ("no-tokens", {"arrays": _arrays(k_shape=(2, 0, 64))}, [],
     "K and V hold no tokens (N = 0); need at least one"),
    ("dtype-int", {"arrays": _arrays(dtype=np.int32)}, [],
     "Q has dtype int32; allowed: float16, float32"),
    ("dtype-float64", {"arrays": _arrays(dtype=np.float64)}, [],
     "Q has dtype float64; allowed: float16, float32"),
    ("overflow", {"arrays": _arrays(dtype=np.float32), "poke": ("k", 70000.0)}, [],
     "K has values that overflow fp16 (largest magnitude 70000; fp16 holds up to 65504)"),
    ("nan", {"arrays": _arrays(dtype=np.float32), "poke": ("v", np.nan)}, [],
     "V holds NaN or Inf values; only finite numbers are allowed"),
    ("split-two", {}, ["--split", "1:2"],
     "--split must be three non-negative numbers H:D:S with a positive sum, got '1:2'"),
    ("split-zero", {}, ["--split", "0:0:0"],
     "--split must be three non-negative numbers H:D:S with a positive sum, got '0:0:0'"),
    ("split-negative", {}, ["--split", "1:-1:1"],
     "--split must be three non-negative numbers H:D:S with a positive sum, got '1:-1:1'"),
    ("split-text", {}, ["--split", "a:b:c"],
     "--split must be three non-negative numbers H:D:S with a positive sum, got 'a:b:c'"),
    ("pus-zero", {}, ["--pus", "0:4:4"], "--pus must be three integers H:D:S, each in 1..16, got '0:4:4'"),
    ("pus-high", {}, ["--pus", "4:4:17"],
     "--pus must be three integers H:D:S, each in 1..16, got '4:4:17'"),
    ("pus-float", {}, ["--pus", "4:2.5:4"],
     "--pus must be three integers H:D:S, each in 1..16, got '4:2.5:4'"),
    ("backend", {}, ["--backend", "verilog"], "unknown backend 'verilog'; allowed: golden, rtl"),
    ("acc", {}, ["--acc", "bf16"], "unknown accumulator format 'bf16'; allowed: fp16, fp32"),
    ("tile", {}, ["--tile", "0"], "--tile must be an integer in 1..64, got '0'"),
    ("scale", {}, ["--scale", "-1"], "--scale must be a number in (0, 65504], got '-1'"),
    ("out-is-dir", {"out": "{dir}"}, [], "--out '{dir}' is a directory; give a file path"),
    ("missing-out", {"out": None}, [],
     "pimforge run pam-attention: the following arguments are required: --out"),
]


@pytest.mark.parametrize("case", BAD, ids=[c[0] for c in BAD])
def test_bad_input(case, tmp_path, capsys):
    _, spec, extra, message = case
    arrays = spec.get("arrays") or _arrays()
    if "poke" in spec:
        name, value = spec["poke"]
        arrays["qkv".index(name)].flat[5] = value
    paths = _save(tmp_path, *arrays)
    for name in "qkv":
        if spec.get(name) == "text":
            paths[name].write_text("1 2 3\n")
        elif name in spec:
            paths[name] = spec[name].replace("{dir}", str(tmp_path))
    out = tmp_path / "res" / "o.npy"
    rep = tmp_path / "r.json"
    argv = _argv(paths, spec.get("out", str(out)), "--report", str(rep), *extra)
    if spec.get("out", 1) is None:
        argv = argv[:argv.index("--out")] + argv[argv.index("--out") + 2:]
    else:
        argv = [a.replace("{dir}", str(tmp_path)) for a in argv]
    before = sorted(p.name for p in tmp_path.iterdir())
    code = main(argv)
    captured = capsys.readouterr()
    assert code == 2
    assert captured.err == f"error: {message.replace('{dir}', str(tmp_path))}\n"
    assert "Traceback" not in captured.out
    assert sorted(p.name for p in tmp_path.iterdir()) == before    # nothing written


def test_bad_input_leaves_existing_output_alone(tmp_path, inputs):
    out = tmp_path / "o.npy"
    out.write_bytes(b"old")
    assert main(_argv(inputs, out, "--pus", "4:4:0")) == 2
    assert out.read_bytes() == b"old"


def test_process_exit_code_and_no_traceback(tmp_path, inputs):
    r = subprocess.run([sys.executable, "-m", "pimforge", *_argv(inputs, tmp_path / "o.npy",
                                                                  "--split", "1:1")],
                       capture_output=True, text=True)
    assert r.returncode == 2
    assert r.stderr == ("error: --split must be three non-negative numbers H:D:S with a positive "
                        "sum, got '1:1'\n")
    assert not (tmp_path / "o.npy").exists()


@pytest.mark.rtl
@pytest.mark.slow
def test_rtl_backend_hbm_tier_equals_golden(tmp_path, capsys):
    """The rtl backend with every token on the HBM tier (one PU, its RU and the final RU); the
    three-tier run below covers all three tiers.  Both are the long run's: the backend runs the
    tier presets' Verilog (16-lane PU, 16-wide RUs at d = 128), whose two RU builds and
    simulations would take about 60 s of the default run.  The default run
    checks the same PU and RU generators bit for bit at small configs (tests/pam/test_pu.py,
    test_ru.py) and the golden flow's composition (tests/software/test_pam_attention.py).  At
    d = 128 the designs are the hbm PU preset's and the RU's default and final configs
    (tests/pam/test_ru.py RU_SLOW): their Verilator builds are shared."""
    require_sim("verilator")
    q, k, v = make_inputs("normal", 1, 40, 128, np.random.default_rng(12))
    paths = _save(tmp_path, q, k, v)
    gold, rtl, rep = tmp_path / "gold.npy", tmp_path / "rtl.npy", tmp_path / "rtl.json"
    common = ["--split", "1:0:0", "--pus", "1:1:1"]
    assert main(_argv(paths, gold, *common)) == 0
    assert main(_argv(paths, rtl, *common, "--backend", "rtl", "--report", str(rep))) == 0
    assert "bit-exact" in capsys.readouterr().out
    assert np.array_equal(np.load(gold).view(np.uint16), np.load(rtl).view(np.uint16))
    sims = [(s["unit"], s["tier"]) for s in json.loads(rep.read_text())["rtl_simulations"]]
    assert sims[0] == ("pam_pu", "hbm") and ("pam_ru", "hbm final") in sims


@pytest.mark.rtl
@pytest.mark.slow
def test_rtl_backend_equals_golden_bit_for_bit(tmp_path, capsys):
    """The Verilog of pam_pu and pam_ru, unit by unit, gives the golden model's bits, on all
    three tiers (five Verilator builds, about four minutes: long run)."""
    require_sim("verilator")
    from pimforge.registry import units
    missing = {"pam_pu", "pam_ru"} - set(units())
    if missing:
        pytest.skip(f"units not registered yet: {', '.join(sorted(missing))}")
    # 56 tokens: 19/19/18 over the tiers; HBM and DDR PUs run two tiles (16 + 3), the SSD
    # tier's RU merges two PU partials, the final RU three tier partials
    q, k, v = make_inputs("normal", 1, 56, 64, np.random.default_rng(11))
    paths = _save(tmp_path, q, k, v)
    gold, rtl, rep = tmp_path / "gold.npy", tmp_path / "rtl.npy", tmp_path / "rtl.json"
    common = ["--pus", "1:1:2"]
    assert main(_argv(paths, gold, *common)) == 0
    assert main(_argv(paths, rtl, *common, "--backend", "rtl", "--report", str(rep))) == 0
    assert "bit-exact" in capsys.readouterr().out
    assert np.array_equal(np.load(gold).view(np.uint16), np.load(rtl).view(np.uint16))
    report = json.loads(rep.read_text())
    sims = [(s["unit"], s["tier"]) for s in report["rtl_simulations"]]
    assert sims == [("pam_pu", "hbm"), ("pam_ru", "hbm"), ("pam_pu", "ddr"), ("pam_ru", "ddr"),
                    ("pam_pu", "ssd"), ("pam_ru", "ssd"), ("pam_ru", "hbm final")]
    assert [s["phases"] for s in report["rtl_simulations"]] == [1, 1, 1, 1, 2, 1, 1]
    assert report["per_head"][0]["pu_tokens"] == {"hbm": [19], "ddr": [19], "ssd": [9, 9]}
