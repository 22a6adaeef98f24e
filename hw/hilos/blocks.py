"""Building blocks shared by the HILOS units.

:func:`accumulate` is the fp32 accumulator bank of the GEMV units: ``lanes`` adders that add a
product into an accumulator addressed by ``addr``, read from a memory and written back.  The
adder takes ``op_depth`` cycles, so an address may come back every ``op_depth`` cycles or later:
the bank is read a cycle before the add (:data:`ACC_READ`), and the write of the previous update
is forwarded both to that read and to the add, whichever cycle it lands in (the configs check
``block / beat_elems`` and ``head_dim / beat_elems`` against this).
Flow control happens at the units' inputs; the bank itself is free-running.

:func:`rotate_elems` rotates a vector of elements by a variable count, one 2:1 multiplexer level
per bit of the count: the skew of ``qk_gemv``'s K-Buf banks.
"""
from __future__ import annotations

from amaranth.hdl import Cat, Const, Mux, Signal

from pimforge.base.formats import FP32
from pimforge.hw.core.memories import buffer
from pimforge.hw.fp.ops import delay, delay_valid, float_op, op_latency

__all__ = ["accumulate", "acc_latency", "rotate_elems", "ACC_READ"]

# Cycles of accumulate()'s read stage: the bank is read a cycle before the add, through a
# register, so the LUT-RAM read and the address's fan-out to every lane do not share a cycle
# with the adder's first stage (on ECP5 that path set sv_gemv's clock at op_depth 8).  Not a
# tuning knob: accumulate()'s forwarding covers exactly one cycle between the read and the add.
ACC_READ = 1


def acc_latency(op_depth: int) -> int:
    """Cycles from an update's product to its new sum (and its write into the bank)."""
    return ACC_READ + op_latency("add", op_depth)


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

    Returns ``(sums, valid_out, side_out)`` :func:`acc_latency` cycles later: the new values,
    which are also written back to the bank in that cycle; with ``read_addr`` a fourth item, the
    bank word at ``read_addr`` (the memory as it is, no forwarding).
    """
    lanes = len(products)
    mem = buffer(m, f"{name}_bank", 32 * lanes, depth)
    wr = mem.write_port()
    rd = mem.read_port(domain="comb")
    m.d.comb += rd.addr.eq(addr)
    # read stage (ACC_READ): the word, with the update that lands this cycle forwarded (it is not
    # in the memory yet) and +0 for a first update, registered with the products and the tags
    word = Signal(32 * lanes, name=f"{name}_word")
    m.d.sync += word.eq(Mux(first, 0, Mux(wr.en & (wr.addr == addr), wr.data, rd.data)))
    staged = delay(m, {"_addr": addr, **(side or {}),
                       **{f"_p{i}": p for i, p in enumerate(products)}}, ACC_READ,
                   name=f"{name}_rs")
    valid = delay_valid(m, valid, ACC_READ, name=f"{name}_rs_v")
    # the update that lands in the add cycle is forwarded again.  Which one that is is known a
    # cycle ahead: the add that started lat - 1 cycles before the read (a copy of the adder's
    # valid and address pipeline), so the forwarding select is a register, and the adder's
    # first stage sees one multiplexer level in front of it.
    lat = op_latency("add", op_depth)
    in_flight = delay(m, {"addr": staged["_addr"]}, lat - 1, name=f"{name}_fl")["addr"]
    in_flight_v = delay_valid(m, valid, lat - 1, name=f"{name}_fl_v")
    hit = Signal(name=f"{name}_hit")
    m.d.sync += hit.eq(in_flight_v & (in_flight == addr) & ~first)
    old = Signal(32 * lanes, name=f"{name}_old")
    m.d.comb += old.eq(Mux(hit, wr.data, word))
    products = [staged.pop(f"_p{i}") for i in range(lanes)]
    tags = staged
    sums, v_out, t_out = [], None, None
    for i, p in enumerate(products):
        r, v, t = float_op(m, "add", FP32, op_depth, {"a": old[32 * i:32 * (i + 1)], "b": p},
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


