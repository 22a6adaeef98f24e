"""Building blocks of the HILOS units.

:func:`rotate_elems` rotates a vector of elements by a variable count, one 2:1 multiplexer level
per bit of the count: the skew of ``qk_gemv``'s K-Buf banks.  (The GEMVs' accumulator bank is
the float library's :func:`pimforge.hw.fp.accumulate.accumulate`.)
"""
from __future__ import annotations

from amaranth.hdl import Cat, Mux, Signal

__all__ = ["rotate_elems"]


def rotate_elems(m, value, amount, elem_bits: int, *, left: bool, name: str):
    """``value`` (elements of ``elem_bits`` bits, element 0 least significant) rotated by
    ``amount`` elements: to higher positions with ``left`` (element c moves to c + amount), to
    lower ones otherwise (element c + amount moves to c).  Each level is a signal, so that its
    many readers share one multiplexer (an expression would be copied into each).  ``amount``
    may also be a list of equal values, one per element (register
    :func:`~pimforge.hw.core.fanout.copies`): element c's multiplexers then use the c-th, so
    no one register selects every bit."""
    n = len(value) // elem_bits
    amounts = amount if isinstance(amount, (list, tuple)) else [amount] * n
    elems = [value[elem_bits * c:elem_bits * (c + 1)] for c in range(n)]
    for k in range(len(amounts[0])):
        src = [elems[(c - (1 << k)) % n if left else (c + (1 << k)) % n] for c in range(n)]
        level = Signal(len(value), name=f"{name}{k}")
        m.d.comb += level.eq(Cat(*(Mux(a[k], s_, e) for a, s_, e in zip(amounts, src, elems))))
        elems = [level[elem_bits * c:elem_bits * (c + 1)] for c in range(n)]
    return Cat(*elems)
