"""Configs of the PAM units (PAM §5.2, Table 1, §7.1).

Numerics shared by every PAM unit: K, V and Q are stored as fp16; dot products, scores, the
maxima m and the log-sum-exp are fp32 (the score format, so that exp(s - m) keeps its accuracy
for large scores); the exponentials, the sums l and the O accumulator use the accumulator format
``acc`` (fp16 as in the paper, or fp32).  Every float operation is an IEEE round-to-nearest-even operation
of the foundation float library, so the golden model in :mod:`pimforge.sim.golden.pam.common` reproduces
the RTL bit for bit.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from pimforge.base.config import UnitConfig, param
from pimforge.base.errors import ConfigError
from pimforge.base.formats import FP16, FP32
from pimforge.hw.core.unit import PresetClock

__all__ = ["OnlineSoftmaxConfig", "PamPuConfig", "PamRuConfig", "PamDeviceConfig",
           "PamSystemConfig", "PU_TIER_PRESETS", "TIER_CLOCK_MHZ", "PAPER_TIER_CLOCK_MHZ",
           "HBM_FP32_CLOCK_MHZ", "TIER_CLOCKS", "TIERS", "ACC_FORMATS",
           "acc_check", "pow2_check"]

TIERS = ("hbm", "ddr", "ssd")


# The accumulator formats of p, l and O (PAM §5.2.1 accumulates in fp16; fp32 is the wide option).
ACC_FORMATS = {"fp16": FP16, "fp32": FP32}


def acc_check(v, cfg):
    return None if v.name in ACC_FORMATS else ", ".join(ACC_FORMATS)


def pow2_check(v, cfg):
    return None if v > 0 and v & (v - 1) == 0 else "a power of two"


def _acc_field():
    return param(FP16, "accumulator format of p, l and O (fp16 as in PAM, or fp32); "
                 "scores and m are always fp32",
                 kind="format", check=acc_check)


def _op_depth_field(limit: str = "The O and l updates revisit a beat every head_dim/width "
                                   "cycles, so op_depth < head_dim/width"):
    # up to the float operators' 16 registers (exp/log/recip take one more, up to their 24)
    return param(2, "pipeline registers inside each float operation (mul, add, fma, compare, "
                 f"convert); exp/log/recip use one more.  {limit}", lo=1, hi=16)


def _revisit(cfg, field: str, beats: int, what: str):
    """A beat's fma (op_depth cycles) must be written back before the next token or partial
    reads the same beat, ``beats`` cycles later: op_depth <= beats - 1."""
    if cfg.op_depth > beats - 1:
        raise ConfigError(cfg.UNIT, "op_depth", cfg.op_depth,
                          f"at most head_dim/{field} - 1 = {beats - 1} (each {what} beat's fma "
                          f"result must be written back before the next {what} reads it, "
                          f"{beats} cycles later)")


def _four_beats(cfg, field: str, what: str):
    """A row or partial needs four or more beats of ``field`` elements (the O update's pace)."""
    width = getattr(cfg, field)
    if cfg.head_dim // width < 4:
        raise ConfigError(cfg.UNIT, field, width,
                          f"at most head_dim/4 = {cfg.head_dim // 4} (a {what} needs four or "
                          f"more beats so that the O update keeps pace)")


def _head_dim_field():
    return param(128, "head dimension d", choices=(64, 128, 256))


@dataclass(frozen=True)
class OnlineSoftmaxConfig(UnitConfig):
    """``online_softmax``: merges (m_in, l_in) pairs into a running (m, l) (PAM eqs. 3-5)."""

    UNIT = "online_softmax"
    acc: object = _acc_field()
    # no O vector here, so no head_dim/width revisit limit
    op_depth: int = _op_depth_field("One input every op_depth + 1 cycles")


@dataclass(frozen=True)
class PamPuConfig(UnitConfig):
    """``pam_pu``: the local-attention processing unit (PAM Alg. 1 Local_Attention, §5.2.1)."""

    UNIT = "pam_pu"
    lanes: int = param(16, "vector width: fp16 elements per K/V beat (16 = a 256-bit HBM burst)",
                       lo=2, hi=64, check=pow2_check)
    head_dim: int = _head_dim_field()
    acc: object = _acc_field()
    tile_tokens: int = param(16, "tokens per tile of PAM Alg. 1 (K rows of a tile, then its V "
                             "rows); two accumulation levels keep fp16 accurate", lo=1, hi=64)
    score_scale: float = param(0.0, "score scale applied to Q.K; 0 means 1/sqrt(head_dim)",
                               lo=0.0, hi=65504.0)
    op_depth: int = _op_depth_field()

    def validate(self):
        _four_beats(self, "lanes", "row")
        _revisit(self, "lanes", self.beats, "row")

    @property
    def beats(self) -> int:
        """Beats per K (or V) row: ceil(d / lanes)."""
        return self.head_dim // self.lanes

    @property
    def scale(self) -> float:
        return self.score_scale if self.score_scale > 0 else 1.0 / math.sqrt(self.head_dim)

    @property
    def storage_bytes(self) -> int:
        """Bytes of Q (fp16) and O (acc) the PU holds."""
        return self.head_dim * 2 + self.head_dim * self.acc.width // 8


# PAM §5.2.1 and Table 1 / §7.1: the PU vector width (fp16 lanes) of the HBM3, DDR4 and SSD
# tiers, and the PU clocks the paper states for them.
PAPER_TIER_CLOCK_MHZ = {"hbm": 666.0, "ddr": 500.0, "ssd": 1000.0}
# The clocks the tier presets' netlists support, which the system model's devices
# (``pimforge.software.devices.PAM_TIERS``) run at and ``pimforge synth`` checks each preset
# against (``TIER_CLOCKS``): the ASAP7 estimate of the preset's generic netlist
# (36 ps a gate level plus 86 ps of flip-flop, ``synth/timing.py``), the lower of the
# hierarchical and the ``--flat`` figure, rounded down to 10 MHz
# (``pimforge synth pam_pu --preset hbm --target generic [--flat]`` prints the estimate, and
# tests/test_synth_timing.py holds each clock within 10% below it), or the paper's clock where
# the netlist meets it.  At op_depth 3 the 16-lane tiers' deepest stage is inside an fp16
# exponential (38 generic levels, hierarchical and flat), which meets the HBM tier's 666 MHz
# but not the SSD tier's 1 GHz; the 4-lane DDR tier meets its 500 MHz at op_depth 2.  With the
# fp32 accumulator (``hbm_fp32``, op_depth 2) the flat netlist bounds it: ABC maps it with the
# fallback script (``synth/flows.py``), which ripples its carry trees.  The clocks change
# neither the RTL nor the cycle models (docs/guide/synthesis.md, "The clock check").
TIER_CLOCK_MHZ = {"hbm": 666.0, "ddr": 500.0, "ssd": 680.0}
HBM_FP32_CLOCK_MHZ = 140.0
TIER_CLOCKS = {t: PresetClock(TIER_CLOCK_MHZ[t], "the clock this preset's netlist supports (ASAP7 "
                              "estimate, hw/pam/config.py)", paper_mhz=PAPER_TIER_CLOCK_MHZ[t],
                              paper_source=f"PAM Table 1 / §7.1: the {t} tier's PU clock")
               for t in TIERS}
# op_depth 3 is the shallowest at which the 16-lane tiers' deepest stage, the fp16
# exponential's, fits the HBM tier's 666 MHz; each step deeper costs registers in every lane.
PU_TIER_PRESETS = {
    "hbm": {"lanes": 16, "op_depth": 3},
    "ddr": {"lanes": 4},
    "ssd": {"lanes": 16, "op_depth": 3},
}


@dataclass(frozen=True)
class PamRuConfig(UnitConfig):
    """``pam_ru``: the reduction unit (PAM Alg. 1 Reduction, §5.2.2)."""

    UNIT = "pam_ru"
    vector_width: int = param(16, "elements of O per partial beat (the vector-scalar multiplier "
                              "width)", lo=2, hi=64, check=pow2_check)
    head_dim: int = _head_dim_field()
    acc: object = _acc_field()
    scratch_bytes: int = param(512, "scratch buffer holding the O accumulator, in bytes",
                               lo=16, hi=65536)
    final: bool = param(False, "final-stage mode: also output O/l normalized to fp16 and the "
                        "log-sum-exp m + log(l) (PAM Alg. 1 line 21)")
    op_depth: int = _op_depth_field()

    def validate(self):
        _four_beats(self, "vector_width", "partial")
        _revisit(self, "vector_width", self.beats, "partial")
        need = self.head_dim * self.acc.width // 8
        if self.scratch_bytes < need:
            raise ConfigError(self.UNIT, "scratch_bytes", self.scratch_bytes,
                              f">= {need} (O accumulator: head_dim {self.head_dim} x "
                              f"{self.acc.name})")

    @property
    def beats(self) -> int:
        return self.head_dim // self.vector_width


@dataclass(frozen=True)
class PamDeviceConfig(UnitConfig):
    """``pam_device``: ``pus`` PUs of one tier and the intra-device reduction (one RU)."""

    UNIT = "pam_device"
    pus: int = param(4, "processing units in the device", lo=1, hi=16)
    lanes: int = param(16, "PU vector width (fp16 elements per beat)", lo=2, hi=64,
                       check=pow2_check)
    ru_vector_width: int = param(16, "RU vector width; a multiple of lanes", lo=2, hi=64,
                                 check=pow2_check)
    head_dim: int = _head_dim_field()
    acc: object = _acc_field()
    tile_tokens: int = param(16, "tokens per tile of PAM Alg. 1 (K rows of a tile, then its V "
                             "rows); two accumulation levels keep fp16 accurate", lo=1, hi=64)
    score_scale: float = param(0.0, "score scale; 0 means 1/sqrt(head_dim)", lo=0.0, hi=65504.0)
    op_depth: int = _op_depth_field()

    def validate(self):
        if self.ru_vector_width % self.lanes:
            raise ConfigError(self.UNIT, "ru_vector_width", self.ru_vector_width,
                              f"a multiple of lanes ({self.lanes})")
        if self.head_dim // self.ru_vector_width < 4:
            raise ConfigError(self.UNIT, "ru_vector_width", self.ru_vector_width,
                              f"at most head_dim/4 = {self.head_dim // 4}")
        self.pu_config()    # the PU's limits (lanes, op_depth)
        _revisit(self, "ru_vector_width", self.head_dim // self.ru_vector_width, "partial")

    def pu_config(self) -> PamPuConfig:
        return PamPuConfig(lanes=self.lanes, head_dim=self.head_dim, acc=self.acc,
                           tile_tokens=self.tile_tokens, score_scale=self.score_scale,
                           op_depth=self.op_depth)

    def ru_config(self, final: bool = False) -> PamRuConfig:
        return PamRuConfig(vector_width=self.ru_vector_width, head_dim=self.head_dim,
                           acc=self.acc, final=final,
                           scratch_bytes=max(512, self.head_dim * self.acc.width // 8),
                           op_depth=self.op_depth)


@dataclass(frozen=True)
class PamSystemConfig(UnitConfig):
    """``pam_system``: HBM, DDR and SSD devices joined by an inter-device reduction in an HBM RU."""

    UNIT = "pam_system"
    hbm_pus: int = param(4, "PUs in the HBM-PIM device", lo=1, hi=16)
    ddr_pus: int = param(4, "PUs in the DDR-PIM device", lo=1, hi=16)
    ssd_pus: int = param(4, "PUs in the SSD-PIM device", lo=1, hi=16)
    hbm_lanes: int = param(16, "HBM PU vector width", lo=2, hi=64, check=pow2_check)
    ddr_lanes: int = param(4, "DDR PU vector width", lo=2, hi=64, check=pow2_check)
    ssd_lanes: int = param(16, "SSD PU vector width", lo=2, hi=64, check=pow2_check)
    ru_vector_width: int = param(16, "RU vector width in every tier; a multiple of each lanes",
                                 lo=2, hi=64, check=pow2_check)
    head_dim: int = _head_dim_field()
    acc: object = _acc_field()
    tile_tokens: int = param(16, "tokens per tile of PAM Alg. 1 (K rows of a tile, then its V "
                             "rows); two accumulation levels keep fp16 accurate", lo=1, hi=64)
    score_scale: float = param(0.0, "score scale; 0 means 1/sqrt(head_dim)", lo=0.0, hi=65504.0)
    op_depth: int = _op_depth_field()

    def validate(self):
        for t in TIERS:
            self.device_config(t)

    def pus(self, tier: str) -> int:
        return getattr(self, f"{tier}_pus")

    def device_config(self, tier: str) -> PamDeviceConfig:
        try:
            return PamDeviceConfig(pus=self.pus(tier), lanes=getattr(self, f"{tier}_lanes"),
                                   ru_vector_width=self.ru_vector_width, head_dim=self.head_dim,
                                   acc=self.acc, score_scale=self.score_scale,
                                   tile_tokens=self.tile_tokens, op_depth=self.op_depth)
        except ConfigError as e:
            field = {"lanes": f"{tier}_lanes", "pus": f"{tier}_pus"}.get(e.field, e.field)
            allowed = e.allowed.replace("of lanes", f"of {tier}_lanes")
            raise ConfigError(self.UNIT, field, e.value, allowed) from None
