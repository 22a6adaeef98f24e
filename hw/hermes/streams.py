"""The stream formats of ``hermes_gemv`` (see :mod:`pimforge.hw.hermes.gemv`): one definition
for the unit, its bench and the ``run hermes-gemv`` flow.  Vectors pack element 0 into the least
significant bits.

* ``cmd_signature``: ``mode`` (0 rows, 1 cols), ``batch`` (1..16), ``n`` (active neurons),
  ``beats`` (beats per neuron), ``merge``.
* ``beat_signature``: ``data``, E = 8 beat_words fp16 values (x, weights, partials and y).
"""
from __future__ import annotations

from amaranth.hdl import Signal
from amaranth.lib import stream

from pimforge.base.formats import FP16
from pimforge.hw.core.payload import flag, payload_layout, uint, vec
from pimforge.hw.hermes.config import HermesGemvConfig

__all__ = ["N_BITS", "cmd_signature", "beat_signature", "lane", "addr_signal", "ACT_OPS",
           "act_signatures"]

N_BITS = 20      # width of the command's neuron count


def cmd_signature(cfg: HermesGemvConfig) -> stream.Signature:
    return stream.Signature(payload_layout(
        mode=flag(), batch=uint(5), n=uint(N_BITS),
        beats=uint(max(1, cfg.max_beats.bit_length())), merge=flag()))


def beat_signature(cfg: HermesGemvConfig) -> stream.Signature:
    return stream.Signature(payload_layout(data=vec(FP16, cfg.beat_elems)))


def lane(x, i, w):
    """Element ``i`` of ``w`` bits of a packed vector."""
    return x[w * i:w * (i + 1)]


def addr_signal(m, value, depth: int, name: str):
    """``value`` as a signal of a memory's address width."""
    sig = Signal(range(depth), name=name)
    m.d.comb += sig.eq(value)
    return sig


ACT_OPS = ("relu", "softmax")   # the ``op`` bit of a vector's first beat


def act_signatures(lanes: int) -> tuple:
    """``(i, o)`` stream signatures of the unit."""
    cw = lanes.bit_length()
    i = stream.Signature(payload_layout(data=vec(FP16, lanes), count=uint(cw), op=flag(),
                                        last=flag()))
    o = stream.Signature(payload_layout(data=vec(FP16, lanes), count=uint(cw), last=flag()))
    return i, o
