"""Shared float datapath pieces: unpack, leading-zero count, normalize-and-round.

Conventions (mirrored exactly by :mod:`pimforge.sim.golden.fp.core`):

* ``unpack`` gives ``sig`` (precision bits, hidden bit explicit) and a signed ``exp`` such that a
  finite input equals ``(-1)**sign * sig * 2**(exp - frac_bits)``.  Subnormals get ``exp = emin``
  and a zero hidden bit.  With ``ftz`` a subnormal input is read as a zero of the same sign.
* ``round_pack`` takes an unsigned significand ``sig`` of width W whose most significant bit has
  weight ``2**exp``, and whose least significant bit already holds the sticky OR of anything the
  caller discarded (W must be at least precision + 2).  It normalizes (leading-zero count), shifts
  right into the subnormal range when needed, rounds to nearest even, and packs.  Overflow gives
  Inf.  With ``ftz`` a result that is subnormal after rounding becomes a zero of the same sign.
"""
from __future__ import annotations

from amaranth.hdl import Cat, Const, Mux, Signal, signed, unsigned

from pimforge.base.formats import FloatFormat

__all__ = ["exp_shape", "unpack", "lzc", "shift_right_sticky", "round_shift", "round_finish",
           "round_pack", "special_result", "aligned_add_stages"]


def exp_shape(fmt: FloatFormat, extra: int = 0):
    """A signed exponent shape wide enough for products and normalization shifts."""
    return signed(fmt.exp_bits + 4 + extra)


def unpack(m, fmt: FloatFormat, x, ftz: bool = False, name: str = "x") -> dict:
    e_field = x[fmt.frac_bits:fmt.frac_bits + fmt.exp_bits]
    f_field = x[:fmt.frac_bits]
    sign = x[fmt.width - 1]
    e_zero = e_field == 0
    e_ones = e_field == fmt.exp_all_ones
    exp = Signal(exp_shape(fmt), name=f"{name}_exp")
    m.d.comb += exp.eq(Mux(e_zero, fmt.emin, e_field - fmt.bias))
    if ftz:
        sig = Mux(e_zero, 0, Cat(f_field, Const(1, 1)))
        is_zero = e_zero
    else:
        sig = Cat(f_field, ~e_zero)
        is_zero = e_zero & (f_field == 0)
    return {
        "sign": sign,
        "exp": exp,
        "sig": sig,
        "zero": is_zero,
        "inf": e_ones & (f_field == 0),
        "nan": e_ones & (f_field != 0),
    }


def lzc(m, value, name: str = "lzc"):
    """Leading-zero count of ``value`` (its width when the value is zero), as a priority chain."""
    width = len(value)
    out = Signal(range(width + 1), name=name)
    m.d.comb += out.eq(width)
    # Later assignments win, so scan from the least significant bit up.
    for i in range(width):
        with m.If(value[i]):
            m.d.comb += out.eq(width - 1 - i)
    return out


def shift_right_sticky(m, value, amount, name: str = "srs"):
    """``value >> amount`` with the OR of the bits shifted out placed in the result's LSB."""
    width = len(value)
    amt = Signal(range(width + 2), name=f"{name}_amt")
    m.d.comb += amt.eq(Mux(amount > width + 1, width + 1, amount))
    shifted = Signal(width, name=f"{name}_val")
    m.d.comb += shifted.eq(value >> amt)
    lost = Signal(name=f"{name}_lost")
    m.d.comb += lost.eq((shifted << amt)[:width] != value)
    return shifted | lost


def round_shift(m, fmt: FloatFormat, exp, sig, name: str = "rp") -> dict:
    """First half of round_pack: normalize or denormalize ``sig`` so its MSB has weight
    ``2**e_out`` with ``e_out >= emin``."""
    width = len(sig)
    assert width >= fmt.precision + 2, "round_pack needs precision + 2 significand bits"
    lz = lzc(m, sig, name=f"{name}_lz")
    eshape = signed(max(len(exp), fmt.exp_bits + 2) + 2)
    e_norm = Signal(eshape, name=f"{name}_enorm")
    m.d.comb += e_norm.eq(exp - lz)
    shl = Signal(eshape, name=f"{name}_shl")
    m.d.comb += shl.eq(Mux(e_norm >= fmt.emin, lz, exp - fmt.emin))
    e_out = Signal(eshape, name=f"{name}_eout")
    m.d.comb += e_out.eq(Mux(e_norm >= fmt.emin, e_norm, fmt.emin))
    shl_pos = Signal(range(width + 1), name=f"{name}_shlpos")
    m.d.comb += shl_pos.eq(Mux(shl >= 0, shl, 0))
    shr = Signal(unsigned(len(shl)), name=f"{name}_shr")
    m.d.comb += shr.eq(Mux(shl < 0, -shl, 0))
    left = Signal(width, name=f"{name}_left")
    m.d.comb += left.eq((sig << shl_pos)[:width])
    right = shift_right_sticky(m, sig, shr, name=f"{name}_r")
    mag = Signal(width, name=f"{name}_mag")
    m.d.comb += mag.eq(Mux(shl >= 0, left, right))
    return {"e_out": e_out, "mag": mag}


def round_finish(m, fmt: FloatFormat, sign, e_out, mag, ftz: bool = False, name: str = "rp"):
    """Second half of round_pack: round to nearest even and pack into ``fmt`` bits."""
    width = len(mag)
    p = fmt.precision
    mant = mag[width - p:]
    guard = mag[width - p - 1]
    sticky = mag[:width - p - 1] != 0
    round_up = guard & (sticky | mant[0])
    mant_r = Signal(p + 1, name=f"{name}_mantr")
    m.d.comb += mant_r.eq(mant + round_up)
    carry = mant_r[p]
    hidden = mant_r[p - 1] | carry
    e_fin = Signal(signed(len(e_out) + 1), name=f"{name}_efin")
    m.d.comb += e_fin.eq(e_out + carry + fmt.bias)
    overflow = hidden & (e_fin >= fmt.exp_all_ones)
    frac = Mux(carry, 0, mant_r[:fmt.frac_bits])
    biased = Mux(hidden, e_fin[:fmt.exp_bits], 0)
    out = Signal(fmt.width, name=f"{name}_out")
    with m.If(overflow):
        m.d.comb += out.eq(Cat(Const(0, fmt.frac_bits), Const(fmt.exp_all_ones, fmt.exp_bits), sign))
    with m.Elif(Const(ftz) & ~hidden):
        m.d.comb += out.eq(Cat(Const(0, fmt.width - 1), sign))
    with m.Else():
        m.d.comb += out.eq(Cat(frac, biased, sign))
    return out


def round_pack(m, fmt: FloatFormat, sign, exp, sig, ftz: bool = False, name: str = "rp"):
    r = round_shift(m, fmt, exp, sig, name=name)
    return round_finish(m, fmt, sign, r["e_out"], r["mag"], ftz=ftz, name=name)


def special_result(fmt: FloatFormat, is_nan, is_inf, inf_sign, rounded):
    """Select canonical NaN, signed Inf, or the rounded finite result."""
    nan = Const(fmt.canonical_nan, fmt.width)
    inf = Cat(Const(fmt.inf, fmt.width - 1), inf_sign)
    return Mux(is_nan, nan, Mux(is_inf, inf, rounded))


def aligned_add_stages(fmt: FloatFormat, ftz: bool, width: int) -> list:
    """The shared tail of ``fp_add`` and ``fp_fma`` as pipeline stages: exact add or subtract of
    two aligned significands, normalize, round and pack.

    Expects keys ``big``/``small`` (aligned significands, ``|big| >= |small|``, sticky already in
    the LSB of ``small``), their signs ``s_big``/``s_small``, ``e_big`` (exponent of ``big``'s
    MSB), and the special-case flags ``nan``, ``inf``, ``inf_sign``.  ``width`` is the width of
    the sum (one carry bit above the operands).  An exact-zero sum is +0 unless both addends
    are negative (IEEE 754 round-to-nearest rule).
    """
    keep = ("nan", "inf", "inf_sign")

    def addsub(m, v):
        same = v["s_big"] == v["s_small"]
        total = Mux(same, v["big"] + v["small"], v["big"] - v["small"])[:width]
        sign = Mux(total == 0, v["s_big"] & v["s_small"], v["s_big"])
        return {**{k: v[k] for k in keep}, "sign": sign, "exp": v["e_big"] + 1, "sum": total}

    def normalize(m, v):
        r = round_shift(m, fmt, v["exp"], v["sum"], name="rp")
        return {**{k: v[k] for k in keep + ("sign",)}, **r}

    def finish(m, v):
        rounded = round_finish(m, fmt, v["sign"], v["e_out"], v["mag"], ftz=ftz, name="rp")
        return {"r": special_result(fmt, v["nan"], v["inf"], v["inf_sign"], rounded)}

    return [addsub, normalize, finish]
