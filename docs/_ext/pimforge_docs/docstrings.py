"""pimforge's numpydoc dialect, for napoleon.

Parameter and member lists often give a description where numpydoc puts the type
(``start : the clock of page 0's ACT.``).  Napoleon would render the sentence as a type, and
nitpicky mode would then look every word of it up as a class.  :func:`fix_field_lines` moves
such a description to the indented line below the name, where numpydoc wants it, and keeps a
real type (``cfg : PamPuConfig``, ``func : callable``) in place.
"""
from __future__ import annotations

import inspect
import re

from sphinx.ext.napoleon.docstring import NumpyDocstring
from sphinx.util import inspect as sphinx_inspect

SECTIONS = {"Parameters", "Other Parameters", "Members", "Attributes", "Returns", "Yields",
            "Raises", "Keyword Arguments"}
_FIELD = re.compile(r"^(?P<indent>\s*)(?P<name>[\w*][\w, *]*) : (?P<rest>.*)$")
_TYPE = re.compile(r"^[\w.\[\]|, ]+$")
_UNDERLINE = re.compile(r"^\s*-{3,}\s*$")


def _is_type(text: str) -> bool:
    """A type expression (``int``, ``FpConfig``, ``int, optional``), not a sentence."""
    text = text.strip()
    return bool(_TYPE.match(text)) and not text.endswith(".") and len(text.split()) <= 3


def fix_field_lines(lines: list) -> list:
    """The docstring ``lines`` with every ``name : description`` field of a numpydoc section
    rewritten as ``name`` plus the description indented below it."""
    out, in_section, indent = [], False, ""
    for i, line in enumerate(lines):
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        if line.strip() in SECTIONS and _UNDERLINE.match(nxt):
            in_section, indent = True, line[:len(line) - len(line.lstrip())]
            out.append(line)
            continue
        if in_section and line.strip() and not line.startswith(indent + " ") \
                and not _UNDERLINE.match(line) and not _FIELD.match(line):
            in_section = False  # a paragraph at the section's indent ends it
        m = _FIELD.match(line) if in_section else None
        if m and m.group("indent") == indent and not _is_type(m.group("rest")):
            out.append(indent + m.group("name"))
            out.append(indent + "    " + m.group("rest"))
            continue
        out.append(line)
    return out


def process_docstring(app, what, name, obj, options, lines) -> None:
    """``autodoc-process-docstring`` handler, run before napoleon's."""
    lines[:] = fix_field_lines(lines)
    if what in ("attribute", "property", "data") and lines and ":" in lines[0]:
        # Napoleon reads an attribute docstring's first line "X: text" as type X; here such a
        # line is a sentence ("Beats per cycle: ..."), so the docstring starts with an empty
        # comment for napoleon to take as the (type-less) first line.
        lines[:0] = ["..", ""]


def process_signature(app, what, name, obj, options, signature, return_annotation):
    """``autodoc-process-signature`` handler: Amaranth's ``Elaboratable.__new__`` (which
    records where a component was made) takes ``*args, **kwargs``; a component's signature is
    its ``__init__``'s."""
    if what != "class" or "src_loc_at=0, **kwargs" not in (signature or ""):
        return None
    init = obj.__dict__.get("__init__") or next(
        (c.__dict__["__init__"] for c in obj.__mro__ if "__init__" in c.__dict__), None)
    if init is None:
        return None
    sig = sphinx_inspect.signature(init, bound_method=True)  # without self, annotations evaluated
    text = sphinx_inspect.stringify_signature(sig, show_return_annotation=False,
                                              unqualified_typehints=True)
    return text, return_annotation


def process_bases(app, name, obj, options, bases) -> None:
    """``autodoc-process-bases`` handler: a private base class (``_HilosConfig``) is not
    documented, so show its public bases in its place."""
    out = []
    for base in bases:
        if getattr(base, "__name__", "").startswith("_") and isinstance(base, type):
            out += [b for b in base.__bases__ if b is not object]
        else:
            out.append(base)
    bases[:] = list(dict.fromkeys(out)) or [object]


def to_rst(app, obj, what: str = "function") -> str:
    """``obj``'s docstring as reStructuredText, as autodoc and napoleon would render it."""
    doc = inspect.getdoc(obj) or ""
    lines = fix_field_lines(doc.splitlines())
    return str(NumpyDocstring(lines, app.config, app, what, getattr(obj, "__name__", ""), obj))


def rst_block(app, obj, module: str, what: str = "function") -> str:
    """A MyST ``eval-rst`` block of ``obj``'s docstring, its references resolved from
    ``module`` (as they would be in the API reference)."""
    body = to_rst(app, obj, what).strip()
    if not body:
        return ""
    return f"````{{eval-rst}}\n.. currentmodule:: {module}\n\n{body}\n````\n"
