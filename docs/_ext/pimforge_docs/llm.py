"""The LLM page: what each system runs on its units when it decodes a real model, from the
system modules' own docstrings, and the contract's constants from the code."""
from __future__ import annotations

import importlib

from pimforge.software.llm import systems
from pimforge.software.llm.compare import MARGIN_THRESHOLD
from pimforge.software.llm.gguf_model import SUPPORTED_QUANTS
from pimforge.software.llm.ops import LINEARS

from . import markdown as md
from .docstrings import rst_block
from .systems import TITLES


def llm_page(app) -> str:
    """``llm.md``: one section per system of :data:`pimforge.software.llm.systems.CLASSES`."""
    out = [
        "# SmolLM2 on the units: what each system runs\n",
        "Generated from the code.  `pimforge run llm` hands each decode step's operations to "
        "one system; these are the system modules' own accounts of what runs on which unit, "
        "in which format, and what stays on the host.  The user guide's "
        "{doc}`../guide/llm` page explains the command, the comparison and the figures.\n",
        md.table(["constant", "value"], [
            ["the projections a step hands over", ", ".join(md.code(n) for n in LINEARS)],
            ["margin threshold (logit units)", md.value(MARGIN_THRESHOLD)],
            ["GGUF tensor types read", ", ".join(md.code(q) for q in SUPPORTED_QUANTS)],
            ["systems with an RTL path", ", ".join(md.code(s) for s in systems.RTL_SYSTEMS)],
            ["options per system", "; ".join(f"{md.code(n)}: {', '.join(o)}"
                                             for n, o in systems.OPTIONS.items())]]),
    ]
    for name, cls in systems.CLASSES.items():
        mod = importlib.import_module(cls.__module__)
        out.append(f"## {TITLES.get(name, name)}: {{class}}`{cls.__module__}.{cls.__qualname__}`\n")
        out.append(md.shell(f"pimforge run llm --prompt \"What is the capital of France?\" "
                            f"--chat --system {name}"))
        out.append(rst_block(app, mod, mod.__name__, "module") or "(no docstring)\n")
    return "\n".join(out)
