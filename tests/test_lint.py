"""Verilator lint: every unit's Verilog, for its default and every preset config, passes
``verilator --lint-only -Wall`` except for warnings listed with a reason in
``synth/lint_waivers.yaml`` (see :mod:`pimforge.synth.lint`).

Units built from float operators are linted hierarchically, like their synthesis
(:mod:`pimforge.hw.core.macros`, built by :func:`pimforge.hw.fp.ops.operator_verilog`): the unit with each operator as a module instance, plus every
distinct operator module once.  Every generated construct is linted, and the big configs take
seconds instead of minutes (flat elaboration of pam_system's default or HILOS d_group 5 takes
80-90 s of the 150 s their flat lint took).  ``PIMFORGE_LONG=1`` lints the flat Verilog of every
config as well.  Each design is linted once: the per-config test records which waivers it used,
and the stale-waiver check at the end of this file reuses those records (the suite runs with
``--dist loadfile``: one worker runs this whole file, in order).
"""
import hashlib
import os
import re
from collections import Counter

import pytest

from pimforge import api
from pimforge.base.errors import ToolError
from pimforge.hw.fp.ops import operator_verilog
from pimforge.registry import get_unit, units
from pimforge.hw.hermes.config import GEMV_PRESETS
from pimforge.hw.pamif.config import PAIR_PRESETS, SIM_PRESETS
from pimforge.synth.lint import VERILATOR_CODES, lint, load_waivers, unwaived, waiver_for
from pimforge.synth.run import SynthJob

WAIVERS = load_waivers()


def _configs() -> dict:
    """(unit, config name) -> config: the default and every preset of every registered unit."""
    out = {}
    for name, u in sorted(units().items()):
        # a preset called "default" (pam_system's) is the default config itself
        cfgs = {"default": u.default_config()} | {p: u.preset_config(p) for p in u.presets}
        out.update({(name, c): cfg for c, cfg in cfgs.items()})
    return out


CONFIGS = _configs()
# The paper-size Hermes configs (256 multipliers with a 256 KB buffer, 256 activation lanes)
# take minutes to elaborate: the long run lints them.
# pam_system's default config (4 PUs per tier, about 35 s of lint) is the long run's too: its
# `small` preset (2 PUs per tier) is linted by default and has every construct of the
# generator (the three devices, their PUs and RUs, the final RU and the wiring between them);
# the default config only has more instances of them, wider.
HEAVY_CONFIGS = {("hermes_gemv", p) for p in GEMV_PRESETS} | {("hermes_act", "hermes"),
                                                                ("hermes_act", "hermes_l64"),
                                                                ("pam_system", "default")}
PAPER_PAIR_PRESETS = [p for p in PAIR_PRESETS if p not in SIM_PRESETS]
# the paper-size PAM interface pairs (2,048-entry lists, 4,096-slot bitmaps): ~30 s each
HEAVY_CONFIGS |= {("pam_interface", p) for p in PAPER_PAIR_PRESETS}
# the dispatcher's default, Table 5's buffers (96 KB command buffer, 96 KB Va2Pa table, 2.6 MB of
# Verilog, ~20 s of lint; `paper` is the same config); its `small` preset, the same generator
# with smaller memories and fields, is linted by default
HEAVY_CONFIGS |= {("lolpim_dispatcher", "default"), ("lolpim_dispatcher", "paper")}
# the paper-size AiM channels (16 banks x 16 lanes = 256 MACs)
HEAVY_CONFIGS |= {("lolpim_pingpong", p) for p in ("aim", "aim_serial")}
# hilos_attention at d_group 5 (about 30 s): its three kernels are linted at d_group 5 by
# default, and the composite's own wiring at d_group 1 and 4
HEAVY_CONFIGS |= {("hilos_attention", "hilos_dgroup5")}
# papi_pu's paper slices (16 lanes, 64-vector buffers): the same constructs as the default
# (4P1B) and the small_1p2b / small_1p1b presets, wider
HEAVY_CONFIGS |= {("papi_pu", p) for p in ("fc_pim", "attn_pim", "attacc")}
# (unit, sha256 of the Verilog) -> (unwaived warnings, indices of the waivers used, log path).
# Keyed by the text so that a preset identical to the default (fp16 of the fp units,
# hilos_dgroup1 of the HILOS units...) is linted once.
_RESULTS: dict = {}


_OPERATORS: dict = {}
LONG = os.environ.get("PIMFORGE_LONG", "") not in ("", "0")


def _hierarchical(unit: str, cfg) -> tuple:
    """The unit's Verilog with float operators as instances, followed by each operator's
    module; ``None`` for a unit without operators (the float units themselves)."""
    job = SynthJob(get_unit(unit), cfg, "lint")
    if job.float_unit:
        return None
    text, top, ops = job.elaborate(flat=False)
    for op in sorted({k for k in ops if not k.inline}):
        if op not in _OPERATORS:
            _OPERATORS[op] = operator_verilog(op)[0]
        text += "\n" + _OPERATORS[op]
    return text, top


_BY_CONFIG: dict = {}


def _lint_config(unit: str, cfg_name: str, tmp_path_factory, flat: bool = False):
    """Lint one config once per session (the stale-waiver check reuses the result)."""
    if (unit, cfg_name, flat) not in _BY_CONFIG:
        _BY_CONFIG[unit, cfg_name, flat] = _lint_design(unit, cfg_name, tmp_path_factory, flat)
    return _BY_CONFIG[unit, cfg_name, flat]


def _lint_design(unit: str, cfg_name: str, tmp_path_factory, flat: bool):
    hier = None if flat else _hierarchical(unit, CONFIGS[unit, cfg_name])
    if hier is None:
        verilog, _, comp = api.elaborate(unit, CONFIGS[unit, cfg_name])
        top = comp.top
    else:
        verilog, top = hier
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
                 marks=[pytest.mark.slow] if (u, c) in HEAVY_CONFIGS else []) for u, c in CONFIGS])
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


def test_every_waiver_is_used(tmp_path_factory):
    """Stale waivers fail: each entry must waive something in some (unit, config).  Reuses the
    per-config results above; configs not linted yet in this session (a ``-k`` run) are linted
    here."""
    used = set()
    for unit, cfg_name in CONFIGS:
        if (unit, cfg_name) in HEAVY_CONFIGS and not LONG:
            continue
        used |= _lint_config(unit, cfg_name, tmp_path_factory)[1]
        if LONG:
            used |= _lint_config(unit, cfg_name, tmp_path_factory, flat=True)[1]
    stale = [f"#{i + 1} {w.code} units={w.units} match={w.match!r} source={w.source!r}"
             for i, w in enumerate(WAIVERS) if i not in used]
    assert not stale, "waivers that waive nothing (remove or narrow them):\n" + "\n".join(stale)
