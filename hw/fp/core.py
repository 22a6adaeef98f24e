"""Shared float datapath pieces: unpack, leading-zero count, normalize-and-round.

Conventions (mirrored exactly by :mod:`pimforge.sim.golden.fp.core`):

* ``unpack`` gives ``sig`` (precision bits, hidden bit explicit) and a signed ``exp`` such that a
  finite input equals ``(-1)**sign * sig * 2**(exp - frac_bits)``.  Subnormals get ``exp = emin``
  and a zero hidden bit.  With ``ftz`` a subnormal input is read as a zero of the same sign.
* ``round_stages`` takes an unsigned significand ``sig`` of width W whose most significant bit has
  weight ``2**exp``, and whose least significant bit already holds the sticky OR of anything the
  caller discarded (W must be at least precision + 2).  It normalizes (leading-zero count), shifts
  right into the subnormal range when needed, rounds to nearest even, and packs.  Overflow gives
  Inf.  With ``ftz`` a result that is subnormal after rounding becomes a zero of the same sign.
"""
from __future__ import annotations

from amaranth.hdl import Cat, Const, Mux, Signal, Value, signed, unsigned

from pimforge.base.formats import FloatFormat
from pimforge.hw.core.activity import op_action
from pimforge.hw.core.pipeline import levels

__all__ = ["exp_shape", "unpack", "lzc", "shift_steps", "amount_bits",
           "shifter_stages", "multiply_stages", "round_stages", "run_stages", "special_result",
           "aligned_add_stages", "pass_on", "LV_MUX", "lv_log", "lv_add", "lv_cmp", "lv_fanout",
           "lv_lzc", "streaming_activity"]


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
    # a zero exponent field reads as 1 (emin = 1 - bias): no multiplexer after the subtraction
    raw = Cat(e_field[0] | e_zero, e_field[1:])
    m.d.comb += exp.eq(raw - fmt.bias)
    if ftz:
        sig = Mux(e_zero, 0, Cat(f_field, Const(1, 1)))
        is_zero = e_zero
    else:
        sig = Cat(f_field, ~e_zero)
        is_zero = e_zero & (f_field == 0)
    return {
        "sign": sign,
        "exp": exp,
        "exp_raw": raw,
        "sig": sig,
        "zero": is_zero,
        "inf": e_ones & (f_field == 0),
        "nan": e_ones & (f_field != 0),
    }


# Gate levels of one 2:1 multiplexer step (an AND-OR pair; on an FPGA one LUT and its routing,
# which costs about as much as a short carry chain, so shifters must not be under-weighted).
LV_MUX = 2


def lv_log(width: int) -> int:
    """ceil(log2(width)) for width >= 2 (the depth of a balanced reduction tree)."""
    return max(1, (max(2, width) - 1).bit_length())


def lv_add(width: int) -> int:
    """Estimated gate levels of a ``width``-bit adder or subtractor (a prefix carry tree)."""
    return 2 * lv_log(width) + 2


def lv_fanout(sinks: int) -> int:
    """Estimated gate levels of driving ``sinks`` inputs from one signal: a buffer tree of
    fan-out 4 per level (ceil(log4(sinks)); on an FPGA, the routing of a wide net)."""
    levels, reach = 0, 1
    while reach < sinks:
        levels, reach = levels + 1, reach * 4
    return levels


def lv_cmp(width: int) -> int:
    """Estimated gate levels of a ``width``-bit magnitude comparison."""
    return lv_log(width) + 3


def lv_lzc(width: int) -> int:
    """Estimated gate levels of :func:`lzc` on ``width`` bits."""
    return 2 * lv_log(width) + 1


def pass_on(v: dict, drop=(), **new) -> dict:
    """``v`` without the keys in ``drop``, plus ``new``: the dict a stage hands on (every key
    becomes a register where a pipeline boundary falls, so consumed keys must be dropped)."""
    out = {k: x for k, x in v.items() if k not in drop}
    out.update(new)
    return out


def lzc(m, value, name: str = "lzc"):
    """Leading-zero count of ``value`` (its width when the value is zero), as a balanced tree:
    the value is padded on the right to a power of two with a one and zeros, and pairs of halves
    are merged (``zero = zero_hi & zero_lo``; ``count = zero_hi ? 1:count_lo : 0:count_hi``)."""
    width = len(value)
    n = width.bit_length()          # 2**n > width, so the padding holds at least the one
    pad = (1 << n) - width
    bits = Cat(Const(1 << (pad - 1), pad), value)

    def tree(lo, size, depth):
        if size == 1:
            return ~bits[lo], None
        half = size // 2
        z_lo, c_lo = tree(lo, half, depth + 1)
        z_hi, c_hi = tree(lo + half, half, depth + 1)
        zero = Signal(name=f"{name}_z{depth}_{lo}")
        cnt = Signal(n - depth, name=f"{name}_c{depth}_{lo}")
        lo_part = Cat(c_lo, Const(1, 1)) if c_lo is not None else Const(1, 1)
        hi_part = Cat(c_hi, Const(0, 1)) if c_hi is not None else Const(0, 1)
        m.d.comb += [zero.eq(z_hi & z_lo), cnt.eq(Mux(z_hi, lo_part, hi_part))]
        return zero, cnt

    _, count = tree(0, 1 << n, 0)
    out = Signal(range(width + 1), name=name)
    m.d.comb += out.eq(count)
    return out


def shift_steps(m, value, amount, bits, left: bool, sticky=None, name: str = "sh"):
    """Part of a logarithmic shifter: shift ``value`` by ``2**j`` for each ``j`` in ``bits``
    whose ``amount`` bit is set (``j = None`` stands for all amount bits from ``value``'s width
    up, which shift everything out).  A right shift with ``sticky`` (a 1-bit value) ORs every bit
    it shifts out into the returned sticky.  Returns ``(shifted, sticky)``."""
    width = len(value)
    top = width.bit_length()
    cur = value
    for j in bits:
        if j is None:
            if len(amount) <= top:
                continue
            on = amount[top:] != 0
            step = Const(0, width)
            lost = cur != 0
            tag = "ov"
        elif j >= len(amount):
            continue
        else:
            on = amount[j]
            s = 1 << j
            step = (cur << s)[:width] if left else cur >> s
            lost = cur[:min(s, width)] != 0
            tag = str(j)
        if sticky is not None and not left:
            st = Signal(name=f"{name}_st{tag}")
            m.d.comb += st.eq(sticky | (on & lost))
            sticky = st
        nxt = Signal(width, name=f"{name}_s{tag}")
        m.d.comb += nxt.eq(Mux(on, step, cur))
        cur = nxt
    return cur, sticky


def amount_bits(width: int, amount_width: int, limit: int | None = None) -> list:
    """The steps :func:`shift_steps` needs for a ``width``-bit value and an ``amount_width``-bit
    amount (at most ``limit`` when given): one per amount bit below ``width``'s bit length, plus
    ``None`` for the higher bits."""
    if limit is not None:
        amount_width = min(amount_width, max(1, limit.bit_length()))
    top = width.bit_length()
    bits = list(range(min(top, amount_width)))
    return bits + ([None] if amount_width > top else [])


def shifter_stages(src: str, amt: str, dst: str, width: int, steps: list, left: bool,
                   groups: int, name: str, sticky: bool = False) -> list:
    """A log shifter over ``groups`` stages: ``v[dst] = v[src]`` shifted by ``v[amt]`` (``steps``
    from :func:`amount_bits`); a sticky right shift ORs the lost bits into the LSB."""
    groups = max(1, min(max(groups, -(-len(steps) // 3)), len(steps)))
    chunks = [steps[i * len(steps) // groups:(i + 1) * len(steps) // groups] for i in range(groups)]
    out = []
    for g, chunk in enumerate(chunks):
        first, last = g == 0, g == len(chunks) - 1

        def st(m, v, chunk=chunk, first=first, last=last, g=g):
            cur = v[src] if first else v[f"{name}_cur"]
            lost = (Const(0, 1) if first else v[f"{name}_lost"]) if sticky else None
            cur, lost = shift_steps(m, cur, v[amt], chunk, left, lost, name=f"{name}{g}")
            drop = [src, f"{name}_cur", f"{name}_lost"] + ([amt] if last else [])
            if last:
                return pass_on(v, drop, **{dst: cur | lost if sticky else cur})
            extra = {f"{name}_lost": lost} if sticky else {}
            return pass_on(v, drop, **{f"{name}_cur": cur}, **extra)
        st.levels = LV_MUX * len(chunk) + (2 if sticky else 0) + (lv_log(width) if last and sticky else 0)
        out.append(st)
    return out


def _dual_shift_stages(width: int, left_steps: list, right_steps: list, groups: int) -> list:
    """``rp_mag`` = ``sig << rp_shl`` or, when ``rp_rsel`` (then ``rp_shl`` is 0),
    ``sig >> rp_shr`` with sticky: both shifters advance side by side over ``groups`` stages
    and the last one selects."""
    n = max(len(left_steps), len(right_steps))
    groups = max(1, min(max(groups, -(-n // 3)), n))
    cut = lambda steps, g: steps[g * len(steps) // groups:(g + 1) * len(steps) // groups]  # noqa: E731
    out = []
    for g in range(groups):
        first, last = g == 0, g == groups - 1

        def st(m, v, g=g, first=first, last=last):
            lc = v["sig"] if first else v["rp_lcur"]
            rc = v["sig"] if first else v["rp_rcur"]
            lost = Const(0, 1) if first else v["rp_rlost"]
            lc, _ = shift_steps(m, lc, v["rp_shl"], cut(left_steps, g), True, name=f"rp_l{g}")
            rc, lost = shift_steps(m, rc, v["rp_shr"], cut(right_steps, g), False, lost,
                                   name=f"rp_r{g}")
            drop = ["sig", "rp_lcur", "rp_rcur", "rp_rlost"] + (
                ["rp_shl", "rp_shr", "rp_rsel"] if last else [])
            if last:
                # the lost bits go to ``decide`` beside the magnitude (an OR at its sticky), not
                # into its LSB: their chain then ends at that OR, not under the select and the
                # sticky OR (ECP5: the exp fp32's lost register to its round-up, 8 cells)
                mag, mlost = Signal(width, name="rp_mag"), Signal(name="rp_mlost")
                m.d.comb += [mag.eq(Mux(v["rp_rsel"], rc, lc)), mlost.eq(v["rp_rsel"] & lost)]
                return pass_on(v, drop, rp_mag=mag, rp_mlost=mlost)
            return pass_on(v, drop, rp_lcur=lc, rp_rcur=rc, rp_rlost=lost)
        st.levels = (LV_MUX * max(len(cut(left_steps, g)), len(cut(right_steps, g))) + 1
                     + (LV_MUX if last else 0))
        out.append(st)
    return out


def multiply_stages(a_key: str, b_key, out_key: str, width_a: int, width_b: int,
                    signed_a: bool = False) -> list:
    """A multiplier as pipeline stages: ``v[out] = v[a] * b``, exact (``width_a + width_b``
    bits; two's complement when ``signed_a``).  ``b_key`` names an unsigned operand in the dict,
    or is an ``int`` constant (then only its set bits make rows).

    The rows ``a & b[i]`` (shifted by ``i``) are reduced by a carry-save (Wallace) tree of 3:2
    counters, one counter level per stage, and the last two rows are added by one carry-propagate
    adder; so every ``pipeline_depth`` can cut inside the multiplier (a ``*`` would become one
    FPGA DSP block or one array multiplier, neither cut by registers).  A signed ``a`` is
    sign-extended into every row; all sums are modulo ``2**width``, where the product fits.
    """
    width = width_a + width_b
    const = isinstance(b_key, int)
    bits = [i for i in range(width_b) if not const or (b_key >> i) & 1]
    counts = [len(bits)]
    while counts[-1] > 2:
        n = counts[-1]
        counts.append(2 * (n // 3) + n % 3)
    key = lambda lvl, i: f"{out_key}_r{lvl}_{i}"  # noqa: E731

    def rows_of(v, lvl):
        if lvl == 0:
            a = v[a_key].as_signed() if signed_a else v[a_key]
            if const:
                return [a << i for i in bits], [a_key]
            b = v[b_key]
            return [Value.cast(Mux(b[i], a, 0)) << i for i in bits], [a_key, b_key]
        drop = [key(lvl, i) for i in range(counts[lvl])]
        return [v[k] for k in drop], drop

    out = []
    for lvl in range(len(counts) - 1):
        def csa(m, v, lvl=lvl):
            rows, drop = rows_of(v, lvl)
            nxt = []
            for g in range(0, len(rows) - 2, 3):
                x, y, z = rows[g:g + 3]
                s_ = Signal(width, name=f"{out_key}_s{lvl}_{g // 3}")
                c_ = Signal(width, name=f"{out_key}_c{lvl}_{g // 3}")
                m.d.comb += [s_.eq(x ^ y ^ z), c_.eq(((x & y) | (x & z) | (y & z)) << 1)]
                nxt += [s_, c_]
            for r in rows[len(rows) - len(rows) % 3:]:
                keep = Signal(width, name=f"{out_key}_k{lvl}_{len(nxt)}")
                m.d.comb += keep.eq(r)
                nxt.append(keep)
            return pass_on(v, drop, **{key(lvl + 1, i): r for i, r in enumerate(nxt)})
        csa.levels = 5 + (lvl == 0)   # XOR3 and majority: one LUT, but a routed one on FPGAs
        out.append(csa)

    def cpa(m, v):
        rows, drop = rows_of(v, len(counts) - 1)
        prod = Signal(signed(width) if signed_a else width, name=out_key)
        m.d.comb += prod.eq(sum(rows) if rows else 0)
        return pass_on(v, drop, **{out_key: prod})
    cpa.levels = lv_add(width)
    return out + [cpa]


def round_stages(fmt: FloatFormat, ftz: bool, width: int, post, exp_min: int | None = None,
                 shift_groups: int = 1, exp_max: int | None = None) -> list:
    """Normalize, round to nearest even and pack, as pipeline stages.

    Consumes keys ``sig`` (``width`` bits, MSB weight ``2**exp``, sticky already in the LSB),
    ``exp`` (signed) and ``sign``; every other key passes through.  The last stage calls
    ``post(m, v, rounded)`` with the remaining keys (``sign`` included) and the packed result, and returns its dict
    (so each operator adds its own special cases there).  ``exp_min``, a lower bound of ``exp``
    known from the operator, removes logic that cannot matter: no subnormal clamp of the left
    shift when ``exp_min - width >= emin``, no right shift when ``exp_min >= emin``; likewise an
    upper bound ``exp_max`` below ``emax`` removes the overflow compares (a widening operation).
    Mirrored bit for bit by ``round_pack`` in :mod:`pimforge.sim.golden.fp.core`.
    """
    assert width >= fmt.precision + 2, "rounding needs precision + 2 significand bits"
    p = fmt.precision
    limited = exp_min is None or exp_min - width < fmt.emin
    right = exp_min is None or exp_min < fmt.emin
    shr_max = None if exp_min is None else fmt.emin - exp_min
    eshape_of = lambda e: signed(max(len(e), fmt.exp_bits + 2) + 2)  # noqa: E731

    def count(m, v):
        lz = lzc(m, v["sig"], name="rp_lz")
        new = {"rp_lz": lz}
        if limited:
            d = Signal(eshape_of(v["exp"]), name="rp_d")
            m.d.comb += d.eq(v["exp"] - fmt.emin)
            new["rp_d"] = d
        return pass_on(v, (), **new)
    count.levels = lv_lzc(width)

    def amount(m, v):
        lz, exp = v["rp_lz"], v["exp"]
        eshape = eshape_of(exp)
        e_norm = Signal(eshape, name="rp_enorm")
        m.d.comb += e_norm.eq(exp - lz)
        shl = Signal(range(width + 1), name="rp_shl")
        e_out = Signal(eshape, name="rp_eout")
        new = {}
        if not limited:
            m.d.comb += [shl.eq(lz), e_out.eq(e_norm)]
        else:
            d = v["rp_d"]
            normal = (d >= 0) & (lz <= d.as_unsigned()) if right else lz <= d.as_unsigned()
            m.d.comb += [shl.eq(Mux(normal, lz, Mux(d >= 0, d.as_unsigned(), 0))),
                         e_out.eq(Mux(normal, e_norm, fmt.emin))]
            if right:
                shr = Signal(range(shr_max + 1) if shr_max is not None else len(d), name="rp_shr")
                m.d.comb += shr.eq(Mux(d < 0, -d, 0))
                new["rp_shr"], new["rp_rsel"] = shr, d < 0
        return pass_on(v, ("rp_lz", "rp_d", "exp"), rp_shl=shl, rp_eout=e_out, **new)
    # e_out is the subtraction exp - lz, then (when limited) the mux on ``normal``, whose
    # compare runs beside the subtraction and is shallower.  Priced as the compare alone, the
    # leading-zero count and this stage would share one segment that the placer thinks fits,
    # and that is too deep on ECP5 (fp32 exp).
    amount.levels = lv_add(fmt.exp_bits + 6) + (LV_MUX if limited else 0)

    stages = [count, amount]
    left_steps = amount_bits(width, width.bit_length())
    if right:
        stages += _dual_shift_stages(width, left_steps, amount_bits(width, 32, shr_max),
                                     shift_groups)
    else:
        stages += shifter_stages("sig", "rp_shl", "rp_mag", width, left_steps, True,
                                 shift_groups, "rp_l")
    mag_key = "rp_mag"

    def decide(m, v):
        mag, e_out = v[mag_key], v["rp_eout"]
        guard = mag[width - p - 1]
        sticky = (mag[:width - p - 1] != 0) | v.get("rp_mlost", 0)   # width - p - 1 >= 1
        mant = mag[width - p:]
        up = Signal(name="rp_up")
        m.d.comb += up.eq(guard & (sticky | mag[width - p]))
        # What the increment's carry-out will decide is known before the increment: it carries
        # out of the significand only when every bit below the hidden bit is one, and the
        # overflow tests compare the exponent with constants.  Both run beside the sticky OR,
        # so the last stages are the increment and selects (the carry chain, then the compare
        # chain and four LUTs into the output register was the ECP5 critical path of an fp32
        # multiply's last segment).
        ov0, ov1 = (e_out > fmt.emax, e_out >= fmt.emax) if overflows else (Const(0), Const(0))
        return pass_on(v, (mag_key, "rp_mlost"), rp_mant=mant, rp_up=up,
                       rp_ones=mant[:p - 1] == (1 << (p - 1)) - 1, rp_ov0=ov0, rp_ov1=ov1)
    # the sticky OR beside the compares (none when the result cannot reach emax)
    overflows = exp_max is None or exp_max >= fmt.emax
    decide.levels = max(lv_log(width - p) + 2, lv_cmp(fmt.exp_bits + 4) if overflows else 0)

    def rnd(m, v):
        # The exponent's two candidates (e_out + bias for no carry, + bias + 1 for a carry) run
        # beside the increment, and the carry, hidden-bit and overflow decisions come from
        # ``decide``'s flags, so the last stage only selects.
        e_out, mant, up, ones = v["rp_eout"], v["rp_mant"], v["rp_up"], v["rp_ones"]
        frac = Signal(fmt.frac_bits, name="rp_frac")   # mant + up, wrapped: 0 on a carry-out
        e_b = Signal(fmt.exp_bits, name="rp_eb")       # only the field bits are packed
        e_b1 = Signal(fmt.exp_bits, name="rp_eb1")
        m.d.comb += [frac.eq(mant[:fmt.frac_bits] + up), e_b.eq(e_out + fmt.bias),
                     e_b1.eq(e_out + (fmt.bias + 1))]
        carry = up & ones & mant[p - 1]          # the increment carries out of the significand
        hidden = mant[p - 1] | (up & ones)       # the result is normal (or a carry made it so)
        return pass_on(v, ("rp_mant", "rp_up", "rp_ones", "rp_eout"), rp_frac=frac,
                       rp_eb=e_b, rp_eb1=e_b1, rp_carry=carry, rp_hidden=hidden)
    rnd.levels = lv_add(p + 1)

    def pack(m, v):
        sign, carry, hidden = v["sign"], v["rp_carry"], v["rp_hidden"]
        overflow = hidden & Mux(carry, v["rp_ov1"], v["rp_ov0"])
        biased = Mux(hidden, Mux(carry, v["rp_eb1"], v["rp_eb"]), 0)
        out = Signal(fmt.width, name="rp_out")
        with m.If(overflow):
            m.d.comb += out.eq(Cat(Const(0, fmt.frac_bits), Const(fmt.exp_all_ones, fmt.exp_bits),
                                   sign))
        with m.Elif(Const(ftz) & ~hidden):
            m.d.comb += out.eq(Cat(Const(0, fmt.width - 1), sign))
        with m.Else():
            m.d.comb += out.eq(Cat(v["rp_frac"], biased, sign))
        return post(m, pass_on(v, ("rp_frac", "rp_carry", "rp_hidden", "rp_eb", "rp_eb1",
                                   "rp_ov0", "rp_ov1")), out)
    pack.levels = 4

    return stages + [decide, rnd, pack]


def run_stages(m, stages, values: dict) -> dict:
    """Chain ``stages`` combinationally (no registers)."""
    for st in stages:
        values = st(m, values)
    return values


def special_result(fmt: FloatFormat, is_nan, is_inf, inf_sign, rounded):
    """Select canonical NaN, signed Inf, or the rounded finite result."""
    nan = Const(fmt.canonical_nan, fmt.width)
    inf = Cat(Const(fmt.inf, fmt.width - 1), inf_sign)
    return Mux(is_nan, nan, Mux(is_inf, inf, rounded))


def aligned_add_stages(fmt: FloatFormat, ftz: bool, width: int, exp_min: int | None = None) -> list:
    """The shared tail of ``fp_add`` and ``fp_fma`` as pipeline stages: exact add or subtract of
    two aligned significands, normalize, round and pack.

    Expects keys ``big``/``small`` (aligned significands, ``|big| >= |small|``, sticky already in
    the LSB of ``small``), their signs ``s_big``/``s_small``, ``e_big`` (exponent of ``big``'s
    MSB), and the special-case flags ``nan``, ``inf``, ``inf_sign``.  ``width`` is the width of
    the sum (one carry bit above the operands).  An exact-zero sum is +0 unless both addends
    are negative (IEEE 754 round-to-nearest rule).  ``exp_min`` bounds ``e_big`` from below
    (see :func:`round_stages`).
    """
    def addsub(m, v):
        same = Signal(name="add_same")
        m.d.comb += same.eq(v["s_big"] == v["s_small"])
        small = Signal(width, name="add_small")
        m.d.comb += small.eq(v["small"])
        total = Signal(width, name="add_sum")
        # big - small = big + ~small + 1 (mod 2**width); |big| >= |small| keeps it non-negative.
        # The carry-in rides in an extra low bit of both operands, so this is one two-input adder.
        wide = Signal(width + 1, name="add_wide")
        m.d.comb += [wide.eq(Cat(~same, v["big"]) + Cat(~same, Mux(same, small, ~small))),
                     total.eq(wide[1:])]
        exp = Signal(signed(len(v["e_big"]) + 1), name="add_exp")
        m.d.comb += exp.eq(v["e_big"] + 1)
        return pass_on(v, ("big", "small", "e_big"), sig=total, exp=exp)
    addsub.levels = lv_add(width) + 1

    def sign(m, v):
        s = Mux(v["sig"] == 0, v["s_big"] & v["s_small"], v["s_big"])
        return pass_on(v, ("s_big", "s_small"), sign=s)
    # the zero test runs beside the leading-zero count; a register right after this stage
    # leaves the whole test and the mux behind the adder instead
    sign.levels = 1
    sign.cut_levels = (lv_log(width) + 1 + LV_MUX, 0)

    def post(m, v, rounded):
        return {"r": special_result(fmt, v["nan"], v["inf"], v["inf_sign"], rounded)}

    return [addsub, sign] + round_stages(fmt, ftz, width, post,
                                         None if exp_min is None else exp_min + 1, shift_groups=2)


def streaming_activity(kind: str, fmt_field: str = "fmt"):
    """The activity model ``activity(cfg, n_ops)`` of a pipelined float unit (``fp_<kind>``):
    each input transfer is one ``kind`` operation in the result format ``cfg.<fmt_field>``
    (``dst`` for a conversion), so a job of ``n_ops`` operations counts ``n_ops`` of them, with
    or without stalls (a stalled operand waits in its register; nothing is computed twice).

    Nothing else is counted: the datapath has no memories but the special-function units'
    coefficient tables, which are read combinationally (a constant read enable: the table is
    looked up in every cycle, used or not, so it has no event of its own; see
    :mod:`pimforge.hw.core.activity`)."""
    def activity(cfg, n_ops: int) -> dict:
        return {op_action(kind, getattr(cfg, fmt_field)): n_ops} if n_ops else {}
    # named after the factory, so that the unit's generated page links to the reasons above
    activity.__qualname__ = activity.__name__ = "streaming_activity"
    activity.__doc__ = (f"``activity(cfg, n_ops)``: ``n_ops`` ``{kind}`` operations in "
                        f"``cfg.{fmt_field}``, one per input transfer, with or without stalls.")
    return activity
