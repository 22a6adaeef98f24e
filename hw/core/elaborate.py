"""Elaborate a unit to Verilog text and its JSON manifest, memoized per config.

By default the Verilog is *hierarchical*: the unit's top module instantiates each float
operator (:func:`pimforge.hw.fp.ops.float_op`, ``comb_op``) as a module, and every distinct
operator module follows once, named ``<top>__pf_op_<kind>_<format>_d<depth>``
(:mod:`pimforge.hw.core.macros`) and written by the function the operator was recorded with
(:class:`~pimforge.hw.core.inventory.Inventory`), so this module needs no float library.  Amaranth builds a flat netlist, so a unit with hundreds of
identical operators (a 16-lane PU, a HILOS kernel, an activation unit) would otherwise elaborate
and simulate every copy as separate logic: hermes_act's default config takes about 50 s to
elaborate flat and 10 s hierarchically.  Both forms are the same gates; ``flat=True`` gives the
single flat module (``pimforge generate --flat``).
"""
from __future__ import annotations

from amaranth.back import verilog

from pimforge.hw.core.inventory import recording
from pimforge.hw.core.macros import macro_mode

__all__ = ["elaborate", "elaborate_top", "operator_prefix"]

_CACHE: dict = {}


def operator_prefix(top: str) -> str:
    """The prefix of a unit's operator modules."""
    return f"{top}__"


def elaborate(unit, cfg, flat: bool = False) -> tuple:
    """Return ``(verilog_text, manifest_dict, component)`` for a unit's config.

    ``unit`` is a :class:`~pimforge.hw.core.unit.HwUnit` (or anything with ``name`` and
    ``factory``)."""
    key = (unit.name, cfg, flat)
    if key not in _CACHE:
        _CACHE[key] = _flat(unit, cfg) if flat else _hierarchical(unit, cfg)
    return _CACHE[key]


def elaborate_top(unit, cfg, flat: bool, prefixed: bool = False) -> tuple:
    """``(top_verilog, component, operator Counter)``: the unit flat, or its top module with
    each float operator an instance of a module ``pf_op_...`` (``<top>__pf_op_...`` if
    ``prefixed``) that the text does not contain.  Generation appends those modules;
    hierarchical synthesis synthesizes them on their own."""
    comp = unit.factory(cfg)   # operators are built when it elaborates, inside the block
    with recording() as ops:
        if flat:
            text = verilog.convert(comp, name=comp.top, emit_src=False)
        else:
            with macro_mode(operator_prefix(comp.top) if prefixed else ""):
                text = verilog.convert(comp, name=comp.top, emit_src=False)
    return text, comp, ops


def _flat(unit, cfg) -> tuple:
    text, comp, _ = elaborate_top(unit, cfg, flat=True)
    return text, comp.manifest(), comp


def _hierarchical(unit, cfg) -> tuple:
    text, comp, ops = elaborate_top(unit, cfg, flat=False, prefixed=True)
    for op in sorted({k for k in ops if not k.inline}):
        text += "\n" + ops.verilog[op](op, operator_prefix(comp.top))[0]
    return text, comp.manifest(), comp
