"""The one float-format table of pimforge.

``FloatFormat(exp_bits, frac_bits)``: ``frac_bits`` counts the *stored* fraction bits and does
**not** include the hidden bit (fpnew's convention).  The significand precision is therefore
``frac_bits + 1``.  Presets ``fp16``, ``bf16`` and ``fp32``; any other width is written ``eXmY``
(for example ``e4m3``).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["FloatFormat", "FP16", "BF16", "FP32", "FORMATS", "parse_format"]


@dataclass(frozen=True)
class FloatFormat:
    """An IEEE-754-style binary interchange format.

    Parameters
    ----------
    exp_bits : int
        Width of the biased exponent field (2..15).
    frac_bits : int
        Width of the stored fraction field, hidden bit excluded (1..52).
    """

    exp_bits: int
    frac_bits: int

    def __post_init__(self):
        if not (isinstance(self.exp_bits, int) and 2 <= self.exp_bits <= 15):
            raise ValueError(f"exp_bits must be an integer in 2..15, not {self.exp_bits!r}")
        if not (isinstance(self.frac_bits, int) and 1 <= self.frac_bits <= 52):
            raise ValueError(f"frac_bits must be an integer in 1..52, not {self.frac_bits!r}")

    @property
    def width(self) -> int:
        return 1 + self.exp_bits + self.frac_bits

    @property
    def precision(self) -> int:
        """Significand bits including the hidden bit."""
        return self.frac_bits + 1

    @property
    def bias(self) -> int:
        return (1 << (self.exp_bits - 1)) - 1

    @property
    def emax(self) -> int:
        return self.bias

    @property
    def emin(self) -> int:
        return 1 - self.bias

    @property
    def exp_all_ones(self) -> int:
        return (1 << self.exp_bits) - 1

    @property
    def canonical_nan(self) -> int:
        """Positive quiet NaN with only the top fraction bit set (e.g. 0x7E00 for fp16)."""
        return (self.exp_all_ones << self.frac_bits) | (1 << (self.frac_bits - 1))

    @property
    def inf(self) -> int:
        return self.exp_all_ones << self.frac_bits

    @property
    def sign_bit(self) -> int:
        return 1 << (self.width - 1)

    @property
    def max_finite(self) -> int:
        return ((self.exp_all_ones - 1) << self.frac_bits) | ((1 << self.frac_bits) - 1)

    @property
    def min_normal(self) -> int:
        return 1 << self.frac_bits

    @property
    def one(self) -> int:
        return self.bias << self.frac_bits

    @property
    def name(self) -> str:
        for n, f in FORMATS.items():
            if f == self:
                return n
        return f"e{self.exp_bits}m{self.frac_bits}"

    def __str__(self) -> str:
        return self.name

    # -- host-side helpers (plain Python, used by benches and reports) --------------------
    def to_float(self, bits: int) -> float:
        """Exact value of a bit pattern as a Python float (fits for widths up to fp64's range)."""
        bits = int(bits)
        s = -1.0 if bits >> (self.width - 1) & 1 else 1.0
        e = (bits >> self.frac_bits) & self.exp_all_ones
        f = bits & ((1 << self.frac_bits) - 1)
        if e == self.exp_all_ones:
            return float("nan") if f else s * float("inf")
        if e == 0:
            return s * f * 2.0 ** (self.emin - self.frac_bits)
        return s * (f | (1 << self.frac_bits)) * 2.0 ** (e - self.bias - self.frac_bits)

    def corner_values(self) -> list[int]:
        """The corner set: ±0, ±smallest and ±largest subnormal, ±smallest normal, ±1,
        ±largest normal, ±Inf, and NaN (the canonical quiet NaN)."""
        mags = [0, 1, self.min_normal - 1, self.min_normal, self.one, self.max_finite, self.inf]
        out = []
        for m in mags:
            out += [m, m | self.sign_bit]
        return out + [self.canonical_nan]


FP16 = FloatFormat(5, 10)
BF16 = FloatFormat(8, 7)
FP32 = FloatFormat(8, 23)
FORMATS = {"fp16": FP16, "bf16": BF16, "fp32": FP32}

_CUSTOM = re.compile(r"^e(\d+)m(\d+)$")


def parse_format(text) -> FloatFormat:
    """Parse ``fp16``/``bf16``/``fp32`` or ``eXmY``; raise ValueError naming what is allowed."""
    if isinstance(text, FloatFormat):
        return text
    if isinstance(text, str):
        t = text.strip().lower()
        if t in FORMATS:
            return FORMATS[t]
        mt = _CUSTOM.match(t)
        if mt:
            return FloatFormat(int(mt.group(1)), int(mt.group(2)))
    raise ValueError(f"unknown float format {text!r}; allowed: fp16, bf16, fp32, or eXmY "
                     f"(X exponent bits 2..15, Y fraction bits 1..52)")
