"""The stream formats of the PAPI units: one definition for each unit and its bench."""
from __future__ import annotations

from amaranth.lib import stream

from pimforge.base.formats import FP16
from pimforge.hw.core.payload import flag, payload_layout, uint, vec
from pimforge.hw.papi.config import PapiPuConfig, SchedulerConfig

__all__ = ["ROW_BITS", "pu_signatures", "host_signature", "token_signature", "decision_signature"]


ROW_BITS = 16      # rows per bank of one job, at most 65535


def pu_signatures(cfg: PapiPuConfig) -> dict:
    """The unit's streams (one definition for the unit and its bench)."""
    return {
        "i_cmd": stream.Signature(payload_layout(
            reuse=uint(cfg.max_reuse.bit_length()), beats=uint(cfg.max_beats.bit_length()),
            rows=uint(ROW_BITS))),
        "i_x": stream.Signature(payload_layout(data=vec(FP16, cfg.lanes))),
        "i_w": stream.Signature(payload_layout(data=vec(FP16, cfg.banks * cfg.lanes))),
        "o": stream.Signature(payload_layout(data=vec(FP16, cfg.fpus))),
    }


def host_signature(cfg: SchedulerConfig) -> stream.Signature:
    """``i_host``: ``kind`` (:data:`~pimforge.hw.papi.config.HOST_KINDS`), ``value``."""
    return stream.Signature(payload_layout(kind=uint(2), value=uint(cfg.value_bits)))


def token_signature(cfg: SchedulerConfig) -> stream.Signature:
    """``i``: ``tokens`` (lane 0 least significant), ``keep`` (a bit per lane), ``last``."""
    n = cfg.tokens_per_beat
    return stream.Signature(payload_layout(tokens=uint(n * cfg.token_bits), keep=uint(n),
                                           last=flag()))


def decision_signature(cfg: SchedulerConfig) -> stream.Signature:
    """``o``: one decision (:class:`~pimforge.sim.golden.papi.scheduler.Decision`'s fields)."""
    return stream.Signature(payload_layout(
        iteration=uint(cfg.iter_bits), rlp=uint(cfg.rlp_bits), intensity=uint(cfg.ai_bits),
        placement=flag(), migrate=flag(), freed=uint(cfg.rlp_bits), done=flag()))
