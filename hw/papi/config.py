"""Configs of the PAPI units: ``papi_scheduler`` (the arithmetic-intensity scheduler, PAPI §5.2)
and ``papi_pu`` (a bank-level PIM processing unit of FC-PIM / Attn-PIM, §6).
"""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from pimforge.base.config import UnitConfig, at_most, param
from pimforge.base.errors import ConfigError
from pimforge.base.formats import FP16

__all__ = ["SchedulerConfig", "SCHEDULER_PRESETS", "PLACEMENTS", "HOST_KINDS", "PapiPuConfig",
           "PU_PRESETS", "PU_ACC_FORMATS", "pu_preset", "PRESET_OP_DEPTH", "PAPER_PU"]

# ---- papi_scheduler -----------------------------------------------------------------------------

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
                               "max_tlp": 8, "iter_bits": 16}}

# ---- papi_pu ------------------------------------------------------------------------------------
# The PU's FPU: the paper does not describe it; AttAcc's (PAPI ref. [23]) is the reference, as
# the area PAPI quotes for it (0.1025 mm2) is AttAcc's: ``lanes`` fp16 multipliers, a pairwise
# adder tree and an accumulator.  A weight beat is one bank column read (HBM3: 32 B = 16 fp16).

PU_ACC_FORMATS = ("fp16", "fp32")


def _pu_acc_check(v, cfg):
    return None if v.name in PU_ACC_FORMATS else ", ".join(PU_ACC_FORMATS)


@dataclass(frozen=True)
class PapiPuConfig(UnitConfig):
    """``papi_pu``: one bank-group slice of FC-PIM / Attn-PIM (PAPI §6): ``banks`` DRAM banks
    sharing ``fpus`` FPUs (4P1B: 4 and 1; 1P2B: 1 and 2; AttAcc's 1P1B: 1 and 1), so
    ``pus_per_bank = fpus / banks`` is exact (1/2 for 1P2B).  The default is a small 4P1B
    (4 lanes) for simulation, formal and smoke synthesis; the presets are the paper's sizes."""

    UNIT = "papi_pu"
    fpus: int = param(4, "FPUs of the slice (PAPI §6.1 FC-PIM 4P1B: 4; §6.2 Attn-PIM 1P2B: 1)",
                      choices=(1, 2, 4, 8))
    banks: int = param(1, "DRAM banks sharing the FPUs (1P2B: 2)", choices=(1, 2))
    lanes: int = param(4, "fp16 multipliers per FPU = fp16 values per bank column read "
                       "(AttAcc / HBM3: 16)", choices=(2, 4, 8, 16, 32))
    max_reuse: int = param(8, "input vectors (batch x speculation length) that share each "
                           "weight column read, at most", lo=1, hi=1024)
    max_beats: int = param(4, "column reads (beats) per matrix row, at most: cols / lanes",
                           lo=1, hi=1024)
    wbuf: int = param(8, "column buffer: weight beats the PU holds ahead of its FPUs, so a "
                      "bank can cross its PRE/ACT gap while the FPUs compute", choices=(2, 4, 8, 16, 32, 64))
    acc: object = param(FP16, "format of products, sums and partial sums (fp16 as AttAcc's "
                        "FPU, or fp32); weights, inputs and outputs are fp16", kind="format",
                        check=_pu_acc_check)
    partials: int = param(4, "running partial sums per (row, vector): beat k adds into partial "
                          "k mod partials, revisited every partials x banks x groups >= "
                          "partials cycles, so op_depth <= partials; the row's finish is a "
                          "pairwise tree of them", choices=(4, 8, 16))
    op_depth: int = param(2, "pipeline registers inside each float operation (at most "
                          "partials)", lo=1, hi=16,
                          check=at_most("partials", "a partial sum is revisited every partials "
                                        "cycles; raise partials to 8 or 16 for more"))

    def validate(self):
        if self.max_groups * self.max_beats > 1 << 16:
            raise ConfigError(self.UNIT, "max_beats", self.max_beats,
                              f"<= {(1 << 16) // self.max_groups} (each FPU's input buffer "
                              f"holds at most 65536 beats)")

    @property
    def pus_per_bank(self) -> Fraction:
        """FPUs per bank, exact: 4, 1 or 1/2."""
        return Fraction(self.fpus, self.banks)

    @property
    def layout(self) -> str:
        """The paper's name, ``xPyB``: x FPUs per y banks."""
        return f"{self.fpus}P{self.banks}B"

    def groups(self, reuse: int) -> int:
        """G: cycles a weight beat is held for ``reuse`` input vectors, ceil(reuse / fpus)."""
        return -(-reuse // self.fpus)

    @property
    def max_groups(self) -> int:
        """G at ``max_reuse``."""
        return self.groups(self.max_reuse)


# The presets' op_depth: the shallowest at which the unit's ASAP7 estimate meets PAPI's 666 MHz
# FPU clock (``papi_pu``'s declared clocks; at most 39 gate levels a stage).  At 4 every preset's
# deepest stage is an fp16 multiplier's and fits; at 2 and 3 it does not
# (``pimforge synth papi_pu --preset fc_pim --target generic`` prints the clock check).
PRESET_OP_DEPTH = 4
PAPER_PU = {"lanes": 16, "max_reuse": 64, "max_beats": 64, "wbuf": 32, "op_depth": PRESET_OP_DEPTH}
PU_PRESETS = {
    "fc_pim": dict(PAPER_PU, fpus=4, banks=1),      # PAPI §6.1: FC-PIM, 4 FPUs per bank
    "attn_pim": dict(PAPER_PU, fpus=1, banks=2),    # PAPI §6.2: Attn-PIM, 1 FPU per 2 banks
    "attacc": dict(PAPER_PU, fpus=1, banks=1),      # AttAcc: 1 FPU per bank
    "fpu": {"lanes": 16, "fpus": 1, "banks": 1, "max_reuse": 1, "max_beats": 4,
            "op_depth": PRESET_OP_DEPTH},
    "small_1p2b": {"fpus": 1, "banks": 2, "op_depth": PRESET_OP_DEPTH},
    "small_1p1b": {"fpus": 1, "banks": 1, "op_depth": PRESET_OP_DEPTH},
}
"""Presets of ``papi_pu``: the paper's slices at 16 lanes; ``fpu`` is one 16-lane FPU with
minimal buffers (its area stands for the paper's A_FPU); ``small_*`` the default's small size.
All at :data:`PRESET_OP_DEPTH`, the depth that backs their 666 MHz clock."""


def pu_preset(name: str) -> PapiPuConfig:
    """The config of a :data:`PU_PRESETS` entry."""
    return PapiPuConfig(**PU_PRESETS[name])

