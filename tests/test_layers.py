"""The layers hold (docs/dev/architecture.md): import-linter's contracts from pyproject.toml,
no imports inside functions, no import cycles, no module using another's private names, and no
source file or function past the size limits.

import-linter reads a package as it lies on disk, and setup.py maps hw/, sim/, software/ and
synth/ into ``pimforge.*``; so the contracts run on a copy of the sources laid out as installed.
"""
import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TOPS = ("hw", "sim", "software", "synth")
MAX_FILE_LINES = 500
MAX_FUNCTION_LINES = 120


def _sources() -> dict:
    """Every source module of the package: dotted name -> path."""
    out = {}
    for top in ("pimforge",) + TOPS:
        for path in sorted((ROOT / top).rglob("*.py")):
            rel = path.relative_to(ROOT).with_suffix("").parts
            if rel[-1] == "__init__":
                rel = rel[:-1]
            name = ".".join(rel if rel[0] == "pimforge" else ("pimforge",) + rel)
            out[name] = path
    return out


def _laid_out(dst: Path) -> Path:
    """A copy of the package laid out as installed (pimforge/hw, pimforge/sim, ...)."""
    pkg = dst / "pimforge"
    shutil.copytree(ROOT / "pimforge", pkg, ignore=shutil.ignore_patterns("__pycache__"))
    for top in TOPS:
        shutil.copytree(ROOT / top, pkg / top, ignore=shutil.ignore_patterns("__pycache__"))
    return pkg


def _lint_imports(tree: Path) -> subprocess.CompletedProcess:
    exe = Path(sys.executable).with_name("lint-imports")
    env = {**os.environ, "PYTHONPATH": str(tree)}
    return subprocess.run([str(exe), "--config", str(ROOT / "pyproject.toml"), "--no-cache"],
                          cwd=tree, env=env, capture_output=True, text=True, timeout=300)


def test_import_contracts_hold(tmp_path):
    _laid_out(tmp_path)
    res = _lint_imports(tmp_path)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "0 broken" in res.stdout


@pytest.mark.parametrize("module, line, contract", [
    ("hw/pam/pu.py", "from pimforge.sim.golden.pam import pu as _golden", "base <- hw"),
    ("synth/area.py", "from pimforge.software import devices as _dev", "synth sees hw"),
    ("pimforge/base/config.py", "from pimforge.hw.core import unit as _unit", "base <- hw"),
])
def test_a_backwards_import_breaks_a_contract(tmp_path, module, line, contract):
    """The contracts can fail: one backwards import added to the copy is reported by name."""
    pkg = _laid_out(tmp_path)
    path = pkg / module.removeprefix("pimforge/")
    path.write_text(path.read_text() + f"\n{line}\n")
    res = _lint_imports(tmp_path)
    assert res.returncode != 0
    assert "BROKEN" in res.stdout and contract in res.stdout


def _function_imports(path: Path) -> list:
    tree = ast.parse(path.read_text(), str(path))
    found = []
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for node in ast.walk(fn):
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    names = [node.module] if isinstance(node, ast.ImportFrom) else \
                        [a.name for a in node.names]
                    found += [(node.lineno, n) for n in names]
    return found


# Third-party modules that may be imported where they are used: matplotlib costs about a second
# and only the plotting commands need it.
LAZY_OK = ("matplotlib",)


def test_no_imports_inside_functions():
    """Imports sit at module level, so a cycle cannot hide inside a function."""
    bad = [f"{path.relative_to(ROOT)}:{line}: {name}"
           for path in _sources().values() for line, name in _function_imports(path)
           if not name.startswith(LAZY_OK)]
    assert not bad, "imports inside functions:\n" + "\n".join(bad)


def _graph() -> dict:
    """module -> the package modules it imports (module-level imports, resolved to modules)."""
    mods = _sources()
    graph = {}
    for name, path in mods.items():
        pkg = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        deps = set()
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(pkg.split(".")[:len(pkg.split(".")) - node.level + 1]
                                    + ([base] if base else []))
                for a in node.names:
                    target = f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base
                    deps.add(target)
            elif isinstance(node, ast.Import):
                deps.update(a.name for a in node.names)
        graph[name] = {d for d in deps if d in mods and d != name}
    return graph


def _cycles(graph: dict) -> list:
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_import_cycles():
    graph = _graph()
    assert sum(len(d) for d in graph.values()) > 300      # the graph was actually read
    assert _cycles(graph) == []


def test_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_files_and_functions_stay_small():
    """No source file over 500 lines, no function over 120 (the issue's limits)."""
    big = []
    for path in _sources().values():
        text = path.read_text()
        if text.count("\n") > MAX_FILE_LINES:
            big.append(f"{path.relative_to(ROOT)}: {text.count(chr(10))} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                if n > MAX_FUNCTION_LINES:
                    big.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}: {n} lines")
    assert not big, "\n".join(big)


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _dotted(node):
    """``a.b.c`` of a chain of attributes on a name, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return ".".join([node.id] + parts[::-1]) if isinstance(node, ast.Name) else None


def _private_uses(path: Path, name: str, mods) -> list:
    """Where the module ``name`` (source ``path``) reaches into another package module's private
    names: ``from pimforge.x import _y``, or ``m._y`` with ``m`` bound to a package module (by
    ``import pimforge.x as m``, ``from pimforge import x as m`` or ``import pimforge.x``)."""
    tree = ast.parse(path.read_text(), str(path))
    pkg = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    bound = {}   # local name -> the package module it stands for
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(pkg.split(".")[:len(pkg.split(".")) - node.level + 1]
                                + ([base] if base else []))
            if not base.startswith("pimforge"):
                continue
            for a in node.names:
                if _is_private(a.name):
                    found.append((node.lineno, f"from {base} import {a.name}"))
                if f"{base}.{a.name}" in mods:
                    bound[a.asname or a.name] = f"{base}.{a.name}"
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("pimforge"):   # binds the alias, else "pimforge" itself
                    bound[a.asname or "pimforge"] = a.name if a.asname else "pimforge"
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _is_private(node.attr):
            chain = _dotted(node.value)
            if chain is None or chain.split(".")[0] not in bound:
                continue
            head, *rest = chain.split(".")
            target = ".".join([bound[head]] + rest)
            if target in mods and target != name:
                found.append((node.lineno, f"{chain}.{node.attr}"))
    return [f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}:{line}: {text}"
            for line, text in sorted(set(found))]


def _private_violations(sources: dict) -> list:
    return [v for name, path in sorted(sources.items()) for v in _private_uses(path, name, sources)]


def test_no_private_names_across_modules():
    """A module uses another module's public names only (STYLE.md): a helper two modules share
    gets a public name in a module both import."""
    bad = _private_violations(_sources())
    assert not bad, "private names used across modules:\n" + "\n".join(bad)


@pytest.mark.parametrize("lines, expected", [
    ("from pimforge.software.pam.attention import _progress", "import _progress"),
    ("from pimforge.sim.golden.pam import common as g\nx = g._order_key", "g._order_key"),
    ("from pimforge.hw.core import inventory\nx = inventory.RECORDINGS._x", None),
    ("import pimforge.api\nx = pimforge.api._private", "pimforge.api._private"),
    ("import pimforge.api as a\nx = a._private", "a._private"),
    ("from pimforge.hw.core.elaborate import elaborate as _elaborate", None),
    ("class K:\n    _x = 1\n    def f(self):\n        return self._x", None),
])
def test_a_private_import_is_reported(tmp_path, lines, expected):
    """The check can fail: a copy of one module with a private use added is reported by line;
    a private alias, an object's own member or an attribute of a public name is not."""
    sources = _sources()
    name = "pimforge.software.hilos.attention"
    copy = tmp_path / "attention.py"
    copy.write_text(sources[name].read_text() + "\n" + lines + "\n")
    bad = _private_violations({**sources, name: copy})
    if expected is None:
        assert bad == []
    else:
        assert len(bad) == 1 and bad[0].startswith(str(copy)) and expected in bad[0], bad
