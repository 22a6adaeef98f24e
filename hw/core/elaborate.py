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

from contextlib import ExitStack

from amaranth.back import verilog
from amaranth.hdl import Fragment, Value, ValueCastable

from pimforge.hw.core.activity import probing
from pimforge.hw.core.inventory import recording
from pimforge.hw.core.macros import macro_mode

__all__ = ["elaborate", "elaborate_top", "operator_prefix"]

_CACHE: dict = {}


def operator_prefix(top: str) -> str:
    """The prefix of a unit's operator modules."""
    return f"{top}__"


def elaborate(unit, cfg, flat: bool = False, probes: bool = False) -> tuple:
    """Return ``(verilog_text, manifest_dict, component)`` for a unit's config.

    ``unit`` is a :class:`~pimforge.hw.core.unit.HwUnit` (or anything with ``name`` and
    ``factory``).  With ``probes`` the top module also has the activity counters of
    :mod:`pimforge.hw.core.activity` as output ports, listed in the manifest's ``"probes"``
    (the benches build this form; generation and synthesis never do)."""
    key = (unit.name, cfg, flat, probes)
    if key not in _CACHE:
        text, comp, ops, found = elaborate_top(unit, cfg, flat=flat, prefixed=not flat,
                                               probes=probes)
        if not flat:
            for op in sorted({k for k in ops if not k.inline}):
                text += "\n" + ops.verilog[op](op, operator_prefix(comp.top))[0]
        manifest = comp.manifest()
        if probes:
            manifest["probes"] = [{"action": p.key, "port": p.name} for p in found]
        _CACHE[key] = (text, manifest, comp)
    return _CACHE[key]


def _ports(comp, found) -> dict:
    """Top-level ports: the component's signature (as Amaranth names them) and the probes
    (directions are inferred from the drivers, as for any fragment)."""
    ports = {}
    for path, _member, value in comp.signature.flatten(comp):
        if isinstance(value, ValueCastable):
            value = value.as_value()
        if isinstance(value, Value):
            ports["__".join(map(str, path))] = (value, None)
    for p in found:
        ports[p.name] = (p.signal, None)
    return ports


def elaborate_top(unit, cfg, flat: bool, prefixed: bool = False, probes: bool = False) -> tuple:
    """``(top_verilog, component, operator Counter, probes)``: the unit flat, or its top module
    with each float operator an instance of a module ``pf_op_...`` (``<top>__pf_op_...`` if
    ``prefixed``) that the text does not contain.  Generation appends those modules;
    hierarchical synthesis synthesizes them on their own.  ``probes`` is the list of
    :class:`~pimforge.hw.core.activity.Probe` (empty unless asked for)."""
    comp = unit.factory(cfg)   # operators are built when it elaborates, inside the block
    found = []
    with ExitStack() as stack:
        ops = stack.enter_context(recording())
        if not flat:
            stack.enter_context(macro_mode(operator_prefix(comp.top) if prefixed else ""))
        if not probes:
            text = verilog.convert(comp, name=comp.top, emit_src=False)
        else:
            found = stack.enter_context(probing())
            # Elaborate first, so that every counter exists before the ports are listed.
            frag = Fragment.get(comp, None)
            text = verilog.convert(frag, name=comp.top, emit_src=False,
                                   ports=_ports(comp, found))
    return text, comp, ops, found
