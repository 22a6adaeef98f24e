"""The stream formats of the LoL-PIM units: one definition for each unit and its bench."""
from __future__ import annotations

from amaranth.lib import stream

from pimforge.base.formats import BF16
from pimforge.hw.core.payload import flag, payload_layout, uint, vec
from pimforge.hw.lolpim.config import DispatcherConfig, PingpongConfig, dispatcher_bits
from pimforge.hw.lolpim.dpa import out_fields, run_fields

__all__ = ["host_signature", "command_signature", "status_signature", "pingpong_signatures"]


def host_signature(cfg: DispatcherConfig) -> stream.Signature:
    """``i``: ``kind`` (:data:`~pimforge.hw.lolpim.dpa.KINDS`), ``addr``, ``data``."""
    addr = max(cfg.pc_bits, dispatcher_bits(cfg.map_depth))
    data = max(cfg.word_bits, cfg.map_bits, sum(w for _, w in run_fields(cfg)))
    return stream.Signature(payload_layout(kind=uint(2), addr=uint(addr), data=uint(data)))


def command_signature(cfg: DispatcherConfig) -> stream.Signature:
    """``o``: one PIM command, the fields of :func:`~pimforge.hw.lolpim.dpa.out_fields`."""
    return stream.Signature(payload_layout(**{n: uint(w) for n, w in out_fields(cfg)}))


def status_signature(cfg: DispatcherConfig) -> stream.Signature:
    """``o_status``: the run's ``code`` and the ``index`` of the command it stopped at."""
    return stream.Signature(payload_layout(code=uint(4), index=uint(cfg.len_bits)))


def pingpong_signatures(cfg: PingpongConfig) -> dict:
    """The unit's streams (one definition for the unit and its bench)."""
    step_bits = max(1, (cfg.gb_beats - 1).bit_length())
    return {
        "i_ld": stream.Signature(payload_layout(last_beat=uint(step_bits))),
        "i_gb": stream.Signature(payload_layout(data=vec(BF16, cfg.lanes))),
        "i_mac": stream.Signature(payload_layout(last_step=uint(step_bits), release=flag(),
                                                 drain=flag())),
        "i_bank": stream.Signature(payload_layout(data=vec(BF16, cfg.banks * cfg.lanes))),
        "o": stream.Signature(payload_layout(data=vec(BF16, cfg.banks))),
    }
