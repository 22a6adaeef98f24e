"""Benches for the float units: stimulus (corners + random), golden expectations, stall phases.

The default run checks all corner pairs and ``n_random`` random operand sets with no stalls, then
corners plus a quarter of the random sets again with random stalls on both the valid and the
ready side.  Half of the random pairs are uniform bit patterns; the other half put the second
operand's exponent within a few steps of the first's, which exercises cancellation and rounding.
"""
from __future__ import annotations

import itertools

import numpy as np

from pimforge.sim.harness.job import Job, Phase
from pimforge.sim.harness.stall import StallPattern

__all__ = ["random_operands", "corner_tuples", "operand_job", "STALL_P"]

STALL_P = 0.3


def random_operands(fmt, rng, n: int, arity: int) -> list:
    """``arity`` arrays of ``n`` bit patterns: half uniform, half with nearby exponents."""
    width = fmt.width
    ops = [rng.integers(0, 1 << width, size=n, dtype=np.int64) for _ in range(arity)]
    half = n // 2
    base_exp = (ops[0][:half] >> fmt.frac_bits) & fmt.exp_all_ones
    for k in range(1, arity):
        delta = rng.integers(-3, 4, size=half)
        e = np.clip(base_exp + delta, 0, fmt.exp_all_ones)
        frac = ops[k][:half] & ((1 << fmt.frac_bits) - 1)
        sign = ops[k][:half] & fmt.sign_bit
        ops[k][:half] = sign | (e << fmt.frac_bits) | frac
    return ops


def corner_tuples(fmt, arity: int) -> list:
    c = fmt.corner_values()
    tuples = np.array(list(itertools.product(c, repeat=arity)), dtype=np.int64)
    return [tuples[:, k] for k in range(arity)]


def operand_job(fmt, golden, field_names, out_field, rng, n_random: int, seed: int,
                corners: list | None = None, randoms: list | None = None) -> Job:
    """A two-phase job for a unit with one input stream ``i`` and one output stream ``o``.

    ``golden(*operands) -> dict or array`` gives the expected output fields.
    """
    arity = len(field_names)
    corners = corners if corners is not None else corner_tuples(fmt, arity)
    randoms = randoms if randoms is not None else random_operands(fmt, rng, n_random, arity)
    full = [np.concatenate([c, r]) for c, r in zip(corners, randoms)]
    quarter = len(corners[0]) + max(1, n_random // 4)
    short = [x[:quarter] for x in full]

    def expected(ops):
        out = golden(*ops)
        return out if isinstance(out, dict) else {out_field: out}

    return Job(phases=[
        Phase("no stalls", inputs={"i": dict(zip(field_names, full))},
              expected={"o": expected(full)}),
        Phase(f"random stalls p={STALL_P}", inputs={"i": dict(zip(field_names, short))},
              expected={"o": expected(short)},
              valid_stall={"*": StallPattern.random(STALL_P, seed)},
              ready_stall={"*": StallPattern.random(STALL_P, seed + 1)}),
    ])
