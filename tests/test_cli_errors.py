"""Bad input ends with one line `error: ...` naming the field and what is allowed, exit status 2,
no traceback, and no output files."""
import os
import subprocess
import sys

import pytest

from pimforge.base import files
from pimforge.base.errors import UserError
from pimforge.cli import main
from pimforge.hw.core import elaborate
from pimforge.sim.harness import runner

GOOD_YAML = "fmt: fp32\npipeline_depth: 3\n"

# (id, argv (with {out}, {cfg}, {file} and {dir} placeholders), the text of {cfg} (YAML, or a
# CSV list) or None, expected message fragments)
CASES = [
    ("unknown-unit", ["generate", "fp_nope", "--out", "{out}"], None,
     ["unknown unit 'fp_nope'", "allowed:", "fp_add"]),
    ("unknown-key-set", ["generate", "fp_add", "--set", "widht=3", "--out", "{out}"], None,
     ["fp_add: unknown field 'widht' in --set", "allowed: fmt, ftz, pipeline_depth"]),
    ("unknown-key-yaml", ["generate", "fp_add", "--config", "{cfg}", "--out", "{out}"], "fmt: fp16\nlanes: 4\n",
     ["fp_add: unknown field 'lanes' in config file", "allowed: fmt, ftz, pipeline_depth"]),
    ("wrong-type-yaml", ["generate", "fp_add", "--config", "{cfg}", "--out", "{out}"], "pipeline_depth: two\n",
     ["fp_add: field 'pipeline_depth': got 'two'", "allowed: an integer in 0..16"]),
    ("wrong-type-set", ["generate", "fp_add", "--set", "pipeline_depth=abc", "--out", "{out}"], None,
     ["fp_add: field 'pipeline_depth': got 'abc'", "allowed: an integer in 0..16"]),
    ("float-for-int", ["generate", "fp_add", "--config", "{cfg}", "--out", "{out}"], "pipeline_depth: 2.5\n",
     ["field 'pipeline_depth': got 2.5", "an integer in 0..16"]),
    ("out-of-range-high", ["generate", "fp_add", "--set", "pipeline_depth=17", "--out", "{out}"], None,
     ["field 'pipeline_depth': got 17", "an integer in 0..16"]),
    ("out-of-range-low", ["generate", "fp_add", "--set", "pipeline_depth=-1", "--out", "{out}"], None,
     ["field 'pipeline_depth': got -1", "an integer in 0..16"]),
    ("unknown-format", ["generate", "fp_add", "--set", "fmt=fp33", "--out", "{out}"], None,
     ["field 'fmt': got 'fp33'", "allowed: fp16, bf16, fp32, or eXmY"]),
    ("format-field-range", ["generate", "fp_add", "--set", "fmt=e1m3", "--out", "{out}"], None,
     ["field 'fmt': got 'e1m3'", "eXmY"]),
    ("bool-garbage", ["generate", "fp_add", "--set", "ftz=maybe", "--out", "{out}"], None,
     ["field 'ftz': got 'maybe'", "allowed: true or false"]),
    ("bool-quoted-yaml", ["generate", "fp_add", "--config", "{cfg}", "--out", "{out}"], 'ftz: "yes"\n',
     ["field 'ftz': got 'yes'", "true or false"]),
    ("malformed-yaml", ["generate", "fp_add", "--config", "{cfg}", "--out", "{out}"], "fmt: [fp16\npipeline_depth: 2\n",
     ["malformed YAML at line", "column"]),
    ("yaml-not-mapping", ["generate", "fp_add", "--config", "{cfg}", "--out", "{out}"], "- fmt\n- fp16\n",
     ["top level must be a mapping", "not a list"]),
    ("missing-config-file", ["generate", "fp_add", "--config", "/nonexistent/x.yaml", "--out", "{out}"], None,
     ["config file '/nonexistent/x.yaml' does not exist"]),
    ("set-without-equals", ["generate", "fp_add", "--set", "fmt", "--out", "{out}"], None,
     ["--set expects key=value, got 'fmt'"]),
    ("unknown-preset", ["generate", "fp_add", "--preset", "fp64", "--out", "{out}"], None,
     ["fp_add: unknown preset 'fp64'", "allowed: fp16, bf16, fp32"]),
    ("out-is-a-file", ["generate", "fp_add", "--out", "{file}"], None,
     ["is a file", "give a directory path"]),
    ("out-under-a-file", ["generate", "fp_add", "--out", "{file}/sub"], None,
     ["cannot be created", "Not a directory"]),
    ("export-unknown-format", ["export", "verilog", "fp_add", "--out", "{out}"], None,
     ["export: unknown format 'verilog'", "allowed: fusesoc, fusesoc-generator"]),
    ("export-unknown-unit", ["export", "fusesoc", "fp_nope", "--out", "{out}"], None,
     ["unknown unit 'fp_nope'", "allowed:", "fp_add"]),
    ("export-unknown-preset", ["export", "fusesoc", "fp_add", "--preset", "fp64", "--out", "{out}"],
     None, ["fp_add: unknown preset 'fp64'", "allowed: fp16, bf16, fp32"]),
    ("export-bad-set", ["export", "fusesoc", "fp_add", "--set", "pipeline_depth=17", "--out", "{out}"],
     None, ["field 'pipeline_depth': got 17", "an integer in 0..16"]),
    ("export-out-is-a-file", ["export", "fusesoc", "fp_add", "--out", "{file}"], None,
     ["is a file", "give a directory path"]),
    ("export-out-under-a-file", ["export", "fusesoc-generator", "--out", "{file}/sub"], None,
     ["cannot be created", "Not a directory"]),
    ("export-missing-out", ["export", "fusesoc", "fp_add"], None,
     ["export fusesoc: the following arguments are required: --out"]),
    ("export-missing-unit", ["export", "fusesoc", "--out", "{out}"], None,
     ["export fusesoc: give a UNIT", "pimforge list"]),
    ("export-generator-with-unit", ["export", "fusesoc-generator", "fp_add", "--out", "{out}"], None,
     ["takes --out DIR only, not UNIT"]),
    ("unknown-simulator", ["test", "fp_add", "--sim", "modelsim"], None,
     ["unknown simulator 'modelsim'", "allowed: verilator, icarus"]),
    ("missing-out", ["generate", "fp_add"], None,
     ["the following arguments are required: --out"]),
    ("unknown-command", ["frobnicate"], None,
     ["invalid choice: 'frobnicate'", "generate"]),
    ("nonpositive-random", ["test", "fp_add", "--n-random", "0"], None,
     ["--n-random: got 0", "allowed: an integer in 1..10000000"]),
    # pam_pu's bench runs a fixed set of token sets: the count would do nothing, so it is refused
    ("n-random-without-effect", ["test", "pam_pu", "--n-random", "100"], None,
     ["--n-random does not apply to pam_pu", "allowed for: fp_add", "pam_ru"]),
    ("bench-unknown-unit",
     ["bench", "--only", "synth", "--units", "pam_ru,pam_nope", "--out", "{out}"], None,
     ["--units: unknown unit 'pam_nope'", "allowed: fp_add", "two_pass_softmax"]),
    ("bench-units-other-bench", ["bench", "--only", "pam", "--units", "pam_ru", "--out", "{out}"],
     None, ["--units applies to --only synth, not --only pam"]),
    # each of these once ended in a traceback, or in a wrong message
    ("test-negative-seed", ["test", "fp_add", "--seed", "-1"], None,
     ["--seed: got -1", "allowed: an integer in 0..4294967295"]),
    ("migrate-negative-seed", ["run", "pam-migrate", "--list", "{cfg}", "--seed", "-3",
                               "--report", "{out}/r.json"], "0,1,2\n",
     ["--seed: got -3", "allowed: an integer in 0..4294967295"]),
    ("migrate-value-over-int64", ["run", "pam-migrate", "--list", "{cfg}", "--report",
                                  "{out}/r.json"], "0,1,99999999999999999999\n",
     ["--list", "line 1: dst_slot 99999999999999999999 is out of range", "allowed: an integer"]),
    ("prove-out-is-a-file", ["prove", "fp_add", "--out", "{file}"], None,
     ["--out: output directory", "is a file; give a directory path"]),
    ("migrate-list-is-a-directory", ["run", "pam-migrate", "--list", "{dir}", "--report",
                                     "{out}/r.json"], None,
     ["--list file", "is a directory; give a .csv or .npy migration list"]),
    ("migrate-occupied-is-a-directory", ["run", "pam-migrate", "--list", "{cfg}", "--occupied",
                                         "{dir}", "--report", "{out}/r.json"], "0,1,2\n",
     ["--occupied file", "is a directory"]),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_bad_input(case, tmp_path, capsys):
    _, argv, yaml_text, fragments = case
    out = tmp_path / "out"
    cfg = tmp_path / "cfg.yaml"
    a_file = tmp_path / "a_file"
    a_file.write_text("not a directory\n")
    if yaml_text is not None:
        cfg.write_text(yaml_text)
    a_dir = tmp_path / "a_dir"
    a_dir.mkdir()
    argv = [a.replace("{out}", str(out)).replace("{cfg}", str(cfg)).replace("{file}", str(a_file))
            .replace("{dir}", str(a_dir)) for a in argv]
    code = main(argv)
    captured = capsys.readouterr()
    err_lines = captured.err.strip().splitlines()
    assert code == 2
    assert len(err_lines) == 1, captured.err
    assert err_lines[0].startswith("error: ")
    for frag in fragments:
        assert frag in err_lines[0], (frag, err_lines[0])
    assert "Traceback" not in captured.err + captured.out
    # no half-written outputs
    assert not out.exists() or not any(out.iterdir())
    assert a_file.read_text() == "not a directory\n"


def test_bad_input_count():
    assert len(CASES) >= 15


def test_cli_process_exit_code_and_no_traceback(tmp_path):
    """The installed entry point, as a user runs it."""
    r = subprocess.run([sys.executable, "-m", "pimforge", "generate", "fp_add", "--set", "fmt=fp33",
                        "--out", str(tmp_path / "o")], capture_output=True, text=True)
    assert r.returncode == 2
    assert r.stderr.strip() == "error: fp_add: field 'fmt': got 'fp33'; allowed: fp16, bf16, fp32, or eXmY"
    assert not (tmp_path / "o").exists()


def test_write_failure_leaves_no_partial_files(tmp_path, monkeypatch):
    """If the second file cannot be written, the first is not left behind either."""
    real_fdopen = os.fdopen
    calls = {"n": 0}

    def failing_fdopen(fd, *a, **k):
        calls["n"] += 1
        if calls["n"] == 2:
            os.close(fd)
            raise OSError(28, "No space left on device")
        return real_fdopen(fd, *a, **k)

    monkeypatch.setattr(files.os, "fdopen", failing_fdopen)
    with pytest.raises(UserError, match="cannot be written: No space left on device"):
        files.write_outputs(tmp_path / "o", {"a.v": "x", "a.json": "y"})
    assert list((tmp_path / "o").iterdir()) == []


def test_tool_failure_is_one_line_naming_the_log(tmp_path, capsys, monkeypatch):
    """A simulator that fails to build gives one line naming its log, exit 1, no traceback."""
    real = elaborate.elaborate

    def broken(unit, cfg, **kw):
        text, manifest, comp = real(unit, cfg, **kw)
        return text.replace("endmodule", "syntax error here\nendmodule", 1), manifest, comp

    monkeypatch.setattr(runner, "elaborate", broken)  # what the bench runs
    monkeypatch.setenv("PIMFORGE_BUILD", str(tmp_path))
    code = main(["test", "fp_add", "--n-random", "10"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and len(err) == 1
    assert err[0].startswith("error: verilator build of fp_add failed; see ") and err[0].endswith("build.log")
