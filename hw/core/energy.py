"""The energy model: joules from action counts, with the technology table in
``energy_table.yaml``.

This is the Accelergy / Timeloop method: a job's energy is the sum over the actions it performs
(:mod:`pimforge.hw.core.activity` names them) of count x energy per action, plus static power x
time.  Every entry of the table carries its source; entries measured at a CMOS node scale to
the target node by the table's rule (C V^2), device-level entries (DRAM, flash, links, GPUs)
do not.  :func:`table` loads it once; :meth:`EnergyTable.breakdown` gives joules per component
(compute, on-chip SRAM, each memory tier, each link, static), which sum to the total exactly.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from pimforge.base.config import load_yaml
from pimforge.base.errors import UserError
from pimforge.base.formats import parse_format

__all__ = ["EnergyTable", "Entry", "table", "NODES", "component_of", "COMPONENTS",
           "TABLE_PATH"]

TABLE_PATH = Path(__file__).with_name("energy_table.yaml")

COMPONENTS = ("compute", "sram", "dram", "ssd", "link", "gpu", "static")
"""Component classes, in the order of a stacked plot; DRAM and links are split per tier and
per link (``dram:hbm``, ``link:pcie``)."""


def component_of(key: str) -> str:
    """The breakdown component of an action key: ``op`` and ``pim`` are compute, ``sram`` and
    ``rom`` on-chip SRAM, ``dram:<tier>`` and ``link:<name>`` keep their tier or link."""
    cls, kind = key.split(":")[:2]
    if cls in ("op", "pim"):
        return "compute"
    if cls in ("sram", "rom", "fifo"):
        return "sram"
    if cls in ("dram", "link"):
        return f"{cls}:{kind}"
    if cls in ("ssd", "gpu", "static"):
        return cls
    raise UserError(f"action '{key}': unknown class '{cls}' (one of op, pim, sram, rom, fifo, "
                    f"dram, ssd, link, gpu, static)")


@dataclass(frozen=True)
class Entry:
    """One action's energy: ``pj`` per ``unit`` (``W`` for static power), where it was
    measured, and its source."""

    key: str
    pj: float
    unit: str
    node: str
    source: str


@dataclass
class EnergyTable:
    """The table of ``energy_table.yaml``; ``node`` is the target node of logic entries."""

    raw: dict
    node: str = "45nm"
    cache: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.node not in self.raw["scaling"]["nodes"]:
            raise UserError(f"energy node '{self.node}': one of "
                            f"{', '.join(self.raw['scaling']['nodes'])}")

    def scale(self, from_node: str) -> float:
        """The dynamic-energy factor from ``from_node`` to the target node (1 for devices)."""
        if from_node == "device":
            return 1.0
        nodes = self.raw["scaling"]["nodes"]
        a, b = nodes[from_node], nodes[self.node]
        return (b["nm"] / a["nm"]) * (b["volts"] / a["volts"]) ** 2

    # ---------------------------------------------------------------- entries
    def entry(self, key: str) -> Entry:
        """The entry of an action key, from the table or its rules, scaled to the node."""
        if key not in self.cache:
            self.cache[key] = self._entry(key)
        return self.cache[key]

    def _entry(self, key: str) -> Entry:
        acts = self.raw["actions"]
        if key in acts:
            e = acts[key]
            if "w" in e:
                return Entry(key, float(e["w"]), "W", e["node"], e["source"])
            return Entry(key, float(e["pj"]) * self.scale(e["node"]), e["unit"], self.node,
                         e["source"])
        parts = key.split(":")
        if len(parts) != 3:
            raise UserError(f"action '{key}': an action key is <class>:<kind>:<shape>")
        cls, kind, shape = parts
        component_of(key)       # an unknown class says so, before "no entry"
        if cls == "op":
            return self._op(key, kind, shape)
        if cls in ("sram", "rom", "fifo"):
            return self._sram(key, shape)
        raise UserError(f"action '{key}' has no energy entry ({TABLE_PATH.name} lists "
                        f"{', '.join(sorted(k for k in acts if k != 'kinds'))})")

    def _base_op(self, kind: str, fmt: str) -> tuple:
        """pJ at the reference node of ``add`` or ``mul`` in ``fmt``, and its source."""
        acts = self.raw["actions"]
        if f"op:{kind}:{fmt}" in acts:
            e = acts[f"op:{kind}:{fmt}"]
            return float(e["pj"]), e["source"]
        f = parse_format(fmt)
        p = f.frac_bits + 1
        lo, hi = float(acts[f"op:{kind}:e5m10"]["pj"]), float(acts[f"op:{kind}:e8m23"]["pj"])
        alpha = math.log(hi / lo) / math.log(24 / 11)
        return lo * (p / 11) ** alpha, self.raw["format_rule"]["source"]

    def _op(self, key: str, kind: str, fmt: str) -> Entry:
        kinds = self.raw["actions"]["kinds"]
        if kind in ("add", "mul"):
            pj, src = self._base_op(kind, fmt)
        elif kind in kinds:
            rule = kinds[kind]
            pj = sum(rule.get(b, 0.0) * self._base_op(b, fmt)[0] for b in ("add", "mul"))
            src = rule["source"]
        else:
            raise UserError(f"action '{key}': no energy rule for operation '{kind}' (one of add, "
                            f"mul, {', '.join(kinds)})")
        return Entry(key, pj * self.scale(self.raw["reference_node"]), "op", self.node, src)

    def _sram(self, key: str, shape: str) -> Entry:
        depth, width = (int(x) for x in shape.split("x"))
        rule = self.raw["sram_rule"]
        pts = [(float(b), float(pj) / 64.0) for b, pj in rule["points_bytes_pj_per_64b"]]
        size = max(1.0, depth * width / 8.0)
        if size <= pts[0][0]:
            per_bit = max(float(rule["floor_pj_per_bit"]), pts[0][1] * math.sqrt(size / pts[0][0]))
        else:
            # the segment that holds the size, or the last one extended past 1 MB
            i = next((k for k in range(len(pts) - 1) if size <= pts[k + 1][0]), len(pts) - 2)
            (b0, e0), (b1, e1) = pts[i], pts[i + 1]
            t = math.log(size / b0) / math.log(b1 / b0)
            per_bit = e0 * (e1 / e0) ** t
        return Entry(key, per_bit * width * self.scale(rule["node"]), "access", self.node,
                     rule["source"])

    # ---------------------------------------------------------------- energy
    def pj(self, key: str) -> float:
        """pJ per action (W for a static entry)."""
        return self.entry(key).pj

    def breakdown(self, counts) -> dict:
        """Joules per component (:func:`component_of`) of ``counts`` (action key -> count;
        seconds for ``static:`` keys).  The values sum to :meth:`joules`."""
        out: dict = {}
        for key, n in counts.items():
            if not n:
                continue
            e = self.entry(key)
            j = n * e.pj if e.unit == "W" else n * e.pj * 1e-12
            comp = component_of(key)
            out[comp] = out.get(comp, 0.0) + j
        return out

    def joules(self, counts) -> float:
        """Total joules of ``counts``."""
        return sum(self.breakdown(counts).values())

    def static_w(self, area_um2: float) -> float:
        """Leakage of ``area_um2`` of synthesized logic at the target node."""
        return area_um2 * float(self.raw["leakage"][self.node]["w_per_um2"])

    def toggle_fj(self) -> float:
        """Switching energy of one NAND2-equivalent toggle at the target node (fJ)."""
        return float(self.raw["toggle"][self.node]["fj"])

    def rows(self) -> list:
        """Every explicit entry and rule as ``{"key", "value", "unit", "node", "source"}``
        (``pimforge model --describe`` prints them)."""
        out = []
        for key, e in self.raw["actions"].items():
            if key == "kinds":
                for kind, rule in e.items():
                    mult = " + ".join(f"{v} x {b}" for b, v in rule.items() if b != "source")
                    out.append({"key": f"op:{kind}:*", "value": mult, "unit": "op",
                                "node": self.raw["reference_node"], "source": rule["source"]})
                continue
            v = e.get("w", e.get("pj"))
            out.append({"key": key, "value": v, "unit": e["unit"], "node": e["node"],
                        "source": e["source"]})
        rule = self.raw["sram_rule"]
        out.append({"key": "sram:*", "value": str(rule["points_bytes_pj_per_64b"]),
                    "unit": "pJ per 64 bits", "node": rule["node"], "source": rule["source"]})
        for node, e in self.raw["leakage"].items():
            out.append({"key": f"leakage:{node}", "value": e["w_per_um2"], "unit": "W/um^2",
                        "node": node, "source": e["source"]})
        for node, e in self.raw["toggle"].items():
            out.append({"key": f"toggle:{node}", "value": e["fj"], "unit": "fJ", "node": node,
                        "source": e["source"]})
        out.append({"key": "scaling", "value": self.raw["scaling"]["rule"], "unit": "",
                    "node": "", "source": self.raw["scaling"]["source"]})
        return out


NODES = ("45nm", "22nm", "asap7")


@lru_cache(maxsize=None)
def _raw() -> dict:
    return load_yaml(TABLE_PATH)


@lru_cache(maxsize=None)
def table(node: str = "45nm") -> EnergyTable:
    """The energy table, targeting ``node`` (one of :data:`NODES`); one per node, so each
    action's entry is worked out once."""
    return EnergyTable(_raw(), node)
