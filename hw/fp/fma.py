"""``fp_fma``: fused multiply-add ``a * b + c`` with a single rounding (round to nearest even).

The classic single-path datapath.  The raw significands are multiplied exactly (``2p`` bits,
``p`` = precision; a subnormal input simply brings leading zeros, nothing is normalized before
the add), and while the multiplier runs ``c`` is aligned against that product in a window of
``3p + 6`` bits (:func:`fma_window`).  The product has a fixed place in the window; ``c`` enters
at the top and is shifted right by the exponent difference, its bits below the window ORed into
a sticky LSB.  When ``c`` is too large for that place (or the product is zero) ``c`` stays at
the top and the window follows ``c``: the product then sits at least two zero bits below
``c``'s LSB, where its exact position no longer changes guard, round or sticky.

One adder adds or subtracts.  Of the sum, ``2p + 5`` bits go on: the upper ones (the rest ORed
into their LSB) when ``c`` reaches at least two places above the product, so that the sum's
leading one is high, else the lower ones, which then hold the whole sum (massive cancellation
happens only there).  A conditional negate of that slice gives the magnitude, and the one
leading-zero count, normalize shift and rounding of :func:`~pimforge.hw.fp.core.round_stages`
(covering the product's leading zeros too) follow.  Three bits below the product's LSB keep
round and sticky apart when ``c``'s sticky part is subtracted from a product with leading zeros
(fp16 ``0x0001 * 0x7000 + 0x8403`` rounds wrongly with two).

An exact zero sum is ``+0`` unless both the product and ``c`` are negative, so
``x*y + (-(x*y)) = +0`` and ``(-0)*1 + (-0) = -0``.  The result is NaN for a NaN operand,
``Inf * 0``, or an Inf product plus an Inf ``c`` of the opposite sign.
"""
from __future__ import annotations

from amaranth.hdl import Cat, Const, Mux, Signal, signed

from pimforge.hw.core.component import PipelinedUnit
from pimforge.hw.core.payload import fp
from pimforge.hw.core.pipeline import levels, parallel, streaming_cycles
from pimforge.hw.core.unit import HwUnit
from pimforge.hw.fp import core
from pimforge.hw.fp.config import FORMAT_PRESETS, FpConfig

__all__ = ["FpFma", "fma_stages", "fma_window", "GUARD"]

# bits of the window below the product's LSB
GUARD = 3


def fma_window(fmt) -> int:
    """Width of the sum window: ``3p + 6`` bits (``p`` = precision).

    From the top: a carry bit, ``c``'s ``p`` bits when ``c`` is at its highest place, two zero
    bits, the ``2p``-bit product, and :data:`GUARD` bits below the product's LSB.
    """
    return 3 * fmt.precision + 3 + GUARD


def _sum_stages(p: int, w: int, n: int) -> list:
    """The add (or subtract) of the product and the aligned ``c`` in the ``w``-bit window, the
    ``n``-bit slice, and its magnitude and sign: keys ``sig`` and ``sign`` for the rounding."""
    @levels(core.lv_add(w + 2) + 1)
    def addsub(m, v):
        sub = Signal(name="fma_sub")
        m.d.comb += sub.eq(v["s_prod"] != v["s_c"])
        x = Cat(Const(0, GUARD), v["prod"], Const(0, w - GUARD - 2 * p))
        y = v["c_al"]
        # x - y = x + ~y + 1 over w + 1 bits (the top bit is the sign); the carry-in rides in an
        # extra low bit of both operands, so this is one two-input adder.
        wide = Signal(w + 2, name="fma_wide")
        ye = Cat(y, Const(0, 1))
        m.d.comb += wide.eq(Cat(sub, x, Const(0, 1)) + Cat(sub, Mux(sub, ~ye, ye)))
        return core.pass_on(v, ("prod", "c_al"), fma_sum=wide[1:w + 1], fma_neg=wide[w + 1])

    @levels(core.lv_log(p + 1) + 2)
    def select(m, v):
        # Slice 2p + 5 bits of the sum: [p + 1, w) with the bits below ORed into its LSB, or
        # [0, 2p + 5), exact.  The sticky OR commutes with negation (for a nonzero part below,
        # the negated sum's slice is ~h | 1 = -(h | 1)), so the magnitude is taken after it.
        d, upper = v["fma_sum"], v["fma_upper"]
        part = Signal(n, name="fma_part")
        m.d.comb += part.eq(Mux(upper, d[p + 1:] | (d[:p + 1] != 0), d[:n]))
        return core.pass_on(v, ("fma_sum", "fma_upper"), fma_part=part)

    @levels(core.lv_add(n) + 1)
    def absolute(m, v):
        # |x - y| = ~(x - y) + 1 when negative: c was the larger magnitude
        neg, part = v["fma_neg"], v["fma_part"]
        mag = Signal(n, name="fma_mag")
        m.d.comb += mag.eq((part ^ neg.replicate(n)) + neg)
        # an exact zero (no sticky either), tested beside the increment
        sign = Mux(part == 0, v["s_prod"] & v["s_c"], Mux(neg, v["s_c"], v["s_prod"]))
        return core.pass_on(v, ("fma_part", "fma_neg", "s_prod", "s_c"), sig=mag, sign=sign)

    return [addsub, select, absolute]


def fma_stages(fmt, ftz):
    """The FMA datapath as pipeline stages over a dict with keys ``a``, ``b`` and ``c``: unpack,
    then the carry-save multiplier side by side with ``c``'s place and alignment shift, the add
    (or subtract), the slice, the absolute value, then the shared normalize and round of
    :func:`~pimforge.hw.fp.core.round_stages`."""
    p = fmt.precision
    w = fma_window(fmt)
    n = 2 * p + 5      # the slice that is rounded
    # window MSB weight: 2**(ea + eb + off) for the product's place, 2**(ec + 1) for c's
    off = w - 1 - GUARD - 2 * (p - 1)
    # the upper slice's exponent is at least that of the smallest product, or emin + 1
    exp_min = min(2 * fmt.emin + off, fmt.emin + 1)
    no_right = exp_min >= fmt.emin   # fp16: a lower slice below emin takes the upper one
    exp_min = min(exp_min, fmt.emin if no_right else 2 * fmt.emin + off - (p + 1))
    # exponents and their difference exactly in range (Inf and NaN fields read as emax + 1)
    diff_max = 2 * (fmt.emax + 1) + off - (fmt.emin + 1)
    diff_min = 2 * fmt.emin + off - (fmt.emax + 2)
    ebits = max(diff_max, 2 * (fmt.emax + 1) + off, -exp_min, -diff_min).bit_length() + 1
    eshape = signed(ebits)

    @levels(core.lv_add(fmt.exp_bits + 1) + 1)
    def unpack(m, v):
        a = core.unpack(m, fmt, v["a"], ftz, name="a")
        b = core.unpack(m, fmt, v["b"], ftz, name="b")
        c = core.unpack(m, fmt, v["c"], ftz, name="c")
        s_prod = a["sign"] ^ b["sign"]
        prod_inf = a["inf"] | b["inf"]
        invalid = ((a["inf"] & b["zero"]) | (a["zero"] & b["inf"])
                   | (prod_inf & c["inf"] & (s_prod != c["sign"])))
        # ea + eb = raw_a + raw_b - 2 bias: the constant is added a stage later
        e_sum = Signal(fmt.exp_bits + 1, name="e_sum")
        m.d.comb += e_sum.eq(a["exp_raw"] + b["exp_raw"])
        return {
            "s_prod": s_prod, "s_c": c["sign"], "e_sum": e_sum, "c_raw": c["exp_raw"],
            "sa": a["sig"], "sb": b["sig"], "sc": c["sig"],
            "p_zero": a["zero"] | b["zero"], "c_zero": c["zero"],
            "nan": a["nan"] | b["nan"] | c["nan"] | invalid,
            "inf": prod_inf | c["inf"], "inf_sign": Mux(prod_inf, s_prod, c["sign"]),
        }

    @levels(core.lv_add(ebits))
    def exponents(m, v):
        # e_p, e_c: the window's MSB weight when the product, or c, sets the place; e_lo: the
        # lower slice's MSB weight
        e_p, e_c, e_lo, diff = (Signal(eshape, name=k) for k in ("e_p", "e_c", "e_lo", "e_diff"))
        e_sum, c_raw = v["e_sum"], v["c_raw"]
        m.d.comb += [e_p.eq(e_sum + (off - 2 * fmt.bias)), e_lo.eq(e_sum + (off - 2 * fmt.bias - p - 1)),
                     e_c.eq(c_raw + (1 - fmt.bias)), diff.eq(e_sum - c_raw + (off - 1 - fmt.bias))]
        tiny = Signal(name="e_tiny")  # the lower slice's exponent below emin
        m.d.comb += tiny.eq((e_sum < fmt.emin + p + 1 + 2 * fmt.bias - off) if no_right else 0)
        return core.pass_on(v, ("e_sum", "c_raw"), e_p=e_p, e_c=e_c, e_lo=e_lo, e_diff=diff,
                            e_tiny=tiny)

    @levels(core.lv_cmp(ebits) + 2)
    def place(m, v):
        diff = v["e_diff"]
        # c sets the place when the product is zero (c then lands whole, at the top) or when c
        # reaches above its highest place; the product then lies below c's LSB, and two zero
        # bits between them keep guard, round and sticky exact.  A zero c never sets it.
        c_top = v["p_zero"] | (~v["c_zero"] & (diff <= 0))
        amount = Signal(range(diff_max + 1), name="align_amt")
        m.d.comb += amount.eq(Mux(c_top | (diff < 0), 0, diff))
        # The upper slice when c's top reaches 2p + 4 or higher (the sum's leading one is then at
        # 2p + 3 or higher); also when the lower slice's exponent would fall below emin, where
        # the upper one's sticky LSB still lies below any guard bit (and then no right shift
        # is needed in the rounding, when the upper slice's exponent cannot fall below emin).
        upper = Signal(name="fma_upper")
        m.d.comb += upper.eq(v["p_zero"] | (~v["c_zero"] & (diff <= p)) | v["e_tiny"])
        exp = Signal(eshape, name="fma_exp")   # the rounded slice's MSB weight
        m.d.comb += exp.eq(Mux(c_top, v["e_c"], Mux(upper, v["e_p"], v["e_lo"])))
        return core.pass_on(v, ("e_p", "e_c", "e_lo", "e_diff", "e_tiny", "p_zero", "c_zero", "sc"),
                            exp=exp, align_amt=amount, fma_upper=upper,
                            c_hi=Cat(Const(0, w - p - 1), v["sc"], Const(0, 1)))

    # The sticky is not redundant: a c wholly below the window (under an eighth of the product's
    # LSB) still decides the rounding when the product is an exact tie, and so do c's bits below
    # the window when its bits inside make the sum a tie.  Random triples almost never make such
    # ties; the bench's sticky corners do (sim/benches/fp/fma.py).  The product is never shifted,
    # so no other operand can lose bits here.
    align = core.shifter_stages("c_hi", "align_amt", "c_al", w,
                                core.amount_bits(w, diff_max.bit_length()), False, 2, "align",
                                sticky=True)
    mul = core.multiply_stages("sa", "sb", "prod", p, p)

    def post(m, v, rounded):
        return {"r": core.special_result(fmt, v["nan"], v["inf"], v["inf_sign"], rounded)}

    @levels(0)
    def idle(m, v):
        return v

    # c's place and alignment run beside the multiplier; its last (sticky) shift stage lines up
    # with the multiplier's carry-propagate adder.
    side = [exponents, place] + align[:-1] + [idle] * max(0, len(mul) - len(align) - 2) + align[-1:]
    return ([unpack] + parallel(mul, side) + _sum_stages(p, w, n)
            + core.round_stages(fmt, ftz, n, post, exp_min, shift_groups=2))


class FpFma(PipelinedUnit):
    """Pipelined fused multiply-add (``fp_fma``).

    Input stream ``i`` carries fields ``a``, ``b`` and ``c``; output stream ``o`` carries
    ``r = a * b + c`` computed FUSED: the product is exact and the sum is rounded once, to
    nearest even (not ``round(round(a * b) + c)``).  Latency is ``pipeline_depth`` cycles and
    throughput one operation per cycle.

    Parameters
    ----------
    cfg : FpConfig
    """

    UNIT = "fp_fma"

    def __init__(self, cfg: FpConfig):
        fmt = cfg.fmt
        super().__init__(cfg, {"a": fp(fmt), "b": fp(fmt), "c": fp(fmt)}, {"r": fp(fmt)})

    def stages(self):
        return fma_stages(self.cfg.fmt, self.cfg.ftz)


UNITS = (HwUnit("fp_fma", "IEEE fused multiply-add, single rounding, RNE, subnormals, pipelined "
                "(i: a, b, c -> o: r = a * b + c)", FpConfig, FpFma, FORMAT_PRESETS, streaming_cycles,
                paper="IEEE 754-2019 §5.4.1 fusedMultiplyAdd",
                activity=core.streaming_activity("fma")),)
