"""Building blocks of the HILOS units.

:func:`rotate_elems` rotates a vector of elements by a variable count, one 2:1 multiplexer level
per bit of the count: the skew of ``qk_gemv``'s K-Buf banks.  (The GEMVs' accumulator bank is
the float library's :func:`pimforge.hw.fp.accumulate.accumulate`.)
"""
from __future__ import annotations

from amaranth.hdl import Mux, Signal

__all__ = ["rotate_elems"]


def rotate_elems(m, value, amount, elem_bits: int, *, left: bool, name: str):
    """``value`` (elements of ``elem_bits`` bits, element 0 least significant) rotated by
    ``amount`` elements: to higher positions with ``left`` (element c moves to c + amount), to
    lower ones otherwise (element c + amount moves to c).  Each level is a signal, so that its
    many readers share one multiplexer (an expression would be copied into each)."""
    for k in range(len(amount)):
        step = elem_bits << k
        moved = value.rotate_left(step) if left else value.rotate_right(step)
        level = Signal(len(value), name=f"{name}{k}")
        m.d.comb += level.eq(Mux(amount[k], moved, value))
        value = level
    return value
