"""The hierarchical Verilog `pimforge generate` writes (pimforge.hw.core.elaborate): every operator
module the top instantiates is defined exactly once, under the unit's prefix, and `--flat` gives
the same unit with no operator modules.  The benches check the bits (every RTL test simulates the
hierarchical form against its golden model); these check the file's structure, which a user's
tools read."""
import re
import shutil
from collections import Counter
from dataclasses import replace

from pimforge import api
from pimforge.base.formats import FP16
from pimforge.hw.core.elaborate import operator_prefix
from pimforge.hw.core.inventory import op_key
from pimforge.hw.fp import ops as fp_ops

_MODULE = re.compile(r"^module (\\?\S+?) ?\(", re.M)
_INSTANCE = re.compile(r"^\s+(\w*pf_op_\w+) \S+\s+\(", re.M)


def _modules(text: str) -> Counter:
    return Counter(_MODULE.findall(text))


def test_operator_modules_defined_once_under_the_units_prefix(tmp_path):
    cfg = api.config("online_softmax")
    paths = api.generate("online_softmax", cfg, tmp_path)
    text = paths[0].read_text()
    defined = _modules(text)
    assert all(n == 1 for n in defined.values()), [m for m, n in defined.items() if n > 1]
    ops = {m for m in defined if "pf_op_" in m}
    prefix = operator_prefix("online_softmax")
    assert ops and all(m.startswith(prefix + "pf_op_") for m in ops), ops
    used = set(_INSTANCE.findall(text))
    assert used == ops, (used ^ ops)      # nothing instantiated undefined, nothing unused


def test_flat_has_no_operator_modules_and_the_same_manifest(tmp_path):
    cfg = api.config("online_softmax")
    hier_text, hier_manifest, _ = api.elaborate("online_softmax", cfg)
    flat_text, flat_manifest, _ = api.elaborate("online_softmax", cfg, flat=True)
    assert "pf_op_" not in flat_text
    assert len(flat_text) > len(hier_text) // 4
    assert flat_manifest == hier_manifest
    assert "online_softmax" in _modules(flat_text) and "online_softmax" in _modules(hier_text)


# ---------------------------------------------------------------- the operator cache
# Each process generates an operator's module once; the on-disk cache (hw/fp/ops.py
# _cache_path) lets other processes (the test workers, command-line runs) reuse it.

def _fresh(monkeypatch, tmp_path, **env):
    """The operator module as a new process sees it: empty in-memory tables."""
    monkeypatch.setattr(fp_ops, "_TEXT", {})
    monkeypatch.setattr(fp_ops, "_PORTS", {})
    monkeypatch.setenv("PIMFORGE_BUILD", str(tmp_path))
    for k, v in {"PIMFORGE_OP_CACHE": "1", **env}.items():
        monkeypatch.setenv(k, v)
    return fp_ops


def _op():
    return op_key("add", FP16, depth=3)


def test_operator_cache_serves_another_process_the_same_text(tmp_path, monkeypatch):
    ops = _fresh(monkeypatch, tmp_path)
    op = _op()
    text, ports = ops.operator_verilog(op, "u__")
    files = list((tmp_path / "op-cache").rglob("*.v"))
    assert len(files) == 1 and "u__" not in files[0].read_text()
    # a new process (empty in-memory table) reads the file and builds nothing
    ops = _fresh(monkeypatch, tmp_path)
    build = ops._build

    def no_build(op):
        raise AssertionError("the cached operator was built again")
    monkeypatch.setattr(ops, "_build", no_build)
    assert ops.operator_verilog(op, "u__") == (text, ports)
    # what the cache holds is what a generation without it gives
    ops = _fresh(monkeypatch, tmp_path / "off", PIMFORGE_OP_CACHE="0")
    monkeypatch.setattr(ops, "_build", build)
    assert ops.operator_verilog(op, "u__") == (text, ports)
    assert not (tmp_path / "off").exists()


def test_operator_cache_key_is_the_operator_and_the_sources(tmp_path, monkeypatch):
    op = _op()
    reference = _fresh(monkeypatch, tmp_path / "off", PIMFORGE_OP_CACHE="0").operator_verilog(op)
    ops = _fresh(monkeypatch, tmp_path)
    assert ops._cache_path(op) != ops._cache_path(replace(op, depth=4))
    assert ops._source_fingerprint() in str(ops._cache_path(op))
    # the operators of other sources are deleted when the cache for these sources starts
    stale = tmp_path / "op-cache" / "0123456789abcdef" / "x.v"
    stale.parent.mkdir(parents=True)
    stale.write_text("module x; endmodule\n")
    assert ops.operator_verilog(op) == reference
    assert [p.name for p in (tmp_path / "op-cache").iterdir()] == [ops._source_fingerprint()]
    ops = _fresh(monkeypatch, tmp_path)
    # an unwritable cache directory is no error: the operator is generated as without it
    shutil.rmtree(tmp_path / "op-cache")
    (tmp_path / "op-cache").write_text("a file where the directory would go")
    assert ops.operator_verilog(op) == reference
    assert (tmp_path / "op-cache").is_file()
