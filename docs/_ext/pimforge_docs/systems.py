"""One page per system model, from the fields ``pimforge model SYSTEM --describe`` prints, the
package's module docstrings (its mechanisms) and its assumptions table."""
from __future__ import annotations

import dataclasses
import importlib
import pkgutil

from pimforge.base.config import config_to_dict
from pimforge.software.cli import SYSTEMS, system_module

from . import markdown as md
from .docstrings import rst_block

TITLES = {"pam": "PAM", "hilos": "HILOS", "hermes": "Hermes", "lolpim": "LoL-PIM",
          "papi": "PAPI"}


def _fields(name: str) -> str:
    """The table of what ``pimforge model NAME --describe`` prints: every field with its
    default, allowed values and description, then the presets."""
    mod = system_module(name)
    cls = getattr(mod, SYSTEMS[name][1])
    defaults = config_to_dict(cls())
    docs = cls.field_docs()
    rows = [[md.code(f.name), md.value(defaults[f.name]), md.text(docs[f.name][1]),
             md.text(docs[f.name][0])]
            for f in dataclasses.fields(cls) if f.name in docs]
    presets = [[md.code(p), ", ".join(f"{md.code(k)} = {md.value(v)}" for k, v in over.items())
                or "(the defaults)"] for p, over in mod.PRESETS.items()]
    return "\n".join([
        f"The config class is {{class}}`{cls.__module__}.{cls.__qualname__}`; "
        f"`pimforge model {name} --describe` prints the same fields.  Set them with "
        "`--set FIELD=VALUE`, a YAML file (`--config`) or a preset (`--preset`).\n",
        md.table(["field", "default", "allowed", "description"], rows),
        "### Presets\n",
        md.table(["preset", "overrides"], presets) or "The model has no presets.\n"])


def _mechanisms(app, name: str) -> str:
    """Each module of the system's package with its docstring, which names the paper sections
    the module follows."""
    package = importlib.import_module(SYSTEMS[name][0])
    out = []
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        modname = f"{package.__name__}.{info.name}"
        mod = importlib.import_module(modname)
        out.append(f"### {{mod}}`{modname}`\n")
        out.append(rst_block(app, mod, modname, "module") or "(no docstring)\n")
    return "\n".join(out)


def _assumptions(name: str) -> str:
    rows = [[md.text(p), md.text(v), md.text(why)]
            for p, v, why in system_module(name, "assumptions").assumptions()]
    return md.table(["parameter", "value", "why"], rows)


def system_page(app, name: str) -> str:
    """The MyST page of one system model."""
    package = importlib.import_module(SYSTEMS[name][0])
    title = TITLES.get(name, name)
    return "\n".join([
        f"# {title} system model\n",
        rst_block(app, package, package.__name__, "module"),
        md.shell((f"pimforge model {name} --describe", "the fields below"),
                 (f"pimforge model {name} --out build/model/{name}", "run the model"),
                 (f"pimforge reproduce {name} --out build/reproduce/{name}",
                  "the paper's results next to the model's")),
        "## Fields\n",
        _fields(name),
        "## Mechanisms\n",
        "The modules of the model, each with the paper sections it follows.\n",
        _mechanisms(app, name),
        "## Assumptions\n",
        f"What the model assumes where the paper gives no figure "
        f"({{func}}`{package.__name__}.assumptions.assumptions`); `pimforge model` and "
        "`pimforge reproduce` print the same table into their Markdown output.\n",
        _assumptions(name),
        "## Reproducing the paper's results\n",
        f"`pimforge reproduce {name} --out DIR` writes `reproduce.json` (everything, "
        "machine-readable), `reproduce.md` (the paper's headline figures next to the model's, "
        "with the ratio) and one PNG per plot into `DIR` (default "
        f"`build/reproduce/{name}`).  `--seed N` picks the sampled requests and traces; the "
        "results are deterministic for a seed.  The figures are the command's output and are "
        "not copied here, so they cannot go stale.\n",
        md.shell(f"pimforge reproduce {name} --out build/reproduce/{name}"),
    ])


def system_pages(app) -> dict:
    """``{"systems/<name>.md": page}`` for every system model, plus ``systems/index.md``."""
    pages = {f"systems/{name}.md": system_page(app, name) for name in SYSTEMS}
    rows = [[f"[{TITLES.get(n, n)}]({n}.md)", md.code(f"pimforge model {n}"),
             md.text((importlib.import_module(SYSTEMS[n][0]).__doc__ or "").split("\n\n")[0])]
            for n in SYSTEMS]
    pages["systems/index.md"] = "\n".join([
        "# System models\n",
        "Each system model runs LLM decoding end to end on the hardware its paper describes, "
        "with the units' cycle models where the paper's hardware is one of pimforge's units.\n",
        md.table(["system", "command", "what it models"], rows),
        "```{toctree}\n:hidden:\n\n" + "\n".join(SYSTEMS) + "\n```\n"])
    return pages
