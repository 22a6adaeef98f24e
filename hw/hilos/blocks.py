"""Building blocks shared by the HILOS units.

:func:`accumulate` is the fp32 accumulator bank of the GEMV units: ``lanes`` adders that add a
product into an accumulator addressed by ``addr``, read from a memory and written back.  The
adder takes ``op_depth`` cycles, so an address may come back every ``op_depth`` cycles or later:
the write of the previous update is forwarded to a read of the same address in the cycle it
lands (the configs check ``block / beat_elems`` and ``head_dim / beat_elems`` against this).
Flow control happens at the units' inputs; the bank itself is free-running.

:func:`rotate_elems` rotates a vector of elements by a variable count, one 2:1 multiplexer level
per bit of the count: the skew of ``qk_gemv``'s K-Buf banks.
"""
from __future__ import annotations

from amaranth.hdl import Cat, Const, Mux, Signal

from pimforge.base.formats import FP32
from pimforge.hw.core.memories import buffer
from pimforge.hw.fp.ops import float_op

__all__ = ["accumulate", "rotate_elems"]


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


def accumulate(m, products: list, *, valid, addr, first, depth: int, op_depth: int,
               side=None, read_addr=None, name: str = "acc"):
    """``acc[addr][i] = (first ? +0 : acc[addr][i]) + products[i]`` in fp32 (round to nearest
    even), for every lane i at once.

    Parameters
    ----------
    m : the Module.
    products : fp32 bit patterns, one per lane, valid with ``valid``.
    valid : 1-bit: this cycle carries an update.
    addr : accumulator address (``range(depth)``).
    first : start this accumulator from +0 instead of reading it.
    side : dict of values delayed alongside (tags).
    read_addr : optional second address: a combinational read port for whoever drains the bank
        (``sv_gemv`` reads a finished job's accumulators while the next job updates others).

    Returns ``(sums, valid_out, side_out)`` ``op_depth`` cycles later: the new values, which are
    also written back to the bank in that cycle; with ``read_addr`` a fourth item, the bank word
    at ``read_addr`` (the memory as it is, no forwarding).
    """
    lanes = len(products)
    mem = buffer(m, f"{name}_bank", 32 * lanes, depth)
    wr = mem.write_port()
    rd = mem.read_port(domain="comb")
    m.d.comb += rd.addr.eq(addr)
    # forwarding: the update that lands this cycle is not in the memory yet
    old = Signal(32 * lanes, name=f"{name}_old")
    m.d.comb += old.eq(Mux(wr.en & (wr.addr == addr), wr.data, rd.data))
    tags = dict(side or {})
    tags["_addr"] = addr
    sums, v_out, t_out = [], None, None
    for i, p in enumerate(products):
        a = Mux(first, Const(0, 32), old[32 * i:32 * (i + 1)])
        r, v, t = float_op(m, "add", FP32, op_depth, {"a": a, "b": p},
                           valid=valid if i == 0 else None, side=tags if i == 0 else None,
                           name=f"{name}{i}")
        sums.append(r["r"])
        if i == 0:
            v_out, t_out = v, t
    m.d.comb += [wr.addr.eq(t_out.pop("_addr")), wr.data.eq(Cat(*sums)), wr.en.eq(v_out)]
    if read_addr is None:
        return sums, v_out, t_out
    drain = mem.read_port(domain="comb")
    m.d.comb += drain.addr.eq(read_addr)
    return sums, v_out, t_out, drain.data


