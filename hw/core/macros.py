"""Float operators as separate modules ("macros"), for hierarchical synthesis.

A 512-bit HILOS kernel instantiates hundreds of identical float operators.  Synthesizing the
flat netlist maps every copy again (minutes per preset in WebAssembly); a hierarchical flow, as
ASIC teams use for arrays of identical processing elements, synthesizes each distinct operator
once and the unit around it with the operators as black boxes.

While a :func:`macro_mode` block is open, :func:`pimforge.hw.fp.ops.float_op` and
``comb_op`` build an ``Instance`` of a module ``pf_op_<...>`` instead of the operator's gates.
Each distinct operator (:class:`~pimforge.hw.core.inventory.OpKey`) gets one module, whose
Verilog :func:`pimforge.hw.fp.ops.operator_verilog` generates with the same ports.  Outside the block nothing
changes, so simulation never sees a macro.
"""
from __future__ import annotations

import hashlib
from contextlib import contextmanager

from pimforge.hw.core import inventory
from pimforge.hw.core.inventory import OpKey, ThreadStack

__all__ = ["macro_mode", "active", "module_name", "suspended"]

_STACK = ThreadStack()


@contextmanager
def macro_mode():
    """Build float operators as black-box instances inside the block."""
    _STACK.items.append(True)
    try:
        yield
    finally:
        _STACK.items.pop()


def active() -> bool:
    return bool(_STACK.items)


def module_name(op: OpKey) -> str:
    tag = f"{op.kind}_{op.fmt}" + (f"_from_{op.src}" if op.src else "")
    tag += "_comb" if op.depth < 0 else f"_d{op.depth}"
    if op.consts:
        tag += "_k" + hashlib.sha256(repr(op.consts).encode()).hexdigest()[:8]
    return f"pf_op_{tag}"


@contextmanager
def suspended():
    """Neither macros nor the inventory while an operator module itself is built."""
    saved = list(_STACK.items), list(inventory._STACK.items)
    _STACK.items.clear()
    inventory._STACK.items.clear()
    try:
        yield
    finally:
        _STACK.items.extend(saved[0])
        inventory._STACK.items.extend(saved[1])


