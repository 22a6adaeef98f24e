"""The ``pimforge run hilos-attention`` flow (software/hilos/attention.py): the kernel against
float64 attention (d_group 1/4/5, lengths, masks, precomputed scores, four score distributions),
masked positions, and the command line (golden and rtl backends)."""
import json

import numpy as np
import pytest

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


# The default run keeps the heavy-tailed draw (about 10 s); the rest of the grid, the normal
# draw at G = 5 included, is the long run's (the default run's time budget).
@pytest.mark.parametrize("G, kind", [
    (5, "heavy"),
    *[pytest.param(g, k, marks=pytest.mark.slow) for g in (1, 4, 5) for k in KINDS
      if (g, k) != (5, "heavy")]])
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
