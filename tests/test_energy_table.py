"""The energy table: every entry has a source, the rules give what they state, and the energy
of a job is the sum of its parts."""
from __future__ import annotations

import math
import re

import pytest

from pimforge.base.errors import UserError
from pimforge.hw.core.energy import NODES, TABLE_PATH, component_of, table


def test_every_entry_and_rule_has_a_source():
    rows = table().rows()
    assert len(rows) > 20
    for r in rows:
        assert isinstance(r["source"], str) and len(r["source"]) > 15, r


def test_the_papers_constants_are_the_table_entries():
    """The figures the issue names, as the papers give them."""
    t = table()
    assert t.pj("dram:hbm_bank:bit") == 0.55 and t.pj("dram:hbm_buffer:bit") == 3.29
    assert t.pj("link:dimm:bit") == 1.17
    assert t.pj("static:smartssd") == 11.25
    assert (t.pj("op:add:e5m10"), t.pj("op:mul:e5m10")) == (0.4, 1.1)
    assert (t.pj("op:add:e8m23"), t.pj("op:mul:e8m23")) == (0.9, 3.7)


def test_a_job_is_the_sum_of_its_parts_by_hand():
    """1000 fp16 adds (0.4 pJ), 10 64-bit reads of a 1 MB SRAM (100 pJ each), 8000 HBM bits
    (3.9 pJ/bit) and 2 ms of a 90 W GPU's static power, at 45 nm, worked out by hand."""
    counts = {"op:add:e5m10": 1000, "sram:read:131072x64": 10, "dram:hbm:bit": 8000,
              "static:gpu": 2e-3}
    b = table("45nm").breakdown(counts)
    assert b["compute"] == pytest.approx(400e-12)
    assert b["sram"] == pytest.approx(1000e-12)
    assert b["dram:hbm"] == pytest.approx(31200e-12)
    assert b["static"] == pytest.approx(0.18)
    assert table().joules(counts) == pytest.approx(0.18 + 32600e-12)
    assert sum(b.values()) == pytest.approx(table().joules(counts), rel=1e-15)


def test_each_count_lands_in_one_component():
    """No double counting: doubling one action's count changes only its own component, by
    exactly its own energy."""
    base = {"op:fma:e8m23": 5, "sram:write:64x512": 3, "link:pcie:bit": 100, "ssd:read:byte": 7}
    t = table("asap7")
    b0 = t.breakdown(base)
    for key in base:
        more = dict(base, **{key: 2 * base[key]})
        b1 = t.breakdown(more)
        comp = component_of(key)
        for c in b0:
            extra = base[key] * t.pj(key) * 1e-12 if c == comp else 0.0
            assert b1[c] == pytest.approx(b0[c] + extra, rel=1e-12), (key, c)


def test_node_scaling_is_cv_squared_and_spares_devices():
    t45, t7 = table("45nm"), table("asap7")
    factor = (7 / 45) * (0.7 / 0.9) ** 2
    assert t7.pj("op:mul:e5m10") == pytest.approx(1.1 * factor)
    assert t7.pj("dram:hbm:bit") == t45.pj("dram:hbm:bit")
    assert t7.pj("static:gpu") == t45.pj("static:gpu")


def test_format_rule_passes_through_horowitz_points_and_orders_formats():
    t = table()
    bf16, fp16, fp32 = (t.pj(f"op:mul:{f}") for f in ("e8m7", "e5m10", "e8m23"))
    assert bf16 < fp16 < fp32
    # p = 8 for bf16: 1.1 x (8 / 11) ** (ln(3.7 / 1.1) / ln(24 / 11))
    assert bf16 == pytest.approx(1.1 * (8 / 11) ** (math.log(3.7 / 1.1) / math.log(24 / 11)))


def test_sram_rule_interpolates_horowitz_points():
    t = table()
    assert t.pj("sram:read:1024x64") == pytest.approx(10.0)        # 8 KB, 64 bits
    assert t.pj("sram:read:4096x64") == pytest.approx(20.0)        # 32 KB
    assert t.pj("sram:read:8192x64") == pytest.approx(20.0 * (5.0) ** 0.2)   # 64 KB: log-log
    assert t.pj("sram:write:8x16") >= 0.02 * 16                    # the register floor


@pytest.mark.parametrize("key, msg", [
    ("op:frobnicate:e5m10", "no energy rule for operation 'frobnicate'"),
    ("bogus:read:1x1", "unknown class 'bogus'"),
    ("dram:hbm", "<class>:<kind>:<shape>"),
])
def test_unknown_actions_name_what_is_allowed(key, msg):
    with pytest.raises(UserError, match=msg):
        table().breakdown({key: 1})


def test_unknown_node_names_the_nodes():
    with pytest.raises(UserError, match="one of 45nm, 22nm, asap7"):
        table("3nm")
    assert set(NODES) == {"45nm", "22nm", "asap7"}


def test_a_small_sram_shrinks_with_the_square_root_of_its_capacity():
    """256 bytes (8 words of 256 bits): the 8 KB per-bit figure (10 pJ / 64) x sqrt(256 / 8192)."""
    assert table().pj("sram:read:8x256") == pytest.approx(256 * 10 / 64 * (256 / 8192) ** 0.5)


def test_no_action_is_listed_twice():
    """YAML keeps the last of two equal keys without a word; the table must not rely on that."""
    keys = re.findall(r"^  ([a-z0-9_]+(?::[a-z0-9_]+)+): \{", TABLE_PATH.read_text(), re.M)
    assert len(keys) > 30
    assert len(keys) == len(set(keys)), sorted(k for k in keys if keys.count(k) > 1)


def test_the_toggle_energy_follows_the_scaling_rule():
    assert table("asap7").toggle_fj() == pytest.approx(
        table("45nm").toggle_fj() * table("asap7").scale("45nm"), rel=0.01)
