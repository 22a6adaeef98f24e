"""Configs of the PAPI units: ``papi_scheduler`` (the arithmetic-intensity scheduler, PAPI §5.2)
and ``papi_pu`` (a bank-level PIM processing unit of FC-PIM / Attn-PIM, §6).
"""
from __future__ import annotations

from dataclasses import dataclass

from pimforge.base.config import UnitConfig, param
from pimforge.base.errors import ConfigError

# ==== papi_scheduler =============================================================================

_SCHEDULER_ALL: list = ["SchedulerConfig", "SCHEDULER_PRESETS", "PLACEMENTS", "HOST_KINDS"]

# FC placement bit of a decision (§5.2.1: RLP x TLP > alpha -> compute-bound -> the PUs, here
# "gpu"; otherwise memory-bound -> FC-PIM).
PLACEMENTS = {"pim": 0, "gpu": 1}
# ``kind`` of a host write on ``i_host`` (§5.2.2: the host CPU writes the registers).
HOST_KINDS = {"start": 0, "tlp": 1, "alpha": 2, "eos": 3}


@dataclass(frozen=True)
class SchedulerConfig(UnitConfig):
    """``papi_scheduler``: PAPI's runtime FC scheduler (§5.2, Fig. 5d).

    The paper gives no widths; these are the generator's.  ``max_batch`` and ``max_tlp`` set the
    widths of RLP and TLP (any value those fields hold works; RLP x TLP and alpha are
    ``rlp_bits + tlp_bits`` wide).  The default is a small simulation config (formal, smoke
    synthesis, tests); ``paper`` is PAPI's range (batches 4-128, speculation length 1-8, a
    16-bit token id for OPT/GPT vocabularies of about 50K).
    """

    UNIT = "papi_scheduler"
    tokens_per_beat: int = param(4, "output token ids per beat of the token stream i",
                                 choices=(1, 2, 4, 8, 16, 32))
    token_bits: int = param(8, "width of a token id (and of the <eos> id register)", lo=1, hi=32)
    max_batch: int = param(15, "largest batch size (initial RLP); sets rlp_bits", lo=1, hi=65535)
    max_tlp: int = param(4, "largest speculation length (TLP); sets tlp_bits", lo=1, hi=255)
    iter_bits: int = param(8, "width of the iteration counter of a decision (wraps)", lo=1, hi=32)
    tree_levels: int = param(2, "adder-tree levels of the <eos> popcount per pipeline stage",
                             lo=1, hi=5)

    @property
    def rlp_bits(self) -> int:
        """Width of RLP, of a batch size and of the freed count."""
        return self.max_batch.bit_length()

    @property
    def tlp_bits(self) -> int:
        return self.max_tlp.bit_length()

    @property
    def ai_bits(self) -> int:
        """Width of RLP x TLP (the intensity estimate, eq. 2) and of alpha."""
        return self.rlp_bits + self.tlp_bits

    @property
    def value_bits(self) -> int:
        """Width of a host write's ``value`` (the widest register)."""
        return max(self.rlp_bits, self.tlp_bits, self.ai_bits, self.token_bits)

    @property
    def tree_depth(self) -> int:
        """Adder-tree levels of the popcount over one beat (log2 tokens_per_beat)."""
        return (self.tokens_per_beat - 1).bit_length()

    @property
    def tree_stages(self) -> int:
        """Pipeline registers inside the popcount tree (``tree_levels`` levels each)."""
        return -(-self.tree_depth // self.tree_levels)


# PAPI §3.2/§7: batch 4-128, speculation length 1-8; OPT's vocabulary (50,272) needs 16 bits.
SCHEDULER_PRESETS = {"paper": {"tokens_per_beat": 16, "token_bits": 16, "max_batch": 128,
                               "max_tlp": 8, "iter_bits": 16},
                     "small": {}}

# ==== end of papi_scheduler ======================================================================


# ==== papi_pu ====================================================================================

_PU_ALL: list = []

# ==== end of papi_pu =============================================================================

__all__ = _SCHEDULER_ALL + _PU_ALL
