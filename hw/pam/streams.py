"""The stream formats the PAM units share: one definition, so a PU's output, an RU's input and
the compositions' ports cannot drift apart."""
from __future__ import annotations

from amaranth.lib import stream

from pimforge.base.formats import FP16
from pimforge.base.numerics import SCORE
from pimforge.hw.core.payload import flag, fp, payload_layout, uint, vec

__all__ = ["q_signature", "kv_signature", "partial_signature", "stats_in_signature",
           "stats_out_signature"]


def q_signature(lanes: int, pus: int | None = None) -> stream.Signature:
    """Q beats: ``data`` (lanes x fp16), plus the ``active`` PU mask for a device."""
    fields = {"data": vec(FP16, lanes)}
    if pus is not None:
        fields["active"] = uint(pus)
    return stream.Signature(payload_layout(**fields))


def kv_signature(lanes: int) -> stream.Signature:
    """K/V beats of a PU: ``data`` (lanes x fp16), ``is_v``, ``last`` (final V beat of the set)."""
    return stream.Signature(payload_layout(data=vec(FP16, lanes), is_v=flag(), last=flag()))


def partial_signature(acc, width: int, *, last: bool = False, final: bool = False):
    """A partial (O, m, l) at ``width`` elements per beat (O and l in ``acc``, m in the score
    format fp32); ``last`` adds the end-of-request flag (RU input), ``final`` the normalized
    ``norm`` (fp16) and ``lse`` (fp32; final-stage RU output)."""
    fields = {"data": vec(acc, width)}
    if final:
        fields["norm"] = vec(FP16, width)
    fields.update(m=fp(SCORE), l=fp(acc))
    if final:
        fields["lse"] = fp(SCORE)
    if last:
        fields["last"] = flag()
    return stream.Signature(payload_layout(**fields))


def stats_in_signature(acc) -> stream.Signature:
    """``online_softmax``'s input: ``m_in`` (the score format), ``l_in`` (``acc``), ``first``."""
    return stream.Signature(payload_layout(m_in=fp(SCORE), l_in=fp(acc), first=flag()))


def stats_out_signature(acc) -> stream.Signature:
    """``online_softmax``'s output: the running ``m`` and ``l``, ``g`` and ``swap``."""
    return stream.Signature(payload_layout(m=fp(SCORE), l=fp(acc), g=fp(acc), swap=flag()))
