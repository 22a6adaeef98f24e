"""Every option of every command, fed the standard bad values of its kind, ends with one line
``error: ...`` naming the option, exit status 2, no traceback, and no output written -- before
any work starts.

The options are enumerated from :func:`pimforge.cli.build_parser` (its subcommands, recursively,
the ``run`` flows included).  ``TABLE`` classifies each one; an option missing from the table
fails :func:`test_every_option_is_classified`, so a new option cannot be added without its bad
values.  The kinds and their bad values:

* ``Int(lo, hi)``: ``lo - 1`` (negative, or zero where zero is not allowed), ``0`` and ``-1``
  when below ``lo``, ``hi + 1`` and a huge value when there is an ``hi``, a non-number and a
  fraction.  ``hi=None`` states that any large value is legal (it is then not fed);
* ``Choice(values)``: an unknown name;
* ``InFile``: a missing file, a directory and an existing file of the wrong content;
* ``OutDir``: an existing file and a path under a file; ``OutFile``: a directory and a path
  under a file (an existing file is legal: it is replaced);
* ``Text(bad)``: the option's own bad values, listed;
* ``Flag``: takes no value, nothing to feed.

The cases run in process (``cli.main`` with capsys); the work every command would start is
replaced by a stub that raises :class:`WorkStarted`, so a bad value that slips through fails
fast instead of running a synthesis, and a check that runs only after the work began fails too
(validate first).  Each command's valid base command line is run once to show it reaches the
work (so each bad case fails on its bad value alone).  A few real subprocesses show the
installed entry point prints the same.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import types
from dataclasses import dataclass, field

import numpy as np
import pytest

from pimforge import api, cli, prove_cli, synth_cli
from pimforge.software import cli as software_cli
from pimforge.software.hermes import gemv as hermes_gemv
from pimforge.software.hilos import attention as hilos_attention
from pimforge.software.llm import run as llm_run
from pimforge.software.pam import attention as pam_attention
from pimforge.software.pam import migrate as pam_migrate
from pimforge.sweep import cli as sweep_cli

# the prove stub leaves the elaborated unit unused: Amaranth's warning says nothing here
pytestmark = pytest.mark.filterwarnings("ignore:.*created but never used")

HUGE = "99999999999999999999"          # over 2**64: no option takes it


class WorkStarted(Exception):
    """A command got past its checks and began its work."""


# --- the kinds ---------------------------------------------------------------------------------

@dataclass
class Flag:
    def bad(self):
        return []


@dataclass
class Int:
    lo: int
    hi: int | None = None
    name: str | None = None

    def bad(self):
        vals = {str(self.lo - 1)}
        vals |= {v for v in ("0", "-1") if int(v) < self.lo}
        if self.hi is not None:
            vals |= {str(self.hi + 1), HUGE}
        return sorted(vals) + ["abc", "1.5"]


@dataclass
class Choice:
    values: tuple
    name: str | None = None

    def bad(self):
        return ["nope"]


@dataclass
class Text:
    values: tuple
    name: str | None = None

    def bad(self):
        return list(self.values)


@dataclass
class InFile:
    wrong: str = "{text}"            # an existing file of the wrong content
    name: str | None = None

    def bad(self):
        return ["{missing}", "{dir}", self.wrong]


@dataclass
class OutDir:
    name: str | None = None

    def bad(self):
        return ["{file}", "{file}/sub"]


@dataclass
class OutFile:
    name: str | None = None

    def bad(self):
        return ["{dir}", "{file}/x.out"]


@dataclass
class Entry:
    """One option's kind, and options it needs set (``with_``) for its check to apply."""

    kind: object
    with_: dict = field(default_factory=dict)


UNIT = Text(("nope",), name="unit")
PRESET = Text(("nope",), name="preset")
CONFIG = InFile("{badyaml}", name="config file")
SET = Text(("nokey", "nope=1"), name="--set")
SEED = Int(0, 2**32 - 1)
MODEL_SET = Text(("nokey", "nope=1"), name="--set")
OUT_NPY = OutFile()
REPORT = OutFile()

# Each command's valid command line: positionals (by dest, in order) then options.
BASE = {
    ("config",): ({"unit": "fp_add"}, {}),
    ("generate",): ({"unit": "fp_add"}, {"--out": "{out}"}),
    ("export",): ({"format": "fusesoc", "unit": "fp_add"}, {"--out": "{out}"}),
    ("test",): ({"unit": "fp_add"}, {}),
    ("bench",): ({}, {"--out": "{out}"}),
    ("synth",): ({"unit": "fp_add"}, {"--out": "{out}"}),
    ("sweep",): ({"spec": "fp_add_fmax"}, {"--out": "{out}"}),
    ("prove",): ({"unit": "fp_add"}, {"--out": "{out}"}),
    ("model",): ({"system": "hilos"}, {"--out": "{out}"}),
    ("reproduce",): ({"system": "hilos"}, {"--out": "{out}"}),
    ("demo",): ({}, {"--out": "{out}"}),
    ("run", "pam-attention"): ({}, {"--q": "{pq}", "--k": "{pk}", "--v": "{pv}",
                                    "--out": "{out}/o.npy"}),
    ("run", "hilos-attention"): ({}, {"--q": "{hq}", "--k": "{hk}", "--v": "{hv}",
                                      "--out": "{out}/o.npy"}),
    ("run", "hermes-gemv"): ({}, {"--w": "{w}", "--x": "{x}", "--out": "{out}/y.npy"}),
    ("run", "pam-migrate"): ({}, {"--list": "{list}", "--report": "{out}/r.json"}),
    ("run", "llm"): ({}, {"--prompt": "The capital of France is", "--tokens": "2"}),
}

TABLE = {
    ("list",): {"--verbose": Entry(Flag())},
    ("config",): {"unit": Entry(UNIT), "--preset": Entry(PRESET), "--config": Entry(CONFIG),
                  "--set": Entry(SET)},
    ("generate",): {"unit": Entry(UNIT), "--preset": Entry(PRESET), "--config": Entry(CONFIG),
                    "--set": Entry(SET), "--out": Entry(OutDir()), "--flat": Entry(Flag()),
                    "--filelist": Entry(Flag())},
    ("export",): {"format": Entry(Text(("nope",), name="format")), "unit": Entry(UNIT),
                  "--preset": Entry(PRESET), "--config": Entry(CONFIG), "--set": Entry(SET),
                  "--flat": Entry(Flag()), "--out": Entry(OutDir()),
                  # --gapi takes the unit from the file: no UNIT, no --out
                  "--gapi": Entry(InFile("{badyaml}", name="generator input"),
                                  {"unit": None, "--out": None})},
    ("test",): {"unit": Entry(UNIT), "--preset": Entry(PRESET), "--config": Entry(CONFIG),
                "--set": Entry(SET), "--sim": Entry(Choice(("verilator", "icarus"))),
                "--seed": Entry(SEED), "--n-random": Entry(Int(1, cli.N_RANDOM_MAX))},
    ("bench",): {"--out": Entry(OutDir()), "--only": Entry(Choice(("all",))),
                 "--cycles": Entry(Int(1000, cli.BENCH_CYCLES_MAX)),
                 "--units": Entry(Text(("nope", ",")), {"--only": "synth"})},
    ("synth",): {"unit": Entry(UNIT), "--preset": Entry(PRESET), "--config": Entry(CONFIG),
                 "--set": Entry(SET), "--target": Entry(Text(("nope", ","))),
                 "--device": Entry(Text(("nope",), name="device"), {"--target": "xcup"}),
                 "--out": Entry(OutDir()), "--jobs": Entry(Int(1, synth_cli.MAX_JOBS)),
                 "--units": Entry(Text(("nope",), name="unknown unit"), {"unit": "all"}),
                 "--flat": Entry(Flag()), "--no-cache": Entry(Flag()),
                 "--update-table": Entry(Flag())},
    ("sweep",): {"spec": Entry(InFile("{badyaml}", name="spec")), "--out": Entry(OutDir()),
                 "--scheduler": Entry(Text(("nope", "tcp://host:port"))),
                 "--workers": Entry(Int(1, sweep_cli.MAX_WORKERS)),
                 "--cache": Entry(OutDir()), "--serial": Entry(Flag()),
                 "--retries": Entry(Int(0, sweep_cli.MAX_RETRIES)), "--quiet": Entry(Flag())},
    ("prove",): {"unit": Entry(UNIT), "--preset": Entry(PRESET), "--config": Entry(CONFIG),
                 "--set": Entry(SET), "--depth": Entry(Int(1, prove_cli.MAX_DEPTH)),
                 "--mode": Entry(Choice(("bmc",))), "--out": Entry(OutDir()),
                 "--no-fifos": Entry(Flag()), "--protocol-only": Entry(Flag()),
                 "--no-response": Entry(Flag())},
    ("model",): {"system": Entry(Text(("nope",), name="system")), "--preset": Entry(PRESET),
                 "--config": Entry(CONFIG), "--set": Entry(MODEL_SET),
                 "--describe": Entry(Flag()), "--out": Entry(OutDir()),
                 "--quiet": Entry(Flag())},
    ("reproduce",): {"system": Entry(Text(("nope", "all"), name="system")),
                     "--seed": Entry(SEED), "--out": Entry(OutDir()), "--quiet": Entry(Flag()),
                     "--update-baseline": Entry(Flag())},
    ("demo",): {"--out": Entry(OutDir()), "--full": Entry(Flag())},
    ("run", "pam-attention"): {
        "--q": Entry(InFile(name="Q")), "--k": Entry(InFile(name="K")),
        "--v": Entry(InFile(name="V")),
        # a weight is a ratio: a huge finite one is legal, one that overflows a float is not
        "--split": Entry(Text(("1:x:1", "-1:1:1", "0:0:0", "1:1", "1e400:1:1"))),
        "--pus": Entry(Text(("0:4:4", "17:4:4", "a:4:4", "4:4"))),
        "--backend": Entry(Choice(("golden", "rtl"), name="backend")),
        "--acc": Entry(Choice(("fp16", "fp32"), name="accumulator format")),
        "--tile": Entry(Text(("0", "-1", "65", HUGE, "abc"))),
        "--scale": Entry(Text(("0", "-1", HUGE, "abc", "nan"))),
        "--out": Entry(OUT_NPY), "--report": Entry(REPORT)},
    ("run", "hilos-attention"): {
        "--q": Entry(InFile(name="Q")), "--k": Entry(InFile(name="K")),
        "--v": Entry(InFile(name="V")), "--mask": Entry(InFile(name="mask")),
        "--precomputed": Entry(InFile(name="precomputed")),
        "--backend": Entry(Choice(("golden", "rtl"), name="backend")),
        "--block": Entry(Text(("0", "-1", "33", HUGE, "abc"))),
        "--beat-elems": Entry(Text(("0", "-1", "7", HUGE, "abc"))),
        "--score-fmt": Entry(Choice(("fp32", "fp16"), name="score format")),
        "--scale": Entry(Text(("0", "-1", HUGE, "abc", "nan"))),
        "--out": Entry(OUT_NPY), "--report": Entry(REPORT)},
    ("run", "hermes-gemv"): {
        "--w": Entry(InFile(name="W")), "--x": Entry(InFile(name="x")),
        "--active": Entry(InFile(name="active"), {"--mode": "rows"}),
        "--mode": Entry(Choice(("dense", "rows", "cols"), name="mode")),
        "--gpu-partial": Entry(InFile(name="gpu partial")),
        "--backend": Entry(Choice(("golden", "rtl"), name="backend")),
        "--out": Entry(OUT_NPY), "--report": Entry(REPORT)},
    ("run", "pam-migrate"): {
        "--list": Entry(InFile()), "--preset": Entry(PRESET), "--config": Entry(CONFIG),
        "--set": Entry(SET), "--occupied": Entry(InFile()), "--src-image": Entry(InFile()),
        "--seed": Entry(SEED), "--out": Entry(OutFile()), "--report": Entry(REPORT)},
    ("run", "llm"): {
        "--prompt": Entry(Text(("",))), "--chat": Entry(Flag()),
        "--tokens": Entry(Int(1, llm_run.MAX_TOKENS)),
        "--system": Entry(Text(("nope", "pam,pam", "pam,,hilos"))),
        "--backend": Entry(Choice(("golden", "rtl"), name="backend")),
        # a layer index past the model's 30 layers, negative, or not a list of integers
        "--rtl-layers": Entry(Text(("30", "-1", "x", "0,,1"))),
        "--rtl-steps": Entry(Int(1, llm_run.MAX_TOKENS)),
        "--teacher": Entry(InFile(name="--teacher")),
        "--sparse": Entry(Flag()), "--batch": Entry(Int(1, llm_run.MAX_BATCH)),
        "--model": Entry(InFile(name="--model")), "--layers": Entry(Int(1, 30)),
        "--report": Entry(REPORT)},
}


# --- the parser's options ----------------------------------------------------------------------

def parser_options() -> dict:
    """``{command path: {option: action}}`` for every (sub)command of the parser."""
    out = {}

    def walk(p, path):
        for a in p._actions:
            if isinstance(a, argparse._SubParsersAction):
                for name, sub in a.choices.items():
                    walk(sub, path + (name,))
            elif not isinstance(a, argparse._HelpAction):
                name = max(a.option_strings, key=len) if a.option_strings else a.dest
                out.setdefault(path, {})[name] = a
    walk(cli.build_parser(), ())
    return out


OPTIONS = parser_options()


def test_every_option_is_classified():
    """A new option (or command) fails here until ``TABLE`` states its kind and bad values."""
    missing = sorted(f"{' '.join(p)} {o}" for p, opts in OPTIONS.items() for o in opts
                     if o not in TABLE.get(p, {}))
    stale = sorted(f"{' '.join(p)} {o}" for p, opts in TABLE.items() for o in opts
                   if o not in OPTIONS.get(p, {}))
    assert not missing, f"options without a bad-input class in TABLE: {missing}"
    assert not stale, f"TABLE names options the parser does not have: {stale}"


def test_kinds_match_the_parser():
    """A flag is classified as a flag, an option with a value is not; argparse choices are
    the choices the table states."""
    for path, opts in OPTIONS.items():
        for name, action in opts.items():
            kind = TABLE[path][name].kind
            is_flag = isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction))
            assert is_flag == isinstance(kind, Flag), (path, name)
            if action.choices and isinstance(kind, Choice):
                assert set(kind.values) <= set(action.choices), (path, name)
            if action.type is int:
                assert isinstance(kind, Int), (path, name)


def _cases():
    out = []
    for path, opts in TABLE.items():
        for name, entry in opts.items():
            for value in entry.kind.bad():
                out.append(pytest.param(path, name, entry, value,
                                        id=f"{'-'.join(path)}{name}={value}"))
    return out


CASES = _cases()


# --- running a command line in process ---------------------------------------------------------

@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """Valid input files, and the bad paths: a missing file, a directory, a text file, a file
    that is not YAML."""
    d = tmp_path_factory.mktemp("walk-inputs")
    f16 = np.float16
    arrays = {"pq": np.ones((2, 8), f16), "pk": np.ones((2, 16, 8), f16),
              "pv": np.ones((2, 16, 8), f16), "hq": np.ones((2, 8), f16),
              "hk": np.ones((1, 16, 8), f16), "hv": np.ones((1, 16, 8), f16),
              "w": np.ones((8, 16), f16), "x": np.ones((16,), f16)}
    paths = {}
    for k, a in arrays.items():
        paths[k] = d / f"{k}.npy"
        np.save(paths[k], a)
    (d / "list.csv").write_text("token,src_slot,dst_slot\n0,0,0\n")
    paths["list"] = d / "list.csv"
    (d / "adir").mkdir()
    paths["dir"] = d / "adir"
    (d / "text.txt").write_text("plain text, not an array\n")
    paths["text"] = d / "text.txt"
    (d / "bad.yaml").write_text("key: [unclosed\n")
    paths["badyaml"] = d / "bad.yaml"
    paths["missing"] = d / "missing.npy"
    return {k: str(v) for k, v in paths.items()}


def _stub(*_a, **_k):
    raise WorkStarted


@pytest.fixture
def no_work(monkeypatch):
    """Every command's work replaced by :func:`_stub`."""
    for mod, name in ((api, "elaborate"), (api, "run_bench"), (cli, "run_demo"),
                      (cli, "harness_benchmark"), (cli, "accuracy_benchmark"),
                      (prove_cli, "prove"), (synth_cli, "synthesize_many"),
                      (synth_cli, "run_compare"), (sweep_cli, "run_sweep"),
                      (software_cli, "update_baseline"), (pam_attention, "pam_attention"),
                      (hilos_attention, "hilos_attention"), (hermes_gemv, "hermes_gemv"),
                      (pam_migrate, "pam_migrate"), (llm_run, "run_llm")):
        monkeypatch.setattr(mod, name, _stub)
    for key, (title, _, rows, line) in list(cli._PROGRESS_BENCHES.items()):
        monkeypatch.setitem(cli._PROGRESS_BENCHES, key, (title, _stub, rows, line))
    real = software_cli.system_module

    def system_module(name, part="config"):
        mod = real(name, part)
        if part == "config":
            return mod
        return types.SimpleNamespace(__file__=mod.__file__, run_model=_stub, reproduce=_stub,
                                     WALL_CLOCK_ROWS=getattr(mod, "WALL_CLOCK_ROWS", {}))
    monkeypatch.setattr(software_cli, "system_module", system_module)


def _argv(path, inputs, out, pos_over=None, opt_over=None) -> list:
    pos, opts = BASE.get(path, ({}, {}))
    pos = dict(pos, **(pos_over or {}))
    opts = dict(opts, **(opt_over or {}))
    subst = dict(inputs, out=str(out), file=inputs["text"])

    def fill(v):
        for k, s in subst.items():
            v = v.replace("{" + k + "}", s)
        return v
    argv = list(path) + [fill(v) for v in pos.values() if v is not None]
    for k, v in opts.items():
        if v is not None:
            argv += [k, fill(v)]
    return argv


def _split_over(path, over: dict) -> tuple:
    """Overrides as (positionals, options): option names start with '-'."""
    return ({k: v for k, v in over.items() if not k.startswith("-")},
            {k: v for k, v in over.items() if k.startswith("-")})


def _run(argv, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)               # default output directories land here
    try:
        code = cli.main(argv)
    except SystemExit as e:                   # argparse's own exit (not expected)
        code = e.code
    cap = capsys.readouterr()
    return code, cap.out, cap.err


@pytest.mark.parametrize("path", sorted(BASE), ids=lambda p: "-".join(p))
def test_base_command_reaches_the_work(path, inputs, no_work, tmp_path, capsys, monkeypatch):
    """With every value valid, each command passes its checks and starts its work (the stub):
    the bad cases below fail on their bad value alone."""
    argv = _argv(path, inputs, tmp_path / "out")
    if path == ("config",):
        assert _run(argv, capsys, tmp_path, monkeypatch)[0] == 0
        return
    with pytest.raises(WorkStarted):
        _run(argv, capsys, tmp_path, monkeypatch)


@pytest.mark.parametrize("path, name, entry, value", CASES)
def test_bad_value(path, name, entry, value, inputs, no_work, tmp_path, capsys, monkeypatch):
    out = tmp_path / "out"
    pos_over, opt_over = _split_over(path, entry.with_)
    if name.startswith("-"):
        opt_over[name] = value
    else:
        pos_over[name] = value
    argv = _argv(path, inputs, out, pos_over, opt_over)
    before = sorted(p.name for p in tmp_path.iterdir())
    try:
        code, stdout, err = _run(argv, capsys, tmp_path, monkeypatch)
    except WorkStarted:
        pytest.fail(f"`pimforge {' '.join(argv)}`: the bad value {value!r} of {name} was "
                    f"accepted, or checked only after the work began")
    shown = f"`pimforge {' '.join(argv)}`"
    assert "Traceback" not in err + stdout, shown
    assert code == 2, f"{shown}: exit {code}, not 2; stderr: {err!r}"
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), f"{shown}: stderr {err!r}"
    label = entry.kind.name or name
    assert label in lines[0], f"{shown}: the error does not name {label}: {lines[0]}"
    # nothing written: no output directory, no default output under the working directory
    assert not out.exists() or not any(out.iterdir()), shown
    assert sorted(p.name for p in tmp_path.iterdir()) == before, shown


def test_walk_covers_every_kind_of_bad_value():
    """The walk feeds negatives, zeros, huge values, non-numbers, directories, existing files
    and missing files, and unknown names: a table edit cannot quietly drop a class."""
    values = {c.values[3] for c in CASES}
    for v in ("-1", "0", HUGE, "abc", "{dir}", "{text}", "{missing}", "{file}", "nope"):
        assert v in values, v
    assert len(CASES) > 200


# --- the same through the installed entry point ------------------------------------------------

SUBPROCESS_CASES = [
    ["test", "fp_add", "--seed", "-1"],
    ["prove", "fp_add", "--out", "{text}"],
    ["run", "pam-migrate", "--list", "{dir}", "--report", "{out}/r.json"],
    ["run", "pam-migrate", "--list", "{list}", "--seed", "-3", "--report", "{out}/r.json"],
    ["bench", "--cycles", "abc"],
]


@pytest.mark.parametrize("argv", SUBPROCESS_CASES, ids=lambda a: "-".join(a[:2]))
def test_subprocess_matches_in_process(argv, inputs, tmp_path, capsys, monkeypatch):
    """No stubs here: each case is rejected before any work, in process and as a process."""
    subst = dict(inputs, out=str(tmp_path / "out"))
    argv = [a.format(**subst) for a in argv]
    code, _, err = _run(argv, capsys, tmp_path, monkeypatch)
    p = subprocess.run([sys.executable, "-m", "pimforge", *argv], capture_output=True,
                       text=True, cwd=tmp_path)
    assert code == 2 and err.count("\n") == 1 and err.startswith("error: "), err
    assert (p.returncode, p.stderr) == (code, err)
    assert not (tmp_path / "out").exists()
