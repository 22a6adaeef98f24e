"""Float operators as separate modules ("macros"), for hierarchical synthesis.

A 512-bit HILOS kernel instantiates hundreds of identical float operators.  Synthesizing the
flat netlist maps every copy again (minutes per preset in WebAssembly); a hierarchical flow, as
ASIC teams use for arrays of identical processing elements, synthesizes each distinct operator
once and the unit around it with the operators as black boxes.

While a :func:`macro_mode` block is open, :func:`pimforge.hw.pam.blocks.float_op` and
``comb_op`` build an ``Instance`` of a module ``pf_op_<...>`` instead of the operator's gates.
Each distinct operator (:class:`~pimforge.hw.core.inventory.OpKey`) gets one module, whose
Verilog :func:`operator_verilog` generates with the same ports.  Outside the block nothing
changes, so simulation never sees a macro.
"""
from __future__ import annotations

import hashlib
from contextlib import contextmanager

from pimforge.hw.core.inventory import OpKey, ThreadStack
from pimforge.base.formats import parse_format
from pimforge.hw.pam.blocks import OPS, comb_op, float_op
from pimforge.hw.core import inventory
from pimforge.hw.core.ports import top_ports

__all__ = ["macro_mode", "active", "module_name", "operator_verilog", "instantiate"]

_STACK = ThreadStack()
_PORTS: dict = {}


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


def _build(op: OpKey):
    """The operator as an Amaranth Module with its port signals: inputs ``in_<operand>``
    (constant operands are built in), outputs ``out_<result>``."""
    from amaranth.hdl import Const, Module, Signal

    fmt = parse_format(op.fmt)
    src = parse_format(op.src) if op.src else None
    width = (src or fmt).width
    consts = dict(op.consts)
    m = Module()
    ins = {n: Signal(width, name=f"in_{n}") for n in OPS[op.kind] if n not in consts}
    operands = {n: ins[n] if n in ins else Const(consts[n], width) for n in OPS[op.kind]}
    with _suspended():
        if op.depth < 0:
            outs = comb_op(m, op.kind, fmt, operands, src=src)
        else:
            outs, _, _ = float_op(m, op.kind, fmt, op.depth, operands, src=src)
    ports_out = {}
    for key, value in outs.items():
        s = Signal(len(value), name=f"out_{key}")
        m.d.comb += s.eq(value)
        ports_out[key] = s
    return m, ins, ports_out


@contextmanager
def _suspended():
    """Neither macros nor the inventory while an operator module itself is built."""
    saved = list(_STACK.items), list(inventory._STACK.items)
    _STACK.items.clear()
    inventory._STACK.items.clear()
    try:
        yield
    finally:
        _STACK.items.extend(saved[0])
        inventory._STACK.items.extend(saved[1])


def operator_verilog(op: OpKey) -> tuple:
    """``(verilog, ports)`` of one operator module; ``ports`` lists ``(direction, name, width)``
    including ``clk``/``rst`` when the operator has registers."""
    from amaranth.back import verilog

    m, ins, outs = _build(op)
    name = module_name(op)
    text = verilog.convert(m, name=name, ports=list(ins.values()) + list(outs.values()),
                           emit_src=False)
    ports = top_ports(text, name)
    _PORTS[op] = ports
    return text, ports


def _ports(op: OpKey) -> list:
    if op not in _PORTS:
        operator_verilog(op)
    return _PORTS[op]


def instantiate(m, op: OpKey, operands: dict, name: str) -> dict:
    """An ``Instance`` of the operator's module; returns its outputs by result name."""
    from amaranth.hdl import ClockSignal, Instance, ResetSignal, Signal
    ports = _ports(op)
    kwargs, outs = {}, {}
    for direction, port, width in ports:
        if port == "clk":
            kwargs["i_clk"] = ClockSignal()
        elif port == "rst":
            kwargs["i_rst"] = ResetSignal()
        elif direction == "input":
            kwargs[f"i_{port}"] = operands[port[len("in_"):]]
        else:
            s = Signal(width, name=f"{name}_{port}")
            kwargs[f"o_{port}"] = s
            outs[port[len("out_"):]] = s
    m.submodules += Instance(module_name(op), **kwargs)
    return outs
