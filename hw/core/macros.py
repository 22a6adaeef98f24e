"""Float operators as separate modules ("macros"): hierarchical synthesis and generation.

A 512-bit HILOS kernel instantiates hundreds of identical float operators.  Synthesizing the
flat netlist maps every copy again (minutes per preset in WebAssembly); a hierarchical flow, as
ASIC teams use for arrays of identical processing elements, synthesizes each distinct operator
once and the unit around it with the operators as black boxes.

While a :func:`macro_mode` block is open, :func:`pimforge.hw.fp.ops.float_op` and
``comb_op`` build an ``Instance`` of a module ``pf_op_<...>`` instead of the operator's gates.
Each distinct operator (:class:`~pimforge.hw.core.inventory.OpKey`) gets one module, whose
Verilog :func:`pimforge.hw.fp.ops.operator_verilog` generates with the same ports.

Generation uses the same blocks (:mod:`pimforge.hw.core.elaborate`): a unit's Verilog is its top
module with operator instances, followed by each distinct operator's module once.  Amaranth
elaborates a flat netlist, so a unit with hundreds of identical operators would otherwise build
(and Verilator compile) every copy again.
"""
from __future__ import annotations

import hashlib
from contextlib import contextmanager

from pimforge.hw.core.inventory import RECORDINGS, OpKey, ThreadStack

__all__ = ["macro_mode", "active", "module_name", "suspended"]

_STACK = ThreadStack()


@contextmanager
def macro_mode(prefix: str = ""):
    """Build float operators as black-box instances inside the block.  ``prefix`` starts
    every operator module's name (a generated unit names them after its top module, so that
    two units' Verilog can be read into one project without a module defined twice)."""
    _STACK.items.append(prefix)
    try:
        yield
    finally:
        _STACK.items.pop()


def active() -> bool:
    return bool(_STACK.items)


def module_name(op: OpKey, prefix: str | None = None) -> str:
    """``<prefix>pf_op_<kind>_<format>...``; the prefix is the innermost :func:`macro_mode`'s
    unless given."""
    if prefix is None:
        prefix = _STACK.items[-1] if _STACK.items else ""
    tag = f"{op.kind}_{op.fmt}" + (f"_from_{op.src}" if op.src else "")
    tag += "_comb" if op.depth < 0 else f"_d{op.depth}"
    if op.consts:
        tag += "_k" + hashlib.sha256(repr(op.consts).encode()).hexdigest()[:8]
    return f"{prefix}pf_op_{tag}"


@contextmanager
def suspended():
    """Neither macros nor the inventory while an operator module itself is built."""
    saved = list(_STACK.items), list(RECORDINGS.items)
    _STACK.items.clear()
    RECORDINGS.items.clear()
    try:
        yield
    finally:
        _STACK.items.extend(saved[0])
        RECORDINGS.items.extend(saved[1])


