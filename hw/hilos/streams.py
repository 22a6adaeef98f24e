"""The stream formats the HILOS units share: one definition, so that the units, the top and the
benches cannot drift apart.  Vectors pack element 0 into the least significant bits.

* ``vec_signature(E)``: ``data`` (E x fp16).  Q (a job's d_group queries, query-major, head_dim/E
  beats each) and the output O in the same order.
* ``k_signature(E)``: ``data`` (E x fp16), ``mask`` (the token is padding; the same on every beat
  of a row), ``last`` (final beat of the job).  K and V rows arrive row-wise, head_dim/E beats a
  row, in token order.
* ``v_signature(E)``: ``data``, ``last``.
* ``score_signature(U, fmt)`` and ``y_signature(U)``: ``data`` (U scores in ``fmt``, or U fp16
  softmax outputs), ``keep`` (U bits: the element is a real position, not block padding),
  ``mask`` (U bits: the position is masked), ``last`` (final beat of the job).  A job's scores
  travel in *row blocks*: for each block of ``block`` positions, query 0's ``block / U`` beats,
  then query 1's, ...; a short last block of a segment is padded to ``block`` with keep = 0.
"""
from __future__ import annotations

from amaranth.lib import stream

from pimforge.base.formats import FP16
from pimforge.hw.core.payload import flag, payload_layout, uint, vec

__all__ = ["vec_signature", "k_signature", "v_signature", "score_signature", "y_signature",
           "q_top_signature"]


def vec_signature(elems: int) -> stream.Signature:
    return stream.Signature(payload_layout(data=vec(FP16, elems)))


def k_signature(elems: int) -> stream.Signature:
    return stream.Signature(payload_layout(data=vec(FP16, elems), mask=flag(), last=flag()))


def v_signature(elems: int) -> stream.Signature:
    return stream.Signature(payload_layout(data=vec(FP16, elems), last=flag()))


def score_signature(lanes: int, fmt) -> stream.Signature:
    return stream.Signature(payload_layout(data=vec(fmt, lanes), keep=uint(lanes),
                                           mask=uint(lanes), last=flag()))


def y_signature(lanes: int) -> stream.Signature:
    return score_signature(lanes, FP16)


def q_top_signature(elems: int) -> stream.Signature:
    """Q beats of the top: ``data`` (E x fp16) and ``pre`` (the job has precomputed scores)."""
    return stream.Signature(payload_layout(data=vec(FP16, elems), pre=flag()))
