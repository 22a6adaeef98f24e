"""The float library's accumulator bank: :func:`accumulate`.

``lanes`` adders add a product into an accumulator addressed by ``addr``, read from a memory and
written back (the GEMV units of HILOS; the partial sums of PAPI's PU, Hermes' GEMV and LoL-PIM's
ping-pong PU, which :func:`finish_partials` sums).  The adder takes
``op_depth`` cycles, so an address may come back every ``op_depth`` cycles or later: the bank is
read a cycle before the add (:data:`ACC_READ`), and the write of the previous update is forwarded
both to that read and to the add, whichever cycle it lands in (each unit's config checks its
revisit distance against this).  Flow control happens at the units' inputs; the bank itself is
free-running.
"""
from __future__ import annotations

from amaranth.hdl import Cat, Mux, Signal

from pimforge.base.formats import FP32
from pimforge.hw.core.fanout import copies
from pimforge.hw.core.memories import buffer
from pimforge.hw.core.pipeline import levels
from pimforge.hw.fp.core import LV_MUX
from pimforge.hw.fp.ops import add_partials, delay, delay_valid, float_op, op_latency

__all__ = ["accumulate", "read_stage", "forward_stage", "forward_lane", "finish_partials",
           "acc_latency", "ACC_READ", "DRAIN_READ"]

# Cycles of accumulate()'s read stage: the bank is read a cycle before the add, through a
# register, so the LUT-RAM read and the address's fan-out to every lane do not share a cycle
# with the adder's first stage (on ECP5 that path set sv_gemv's clock at op_depth 8).  Not a
# tuning knob: accumulate()'s forwarding covers exactly one cycle between the read and the add.
ACC_READ = 1
# Cycles of the register after the drain reads (``read_addr``) of a bank, before the adders
# that finish the sums (:func:`finish_partials`): without it, on ECP5 the drain address's
# fan-out into the LUT-RAM and the next adder's first stage set papi_pu's clock at op_depth 8.
DRAIN_READ = 1


def acc_latency(op_depth: int) -> int:
    """Cycles from an update's product to its new sum (and its write into the bank)."""
    return ACC_READ + op_latency("add", op_depth)


def read_stage(m, landed, rd_data, *, addr, first, valid, carry: dict, op_depth: int, name: str,
               lanes: int = 1):
    """The read stage of an accumulator bank in front of its ``op_depth`` adder: ``rd_data`` is
    the bank's combinational read at ``addr`` (the caller drives the read address); ``landed``
    is the data of the adders' results, which land in the bank :func:`acc_latency` cycles
    after the read (the write port's data, or the adders' own outputs when the write port is
    shared with other writers, whose multiplexer would sit on the path).

    The word is registered (:data:`ACC_READ`) with the update that lands in the read cycle
    forwarded (it is not in the memory yet) and +0 for ``first``; the update that lands in the
    add cycle is forwarded again.  Which one that is is known a cycle ahead: the add that
    started ``lat - 1`` cycles before the read (a copy of the adder's valid and ``carry["_addr"]``
    pipeline), so the forwarding select is a register, and the adder's first stage sees one
    multiplexer level in front of it.  The selects are registers per lane (``rd_data`` is
    ``lanes`` equal words; :func:`~pimforge.hw.core.fanout.copies`), so no register drives every
    bit of the bank word.  Returns ``((word, land_data, hits), carry, valid)`` for the add
    cycle: lane k's old value is ``Mux(hits[k], land_data, word)``, which the caller gives its
    adder as :func:`forward_stage` (:func:`forward_lane` picks a lane's operands)."""
    assert len(rd_data) % lanes == 0, f"{name}: a {len(rd_data)}-bit word is not {lanes} equal lanes"
    w = len(rd_data) // lanes
    staged = delay(m, carry, ACC_READ, name=f"{name}_rs")
    valid = delay_valid(m, valid, ACC_READ, name=f"{name}_rs_v")
    lat = op_latency("add", op_depth)
    in_flight = delay(m, {"addr": staged["_addr"]}, lat - 1, name=f"{name}_fl")["addr"]
    in_flight_v = delay_valid(m, valid, lat - 1, name=f"{name}_fl_v")
    hits = copies(m, in_flight_v & (in_flight == addr) & ~first, lanes, f"{name}_hit")
    # The update landing in the read cycle is the in-flight add of the cycle before; its valid
    # and address are per-lane register copies of that (the adders' valid and address out), so
    # each lane compares on its own and its select drives only its own bits, not the word.
    land_on = copies(m, in_flight_v, lanes, f"{name}_land_en")
    land_at = copies(m, in_flight, lanes, f"{name}_land_addr")
    word = Signal(len(rd_data), name=f"{name}_word")
    m.d.sync += word.eq(Cat(*[
        Mux(first, 0, Mux(land_on[k] & (land_at[k] == addr), landed[w * k:w * (k + 1)],
                          rd_data[w * k:w * (k + 1)]))
        for k in range(lanes)]))
    return (word, landed, hits), staged, valid


def forward_lane(fwd, k: int, b) -> dict:
    """Lane ``k``'s operands for :func:`forward_stage` from :func:`read_stage`'s ``(word,
    land_data, hits)``, with ``b`` the addend."""
    word, landed, hits = fwd
    w = len(word) // len(hits)
    return {"word": word[w * k:w * (k + 1)], "land": landed[w * k:w * (k + 1)], "hit": hits[k],
            "b": b}


@levels(LV_MUX)
def forward_stage(m, x):
    """The add-cycle forward as the adder's operand select (``float_op(..., pre=...)``): the
    update landing in the add cycle, or the registered bank word.  Where the adder's register
    placement puts a register right after it (fp32 at ``op_depth`` 12-16, fp16 at 11-16), that
    register is the adder's first, so the latency does not change; it holds the operands the
    first adder stage would have read in the same cycle."""
    return {"a": Mux(x["hit"], x["land"], x["word"]), "b": x["b"]}


def accumulate(m, products: list, *, valid, addr, first, depth: int, op_depth: int,
               fmt=FP32, side=None, read_addr=None, name: str = "acc"):
    """``acc[addr][i] = (first ? +0 : acc[addr][i]) + products[i]`` in ``fmt`` (round to
    nearest even), for every lane i at once.

    Returns ``(sums, valid_out, side_out)`` :func:`acc_latency` cycles later: the new values,
    which are also written back to the bank in that cycle; with ``read_addr`` a fourth item, the
    bank word at ``read_addr`` (the memory as it is, no forwarding), a list for a list.

    Parameters
    ----------
    m : the Module.
    products : ``fmt`` bit patterns, one per lane, valid with ``valid``.
    valid : 1-bit: this cycle carries an update.
    addr : accumulator address (``range(depth)``).
    first : start this accumulator from +0 instead of reading it.
    side : dict of values delayed alongside (tags).
    fmt : the float format of the products and sums (fp32 by default).
    read_addr : optional second address: a combinational read port for whoever drains the bank
        (``sv_gemv`` reads a finished job's accumulators while the next job updates others), or
        a list of them (``papi_pu`` reads a row's partial sums at once).
    """
    lanes, w = len(products), fmt.width
    mem = buffer(m, f"{name}_bank", w * lanes, depth, comb_read=True)   # read_stage's read
    wr = mem.write_port()
    rd = mem.read_port(domain="comb")
    m.d.comb += rd.addr.eq(addr)
    fwd, staged, valid = read_stage(
        m, wr.data, rd.data, addr=addr, first=first, valid=valid, op_depth=op_depth, name=name,
        lanes=lanes,
        carry={"_addr": addr, **(side or {}), **{f"_p{i}": p for i, p in enumerate(products)}})
    products = [staged.pop(f"_p{i}") for i in range(lanes)]
    tags = staged
    sums, v_out, t_out = [], None, None
    for i, p in enumerate(products):
        r, v, t = float_op(m, "add", fmt, op_depth, forward_lane(fwd, i, p),
                           valid=valid if i == 0 else None,
                           side=tags if i == 0 else None, name=f"{name}{i}", pre=forward_stage,
                           fire=valid)
        sums.append(r["r"])
        if i == 0:
            v_out, t_out = v, t
    m.d.comb += [wr.addr.eq(t_out.pop("_addr")), wr.data.eq(Cat(*sums)), wr.en.eq(v_out)]
    if read_addr is None:
        return sums, v_out, t_out
    words = []
    for a in (read_addr if isinstance(read_addr, (list, tuple)) else [read_addr]):
        drain = mem.read_port(domain="comb")
        m.d.comb += drain.addr.eq(a)
        words.append(drain.data)
    return sums, v_out, t_out, (words if isinstance(read_addr, (list, tuple)) else words[0])


def finish_partials(m, fmt, op_depth: int, words: list, visited, lanes: int, *, valid, side,
                    name: str = "finish") -> tuple:
    """The finish of an accumulator that adds beat k into partial k mod Q: ``words`` are the Q
    partial-sum words (``lanes`` values of ``fmt`` each) as a bank's drain ports read them; a
    word at index ``visited`` or beyond (no beat reached it) reads as +0.  The reads and
    ``side`` are registered (:data:`DRAIN_READ`), then summed pairwise, adjacent pairs first
    (:func:`~pimforge.hw.fp.ops.add_partials`).  Returns ``(sums, valid, side)``."""
    reads = {f"_q{q}": Mux(q < visited, w, 0) for q, w in enumerate(words)}
    rd = delay(m, {**side, **reads}, DRAIN_READ, name=f"{name}_rd")
    rv = delay_valid(m, valid, DRAIN_READ, name=f"{name}_rd_v")
    parts = [rd.pop(f"_q{q}") for q in range(len(words))]
    return add_partials(m, fmt, op_depth, parts, lanes, valid=rv, side=rd, name=name)
