"""The API reference: one page per package, with an ``automodule`` of the package and of each
of its modules, found by walking the installed ``pimforge`` packages (so a new or renamed
module is documented without editing the docs)."""
from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil

from sphinx.pycode import ModuleAnalyzer

# setup.py maps hw/, sim/, software/ and synth/ into the namespace: each is walked from its own
# directory, since none is a subdirectory of pimforge/.
TOPS = ("pimforge", "pimforge.hw", "pimforge.sim", "pimforge.software", "pimforge.synth")
SKIP = {"pimforge.__main__"}  # runs the command line on import


def packages() -> dict:
    """package name -> the names of its direct submodules that are not packages."""
    found = {}
    for top in TOPS:
        pkg = importlib.import_module(top)
        found.setdefault(top, [])
        for info in pkgutil.walk_packages(pkg.__path__, top + "."):
            if info.name in SKIP:
                continue
            if info.ispkg:
                found.setdefault(info.name, [])
            else:
                found.setdefault(info.name.rpartition(".")[0], []).append(info.name)
    return {p: sorted(mods) for p, mods in sorted(found.items())}


def undocumented_data(modname: str) -> list:
    """The public module-level names ``modname`` assigns without a docstring.  Autodoc leaves
    them out even with ``undoc-members``, yet docstrings refer to them (``:data:`OPS```)."""
    mod = importlib.import_module(modname)
    try:
        tree = ast.parse(inspect.getsource(mod))
    except (OSError, TypeError):
        return []
    documented = {name for (ns, name) in ModuleAnalyzer.for_module(modname).find_attr_docs()
                  if ns == ""}
    names = []
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, ast.AnnAssign) else []
        for t in targets:
            for n in ([t] if isinstance(t, ast.Name) else
                      [e for e in getattr(t, "elts", []) if isinstance(e, ast.Name)]):
                if not n.id.startswith("_") and n.id not in documented and n.id not in names:
                    names.append(n.id)
    return [n for n in names if hasattr(mod, n) and not inspect.ismodule(getattr(mod, n))]


def _automodule(modname: str) -> list:
    out = ["````{eval-rst}", f".. automodule:: {modname}", ""]
    mod = importlib.import_module(modname)
    for name in undocumented_data(modname):
        # py:data, not autodata, which would show the docstring of the value's type
        value = getattr(mod, name)
        kind = type(value)
        kind = kind.__qualname__ if kind.__module__ == "builtins" else \
            f"{kind.__module__}.{kind.__qualname__}"
        out += [f".. py:data:: {name}", f"   :module: {modname}", f"   :type: {kind}"]
        if len(repr(value)) <= 80 and "\n" not in repr(value):
            out.append(f"   :value: {value!r}")
        out.append("")
    return out + ["````\n"]


def _page(package: str, modules: list) -> str:
    out = [f"# {package}\n", *_automodule(package)]
    for mod in modules:
        out += [f"## {mod.rpartition('.')[2]}\n", *_automodule(mod)]
    return "\n".join(out)


def api_pages() -> dict:
    """``{"api/<package>.md": page}`` for every package, plus ``api/index.md``."""
    pkgs = packages()
    pages = {f"api/{p}.md": _page(p, mods) for p, mods in pkgs.items()}
    rows = "\n".join(f"- {{mod}}`{p}`: " + (", ".join(m.rpartition(".")[2] for m in mods)
                                             or "(no modules of its own)")
                     for p, mods in pkgs.items())
    pages["api/index.md"] = "\n".join([
        "# API reference\n",
        "Every module of the `pimforge` package, from its docstrings: one page per package.\n",
        rows + "\n",
        "```{toctree}\n:hidden:\n\n" + "\n".join(pkgs) + "\n```\n"])
    return pages
