"""System energy: joules per token from the actions a decode step performs.

A system model counts, per output token, the actions of every part it runs (the units' own
activity models for their compute and SRAM, bytes per memory tier and link, seconds of static
power) and hands them to :class:`EnergyResult`; the energy table
(:mod:`pimforge.hw.core.energy`) prices them.  The same result gives J/token, average power
and the breakdown per component that ``pimforge model`` tabulates, plots and writes to JSON.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from pimforge.hw.core.energy import COMPONENTS, table
from pimforge.software.report import Plot, Table

__all__ = ["EnergyResult", "energy_table", "energy_plot", "energy_data", "add_counts",
           "scale_counts", "component_order"]


def add_counts(*parts) -> dict:
    """The sum of action-count mappings, key by key."""
    out: dict = {}
    for p in parts:
        for k, v in p.items():
            out[k] = out.get(k, 0) + v
    return out


def scale_counts(counts, factor: float) -> dict:
    """Every count times ``factor`` (a per-job count to per-token, a unit to all its copies)."""
    return {k: v * factor for k, v in counts.items()}


def component_order(names) -> list:
    """Components in :data:`~pimforge.hw.core.energy.COMPONENTS` order (tiers and links
    sorted inside their class)."""
    rank = {c: i for i, c in enumerate(COMPONENTS)}
    return sorted(names, key=lambda n: (rank.get(n.split(":")[0], len(rank)), n))


@dataclass
class EnergyResult:
    """One system's energy per output token.

    Members
    -------
    label : the system's name in tables and plots.
    counts : action key -> count per output token (``static:<device>`` keys: seconds of that
        device's static power per token).
    seconds : seconds per output token (the step time over the tokens it yields).
    node : the CMOS node the on-chip logic is priced at.
    """

    label: str
    counts: dict
    seconds: float
    node: str = "45nm"
    parts: dict = field(default_factory=dict, repr=False)

    def breakdown(self) -> dict:
        """Joules per token by component; the values sum to :attr:`j_per_token`."""
        return table(self.node).breakdown(self.counts)

    @property
    def j_per_token(self) -> float:
        return sum(self.breakdown().values())

    @property
    def power_w(self) -> float:
        """Average power while decoding (J/token over s/token)."""
        return self.j_per_token / self.seconds if self.seconds > 0 else float("nan")

    def as_dict(self) -> dict:
        return {"j_per_token": self.j_per_token, "power_w": self.power_w,
                "seconds_per_token": self.seconds, "node": self.node,
                "breakdown_j": self.breakdown(), "counts": dict(self.counts)}


def energy_table(results: list, title: str, note: str = "") -> Table:
    """J/token, power and each component's share, one row per system."""
    comps = component_order({c for r in results for c in r.breakdown()})
    rows = []
    for r in results:
        b = r.breakdown()
        rows.append([r.label, r.j_per_token, r.power_w]
                    + [b.get(c, 0.0) / r.j_per_token if r.j_per_token else 0.0 for c in comps])
    return Table(title, ["system", "J/token", "power W"] + [f"{c} share" for c in comps], rows,
                 note=note or "energy per output token from action counts x the energy table "
                              "(pimforge model --describe lists its entries and sources)")


def energy_plot(results: list, name: str, title: str, normalize_to: str | None = None) -> Plot:
    """A stacked bar per system of J/token by component (normalized to one system's total
    when ``normalize_to`` names it, as the papers draw it)."""
    comps = component_order({c for r in results for c in r.breakdown()})
    ref = next((r.j_per_token for r in results if r.label == normalize_to), None)
    div = ref if ref else 1.0
    series = {c: [r.breakdown().get(c, 0.0) / div for r in results] for c in comps}
    ylabel = f"energy / token (x {normalize_to})" if ref else "J / token"
    return Plot(name, title, "stacked", "system", ylabel, series,
                groups=[r.label for r in results])


def energy_data(results: list) -> dict:
    """Plain JSON of every result, by label."""
    return {r.label: r.as_dict() for r in results}
