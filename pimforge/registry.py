"""The table of units: each hardware declaration (:mod:`pimforge.hw.catalog`) with its cocotb
bench (:mod:`pimforge.sim.benches.catalog`).  Nothing registers itself on import."""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Callable

from pimforge.base.errors import UserError
from pimforge.hw.catalog import HW_UNITS
from pimforge.hw.core.unit import HwUnit
from pimforge.sim.benches.catalog import BENCHES

__all__ = ["Unit", "units", "get_unit"]


@dataclass(frozen=True)
class Unit(HwUnit):
    """A unit's whole family: its :class:`~pimforge.hw.core.unit.HwUnit` declaration plus
    ``bench(cfg, rng, seed=1, **kw) -> Job``, the stimulus and golden expectations."""

    bench: Callable | None = None

    @classmethod
    def of(cls, hw: HwUnit, bench) -> "Unit":
        return cls(**{f.name: getattr(hw, f.name) for f in fields(HwUnit)}, bench=bench)


def _table() -> dict:
    missing = sorted(set(HW_UNITS) ^ set(BENCHES))
    if missing:  # a unit without a bench, or a bench without a unit: a packaging mistake
        raise RuntimeError(f"units and benches do not pair up: {', '.join(missing)}")
    return {name: Unit.of(hw, BENCHES[name]) for name, hw in sorted(HW_UNITS.items())}


_UNITS = _table()


def units() -> dict:
    """name -> :class:`Unit`, every unit pimforge generates."""
    return dict(_UNITS)


def get_unit(name: str) -> Unit:
    if name not in _UNITS:
        raise UserError(f"unknown unit '{name}'; allowed: {', '.join(sorted(_UNITS))}")
    return _UNITS[name]
