"""Online-softmax building blocks of the float library: the strict ``greater``, ``exp(a - b)`` and
the running-statistics merge (PAM §5.1.1, eqs. 3-5).

:func:`merge_stats` is the shared building block: it keeps the running ``(m, l)`` and absorbs one
input ``(m_in, l_in)`` per pulse, exactly as the "merge" of :mod:`pimforge.sim.golden.pam.common`
(swap form: one exponential, one fused multiply-add).  PAM's PU, RU and ``online_softmax`` and
HILOS's two-pass softmax use it; the callers update their O vectors themselves with the returned
``g``, ``swap`` and ``first``::

    O' = first ? fma(X, 1, +0) : swap ? fma(O, g, X) : fma(X, g, O)

Datapath of one merge (cycle 0 = the input pulse)::

    cycle 0     greater(m_in, m)                 registered with the input
    cycle 1     swap, m', lo (the m register loads m' at the end of the cycle), registered
    sub         d = lo - m'  (fp32)             op_depth cycles
    convert     d to acc (fp16 acc only)        op_depth cycles
    exp         g = first ? 1 : exp(d)          op_depth + 1 cycles
    fma         l' = swap ? fma(l, g, l_in) : fma(l_in, g, l)   (first: fma(l_in, 1, +0))
                                                op_depth cycles; l register loads l'

so ``merge_latency = 3 * op_depth + 3`` with an fp32 accumulator and ``4 * op_depth + 3`` with
fp16.  The running-max loop (m -> compare -> m) spans the two registers of cycles 0 and 1: in
one cycle, an fp32 compare and a mux, it would bound the clock at any op_depth.
The maxima are in the score format (fp32, :data:`~pimforge.base.numerics.SCORE`), the sums and
exponentials in the accumulator format.

The fma reads the l register, which holds the previous merge's l' one cycle after that fma
finished: inputs must be ``merge_interval = op_depth + 1`` cycles apart or more.

The comparison is the golden model's ``greater``: the comparator's strict order (``a_below`` of
:func:`~pimforge.hw.fp.cmp.cmp_stages`, where -0 < +0) and false when either side is NaN.  The
comparator's ``greater`` *flag* treats the two zeros as equal, which would keep ``m = -0`` against
an input ``+0``; the golden model (the spec) takes ``+0``.
"""
from __future__ import annotations

from amaranth.hdl import Mux, Signal

from pimforge.base.numerics import SCORE
from pimforge.hw.core.pipeline import levels
from pimforge.hw.fp.cmp import cmp_stages
from pimforge.hw.fp.core import LV_MUX, lv_fanout
from pimforge.hw.fp.ops import delay, delay_valid, float_op, op_latency

__all__ = ["to_acc_latency", "merge_latency", "merge_interval", "greater", "exp_diff",
           "merge_stats"]


def to_acc_latency(acc, op_depth: int) -> int:
    """Cycles of the score-format to accumulator conversion (none when they are the same)."""
    return 0 if acc.width == SCORE.width else op_latency("convert", op_depth)


def merge_latency(op_depth: int, acc) -> int:
    """Cycles from a :func:`merge_stats` input pulse to its outputs (module docstring)."""
    return 2 + op_latency("sub", op_depth) + to_acc_latency(acc, op_depth) \
        + op_latency("exp", op_depth) + op_latency("fma", op_depth)


def merge_interval(op_depth: int) -> int:
    """Minimum cycles between two :func:`merge_stats` inputs (the l loop): ``op_depth + 1``."""
    return op_latency("fma", op_depth) + 1


def greater(m, a, b, name="gt", fmt=SCORE):
    """Combinational ``a > b`` of two ``fmt`` values (default the score format) in the
    comparator's strict order (-0 < +0), false on NaN: the golden model's ``greater``."""
    halves, order = cmp_stages(fmt, False)[:2]
    v = order(m, halves(m, {"a": a, "b": b}))
    gt = Signal(name=name)
    m.d.comb += gt.eq(~v["unordered"] & ~v["a_below"] & (v["a"] != v["b"]))
    return gt


def exp_diff(m, acc, op_depth, a, b, *, valid, side=None, name="expd", pre=None):
    """``exp(a - b)`` as the golden model's ``exp_diff``: an fp32 subtraction, the conversion to
    ``acc`` (fp16 only) and the ``acc`` exponential unit, all free-running.  Returns
    ``(result, valid_out, side_out)`` after ``sub + convert + exp`` cycles.  ``pre``: the
    subtraction's operand stage (``float_op``'s), where the operands come through logic."""
    d, v, s = float_op(m, "sub", SCORE, op_depth, {"a": a, "b": b}, valid=valid, side=side,
                       name=f"{name}_sub", pre=pre)
    x = d["r"]
    if acc.width != SCORE.width:
        c, v, s = float_op(m, "convert", acc, op_depth, {"a": x}, valid=v, side=s, src=SCORE,
                           name=f"{name}_cvt")
        x = c["r"]
    e, v, s = float_op(m, "exp", acc, op_depth, {"a": x}, valid=v, side=s, name=f"{name}_exp")
    return e["r"], v, s


def merge_stats(m, acc, op_depth, *, valid, first, m_in, l_in, name="ms") -> dict:
    """Running online-softmax statistics (PAM eqs. 3-5, swap form of the golden "merge").

    Parameters
    ----------
    m : the Module.
    acc : the accumulator format.
    op_depth : pipeline registers per float operation.
    valid : 1-cycle input pulse; pulses at least :func:`merge_interval` cycles apart.
    first : restart the state with this input (implied for the first input after reset).
    m_in, l_in : the input's statistics (score-format and acc bit patterns).

    Returns
    -------
    dict of ``valid``, ``first``, ``swap``, ``g``, ``m`` (new running m), ``l`` (new running l),
    valid together :func:`merge_latency` cycles after the input pulse.
    """
    w = acc.width
    m_run = Signal(SCORE.width, name=f"{name}_m")
    l_run = Signal(w, name=f"{name}_l")
    # The first input after reset always restarts the state (as in the golden model).
    fresh = Signal(init=1, name=f"{name}_fresh")
    with m.If(valid):
        m.d.sync += fresh.eq(0)
    first = first | fresh
    # Cycle 0: the comparison, registered with the input.  Cycle 1: the decision and the m
    # update, so the loop m -> compare -> m spans two registers; the next input (at least
    # merge_interval >= 2 cycles later) compares against m'.
    gt = greater(m, m_in, m_run, name=f"{name}_gt")
    c = delay(m, {"gt": gt, "first": first, "m_in": m_in, "l_in": l_in}, 1, name=f"{name}_q")
    valid1 = delay_valid(m, valid, 1, name=f"{name}_qv")
    swap = Signal(name=f"{name}_swap_in")
    m_new = Signal(SCORE.width, name=f"{name}_m_new")
    lo = Signal(SCORE.width, name=f"{name}_lo")
    m.d.comb += [swap.eq(~c["first"] & c["gt"]),
                 m_new.eq(Mux(c["first"] | c["gt"], c["m_in"], m_run)),
                 lo.eq(Mux(swap, m_run, c["m_in"]))]      # the smaller side's maximum
    with m.If(valid1):
        m.d.sync += m_run.eq(m_new)
    s0 = delay(m, {"first": c["first"], "swap": swap, "lo": lo, "m": m_new, "l_in": c["l_in"]},
               1, name=f"{name}_c")
    v0 = delay_valid(m, valid1, 1, name=f"{name}_cv")
    side = {k: s0[k] for k in ("first", "swap", "m", "l_in")}
    e, v2, s2 = exp_diff(m, acc, op_depth, s0["lo"], s0["m"], valid=v0, side=side, name=name)
    g = Signal(w, name=f"{name}_g")
    m.d.comb += g.eq(Mux(s2["first"], acc.one, e))

    # The operand select is the fma's `pre` stage: with enough op_depth a register lands right
    # after it, so the `first` and `swap` flags (each driving every operand bit) reach only
    # a multiplexer before a register, not the fma's first stage too (on ECP5 that fan-out was
    # two_pass_softmax's critical path at op_depth 16, `*_exp_p16_first` -> `*_fma_p0_nan`).
    # Its estimate counts the flags' fan-out (three operands' bits), which decides that.
    @levels(2 * LV_MUX + lv_fanout(3 * w))
    def select(m, x):
        return {"a": Mux(x["swap"], x["l"], x["l_in"]), "b": x["g"],
                "c": Mux(x["first"], 0, Mux(x["swap"], x["l_in"], x["l"]))}
    f, v3, s3 = float_op(m, "fma", acc, op_depth,
                         {"l": l_run, "l_in": s2["l_in"], "g": g, "first": s2["first"],
                          "swap": s2["swap"]}, valid=v2,
                         side={"first": s2["first"], "swap": s2["swap"], "m": s2["m"], "g": g},
                         name=f"{name}_fma", pre=select)
    with m.If(v3):
        m.d.sync += l_run.eq(f["r"])
    return {"valid": v3, "first": s3["first"], "swap": s3["swap"], "g": s3["g"], "m": s3["m"],
            "l": f["r"]}
