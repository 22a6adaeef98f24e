"""Amaranth pieces shared by the special-function units: ROM tables, the piecewise-quadratic
kernel of :class:`~pimforge.hw.fp.func_tables.QuadTable`, subnormal normalization, and the
component shell.  :mod:`pimforge.sim.golden.fp.func_common` mirrors them.
"""
from __future__ import annotations

from amaranth.hdl import Signal, signed, unsigned
from amaranth.lib.memory import Memory

from pimforge.hw.core.component import PipelinedUnit
from pimforge.hw.core.payload import fp
from pimforge.hw.fp import core

__all__ = ["rom", "quad_eval", "normalize", "FpFuncUnit"]


def rom(m, name: str, values, shape):
    """A ROM holding ``values`` with a combinational read port; returns ``(addr, data)``, the
    caller drives ``addr``."""
    mem = Memory(shape=shape, depth=len(values), init=list(values))
    base, k = name, 1
    while True:  # several function units may share one module: keep ROM names unique
        try:
            m.submodules[name] = mem
            break
        except NameError:
            k += 1
            name = f"{base}_{k}"
    port = mem.read_port(domain="comb")
    return port.addr, port.data


def quad_eval(m, tab, u, name: str = "quad"):
    """Evaluate the table kernel on the ``tab.in_bits``-bit fraction ``u`` (signed result with
    ``tab.out_frac`` fraction bits), with the same floor shifts as the golden model."""
    w0, w1, w2 = tab.widths()
    index = Signal(range(tab.depth), name=f"{name}_index")
    d = Signal(tab.d_bits, name=f"{name}_d")
    m.d.comb += [index.eq(u[tab.d_bits:tab.in_bits]), d.eq(u[:tab.d_bits])]
    roms = {}
    for key, values, shape in (("c0", tab.c0, unsigned(w0)), ("c1", tab.c1, signed(w1)),
                               ("c2", tab.c2, signed(w2))):
        addr, data = rom(m, f"{name}_{key}", values, shape)
        m.d.comb += addr.eq(index)
        roms[key] = data
    a = d[tab.sq_pre:]
    sq = Signal(2 * len(a) - tab.sq_post, name=f"{name}_sq")
    m.d.comb += sq.eq((a * a) >> tab.sq_post)
    term1 = Signal(signed(w1 + tab.d_bits + 1 - tab.t1_shift), name=f"{name}_t1")
    term2 = Signal(signed(w2 + len(sq) + 1 - tab.t2_shift), name=f"{name}_t2")
    m.d.comb += [term1.eq((roms["c1"] * d) >> tab.t1_shift),
                 term2.eq((roms["c2"] * sq) >> tab.t2_shift)]
    out = Signal(signed(max(w0, len(term1), len(term2)) + 2), name=f"{name}_out")
    m.d.comb += out.eq(roms["c0"] + term1 + term2)
    return out


def normalize(m, fmt, unpacked: dict, name: str = "norm"):
    """Shift a subnormal significand up to a leading one; returns ``(exp, sig)``."""
    p = fmt.precision
    lz = core.lzc(m, unpacked["sig"], name=f"{name}_lz")
    sig = Signal(p, name=f"{name}_sig")
    exp = Signal(core.exp_shape(fmt, 1), name=f"{name}_exp")
    m.d.comb += [sig.eq((unpacked["sig"] << lz)[:p]), exp.eq(unpacked["exp"] - lz)]
    return exp, sig


class FpFuncUnit(PipelinedUnit):
    """Shell of a one-input special-function unit: stream ``i`` with field ``a``, stream ``o``
    with field ``r``; latency ``pipeline_depth``, one operation per cycle.

    Subclasses set ``UNIT`` and implement ``stages()`` (the datapath as pipeline stages over a dict
    with key ``a``, ending with key ``r``).
    """

    def __init__(self, cfg):
        super().__init__(cfg, {"a": fp(cfg.fmt)}, {"r": fp(cfg.fmt)})
