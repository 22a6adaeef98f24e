"""Configs of the HILOS attention-kernel units (HILOS §4.4, Fig. 7, §5.4).

Numerics shared by every unit (the golden model is :mod:`pimforge.sim.golden.hilos.common`): Q, K, V,
the softmax output ``y`` and O are fp16; the GEMV accumulators, the exponentials and the sums are
fp32; the scores that travel between the units (and through the DRAM model) are in
``score_fmt``: fp32 by default, fp16 as in the paper (fp16 resolves a score of 300 to 1/4, and
``exp`` turns that into a 25% error on a weight: the heavy-tailed inputs then miss 1e-3).

Rates.  K and V arrive as beats of ``beat_elems`` (E) fp16 values, one beat per cycle.  Each GEMV
has ``E x d_group`` multiply-accumulate lanes, so it does one beat's worth of work per cycle:
``qk_gemv``'s lanes each keep ``block / E`` token accumulators and walk a transposed column in
``block / E`` cycles.  (``block`` MACs per query, one column element each per cycle, would finish
a tile ``block / E`` times faster than it arrives, capping their utilization at ``E / block``.)
Scores appear at ``d_group * E / head_dim`` per cycle on average, so the softmax passes work on
``score_lanes = next_pow2(ceil(d_group * E / head_dim))`` elements per cycle: 2 for d_group 5,
the paper's exponential unroll factor of two (§5.4).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, fields

from pimforge.base.config import UnitConfig, param
from pimforge.base.errors import ConfigError
from pimforge.base.formats import FP16, FP32
from pimforge.hw.core.unit import PresetClock

__all__ = ["QkGemvConfig", "TwoPassSoftmaxConfig", "SvGemvConfig", "HilosAttentionConfig",
           "HILOS_PRESETS", "score_lanes", "SCORE_FMTS", "BLOCKS", "BEAT_ELEMS", "D_GROUPS",
           "HEAD_DIMS", "MASK_VALUE", "KERNEL_CLOCK_MHZ", "KERNEL_CLOCK"]

# What the kernel supports (the software flows check their inputs against these)
SCORE_FMTS = {"fp32": FP32, "fp16": FP16}   # formats of the scores between the units
BLOCKS = (32, 64, 128)                      # tokens per block
BEAT_ELEMS = (8, 16, 32)                    # fp16 elements per K/V beat
D_GROUPS = tuple(range(1, 9))               # query heads per KV head: 1..8
HEAD_DIMS = (64, 128)                       # head dimensions
MASK_VALUE = -1e4                           # the paper's score of a masked position


def _score_fmt_check(v, cfg):
    return None if v.name in SCORE_FMTS else ", ".join(sorted(SCORE_FMTS))


def _block():
    return param(128, "tokens per block: the K tile is block tokens x head_dim, the softmax "
                 "works on d_group x block scores (HILOS §4.4)", choices=BLOCKS)


def _beat():
    return param(32, "fp16 elements per K/V beat (32 = one 512-bit AXI beat)",
                 choices=BEAT_ELEMS)


def _d_group():
    return param(1, "query heads sharing one KV head (GQA; the paper uses 1, 4 and 5)",
                 lo=D_GROUPS[0], hi=D_GROUPS[-1])


def _head_dim():
    return param(128, "head dimension d", choices=HEAD_DIMS)


def _score_fmt():
    return param(FP32, "format of the scores between the units and in DRAM (fp32, or fp16 as "
                 "in the paper)", kind="format", check=_score_fmt_check)


def _scale():
    return param(0.0, "score scale applied to Q.K; 0 means 1/sqrt(head_dim)", lo=0.0,
                 hi=65504.0)


def _mask_value():
    return param(MASK_VALUE, "score given to a masked (padded) position in pass 1 (default: the "
                 "paper's value)", lo=-65504.0, hi=0.0)


def _op_depth():
    return param(2, "pipeline registers inside each float operation; exp and recip use one "
                 "more", lo=1, hi=16)


def score_lanes(d_group: int, beat_elems: int, head_dim: int) -> int:
    """Score elements per cycle of the softmax passes (see the module docstring)."""
    need = max(1, math.ceil(d_group * beat_elems / head_dim))
    return 1 << (need - 1).bit_length()


class _Common:
    """Derived sizes every HILOS config shares."""

    @property
    def row_beats(self) -> int:
        """Beats per K or V row: head_dim / beat_elems."""
        return self.head_dim // self.beat_elems

    @property
    def lanes(self) -> int:
        """Score elements per score beat (and exponential units per softmax pass)."""
        return score_lanes(self.d_group, self.beat_elems, self.head_dim)

    @property
    def block_beats(self) -> int:
        """Beats of one query's scores of one block: block / lanes."""
        return self.block // self.lanes

    @property
    def scale(self) -> float:
        return self.score_scale if self.score_scale > 0 else 1.0 / math.sqrt(self.head_dim)

    def _check_loops(self, qk: bool, sv: bool):
        # A lane's accumulator is updated again every block/E x partials (QK) or head_dim/E (SV)
        # cycles; the adder's result returns op_depth cycles after its operands (forwarded).
        q = getattr(self, "partials", 1)
        if qk and self.block // self.beat_elems * q < self.op_depth:
            need = -(-self.op_depth * self.beat_elems // q)
            raise ConfigError(self.UNIT, "block", self.block,
                              f">= op_depth x beat_elems / partials = {need} (each MAC lane "
                              f"revisits a token's partial sum every block/beat_elems x "
                              f"partials cycles, and the adder takes op_depth; or raise "
                              f"partials)")
        if sv and self.row_beats < self.op_depth:
            raise ConfigError(self.UNIT, "beat_elems", self.beat_elems,
                              f"<= head_dim/op_depth = {self.head_dim // self.op_depth} (each "
                              f"SV lane revisits an O accumulator every head_dim/beat_elems "
                              f"cycles, and the adder takes op_depth)")


@dataclass(frozen=True)
class _HilosConfig(_Common, UnitConfig):
    """The sizes every HILOS unit shares (its subclasses add their own fields)."""

    block: int = _block()
    beat_elems: int = _beat()
    d_group: int = _d_group()
    head_dim: int = _head_dim()


@dataclass(frozen=True)
class QkGemvConfig(_HilosConfig):
    """``qk_gemv``: Q.K^T with the online block transpose (HILOS Fig. 7d)."""

    UNIT = "qk_gemv"
    score_fmt: object = _score_fmt()
    score_scale: float = _scale()
    op_depth: int = _op_depth()
    partials: int = param(1, "running partial sums per MAC lane and token: dim i adds into "
                          "partial i mod partials, so a token's sum comes back every "
                          "block/beat_elems x partials cycles (room for a deeper op_depth); the "
                          "drain sums them in a pairwise tree", choices=(1, 2, 4, 8))

    def validate(self):
        self._check_loops(qk=True, sv=False)


@dataclass(frozen=True)
class TwoPassSoftmaxConfig(_HilosConfig):
    """``two_pass_softmax``: statistics aggregation and normalization (HILOS Alg. 1, Fig. 7b-c)."""

    UNIT = "two_pass_softmax"
    score_fmt: object = _score_fmt()
    mask_value: float = _mask_value()
    op_depth: int = _op_depth()


@dataclass(frozen=True)
class SvGemvConfig(_HilosConfig):
    """``sv_gemv``: O = sum_j y_j V_j with y_j broadcast (HILOS Fig. 7e)."""

    UNIT = "sv_gemv"
    op_depth: int = _op_depth()

    def validate(self):
        self._check_loops(qk=False, sv=True)


@dataclass(frozen=True)
class HilosAttentionConfig(_HilosConfig):
    """``hilos_attention``: the four units as a concurrent block pipeline (HILOS Fig. 7a)."""

    UNIT = "hilos_attention"
    score_fmt: object = _score_fmt()
    score_scale: float = _scale()
    mask_value: float = _mask_value()
    op_depth: int = _op_depth()

    def validate(self):
        self._check_loops(qk=True, sv=True)

    def _sub(self, cls):
        """The unit config of ``cls`` with this config's values of the fields they share (the
        others, such as ``qk_gemv``'s ``partials``, keep their defaults)."""
        mine = {f.name for f in fields(self)}
        return cls(**{f.name: getattr(self, f.name) for f in fields(cls) if f.name in mine})

    def qk_config(self) -> QkGemvConfig:
        return self._sub(QkGemvConfig)

    def softmax_config(self) -> TwoPassSoftmaxConfig:
        return self._sub(TwoPassSoftmaxConfig)

    def sv_config(self) -> SvGemvConfig:
        return self._sub(SvGemvConfig)


# HILOS §5.4 / Table 3: 128-token blocks, 512-bit AXI beats, d_group 1, 4 and 5.  (The clock
# does not enter the RTL or the cycle models: the SmartSSD's KU15P runs the kernel at
# KERNEL_CLOCK_MHZ, HILOS §6.2; the system model's SMARTSSD uses it.)
KERNEL_CLOCK_MHZ = 296.0
KERNEL_CLOCK = PresetClock(KERNEL_CLOCK_MHZ, "HILOS §6.2: the SmartSSD's kernel clock",
                          "FPGA (Kintex UltraScale+ KU15P)")
HILOS_PRESETS = {f"hilos_dgroup{g}": {"d_group": g} for g in (1, 4, 5)}
