"""Configs of the LoL-PIM units: ``lolpim_dispatcher`` (the on-module DPA dispatcher, LoL-PIM §5,
Fig. 6c) and ``lolpim_pingpong`` (I/O-aware ping-pong buffering for one AiM channel's PU, §6,
Fig. 7b).
"""
from __future__ import annotations

from dataclasses import dataclass

from pimforge.base.config import UnitConfig, at_most, param
from pimforge.base.errors import ConfigError

__all__ = ["DispatcherConfig", "DISPATCHER_PRESETS", "dispatcher_bits", "PingpongConfig",
           "PAPER_PINGPONG", "PINGPONG_PRESETS", "pingpong_preset"]

# ---- lolpim_dispatcher (the DPA dispatcher) -----------------------------------------------------

def dispatcher_bits(n: int) -> int:
    """Bits for the values 0 .. n - 1 (at least 1)."""
    return max(1, (n - 1).bit_length())


def _disp_pow2(v, cfg):
    return None if v >= 1 and not v & (v - 1) else "a power of two"


@dataclass(frozen=True)
class DispatcherConfig(UnitConfig):
    """The on-module DPA dispatcher (LoL-PIM §5.3, Fig. 6c): buffer sizes and field widths.

    The paper fixes only the buffer sizes (Table 5: a 96 KB DPA command buffer and a 96 KB
    address-map buffer); the widths are this generator's (the manifest's ``encoding``).  The
    defaults are Table 5's sizes: 32,768 program words of 24 bits (96 KB) and 48 requests x
    1,024 virtual rows of 16-bit Va2Pa entries (96 KB); ``paper`` names them.  The ``small``
    preset (64-word program, 4 requests x 16 virtual rows) is the simulation config of the
    tests, the demo and ``pimforge test``.
    """

    UNIT = "lolpim_dispatcher"
    cmd_depth: int = param(32768, "command buffer size in DPA words (the longest program)", lo=2,
                            hi=1 << 16)
    requests: int = param(48, "request ids the Va2Pa table maps", lo=1, hi=1 << 10)
    vrows: int = param(1024, "virtual rows per request in the Va2Pa table", lo=1, hi=1 << 16,
                        check=_disp_pow2)
    row_bits: int = param(15, "width of a DRAM row address (the row operand)", lo=2, hi=20)
    col_bits: int = param(6, "width of a column address (the col operand)", lo=1, hi=16)
    t_bits: int = param(18, "width of the token index T_cur", lo=1, hi=24)
    max_lb: int = param(1024, "largest Loop-Bound a Dyn-Loop may take (more is an error)", lo=1,
                         hi=1 << 16)
    max_layers: int = param(80, "largest number of layers of a run", lo=1, hi=1 << 10)

    def validate(self):
        if self.vrows > 1 << self.row_bits:
            raise ConfigError(self.UNIT, "vrows", self.vrows,
                               f"at most 2**row_bits = {1 << self.row_bits}")
        if self.loop_arg_bits > self.row_bits + self.col_bits:
            raise ConfigError(self.UNIT, "cmd_depth", self.cmd_depth,
                               f"a depth whose Dyn-Loop LE ({self.pc_bits} bits) and shift "
                               f"({self.shift_bits} bits) fit the operand field "
                               f"(row_bits + col_bits = {self.row_bits + self.col_bits} bits)")

    # -- derived widths (the encoding of pimforge.hw.lolpim.dpa)
    @property
    def pc_bits(self) -> int:
        """Bits of a program index 0 .. cmd_depth - 1 (also the LE field)."""
        return dispatcher_bits(self.cmd_depth)

    @property
    def len_bits(self) -> int:
        """Bits of a program length 0 .. cmd_depth."""
        return self.cmd_depth.bit_length()

    @property
    def shift_bits(self) -> int:
        """Bits of a Dyn-Loop's shift (0 .. t_bits)."""
        return (self.t_bits).bit_length()

    @property
    def loop_arg_bits(self) -> int:
        return self.pc_bits + self.shift_bits

    @property
    def word_bits(self) -> int:
        """A DPA program word: 3-bit opcode + the operand field (row_bits + col_bits)."""
        return 3 + self.row_bits + self.col_bits

    @property
    def map_depth(self) -> int:
        return self.requests * self.vrows

    @property
    def map_bits(self) -> int:
        """A Va2Pa entry: the physical row and a valid bit."""
        return self.row_bits + 1

    @property
    def iter_bits(self) -> int:
        return dispatcher_bits(self.max_lb)

    @property
    def layer_bits(self) -> int:
        return dispatcher_bits(self.max_layers)

    @property
    def cmd_bytes(self) -> int:
        return self.cmd_depth * self.word_bits // 8

    @property
    def map_bytes(self) -> int:
        return self.map_depth * self.map_bits // 8


# Table 5: 96 KB of 24-bit DPA words; 96 KB of 16-bit Va2Pa entries (48 x 1,024: 1,024 rows of
# 256 tokens cover a 256K-token context); GDDR6 AiM: 2 KB pages of 32-byte columns (64), 16 Gb
# over 2 channels x 16 banks: 32K rows (15 bits); 80 layers (the largest model of Table 1).
DISPATCHER_PRESETS = {"paper": {},
                      "small": {"cmd_depth": 64, "requests": 4, "vrows": 16, "row_bits": 8,
                                "col_bits": 6, "t_bits": 10, "max_lb": 15, "max_layers": 4}}


# ---- lolpim_pingpong (I/O-aware ping-pong buffering) --------------------------------------------


@dataclass(frozen=True)
class PingpongConfig(UnitConfig):
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
    banks: int = param(2, "banks (PUs) of the channel, one MAC unit each (AiM: 16)",
                           choices=(1, 2, 4, 8, 16))
    lanes: int = param(2, "bf16 multipliers per PU: elements of one column access "
                           "(AiM: 16, a 32-byte column)", choices=(2, 4, 8, 16))
    gb_elems: int = param(16, "bf16 elements of one global-buffer set (AiM: 1024 = 2 KB)",
                              lo=2, hi=4096)
    pingpong: bool = param(True, "two GB sets and two output-register sets with a ping-pong "
                               "bit (LoL-PIM §6); false: one of each, serial (AiMX baseline)")
    partials: int = param(2, "running partial sums per bank and set: column step k adds into "
                          "partial k mod partials, revisited every partials cycles or later, "
                          "so op_depth <= partials; the drain sums them in a pairwise tree",
                          choices=(2, 4, 8, 16))
    op_depth: int = param(1, "pipeline registers inside each float operation (at most "
                              "partials)", lo=1, hi=16,
                          check=at_most("partials", "a partial sum is revisited every partials "
                                        "cycles; raise partials for more"))
    rd_latency: int = param(20, "RD-MAC read latency on the channel bus, PU clocks "
                                "(GDDR6 RL, see hw/lolpim/aim.py)", lo=0, hi=255)
    wr_latency: int = param(8, "WR-GB write latency on the channel bus, PU clocks "
                                "(GDDR6 WL, see hw/lolpim/aim.py)", lo=0, hi=255)

    def validate(self):
        if self.gb_elems % self.lanes or self.gb_elems // self.lanes < 2:
            raise ConfigError(self.UNIT, "gb_elems", self.gb_elems,
                                 f"a multiple of lanes = {self.lanes}, at least {2 * self.lanes}")
        if self.gb_elems & (self.gb_elems - 1):
            raise ConfigError(self.UNIT, "gb_elems", self.gb_elems, "a power of two")

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


# The paper's channel (AiM §2.2, Table 5): 16 banks x 16 bf16 lanes, a 2 KB GB set.  op_depth
# 4 (so 4 partial sums) is the shallowest at which the fp32 accumulate add's deepest stage fits
# the 1 GHz PU clock at the ASAP7 estimate.
PAPER_PINGPONG = {"banks": 16, "lanes": 16, "gb_elems": 1024, "op_depth": 4, "partials": 4}
PINGPONG_PRESETS = {"aim": dict(PAPER_PINGPONG),
                    "aim_serial": dict(PAPER_PINGPONG, pingpong=False),
                    "serial": {"pingpong": False}}


def pingpong_preset(name: str = "aim") -> PingpongConfig:
    """The config of a ``PINGPONG_PRESETS`` entry (``aim``: the paper's channel)."""
    return PingpongConfig(**PINGPONG_PRESETS[name])

