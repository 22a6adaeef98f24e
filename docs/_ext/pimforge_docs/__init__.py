"""Sphinx extension: the generated reference pages of the pimforge site.

At ``builder-inited`` it writes MyST pages into ``docs/<pimforge_docs_out>/`` (gitignored):
``units/`` (one page per unit), ``systems/`` (one per system model), ``cli.md`` (every
subcommand's ``--help``), ``llm.md`` (what each system runs of a real LLM), ``stages.md``
(the float operators' deepest stage per depth) and ``api/`` (autodoc, one page per package).
A page is rewritten only when its text changes, so an incremental build re-reads only what
changed; a page the code no longer produces is deleted.
"""
from __future__ import annotations

import builtins
import gc
import time
from pathlib import Path

from docutils import nodes
from sphinx import addnodes
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.util import logging

from . import docstrings
from .api import api_pages
from .cli_page import cli_page
from .llm import llm_page
from .stages import stages_page
from .systems import system_pages
from .units import unit_pages

logger = logging.getLogger(__name__)


def generate(app) -> dict:
    """Every generated page, ``{path relative to the output directory: text}``."""
    pages = {"cli.md": cli_page(), "llm.md": llm_page(app), "stages.md": stages_page()}
    pages.update(unit_pages(app))
    pages.update(system_pages(app))
    pages.update(api_pages())
    return pages


def write_pages(out: Path, pages: dict) -> int:
    """Write ``pages`` under ``out``, touching only the changed ones; delete stale pages.
    Returns the number of files written."""
    written = 0
    for rel, text in pages.items():
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            written += 1
    keep = {out / rel for rel in pages}
    for path in out.rglob("*.md"):
        if path not in keep:
            path.unlink()
    return written


def _builder_inited(app) -> None:
    start = time.perf_counter()
    pages = generate(app)
    out = Path(app.srcdir) / app.config.pimforge_docs_out
    written = write_pages(out, pages)
    logger.info(f"pimforge_docs: {len(pages)} generated pages ({written} changed) in "
                f"{time.perf_counter() - start:.1f} s")
    gc.collect()
    gc.freeze()  # the imported modules (pimforge, Amaranth, NumPy) stay alive to the end


def _freeze_heap(app, env) -> list:
    """After reading, move every live object out of the garbage collector's view: the
    environment holds all doctrees, and each full collection while the pages are written
    would walk them again (about a third of the build's time)."""
    gc.collect()
    gc.freeze()
    return []


class BuiltinTypes(SphinxPostTransform):
    """A builtin type in a signature (``-> bytes``) is looked up in the fuzzy mode that finds
    any documented name ending in it (``Node.bytes``); make it a plain, unlinked type name
    before the references are resolved, as Sphinx does for the builtins it cannot find."""

    default_priority = 5  # before ReferencesResolver (10)

    def run(self, **kwargs) -> None:
        for node in list(self.document.findall(addnodes.pending_xref)):
            target = node.get("reftarget", "")
            if node.get("refdomain") == "py" and node.get("reftype") in ("class", "obj") \
                    and isinstance(getattr(builtins, target, None), type):
                node.replace_self(node.children or [nodes.Text(target)])


def setup(app):
    app.add_config_value("pimforge_docs_out", "_generated", "env")
    app.connect("builder-inited", _builder_inited)
    app.connect("env-updated", _freeze_heap)
    # before napoleon's handler (priority 500), which turns the sections into field lists
    app.connect("autodoc-process-docstring", docstrings.process_docstring, priority=400)
    app.connect("autodoc-process-bases", docstrings.process_bases)
    app.connect("autodoc-process-signature", docstrings.process_signature)
    app.add_post_transform(BuiltinTypes)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1"}
