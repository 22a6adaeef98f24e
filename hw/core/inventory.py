"""Operator inventory: the float operators a unit instantiates, for synthesis area breakdowns.

Generators call :func:`record` each time they build a float operation; while a
:func:`recording` block is open (``pimforge synth`` opens one around elaboration) the calls are
counted, otherwise they cost nothing.  The synthesis flow then synthesizes each distinct operator
on its own and attributes ``count x area`` to the compute datapath (PAM section 7.5 splits a PU
into compute datapath, buffers and control the same way).
"""
from __future__ import annotations

import threading
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass

from amaranth.hdl import Const

__all__ = ["OpKey", "Inventory", "RECORDINGS", "recording", "record", "op_key"]


@dataclass(frozen=True, order=True)
class OpKey:
    """One kind of float operator.

    Members
    -------
    kind : the operation (``add``, ``mul``, ``mul_wide``, ``fma``, ``exp``... as in
        :data:`pimforge.hw.fp.ops.OPS`).
    fmt : result format as ``eXmY`` (exponent and stored fraction bits).
    src : operand format for ``convert`` and ``mul_wide``, else ``""``.
    depth : register stages inside the operator; ``-1`` for a combinational operator.
    consts : ``(operand, value)`` pairs of operands that are constants (a multiplication by a
        fixed scale is much smaller than a general one, and synthesis sees that).
    inline : built from stage functions inside a unit's own pipeline, so never a macro
        (:mod:`pimforge.hw.core.macros`).
    """

    kind: str
    fmt: str
    src: str = ""
    depth: int = -1
    consts: tuple = ()
    inline: bool = False

    @property
    def label(self) -> str:
        src = f"{self.src}->" if self.src else ""
        regs = "comb" if self.depth < 0 else f"{self.depth} regs"
        const = "".join(f", {k} = 0x{v:x}" for k, v in self.consts)
        return f"{self.kind} {src}{self.fmt} ({regs}{const})"


def fmt_name(fmt) -> str:
    return f"e{fmt.exp_bits}m{fmt.frac_bits}"


class ThreadStack(threading.local):
    """Per thread: ``pimforge synth all`` elaborates several units at once on worker threads."""

    def __init__(self):
        self.items = []


RECORDINGS = ThreadStack()


class Inventory(Counter):
    """A ``Counter`` of :class:`OpKey`, plus ``verilog``: key -> ``build(key, prefix) ->
    (text, ports)``, the function that writes that operator's module, as the generator that
    recorded it gave it.  Whole-unit elaboration (:mod:`pimforge.hw.core.elaborate`) appends
    those modules without knowing the float library."""

    def __init__(self):
        super().__init__()
        self.verilog = {}


@contextmanager
def recording():
    """Count every :func:`record` call made inside the block; yields an :class:`Inventory`."""
    counts = Inventory()
    RECORDINGS.items.append(counts)
    try:
        yield counts
    finally:
        RECORDINGS.items.pop()


def op_key(kind: str, fmt, src=None, depth: int = -1, operands=None,
           inline: bool = False) -> OpKey:
    """The :class:`OpKey` of an operator; ``operands`` (name -> Amaranth value) lets constant
    operands be noted."""
    consts = tuple(sorted((k, v.value) for k, v in (operands or {}).items()
                          if isinstance(v, Const)))
    return OpKey(kind, fmt_name(fmt), fmt_name(src) if src is not None else "", depth, consts,
                 inline)


def record(kind: str, fmt, src=None, depth: int = -1, count: int = 1, operands=None,
           inline: bool = False, verilog=None) -> None:
    """Note ``count`` operators of one kind (a no-op unless a :func:`recording` is open);
    ``verilog`` is the function that writes the operator's module (:class:`Inventory`)."""
    if RECORDINGS.items:
        key = op_key(kind, fmt, src, depth, operands, inline)
        RECORDINGS.items[-1][key] += count
        if verilog is not None:
            RECORDINGS.items[-1].verilog[key] = verilog
