"""Stream formats of the PAM interface units: one definition for the units, their benches and
the cycle model.  Field widths follow :class:`~pimforge.hw.pamif.config.PamifConfig`.

* ``cmd``: a migration-list entry: ``token``, ``src_slot``, ``dst_slot``, ``last`` (ends the
  list).  The id fields are one bit wider than their range needs, so out-of-range values can be
  sent (and rejected).
* ``status``: ``code`` (:data:`~pimforge.hw.pamif.config.STATUS`), ``index`` (the first bad
  entry; on success the entry count).
* ``rd``: a source read request ``addr``, ``tag`` = (entry, word); ``rdata``: ``data``, ``tag``
  (the memory returns the request's tag, in request order).
* ``fill``: source-side writes into the re-layout buffer: ``region``, ``word`` (source word of
  the token), ``slot`` (destination slot), ``data`` (source width).
* ``drain``: destination-side words out of the buffer: ``slot``, ``word`` (destination word),
  ``data`` (destination width), ``last`` (the region's last word).
* ``free``: ``region`` freed (the buffer's release, the sender's window credit; the sender
  is always ready for it).
* ``wr``: a destination write ``addr``, ``data``.
"""
from __future__ import annotations

from amaranth.lib import stream

from pimforge.hw.core.payload import flag, payload_layout, uint

__all__ = ["bits", "cmd_signature", "status_signature", "rd_signature", "rdata_signature",
           "fill_signature", "drain_signature", "free_signature", "wr_signature", "tag_bits"]


def bits(n: int) -> int:
    """Bits for values 0 .. n - 1 (at least 1)."""
    return max(1, (n - 1).bit_length())


def tag_bits(cfg) -> tuple:
    """(entry bits, word bits) of a read tag."""
    return bits(cfg.capacity), bits(cfg.src_words)


def cmd_signature(cfg) -> stream.Signature:
    return stream.Signature(payload_layout(
        token=uint(cfg.tokens.bit_length()), src_slot=uint(cfg.src_slots.bit_length()),
        dst_slot=uint(cfg.dst_slots.bit_length()), last=flag()))


def status_signature(cfg) -> stream.Signature:
    return stream.Signature(payload_layout(code=uint(3), index=uint((cfg.capacity + 1)
                                                                     .bit_length())))


def rd_signature(cfg) -> stream.Signature:
    eb, wb = tag_bits(cfg)
    return stream.Signature(payload_layout(addr=uint(bits(cfg.src_tier.words())),
                                           entry=uint(eb), word=uint(wb)))


def rdata_signature(cfg) -> stream.Signature:
    eb, wb = tag_bits(cfg)
    return stream.Signature(payload_layout(data=uint(cfg.src_tier.word_bits), entry=uint(eb),
                                           word=uint(wb)))


def fill_signature(cfg) -> stream.Signature:
    return stream.Signature(payload_layout(
        region=uint(bits(cfg.regions)), word=uint(bits(cfg.src_words)),
        slot=uint(bits(cfg.dst_slots)), data=uint(cfg.src_tier.word_bits)))


def drain_signature(cfg) -> stream.Signature:
    return stream.Signature(payload_layout(
        slot=uint(bits(cfg.dst_slots)), word=uint(bits(cfg.dst_words)),
        data=uint(cfg.dst_tier.word_bits), last=flag()))


def free_signature(cfg) -> stream.Signature:
    return stream.Signature(payload_layout(region=uint(bits(cfg.regions))))


def wr_signature(cfg) -> stream.Signature:
    return stream.Signature(payload_layout(addr=uint(bits(cfg.dst_tier.words())),
                                           data=uint(cfg.dst_tier.word_bits)))
