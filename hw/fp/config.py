"""Config dataclasses shared by the float units."""
from __future__ import annotations

from dataclasses import dataclass

from pimforge.base.config import UnitConfig, param
from pimforge.base.formats import FP16, FloatFormat

__all__ = ["FpConfig", "FpConvertConfig", "FpFuncConfig", "FORMAT_PRESETS", "FUNC_PRESETS"]

# Presets shared by the one-format units: the format alone, every other field at its default.
FORMAT_PRESETS = {"fp16": {"fmt": "fp16"}, "bf16": {"fmt": "bf16"}, "fp32": {"fmt": "fp32"}}
# The special-function units (exp, log, reciprocal) come in fp16 and fp32.
FUNC_PRESETS = {"fp16": {"fmt": "fp16"}, "fp32": {"fmt": "fp32"}}


@dataclass(frozen=True)
class FpConfig(UnitConfig):
    """Config of a float operation on one format (add/sub, mul, fma, compare)."""

    UNIT = "fp"
    fmt: FloatFormat = param(FP16, "float format of operands and result", kind="format")
    pipeline_depth: int = param(2, "register stages between input and output (latency in cycles)",
                                lo=0, hi=16)
    ftz: bool = param(False, "flush subnormal inputs and outputs to signed zero")


@dataclass(frozen=True)
class FpConvertConfig(UnitConfig):
    """Config of a float-to-float conversion."""

    UNIT = "fp_convert"
    src: FloatFormat = param(FP16, "input float format", kind="format")
    dst: FloatFormat = param(FloatFormat(8, 23), "output float format", kind="format")
    pipeline_depth: int = param(1, "register stages between input and output (latency in cycles)",
                                lo=0, hi=16)
    ftz: bool = param(False, "flush subnormal inputs and outputs to signed zero")


@dataclass(frozen=True)
class FpFuncConfig(UnitConfig):
    """Config of a special-function unit (exp, log, reciprocal)."""

    UNIT = "fp_func"
    fmt: FloatFormat = param(FP16, "float format of input and result (fp16 or fp32)", kind="format",
                             check=lambda v, c: None if v.name in ("fp16", "fp32") else "fp16, fp32")
    pipeline_depth: int = param(3, "register stages between input and output (latency in cycles)",
                                lo=0, hi=24)
    ftz: bool = param(False, "flush subnormal inputs and outputs to signed zero")
