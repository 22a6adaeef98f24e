"""On-chip buffers and where an FPGA flow puts them: block RAM or LUT-RAM.

Both FPGA targets build block RAM from 18-Kbit blocks: a RAMB18E2 (half a BRAM36) on
UltraScale+, a DP16KD / PDPW16KD EBR on ECP5.  A simple-dual-port block takes one of six
shapes (words x bits): 16K x 1, 8K x 2, 4K x 4, 2K x 9, 1K x 18 or 512 x 36.  A buffer of
``depth`` words of ``width`` bits occupies, in its best shape,
``ceil(width / w) * ceil(depth / d)`` blocks.

**The rule.**  A buffer goes to block RAM when its bits fill at least half (:data:`MIN_FILL`) of
the 16 Kbit of data (parity aside) of the blocks it would occupy; so it holds at least 8 Kbit, and
a shallow, wide buffer (a few words of hundreds of bits, which would leave most of each block's
words empty) stays in LUT-RAM.
:func:`buffer` writes the decision into the Verilog as the memory's ``ram_style``
(``"block"`` or ``"distributed"``), which Yosys's ``memory_libmap`` obeys on both targets, so the
choice is ours, not the mapper's cost model's.  A block-RAM read is registered: a buffer that
the rule sends to block RAM refuses a combinational read port.  A buffer built for one
(``comb_read``: an accumulator bank, read, forwarded and registered in one cycle in front of
its adders) stays in LUT-RAM whatever its size.

UltraScale+ URAM (4K x 72, 288 Kbit) is left to the vendor flow: ``ram_style = "block"`` keeps
Yosys to BRAM, and a buffer would need to fill half a URAM (144 Kbit in one bank) to earn one.
"""
from __future__ import annotations

from pimforge.hw.core.activity import Memory

__all__ = ["BLOCK_BITS", "BLOCK_SHAPES", "MIN_FILL", "Buffer", "blocks_needed", "block_fill",
           "is_block_ram", "buffer"]

BLOCK_BITS = 16 * 1024   # data bits of an 18-Kbit block (2 of its 18 Kbit are parity)
# (words, bits) of an 18-Kbit block in simple dual port (both targets)
BLOCK_SHAPES = ((16384, 1), (8192, 2), (4096, 4), (2048, 9), (1024, 18), (512, 36))
MIN_FILL = 0.5


def blocks_needed(width: int, depth: int) -> int:
    """18-Kbit blocks a ``depth`` x ``width`` buffer occupies in its best block shape."""
    return min(-(-width // w) * -(-depth // d) for d, w in BLOCK_SHAPES)


def block_fill(width: int, depth: int) -> float:
    """The fraction of those blocks' data bits the buffer holds."""
    return width * depth / (blocks_needed(width, depth) * BLOCK_BITS)


def is_block_ram(width: int, depth: int) -> bool:
    """The rule of the module docstring: block RAM when the buffer fills at least
    :data:`MIN_FILL` of its blocks."""
    return block_fill(width, depth) >= MIN_FILL


class Buffer(Memory):
    """A :class:`~amaranth.lib.memory.Memory` whose ``ram_style`` follows the block-RAM rule.

    Members
    -------
    block_ram : bool
        The rule's decision (``ram_style`` is ``"block"``, else ``"distributed"``).
    """

    def __init__(self, *, width: int, depth: int, comb_read: bool = False, src_loc_at: int = 0):
        self.block_ram = not comb_read and is_block_ram(width, depth)
        style = "block" if self.block_ram else "distributed"
        super().__init__(shape=width, depth=depth, init=[], attrs={"ram_style": style},
                         src_loc_at=1 + src_loc_at)

    def read_port(self, *, domain="sync", transparent_for=(), src_loc_at=0):
        """Amaranth's ``Memory.read_port``; a block-RAM buffer refuses ``domain="comb"``
        (a combinational read would keep it in LUT-RAM)."""
        if self.block_ram and domain == "comb":
            raise ValueError(f"a block-RAM buffer ({self.depth} x {self.shape} bits) reads "
                             f"synchronously; a combinational read port would keep it in LUT-RAM")
        return super().read_port(domain=domain, transparent_for=transparent_for,
                                 src_loc_at=1 + src_loc_at)


def buffer(m, name: str, width: int, depth: int, comb_read: bool = False) -> Buffer:
    """A :class:`Buffer` of ``depth`` words of ``width`` bits, added to ``m`` as ``name``; with
    ``comb_read`` it is read combinationally, so it stays in LUT-RAM."""
    mem = Buffer(width=width, depth=depth, comb_read=comb_read, src_loc_at=1)
    m.submodules[name] = mem
    return mem
