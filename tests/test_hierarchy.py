"""The hierarchical Verilog `pimforge generate` writes (pimforge.hw.fp.hierarchy): every operator
module the top instantiates is defined exactly once, under the unit's prefix, and `--flat` gives
the same unit with no operator modules.  The benches check the bits (every RTL test simulates the
hierarchical form against its golden model); these check the file's structure, which a user's
tools read."""
import re
from collections import Counter

from pimforge import api
from pimforge.hw.fp.hierarchy import operator_prefix

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
