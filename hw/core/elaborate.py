"""Elaborate a unit to Verilog text and its JSON manifest (memoized per config)."""
from __future__ import annotations

from amaranth.back import verilog

__all__ = ["elaborate"]

_CACHE: dict = {}


def elaborate(unit, cfg) -> tuple:
    """Return ``(verilog_text, manifest_dict, component)`` for a unit's config.

    ``unit`` is a :class:`~pimforge.hw.core.unit.HwUnit` (or anything with ``name`` and
    ``factory``)."""
    key = (unit.name, cfg)
    if key not in _CACHE:
        comp = unit.factory(cfg)
        text = verilog.convert(comp, name=comp.top, emit_src=False)
        _CACHE[key] = (text, comp.manifest(), comp)
    return _CACHE[key]
