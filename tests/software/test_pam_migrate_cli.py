"""``pimforge run pam-migrate``: the re-laid image, the report, and one-line errors for bad
migration lists (out-of-range token, occupied slot, too long), with nothing written."""
from __future__ import annotations

import json

import numpy as np
import pytest

from pimforge.cli import main
from pimforge.hw.pamif.config import PamifConfig
from pimforge.hw.pamif.layout import slot_fields


def _addr(t, token_bytes, slot):
    """Byte address of a slot's token, from the §6.1 fields (the mapping spelled out here)."""
    g, b, r, c = (int(x) for x in slot_fields(t, token_bytes, slot))
    return (((g * t.banks + b) * t.rows + r) * t.row_words + c) * t.word_bytes


def _write_csv(path, rows, header=True):
    lines = (["token,src_slot,dst_slot"] if header else []) + [",".join(map(str, r)) for r in rows]
    path.write_text("\n".join(lines) + "\n")
    return path


def _run(capsys, *argv):
    rc = main(["run", "pam-migrate", *map(str, argv)])
    out, err = capsys.readouterr()
    return rc, out, err


def test_migrate_moves_each_token_to_its_slot(tmp_path, capsys):
    cfg = PamifConfig()
    rng = np.random.default_rng(3)
    s, d = cfg.src_tier, cfg.dst_tier
    src = rng.integers(0, 256, s.words() * s.word_bytes, dtype=np.uint8)
    np.save(tmp_path / "src.npy", src)
    rows = [(5, 3, 7), (9, 0, 1), (2, 6, 4)]
    lst = _write_csv(tmp_path / "l.csv", rows)
    rc, out, err = _run(capsys, "--list", lst, "--src-image", tmp_path / "src.npy",
                        "--out", tmp_path / "d.npy", "--report", tmp_path / "r.json")
    assert rc == 0, err
    img = np.load(tmp_path / "d.npy")
    tb = cfg.token_bytes
    want = np.zeros(d.words() * d.word_bytes, np.uint8)
    for _, a, b in rows:
        want[_addr(d, tb, b):_addr(d, tb, b) + tb] = src[_addr(s, tb, a):_addr(s, tb, a) + tb]
    assert np.array_equal(img, want)
    rep = json.loads((tmp_path / "r.json").read_text())
    assert rep["tokens"] == 3 and rep["bytes"] == 3 * tb
    assert 0 < rep["bandwidth_fraction"] <= 1 and rep["cycles"] > 0
    assert "3 token(s)" in out


@pytest.mark.parametrize("rows, occupied, expect", [
    ([(64, 0, 1)], None, "entry 0: field 'token': got 64"),
    ([(1, 0, 1), (2, 1, 5)], [5], "entry 1: field 'dst_slot': got 5; allowed: a free slot"),
    ([(1, 0, 1), (2, 1, 1)], None, "entry 1: field 'dst_slot': got 1"),
    ([(i, i, i) for i in range(17)], None, "17 entries; allowed: at most capacity = 16"),
    ([(1, 0, 99)], None, "entry 0: field 'dst_slot': got 99; allowed: 0 <= dst_slot < 32"),
])
def test_bad_lists_one_line_nothing_written(tmp_path, capsys, rows, occupied, expect):
    lst = _write_csv(tmp_path / "l.csv", rows)
    argv = ["--list", lst, "--out", tmp_path / "d.npy", "--report", tmp_path / "r.json"]
    if occupied is not None:
        (tmp_path / "o.csv").write_text("\n".join(map(str, occupied)))
        argv += ["--occupied", tmp_path / "o.csv"]
    rc, out, err = _run(capsys, *argv)
    assert rc == 2
    assert err.startswith("error: migration list: ") and expect in err, err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert not (tmp_path / "d.npy").exists() and not (tmp_path / "r.json").exists()


@pytest.mark.parametrize("content, expect", [
    ("token,src_slot,dst_slot\n1,2\n", "entry 0: got 2 values"),
    ("1,2,x\n", "line 1"),
    ("token,src_slot,dst_slot\n", "no entries"),
])
def test_malformed_list_files(tmp_path, capsys, content, expect):
    (tmp_path / "l.csv").write_text(content)
    rc, _, err = _run(capsys, "--list", tmp_path / "l.csv", "--report", tmp_path / "r.json")
    assert rc == 2 and expect in err and err.count("\n") == 1, err


def test_other_user_errors(tmp_path, capsys):
    lst = _write_csv(tmp_path / "l.csv", [(1, 0, 1)])
    rc, _, err = _run(capsys, "--list", lst)
    assert rc == 2 and "--out" in err
    rc, _, err = _run(capsys, "--list", lst, "--set", "dst=hbm3_s", "--report", tmp_path / "r")
    assert rc == 2 and "field 'dst'" in err, err
    blocker = tmp_path / "file"       # root ignores permissions: block with a file instead
    blocker.write_text("x")
    rc, _, err = _run(capsys, "--list", lst, "--out", blocker / "d.npy")
    assert rc == 2 and "is a file, not a directory" in err
    # a whole HBM3 pseudo-channel image is too big for the golden image: report only
    rc, _, err = _run(capsys, "--list", lst, "--preset", "hbm3_to_ddr4", "--out", tmp_path / "x")
    assert rc == 2 and "hbm3" in err and "no --out" in err
    rc, out, err = _run(capsys, "--list", lst, "--preset", "hbm3_to_ddr4", "--report",
                        tmp_path / "r.json")
    assert rc == 0, err
    assert json.loads((tmp_path / "r.json").read_text())["config"]["src"] == "hbm3"
