"""Area from a generic gate netlist: NAND2 equivalents, three process nodes, SRAM macros.

Logic: ``stat -tech cmos`` estimates the CMOS transistor count of the mapped gates (a NAND2 is
4 transistors, a D flip-flop 16); one NAND2 equivalent is 4 transistors.  Its area at a node is
NAND2 equivalents times that node's NAND2 cell area.  This counts no placement utilization or
wiring; a placed design is typically 1.3-1.5x larger.

Memories: every ``$mem_v2`` that synthesis keeps is an SRAM macro of ``bits x`` a per-bit area.
A 6T bitcell is close to half a NAND2 at these nodes (0.346 um^2 at 45 nm against 0.798 um^2
for a Nangate45 NAND2_X1) and a compiled macro's array efficiency is about 50 %, so the model
charges one NAND2 area per bit, periphery included.
"""
from __future__ import annotations

__all__ = ["NODES", "MEMORY_MODEL", "TRANSISTORS_PER_NAND2", "areas", "breakdown"]

TRANSISTORS_PER_NAND2 = 4

# Published NAND2 cell areas (um^2): sky130_fd_sc_hd__nand2_1, Nangate45 NAND2_X1,
# ASAP7 NAND2xp33_ASAP7_75t_R.
NODES = {
    "sky130hd": {"nand2_um2": 3.7536, "label": "SkyWater 130 nm (sky130 hd)"},
    "nangate45": {"nand2_um2": 0.798, "label": "Nangate 45 nm"},
    "asap7": {"nand2_um2": 0.05832, "label": "ASAP7 (7 nm predictive)"},
}
MEMORY_MODEL = {"nand2_per_bit": 1.0,
                "text": "SRAM macro: bits x 1 NAND2 area per bit (6T bitcell ~ 0.5 NAND2, "
                        "~50% array efficiency)"}


def areas(logic_nand2: float, memory_bits: int) -> dict:
    """Logic, memory and total area in um^2 at every node."""
    mem_nand2 = memory_bits * MEMORY_MODEL["nand2_per_bit"]
    out = {}
    for node, d in NODES.items():
        a = d["nand2_um2"]
        out[node] = {"logic_um2": logic_nand2 * a, "memory_um2": mem_nand2 * a,
                     "total_um2": (logic_nand2 + mem_nand2) * a}
    return out


def breakdown(logic_nand2: float, memory_bits: int, operators: list,
              all_datapath: bool = False) -> dict:
    """Split a unit into compute datapath, storage and control (PAM 7.5's form).

    * datapath: the float operators the unit instantiates, each at the area it has when
      synthesized on its own (same format and pipeline depth) -- ``operators`` is a list of
      ``{"count", "nand2_each"}``; a standalone float unit is all datapath;
    * storage: the SRAM macros (:data:`MEMORY_MODEL`);
    * control: the rest of the logic -- handshakes, counters, address generation, skid and
      staging registers, multiplexers.

    Operators synthesized on their own can come out larger than inside the unit (constant
    operands, unused flags); the datapath is then capped at the unit's logic and ``capped`` is
    set.
    """
    storage = memory_bits * MEMORY_MODEL["nand2_per_bit"]
    if all_datapath:
        datapath = logic_nand2
    else:
        datapath = sum(op["count"] * op["nand2_each"] for op in operators)
    capped = datapath > logic_nand2
    datapath = min(datapath, logic_nand2)
    control = logic_nand2 - datapath
    total = logic_nand2 + storage
    frac = (lambda x: x / total) if total else (lambda x: 0.0)
    return {"datapath_nand2": datapath, "storage_nand2": storage, "control_nand2": control,
            "datapath": frac(datapath), "storage": frac(storage), "control": frac(control),
            "capped": capped}
