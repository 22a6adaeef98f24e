"""`pimforge run hermes-gemv` as a user drives it: the four modes against float64 (computed here),
the merge, the report, the rtl backend giving the same bits, and one-line errors with nothing
written."""
import json

import numpy as np
import pytest
from conftest import require_sim

from pimforge import api
from pimforge.cli import main


@pytest.fixture
def files(tmp_path):
    r = np.random.default_rng(7)
    arrays = {"w": r.standard_normal((96, 64)).astype(np.float16),
              "x": r.standard_normal((3, 64)).astype(np.float32),
              "x1": r.standard_normal(64).astype(np.float16),
              "rows": np.array([5, 2, 40, 77]), "cols": np.array([1, 9, 33, 63]),
              "p": r.standard_normal((3, 96)).astype(np.float16),
              "dup": np.array([3, 3]), "far": np.array([96]), "bad": np.zeros((2, 2), dtype=np.int64)}
    paths = {}
    for k, a in arrays.items():
        paths[k] = tmp_path / f"{k}.npy"
        np.save(paths[k], a)
    return arrays, paths


def _argv(paths, out, x="x", *extra):
    return ["run", "hermes-gemv", "--w", str(paths["w"]), "--x", str(paths[x]), "--out",
            str(out), *extra]


def _ref(a, mode, x="x", active=None, p=None):
    w = a["w"].astype(np.float64)
    xv = np.atleast_2d(a[x].astype(np.float16).astype(np.float64))
    y = np.zeros((len(xv), w.shape[0])) if p is None else a[p].astype(np.float64).copy()
    if mode == "cols":
        return y + xv[:, active] @ w[:, active].T
    rows = np.arange(w.shape[0]) if active is None else active
    y[:, rows] += xv @ w[rows].T
    return y


@pytest.mark.parametrize("mode,active,p", [("dense", None, None), ("rows", "rows", "p"),
                                           ("cols", "cols", None), ("cols", "cols", "p")])
def test_modes_against_float64(tmp_path, files, capsys, mode, active, p):
    a, paths = files
    out, rep = tmp_path / "y.npy", tmp_path / "r.json"
    extra = ["--mode", mode, "--report", str(rep)]
    if active:
        extra += ["--active", str(paths[active])]
    if p:
        extra += ["--gpu-partial", str(paths[p])]
    assert main(_argv(paths, out, "x", *extra)) == 0
    y = np.load(out)
    assert y.dtype == np.float16 and y.shape == (3, 96)
    ref = _ref(a, mode, active=None if active is None else a[active], p=p)
    assert np.abs(y - ref).max() / np.abs(ref).max() <= 1e-3
    if mode == "rows" and p is None:
        assert not np.any(np.delete(y, a["rows"], axis=1))
    report = json.loads(rep.read_text())
    assert report["mode"] == mode and report["rel_err"] <= 1e-3 and report["cycles"] > 0
    assert "rel. error" in capsys.readouterr().out


@pytest.mark.parametrize("x,extra,message", [
    ("x", ["--mode", "rows", "--active", "@dup"], "duplicated"),
    ("x", ["--mode", "rows", "--active", "@far"], "out of range"),
    ("x", ["--mode", "cols", "--active", "@bad"], "1-D"),
    ("x", ["--mode", "dense", "--active", "@rows"], "no active list"),
    ("x", ["--gpu-partial", "@w"], "gpu partial must have shape"),
    ("w", [], "batch of 1..16"),
    ("p", [], "must have shape"),
    ("x", ["--mode", "sparse"], "mode"),
    ("x", ["--backend", "spice"], "backend"),
])
def test_bad_input_is_one_line_and_writes_nothing(tmp_path, files, capsys, x, extra, message):
    _, paths = files
    extra = [paths[e[1:]].as_posix() if e.startswith("@") else e for e in extra]
    out = tmp_path / "never.npy"
    assert main(_argv(paths, out, x, *extra)) != 0
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1, err
    assert not out.exists()


def test_rtl_backend_gives_the_golden_bits(files):
    """The rtl backend (the Verilog of RTL_ENGINE, the DIMM model, the harness's check) returns
    the golden backend's bits, batch 1 and row-sparse with the merge."""
    require_sim("verilator")
    a, _ = files
    for kw in ({"x": a["x1"]}, {"x": a["x"], "active": a["rows"], "mode": "rows",
                                "gpu_partial": a["p"]}):
        gold = api.hermes_gemv(a["w"], **kw)
        rtl = api.hermes_gemv(a["w"], backend="rtl", **kw)
        assert np.array_equal(gold.o.view(np.uint16), rtl.o.view(np.uint16))
        assert rtl.cycles > 0
