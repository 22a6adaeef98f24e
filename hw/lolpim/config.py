"""Configs of the LoL-PIM units: ``lolpim_dispatcher`` (the on-module DPA dispatcher, LoL-PIM §5,
Fig. 6c) and ``lolpim_pingpong`` (I/O-aware ping-pong buffering for one AiM channel's PU, §6,
Fig. 7b).
"""
from __future__ import annotations

# ==== lolpim_dispatcher (DPA dispatcher) =========================================================
from dataclasses import dataclass as _dataclass  # noqa: E402 (kept inside this unit's region)

from pimforge.base.config import UnitConfig as _UnitConfig, param as _param  # noqa: E402
from pimforge.base.errors import ConfigError as _ConfigError  # noqa: E402

_DISPATCHER_ALL: list = ["DispatcherConfig", "DISPATCHER_PRESETS", "dispatcher_bits"]


def dispatcher_bits(n: int) -> int:
    """Bits for the values 0 .. n - 1 (at least 1)."""
    return max(1, (n - 1).bit_length())


def _disp_pow2(v, cfg):
    return None if v >= 1 and not v & (v - 1) else "a power of two"


@_dataclass(frozen=True)
class DispatcherConfig(_UnitConfig):
    """The on-module DPA dispatcher (LoL-PIM §5.3, Fig. 6c): buffer sizes and field widths.

    The paper fixes only the buffer sizes (Table 5: a 96 KB DPA command buffer and a 96 KB
    address-map buffer); the widths are this generator's (README section of the unit).  The
    default is a small simulation config (64-word program, 4 requests x 16 virtual rows); the
    ``paper`` preset has Table 5's sizes: 32,768 program words of 24 bits (96 KB) and 48
    requests x 1,024 virtual rows of 16-bit Va2Pa entries (96 KB).
    """

    UNIT = "lolpim_dispatcher"
    cmd_depth: int = _param(64, "command buffer size in DPA words (the longest program)", lo=2,
                            hi=1 << 16)
    requests: int = _param(4, "request ids the Va2Pa table maps", lo=1, hi=1 << 10)
    vrows: int = _param(16, "virtual rows per request in the Va2Pa table", lo=1, hi=1 << 16,
                        check=_disp_pow2)
    row_bits: int = _param(8, "width of a DRAM row address (the row operand)", lo=2, hi=20)
    col_bits: int = _param(6, "width of a column address (the col operand)", lo=1, hi=16)
    t_bits: int = _param(10, "width of the token index T_cur", lo=1, hi=24)
    max_lb: int = _param(15, "largest Loop-Bound a Dyn-Loop may take (more is an error)", lo=1,
                         hi=1 << 16)
    max_layers: int = _param(4, "largest number of layers of a run", lo=1, hi=1 << 10)

    def validate(self):
        if self.vrows > 1 << self.row_bits:
            raise _ConfigError(self.UNIT, "vrows", self.vrows,
                               f"at most 2**row_bits = {1 << self.row_bits}")
        if self.loop_arg_bits > self.row_bits + self.col_bits:
            raise _ConfigError(self.UNIT, "cmd_depth", self.cmd_depth,
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
DISPATCHER_PRESETS = {"paper": {"cmd_depth": 32768, "requests": 48, "vrows": 1024,
                                "row_bits": 15, "col_bits": 6, "t_bits": 18, "max_lb": 1024,
                                "max_layers": 80}}

# ==== end of lolpim_dispatcher ===================================================================


# ==== lolpim_pingpong (I/O-aware ping-pong buffering) ============================================

_PINGPONG_ALL: list = []

# ==== end of lolpim_pingpong =====================================================================

__all__ = _DISPATCHER_ALL + _PINGPONG_ALL
