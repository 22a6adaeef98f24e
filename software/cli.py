"""``pimforge model`` and ``pimforge reproduce``: the system model on the command line.

    pimforge model pam|hilos|hermes|lolpim|papi [--preset NAME] [--config F.yaml] [--set k=v ...] [--describe] --out DIR
    pimforge reproduce pam|hilos|hermes|lolpim|papi [--seed N] --out DIR
    pimforge reproduce pam|hilos|hermes|lolpim|papi|all --update-baseline

Both write ``<stem>.json`` (everything, machine-readable), ``<stem>.md`` (tables) and one PNG
per plot into DIR, all or nothing.  User mistakes end with one line and exit status 2.
"""
from __future__ import annotations

import importlib
import sys
from dataclasses import fields
from pathlib import Path

from pimforge.base.cliargs import add_config_arguments, check_seed, config_args
from pimforge.base.config import config_layers, config_to_dict, layered_config
from pimforge.base.errors import UserError
from pimforge.base.files import precheck_out_dir
from pimforge.hw.core.energy import TABLE_PATH, table
from pimforge.software.baseline import BASELINE_SEED, update_baseline
from pimforge.software.report import fmt, write_result

__all__ = ["SYSTEMS", "add_model_arguments", "add_reproduce_arguments", "run_model_cli",
           "run_reproduce_cli", "system_module", "model_config"]

# system name -> its package's modules: ``config`` (the config class named here and PRESETS),
# ``model`` (run_model) and ``reproduce`` (reproduce); Hermes, LoL-PIM and PAPI plug in here.
# The modules load by name when a command needs them (importlib, not import statements), so the
# parser of every pimforge command does not load NumPy and the system models.
SYSTEMS = {"pam": ("pimforge.software.pam", "PamModelConfig"),
           "hilos": ("pimforge.software.hilos", "HilosModelConfig"),
           "hermes": ("pimforge.software.hermes", "HermesModelConfig"),
           "lolpim": ("pimforge.software.lolpim", "LolpimModelConfig"),
           "papi": ("pimforge.software.papi", "PapiModelConfig")}


def system_module(name: str, part: str = "config"):
    """The system's ``config``, ``model`` or ``reproduce`` module."""
    if name not in SYSTEMS:
        raise UserError(f"unknown system '{name}'; allowed: {', '.join(SYSTEMS)}")
    return importlib.import_module(f"{SYSTEMS[name][0]}.{part}")


def model_config(name: str, preset: str | None = None, config_file: str | None = None,
                 sets=()):
    """The system's config from its defaults, a preset, a YAML file and ``--set`` overrides."""
    mod = system_module(name)
    cls = getattr(mod, SYSTEMS[name][1])
    layers = config_layers(cls, config_file, sets=sets, unit=cls.UNIT)
    return layered_config(cls, mod.PRESETS, preset, *layers, owner=f"model {name}")


def _system_help() -> str:
    return "system: " + ", ".join(SYSTEMS)


def add_model_arguments(q) -> None:
    q.add_argument("system", help=_system_help())
    add_config_arguments(q, field="model field", preset_help="start from a named preset "
                         "(see --describe)", set_hint=" (see --describe for the fields)")
    q.add_argument("--describe", action="store_true",
                   help="print the system's fields, their defaults and allowed values, and its "
                        "presets, then exit")
    _output_arguments(q, "model")


def add_reproduce_arguments(q) -> None:
    q.add_argument("system", help=_system_help() + "; with --update-baseline also all")
    q.add_argument("--seed", type=int, default=0, help="seed of the sampled requests and traces "
                   "(default 0; results are deterministic for a seed)")
    _output_arguments(q, "reproduce")
    q.add_argument("--update-baseline", action="store_true",
                   help="rerun the rows at seed 0 and rewrite the committed snapshot "
                        "software/<system>/baseline.json that the tests compare every row "
                        "with (relative tolerance 1e-9); prints each changed row (old, new, "
                        "relative change) or 'no change'; writes no --out files")


def _output_arguments(q, stem: str) -> None:
    q.add_argument("--out", default=None, metavar="DIR",
                   help=f"output directory for {stem}.json, {stem}.md and the PNG plots "
                        f"(default build/{stem}/<system>)")
    q.add_argument("--quiet", action="store_true", help="no progress bar")


def precheck_out(out) -> Path:
    """Fail before a long run, not after it: ``--out`` must be a writable directory or
    creatable in a writable one."""
    return precheck_out_dir(out, "--out")


def _describe(name: str) -> int:
    mod = system_module(name)
    cls = getattr(mod, SYSTEMS[name][1])
    defaults = config_to_dict(cls())
    print(f"pimforge model {name}: fields (name = default: description; allowed)")
    for f in fields(cls):
        if not f.metadata:
            continue
        doc, allowed = cls.field_docs()[f.name]
        print(f"  {f.name} = {defaults[f.name]}: {doc}; allowed: {allowed}")
    print("presets:")
    for p, over in mod.PRESETS.items():
        print(f"  {p}: " + (", ".join(f"{k}={v}" for k, v in over.items()) or "(the defaults)"))
    print(f"energy table ({TABLE_PATH.name}): action = value unit [node]: source")
    for r in table().rows():
        print(f"  {r['key']} = {r['value']} {r['unit']} [{r['node']}]: {r['source']}")
    return 0


def run_model_cli(args) -> int:
    if args.describe:
        return _describe(args.system)
    mod = system_module(args.system, "model")
    cfg = model_config(args.system, **config_args(args))
    out = precheck_out(args.out or f"build/model/{args.system}")
    res = mod.run_model(cfg, progress=not args.quiet)
    written = write_result(res, out, "model")
    _summary(res, written)
    return 0


def run_reproduce_cli(args) -> int:
    if args.update_baseline:
        return _update_baseline_cli(args)
    if args.system == "all":
        raise UserError(f"system 'all' needs --update-baseline; allowed: {', '.join(SYSTEMS)}")
    mod = system_module(args.system, "reproduce")
    check_seed(args.seed)
    out = precheck_out(args.out or f"build/reproduce/{args.system}")
    res = mod.reproduce(progress=not args.quiet, seed=args.seed)
    written = write_result(res, out, "reproduce")
    _summary(res, written)
    return 0


def _update_baseline_cli(args) -> int:
    """``--update-baseline``: every option checked before the first model run."""
    names = list(SYSTEMS) if args.system == "all" else [args.system]
    mods = [system_module(n, "reproduce") for n in names]
    if args.seed != BASELINE_SEED:
        raise UserError(f"--seed: got {args.seed}; the baseline is at seed {BASELINE_SEED}; "
                        f"allowed with --update-baseline: {BASELINE_SEED}")
    if args.out is not None:
        raise UserError("--out: not allowed with --update-baseline (it writes only the "
                        "baseline)")
    for name, mod in zip(names, mods):
        for line in update_baseline(name, mod, progress=not args.quiet):
            print(line, flush=True)
    return 0


def _summary(res, written) -> None:
    if res.rows:
        width = max(len(r.item) for r in res.rows)
        width = min(width, 72)
        print(f"{'item':<{width}}  {'paper':>10}  {'ours':>10}  ratio")
        for r in res.rows:
            ratio = "-" if r.ratio is None else f"{r.ratio:.2f}"
            ours = "-" if r.ours is None else fmt(r.ours)
            print(f"{r.item[:width]:<{width}}  {fmt(r.paper):>10}  {ours:>10}  {ratio}")
    else:
        t = res.tables[0]
        print(t.title)
        print("  " + " | ".join(str(c) for c in t.columns))
        for row in t.rows:
            print("  " + " | ".join(fmt(c) for c in row))
    print(f"model run time {res.seconds:.1f} s; wrote "
          + ", ".join(str(w) for w in written), file=sys.stdout)
