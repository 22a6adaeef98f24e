"""``fp_cmp``: IEEE quiet comparison plus maximum/minimum of two floats.

The order of two non-NaN operands is decided on sign and magnitude bits alone (the magnitude bits
of an IEEE float sort like its absolute value).  One strict total order with ``-0 < +0`` serves
both outputs: the comparison flags treat the two zeros as equal, while ``maximum``/``minimum``
(IEEE 754-2019, NaN-propagating) use the order as is, so ``max(+0, -0) = +0``.  Any NaN operand
makes the pair unordered: ``less = equal = greater = 0``, ``unordered = 1``, and ``max``/``min`` give the
canonical quiet NaN.  With ``ftz`` a subnormal operand compares as a zero of its sign and is
returned flushed by ``max``/``min``.
"""
from __future__ import annotations

from amaranth.hdl import Cat, Const, Mux

from pimforge.hw.core.component import PipelinedUnit
from pimforge.hw.core.payload import flag, fp
from pimforge.hw.core.pipeline import levels, streaming_cycles
from pimforge.hw.core.unit import HwUnit
from pimforge.hw.fp import core
from pimforge.hw.fp.config import FpConfig

__all__ = ["FpCmp", "cmp_stages", "OUTPUT_FIELDS"]

# Payload field order of the output stream, least significant first.
OUTPUT_FIELDS = ("less", "equal", "greater", "unordered", "max", "min")


def cmp_stages(fmt, ftz):
    """The compare datapath as pipeline stages over a dict with keys ``a`` and ``b``."""
    mag_bits = fmt.width - 1

    half = mag_bits // 2

    # The magnitude compare in two halves, each half's less-than and equality first, so a
    # deep pipeline can register them before they combine: as one stage, the whole compare
    # was fp_cmp fp32's deepest ECP5 segment at depth 16.
    @levels(core.lv_cmp(mag_bits - half) + 1)
    def halves(m, v):
        a = core.unpack(m, fmt, v["a"], ftz, name="a")
        b = core.unpack(m, fmt, v["b"], ftz, name="b")
        # Effective magnitudes: a flushed subnormal reads as zero.  Without ftz, "zero" already
        # means an all-zero magnitude, so the raw bits are used: the identity mux put a zero
        # detector in front of the comparators, which the tools did not remove (ECP5: the merge
        # compare of pam_ru at op_depth 12, 38 logic levels, was its critical path).
        if ftz:
            mag_a = Mux(a["zero"], 0, v["a"][:mag_bits])
            mag_b = Mux(b["zero"], 0, v["b"][:mag_bits])
        else:
            mag_a, mag_b = v["a"][:mag_bits], v["b"][:mag_bits]
        ah, bh, al, bl = mag_a[half:], mag_b[half:], mag_a[:half], mag_b[:half]
        return {"lt_h": ah < bh, "gt_h": bh < ah, "eq_h": ah == bh, "lt_l": al < bl,
                "gt_l": bl < al, "eq_l": al == bl,
                "sa": a["sign"], "sb": b["sign"], "both_zero": a["zero"] & b["zero"],
                "unordered": a["nan"] | b["nan"],
                "a": Cat(mag_a, a["sign"]), "b": Cat(mag_b, b["sign"])}

    @levels(5)
    def order(m, v):
        a_lt = v["lt_h"] | (v["eq_h"] & v["lt_l"])     # mag_a < mag_b
        b_lt = v["gt_h"] | (v["eq_h"] & v["gt_l"])     # mag_b < mag_a
        sa, sb = v["sa"], v["sb"]
        # Strict order with -0 < +0: opposite signs decide by the sign alone; for equal signs
        # the larger magnitude is the larger value when positive and the smaller when negative.
        a_below = Mux(sa != sb, sa, Mux(sa, b_lt, a_lt))
        same = (sa == sb) & v["eq_h"] & v["eq_l"]
        both_zero, unordered = v["both_zero"], v["unordered"]
        eq = ~unordered & (same | both_zero)
        lt = ~unordered & ~both_zero & a_below
        gt = ~unordered & ~eq & ~lt
        return {"less": lt, "equal": eq, "greater": gt, "unordered": unordered, "a_below": a_below,
                "a": v["a"], "b": v["b"]}

    @levels(core.LV_MUX + 1)
    def select(m, v):
        nan = Const(fmt.canonical_nan, fmt.width)
        hi = Mux(v["a_below"], v["b"], v["a"])
        lo = Mux(v["a_below"], v["a"], v["b"])
        return {**{k: v[k] for k in ("less", "equal", "greater", "unordered")},
                "max": Mux(v["unordered"], nan, hi), "min": Mux(v["unordered"], nan, lo)}

    return [halves, order, select]


class FpCmp(PipelinedUnit):
    """Pipelined float comparator with IEEE maximum/minimum (``fp_cmp``).

    Input stream ``i`` carries fields ``a`` and ``b``; output stream ``o`` carries the flags
    ``less``, ``equal``, ``greater``, ``unordered`` (of ``a`` against ``b``, quiet predicates) and the
    floats ``max`` and ``min``.  Latency is ``pipeline_depth`` cycles and throughput one
    comparison per cycle.

    Parameters
    ----------
    cfg : FpConfig
    """

    UNIT = "fp_cmp"

    def __init__(self, cfg: FpConfig):
        fmt = cfg.fmt
        fields = {"less": flag(), "equal": flag(), "greater": flag(), "unordered": flag(),
                  "max": fp(fmt), "min": fp(fmt)}
        super().__init__(cfg, {"a": fp(fmt), "b": fp(fmt)}, {k: fields[k] for k in OUTPUT_FIELDS})

    def stages(self):
        return cmp_stages(self.cfg.fmt, self.cfg.ftz)


# A compare is two magnitude comparisons and a select: one register stage is plenty.
CMP_PRESETS = {name: {"fmt": name, "pipeline_depth": 1} for name in ("fp16", "bf16", "fp32")}

UNITS = (HwUnit("fp_cmp", "IEEE quiet compare with maximum/minimum, pipelined "
                "(i: a, b -> o: less, equal, greater, unordered, max, min)",
                FpConfig, FpCmp, CMP_PRESETS, streaming_cycles,
                paper="IEEE 754-2019 §5.11 quiet comparison, §9.6 maximum / minimum",
                activity=core.streaming_activity("cmp")),)
