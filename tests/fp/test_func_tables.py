"""The special-function tables and constants (hw/fp/func_tables.py) against an independent
50-digit :mod:`decimal` computation.

The golden models import these tables, so the RTL-vs-golden tests cannot see a table error.  Here
every coefficient is recomputed from the design's definition in func_tables' module doc (``c0``:
the kernel at the segment start, rounded; ``c1`` and ``c2``: the quadratic through the segment
start and the two interior Chebyshev nodes), each segment's polynomial, shifts included, is
evaluated against the true kernel, and the constants log2(e) and ln(2) are checked.  Nothing here
calls the table builder's arithmetic; the reference is decimal maths only.
"""
from decimal import Context, Decimal, localcontext

import pytest

from pimforge.base.formats import FORMATS
from pimforge.hw.fp.func_tables import exp_params, log_params, recip_params

_PREC = 50   # decimal digits: some 110 bits beyond the widest table entry (2**-54 for ln 2)


def _ctx():
    return localcontext(Context(prec=_PREC))


def _kernel(func):
    """The true kernel of ``func``'s table as a function of ``v = u / 2**in_bits`` (Decimal)."""
    ln2 = Decimal(2).ln()
    quarter = Decimal(1) / 4
    return {
        "exp": lambda v: (v * ln2).exp(),                                         # 2**v
        "log": lambda v: Decimal(1) if v == quarter else (v + 3 * quarter).ln() / (v - quarter),
        "recip": lambda v: 1 / (1 + v),
    }[func]


def _table(func, fmt):
    return {"exp": exp_params, "log": log_params, "recip": recip_params}[func](fmt).table


def _nodes():
    """Interior nodes as fractions of a segment: the roots of T3 other than the left end, with
    [-sqrt(3)/2, 1] mapped onto [0, 1]."""
    r = Decimal(3).sqrt() / 2
    return r / (1 + r), 2 * r / (1 + r)


def _exact_coefficients(func, tab, i):
    """``(c0, c1, c2)`` of segment ``i`` as exact (50-digit) multiples of their LSBs."""
    f = _kernel(func)
    h = Decimal(2) ** -tab.index_bits
    a = i * h
    d1, d2 = (n * h for n in _nodes())
    f0 = f(a)
    q1, q2 = (f(a + d1) - f0) / d1, (f(a + d2) - f0) / d2
    k2 = (q2 - q1) / (d2 - d1)
    k1 = q1 - k2 * d1
    return f0 * 2 ** tab.out_frac, k1 * 2 ** tab.c1_frac, k2 * 2 ** tab.c2_frac


def _float64_allowance(tab):
    """How far the builder's float64 ``c1`` / ``c2`` may lie from the exact values, in their LSBs.

    Beyond the rounding to an integer (1/2), the builder forms divided differences of float64
    kernel values.  Each value (below 2) is within ``err = 2**-51`` of the truth: a libm result
    within one ulp (2**-52) plus the rounding of the point ``a + d``.  The slopes ``q`` are then
    within ``2 err / d``, ``k2 = (q2 - q1) / (d2 - d1)`` within ``4 err / (d1 (d2 - d1))`` and
    ``k1 = q1 - k2 d1`` within ``2 err / d1`` plus ``d1`` times that (the final float64 roundings
    are far smaller: 2**-53 relative).  At fp32's 30-36 fraction bits that reaches a few LSBs of
    c2; at fp16's it is negligible.
    """
    err = Decimal(2) ** -51
    h = Decimal(2) ** -tab.index_bits
    d1, d2 = (n * h for n in _nodes())
    e2 = 4 * err / (d1 * (d2 - d1))
    e1 = 2 * err / d1 + e2 * d1
    return Decimal("0.5") + e1 * 2 ** tab.c1_frac, Decimal("0.5") + e2 * 2 ** tab.c2_frac


CASES = [(func, fmt) for fmt in ("fp16", "fp32") for func in ("exp", "log", "recip")]


@pytest.mark.parametrize("func,fmt_name", CASES)
def test_table_coefficients(func, fmt_name):
    """Every c0 is the nearest integer to the kernel at its segment start (no ties: the kernels
    at dyadic points are irrational or, for 1/(1+v), have an odd denominator, except at v = 0
    where the value is an integer); every c1 and c2 is within rounding plus the float64 allowance
    of the exact interpolating quadratic's coefficient."""
    tab = _table(func, FORMATS[fmt_name])
    with _ctx():
        allow1, allow2 = _float64_allowance(tab)
        for i in range(tab.depth):
            exact = _exact_coefficients(func, tab, i)
            for name, got, want, allow in zip(("c0", "c1", "c2"), (tab.c0[i], tab.c1[i], tab.c2[i]),
                                              exact, (None, allow1, allow2)):
                ok = abs(got - want) < Decimal("0.5") if allow is None else abs(got - want) <= allow
                assert ok, f"{func} {fmt_name} {name}[{i}] = {got}, exact {want:.6f}"


# Error of the table kernel (c0 + floor(c1 d / 2**t1) + floor(c2 sq / 2**t2), square truncated
# as the table says) against the true kernel, in LSBs of its ``out_frac`` fraction bits, at the
# points of _offsets: (lowest, highest) allowed.  Each is the envelope of the error over those
# points, measured against this file's decimal kernels, rounded outward to a whole LSB and then
# widened by one LSB: a rebuild whose c1 or c2 moves by one rounding step moves the kernel by
# less than that (at most 2**(out_frac-c1_frac-index_bits) + 2**(out_frac-c2_frac-2*index_bits),
# 0.375 LSB for fp16 exp and less elsewhere), while a segment shifted by a few LSB leaves it.  The
# negative side is the larger one where the floors and the truncated square dominate.
KERNEL_ERROR_LSB = {
    ("exp", "fp16"): (-5, 2), ("log", "fp16"): (-6, 4), ("recip", "fp16"): (-4, 2),
    ("exp", "fp32"): (-23, 2), ("log", "fp32"): (-27, 25), ("recip", "fp32"): (-23, 21),
}


def _offsets(tab):
    """Offsets inside a segment: all of them for short segments, else 65 evenly spread, the two
    interpolation nodes and their neighbours (where the fit is exact but for rounding)."""
    nb = 1 << tab.d_bits
    if nb <= 64:
        return list(range(nb))
    spread = {(k * (nb - 1)) // 64 for k in range(65)}
    with _ctx():
        nodes = {int(n * nb) + j for n in _nodes() for j in (0, 1)}
    return sorted(spread | nodes)


@pytest.mark.parametrize("func,fmt_name", CASES)
def test_table_kernel_error(func, fmt_name):
    """Each segment's polynomial, evaluated as the hardware does, stays within the stated error
    of the true kernel."""
    tab = _table(func, FORMATS[fmt_name])
    lo, hi = KERNEL_ERROR_LSB[(func, fmt_name)]
    offs = _offsets(tab)
    with _ctx():
        f = _kernel(func)
        scale_in = Decimal(2) ** tab.in_bits
        scale_out = Decimal(2) ** tab.out_frac
        for i in range(tab.depth):
            for d in offs:
                u = (i << tab.d_bits) | d
                a = d >> tab.sq_pre
                sq = (a * a) >> tab.sq_post
                g = (tab.c0[i] + ((tab.c1[i] * d) >> tab.t1_shift)
                     + ((tab.c2[i] * sq) >> tab.t2_shift))
                err = g - f(u / scale_in) * scale_out
                assert lo <= err <= hi, (f"{func} {fmt_name} kernel at u = {u:#x} (segment {i}): "
                                         f"error {err:.3f} LSB outside [{lo}, {hi}]")


@pytest.mark.parametrize("fmt_name", ["fp16", "fp32"])
def test_constants(fmt_name):
    """exp's log2(e) and log's ln(2) are the nearest integers to the exact values at their
    fraction bits (neither is near a tie)."""
    fmt = FORMATS[fmt_name]
    pe, pl = exp_params(fmt), log_params(fmt)
    with _ctx():
        log2e = 1 / Decimal(2).ln() * 2 ** pe.log2e_frac
        ln2 = Decimal(2).ln() * 2 ** pl.sum_frac
        assert abs(pe.log2e - log2e) < Decimal("0.5"), f"log2(e) = {pe.log2e}, exact {log2e:.6f}"
        assert abs(pl.ln2 - ln2) < Decimal("0.5"), f"ln 2 = {pl.ln2}, exact {ln2:.6f}"
