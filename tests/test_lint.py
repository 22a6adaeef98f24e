"""Verilator lint: every unit's Verilog passes ``verilator --lint-only -Wall`` except for
warnings listed with a reason in ``synth/lint_waivers.yaml`` (see :mod:`pimforge.synth.lint`).

What is linted is what ``pimforge generate`` writes: the hierarchical Verilog (the unit's top
module with each float operator as an instance, plus every distinct operator module once; see
:mod:`pimforge.hw.core.elaborate`).  The default run lints every unit's default config and its
``small`` presets; ``PIMFORGE_LONG=1`` lints every preset, and the flat Verilog of every config as
well, and checks that no waiver is stale.  Each design is linted once: the per-config test
records which waivers it used, and the stale-waiver check at the end of this file reuses those
records (the suite runs with ``--dist loadfile``: one worker runs this whole file, in order).
"""
import hashlib
import re
from collections import Counter

import pytest

from pimforge import api
from pimforge.base.errors import ToolError
from pimforge.registry import units
from pimforge.synth.lint import VERILATOR_CODES, lint, load_waivers, unwaived, waiver_for

WAIVERS = load_waivers()


def _configs() -> dict:
    """(unit, config name) -> config: the default and every preset of every registered unit."""
    out = {}
    for name, u in sorted(units().items()):
        # a preset called "default" (pam_system's) is the default config itself
        cfgs = {"default": u.default_config()} | {p: u.preset_config(p) for p in u.presets}
        out.update({(name, c): cfg for c, cfg in cfgs.items()})
    return out


_HILOS_LINT = {"beat_elems": 8, "head_dim": 64, "block": 32, "d_group": 2}
SMALL_LINT = {"hermes_act": {"lanes": 4, "max_len": 64},
              "qk_gemv": _HILOS_LINT, "sv_gemv": _HILOS_LINT, "two_pass_softmax": _HILOS_LINT,
              "pam_pu": {"lanes": 4, "head_dim": 64},
              "hermes_gemv": {"multipliers": 8, "serial_cycles": 8, "beat_words": 1,
                              "max_batch": 2, "buffer_bytes": 512}}
CONFIGS = _configs() | {(u, "small-lint"): api.config(u, overrides=o)
                        for u, o in SMALL_LINT.items()}
# The default run lints every unit's default config and its `small*` presets; the long run lints
# every preset (and the flat Verilog of each).  A preset is a grid point of the same generator:
# the default config has every construct, and the presets are the same constructs wider,
# deeper or in another format.
# Three defaults are the long run's too: pam_system's (4 PUs per tier, about 35 s of lint),
# pam_device's (4 PUs, 20 s) and the dispatcher's (Table 5's 96 KB buffers, 2.6 MB of Verilog);
# their `small` presets have every construct of the generator and are linted by default.
HEAVY_DEFAULTS = {("pam_system", "default"), ("pam_device", "default"),
                  ("lolpim_dispatcher", "default")}
# The two composites of composites, as in the synthesis smoke test (test_synth_smoke.LONG_ONLY):
# pam_system is three pam_device tiers and a final pam_ru joined by wiring (its small preset took
# 29 s of lint), hilos_attention wires qk_gemv, two_pass_softmax and sv_gemv to its DRAM port
# (20 s).  Their parts are linted by default; these run in the long run.
HEAVY_DEFAULTS |= {("pam_system", "small"), ("hilos_attention", "default")}
# The two slowest remaining defaults (the default run's time budget): hermes_act's (16 lanes of fp32
# exp, recip and multipliers, 26 s) and qk_gemv's (32-element beats, 13 s).  The default run
# lints each at a small config instead (SMALL_LINT: the same constructs, fewer lanes), the long
# run at its default as before.
HEAVY_DEFAULTS |= {("hermes_act", "default"), ("qk_gemv", "default")}
# The next four (the suite's time budget again: 15, 9, 8 and 7 s) likewise: two_pass_softmax,
# sv_gemv (32-element beats), pam_pu (16 lanes, d = 128) and hermes_gemv (a 16 KB buffer).
HEAVY_DEFAULTS |= {("two_pass_softmax", "default"), ("sv_gemv", "default"),
                   ("pam_pu", "default"), ("hermes_gemv", "default")}


def _long_only(unit: str, cfg_name: str) -> bool:
    return (unit, cfg_name) in HEAVY_DEFAULTS or not (cfg_name == "default"
                                                      or cfg_name.startswith("small"))


# (unit, sha256 of the Verilog) -> (unwaived warnings, indices of the waivers used, log path).
# Keyed by the text so that a preset identical to the default (fp16 of the fp units,
# hilos_dgroup1 of the HILOS units...) is linted once.
_RESULTS: dict = {}


_BY_CONFIG: dict = {}


def _lint_config(unit: str, cfg_name: str, tmp_path_factory, flat: bool = False):
    """Lint one config once per session (the stale-waiver check reuses the result)."""
    if (unit, cfg_name, flat) not in _BY_CONFIG:
        _BY_CONFIG[unit, cfg_name, flat] = _lint_design(unit, cfg_name, tmp_path_factory, flat)
    return _BY_CONFIG[unit, cfg_name, flat]


def _lint_design(unit: str, cfg_name: str, tmp_path_factory, flat: bool):
    """Lint what `pimforge generate` writes: hierarchical (each float operator a module of its
    own, once) or flat."""
    verilog, _, comp = api.elaborate(unit, CONFIGS[unit, cfg_name], flat=flat)
    top = comp.top
    key = (unit, hashlib.sha256(verilog.encode()).hexdigest())
    if key not in _RESULTS:
        work = tmp_path_factory.mktemp(f"lint-{unit}-{cfg_name}")
        bad, used = [], set()
        for w in lint(verilog, top, work):
            waiver = waiver_for(w, unit, WAIVERS)
            if waiver is None:
                bad.append(w)
            else:
                used.add(WAIVERS.index(waiver))
        _RESULTS[key] = (bad, used, work / "lint.log")
    return _RESULTS[key]


@pytest.mark.parametrize("flat", [False, pytest.param(True, marks=pytest.mark.slow)],
                         ids=["hier", "flat"])
@pytest.mark.parametrize("unit,cfg_name", [
    pytest.param(u, c, id=f"{u}-{c}",
                 marks=[pytest.mark.slow] if _long_only(u, c) else []) for u, c in CONFIGS])
def test_lint_clean(unit, cfg_name, flat, tmp_path_factory):
    bad, _, log = _lint_config(unit, cfg_name, tmp_path_factory, flat)
    if bad:
        by_code = ", ".join(f"{c} x{n}" for c, n in Counter(w.code for w in bad).most_common())
        shown = "\n".join(f"  {w}" for w in bad[:25])
        more = f"\n  ... and {len(bad) - 25} more" if len(bad) > 25 else ""
        pytest.fail(f"{unit} [{cfg_name}]: {len(bad)} unwaived Verilator warnings ({by_code}); "
                    f"full log {log}\n{shown}{more}\nFix the design, or add a waiver with its "
                    f"reason to synth/lint_waivers.yaml.", pytrace=False)


def test_waiver_entries_are_well_formed():
    known_units = set(units())
    for i, w in enumerate(WAIVERS, 1):
        where = f"waiver #{i} ({w.code})"
        assert w.code in VERILATOR_CODES, f"{where}: unknown Verilator warning code"
        assert len(w.reason.split()) >= 5, f"{where}: give the reason it is harmless"
        assert w.units is None or (w.units and set(w.units) <= known_units), \
            f"{where}: unknown units {sorted(set(w.units or ()) - known_units)} (or an empty list)"
        for pattern in (w.match, w.source):
            if pattern is not None:
                re.compile(pattern)


# Hand-written like Amaranth's output (a submodule named `<top>.<name>`), with two real
# problems: a width-truncating assignment and an input the submodule never reads.  -Wall must
# report both, and no waiver, for any unit, may cover them.  (Verilator does not report unused
# inputs of the top module itself, hence the submodule.)
_BAD_VERILOG = """\
module bad_unit (a, b, y);
  input [7:0] a;
  input [7:0] b;
  output [3:0] y;
  \\bad_unit.sub  sub (.a(a), .b(b), .y(y));
endmodule

module \\bad_unit.sub (a, b, y);
  input [7:0] a;
  input [7:0] b;
  output [3:0] y;
  assign y = a;
endmodule
"""


def test_lint_reports_real_problems(tmp_path):
    warnings = lint(_BAD_VERILOG, "bad_unit", tmp_path)
    assert (tmp_path / "lint.log").exists()
    assert any(w.code == "UNUSEDSIGNAL" and w.signal == "b" and w.source == "input [7:0] b;"
               for w in warnings), warnings
    line = _BAD_VERILOG.splitlines().index("  assign y = a;") + 1
    assert any(w.code == "WIDTHTRUNC" and w.line == line and w.source == "assign y = a;"
               for w in warnings), warnings
    for unit in units():
        left = unwaived(warnings, unit, WAIVERS)
        assert {"UNUSEDSIGNAL", "WIDTHTRUNC"} <= {w.code for w in left}, (unit, left)
        assert "DECLFILENAME" not in {w.code for w in left}, (unit, left)


def test_lint_error_raises_tool_error(tmp_path):
    with pytest.raises(ToolError, match=r"lint\.log"):
        lint("module broken (input a;\nendmodule\n", "broken", tmp_path)


@pytest.mark.slow
def test_every_waiver_is_used(tmp_path_factory):
    """Stale waivers fail: each entry must waive something in some (unit, config), hierarchical
    or flat.  Long run only: it needs every preset.  Reuses the per-config results above; configs
    not linted yet in this session (a ``-k`` run) are linted here."""
    used = set()
    for unit, cfg_name in CONFIGS:
        used |= _lint_config(unit, cfg_name, tmp_path_factory)[1]
        used |= _lint_config(unit, cfg_name, tmp_path_factory, flat=True)[1]
    stale = [f"#{i + 1} {w.code} units={w.units} match={w.match!r} source={w.source!r}"
             for i, w in enumerate(WAIVERS) if i not in used]
    assert not stale, "waivers that waive nothing (remove or narrow them):\n" + "\n".join(stale)
