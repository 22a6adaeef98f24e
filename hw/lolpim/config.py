"""Configs of the LoL-PIM units: ``lolpim_dispatcher`` (the on-module DPA dispatcher, LoL-PIM §5,
Fig. 6c) and ``lolpim_pingpong`` (I/O-aware ping-pong buffering for one AiM channel's PU, §6,
Fig. 7b).
"""
from __future__ import annotations

# ==== lolpim_dispatcher (DPA dispatcher) =========================================================

_DISPATCHER_ALL: list = []

# ==== end of lolpim_dispatcher ===================================================================


# ==== lolpim_pingpong (I/O-aware ping-pong buffering) ============================================

# Imports of this region (kept inside it so the two halves of the file merge cleanly).
from dataclasses import dataclass as _pp_dataclass  # noqa: E402

from pimforge.base.config import UnitConfig as _PpUnitConfig, param as _pp_param  # noqa: E402
from pimforge.base.errors import ConfigError as _PpConfigError  # noqa: E402


@_pp_dataclass(frozen=True)
class PingpongConfig(_PpUnitConfig):
    """``lolpim_pingpong``: one AiM channel's PU datapath with I/O-aware ping-pong buffering
    (LoL-PIM §6, Fig. 7b; AiM §2.2, Table 5).

    ``banks`` PUs (one per bank) of ``lanes`` bf16 multipliers each share the global buffer (GB).
    With ``pingpong`` there are two GB sets and two output-register sets, and a ping-pong bit per
    side picks the set: the MAC works on one while the channel I/O loads (DT-GB) or drains
    (DT-Out) the other.  Without it (the AiMX baseline) there is one of each and the unit runs
    load -> MAC -> drain one after another.  The paper's channel is the preset ``aim``:
    16 banks x 16 lanes = 256 MACs, a 2 KB GB (1,024 bf16) per set.

    ``rd_latency`` and ``wr_latency`` are the RD-MAC read latency and the WR-GB write latency in
    PU clocks (1 GHz): the unit counts them on the channel's data bus, so its cycle counts carry
    the I/O cost (:mod:`pimforge.hw.lolpim.aim` states the GDDR6 values).
    """

    UNIT = "lolpim_pingpong"
    banks: int = _pp_param(2, "banks (PUs) of the channel, one MAC unit each (AiM: 16)",
                           choices=(1, 2, 4, 8, 16))
    lanes: int = _pp_param(2, "bf16 multipliers per PU: elements of one column access "
                           "(AiM: 16, a 32-byte column)", choices=(2, 4, 8, 16))
    gb_elems: int = _pp_param(16, "bf16 elements of one global-buffer set (AiM: 1024 = 2 KB)",
                              lo=2, hi=4096)
    pingpong: bool = _pp_param(True, "two GB sets and two output-register sets with a ping-pong "
                               "bit (LoL-PIM §6); false: one of each, serial (AiMX baseline)")
    op_depth: int = _pp_param(1, "pipeline registers inside each float operation (the "
                              "accumulator keeps 2 partial sums, so at most 2)", lo=1, hi=2)
    rd_latency: int = _pp_param(20, "RD-MAC read latency on the channel bus, PU clocks "
                                "(GDDR6 RL, see hw/lolpim/aim.py)", lo=0, hi=255)
    wr_latency: int = _pp_param(8, "WR-GB write latency on the channel bus, PU clocks "
                                "(GDDR6 WL, see hw/lolpim/aim.py)", lo=0, hi=255)

    def validate(self):
        if self.gb_elems % self.lanes or self.gb_elems // self.lanes < 2:
            raise _PpConfigError(self.UNIT, "gb_elems", self.gb_elems,
                                 f"a multiple of lanes = {self.lanes}, at least {2 * self.lanes}")
        if self.gb_elems & (self.gb_elems - 1):
            raise _PpConfigError(self.UNIT, "gb_elems", self.gb_elems, "a power of two")

    @property
    def sets(self) -> int:
        """GB sets and output-register sets: 2 with ping-pong, 1 without."""
        return 2 if self.pingpong else 1

    @property
    def gb_beats(self) -> int:
        """Column steps (beats of ``lanes`` elements) one GB set holds."""
        return self.gb_elems // self.lanes

    @property
    def macs(self) -> int:
        """Multipliers of the channel: banks x lanes."""
        return self.banks * self.lanes


# The paper's channel (AiM §2.2, Table 5): 16 banks x 16 bf16 lanes, a 2 KB GB set.
PAPER_PINGPONG = {"banks": 16, "lanes": 16, "gb_elems": 1024, "op_depth": 2}
PINGPONG_PRESETS = {"aim": dict(PAPER_PINGPONG),
                    "aim_serial": dict(PAPER_PINGPONG, pingpong=False),
                    "serial": {"pingpong": False},
                    # a quarter of the paper's lanes: the area comparison when 256 MACs are slow
                    "aim_l4": dict(PAPER_PINGPONG, lanes=4, gb_elems=256),
                    "aim_l4_serial": dict(PAPER_PINGPONG, lanes=4, gb_elems=256, pingpong=False)}


def pingpong_preset(name: str = "aim") -> PingpongConfig:
    """The config of a ``PINGPONG_PRESETS`` entry (``aim``: the paper's channel)."""
    return PingpongConfig(**PINGPONG_PRESETS[name])


_PINGPONG_ALL: list = ["PingpongConfig", "PAPER_PINGPONG", "PINGPONG_PRESETS", "pingpong_preset"]

# ==== end of lolpim_pingpong =====================================================================

__all__ = _DISPATCHER_ALL + _PINGPONG_ALL
