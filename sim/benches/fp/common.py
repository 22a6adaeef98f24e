"""Benches for the float units: stimulus (corners + random), golden expectations, stall phases.

The default run checks all corner tuples and ``n_random`` random operand sets with no stalls,
then replays every corner tuple and a stratified quarter of the random sets, shuffled, with
random stalls on both the valid and the ready side.  Half of the random pairs are uniform bit
patterns (large alignment shifts, subnormals, specials); the other half put the second operand's
exponent within a few steps of the first's, which exercises cancellation and rounding.

The stall phase must see every kind of operand, or a datapath bug that only one kind exposes
passes it (a prefix of the random sets is all nearby-exponent pairs, which never shift a bit
into the alignment sticky).  :func:`stall_selection` therefore samples each stratum, the
bench's generation class crossed with :func:`operand_kinds`, on its own.
"""
from __future__ import annotations

import itertools

import numpy as np

from pimforge.sim.harness.job import Job, Phase
from pimforge.sim.harness.stall import StallPattern

__all__ = ["random_operands", "random_classes", "corner_tuples", "operand_kinds", "KINDS",
           "stall_selection", "operand_job", "STALL_P", "STALL_SHARE", "STALL_MIN_PER_STRATUM"]

STALL_P = 0.3
# The stall phase replays about n_random / STALL_SHARE random sets, the same share of each
# stratum, and at least STALL_MIN_PER_STRATUM of every stratum (all, when it holds fewer), so
# that rare kinds (fp32 subnormals are 1 in 256 uniform patterns) are not left to chance.
STALL_SHARE = 4
STALL_MIN_PER_STRATUM = 32

# Names of the values of operand_kinds().
KINDS = ("special", "zero or subnormal", "large shift", "near, signs differ", "near, same sign",
         "other")


def random_operands(fmt, rng, n: int, arity: int) -> list:
    """``arity`` arrays of ``n`` bit patterns: half uniform, half with nearby exponents
    (the first half; see :func:`random_classes`)."""
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


def random_classes(n: int) -> np.ndarray:
    """The generation class of each of :func:`random_operands`' ``n`` sets: 0 nearby exponents,
    1 uniform."""
    return (np.arange(n) >= n // 2).astype(np.int64)


def corner_tuples(fmt, arity: int) -> list:
    c = fmt.corner_values()
    tuples = np.array(list(itertools.product(c, repeat=arity)), dtype=np.int64)
    return [tuples[:, k] for k in range(arity)]


def operand_kinds(fmt, ops) -> np.ndarray:
    """The kind of each operand set, an index into :data:`KINDS`: any NaN or Inf operand;
    else any zero or subnormal; else (two or more operands) exponents more than ``precision +
    3`` apart (the alignment shifts a significand wholly into the sticky bit); within 1 of each
    other with the first two signs different, or the same; else ``other``."""
    ops = [np.asarray(o, dtype=np.int64) for o in ops]
    e = [(o >> fmt.frac_bits) & fmt.exp_all_ones for o in ops]
    special = np.any([x == fmt.exp_all_ones for x in e], axis=0)
    small = np.any([x == 0 for x in e], axis=0)
    kind = np.full(len(ops[0]), KINDS.index("other"), dtype=np.int64)
    if len(ops) >= 2:
        spread = np.max(e, axis=0) - np.min(e, axis=0)
        differ = ((ops[0] ^ ops[1]) & fmt.sign_bit) != 0
        near = spread <= 1
        kind = np.where(near & differ, KINDS.index("near, signs differ"), kind)
        kind = np.where(near & ~differ, KINDS.index("near, same sign"), kind)
        kind = np.where(spread > fmt.precision + 3, KINDS.index("large shift"), kind)
    kind = np.where(small, KINDS.index("zero or subnormal"), kind)
    return np.where(special, KINDS.index("special"), kind)


def stall_selection(fmt, randoms: list, classes, rng, target: int,
                    minimum: int = STALL_MIN_PER_STRATUM) -> np.ndarray:
    """Indices (sorted) of the random sets the stall phase replays, about ``target`` of them:
    from every stratum (a generation class in ``classes`` crossed with :func:`operand_kinds`),
    the same random share of its sets, at least ``minimum`` (all of them when it has fewer)."""
    n = len(randoms[0])
    share = min(1.0, target / max(1, n))
    classes = np.zeros(n, dtype=np.int64) if classes is None else np.asarray(classes, np.int64)
    strata = classes * len(KINDS) + operand_kinds(fmt, randoms)
    picked = []
    for s in np.unique(strata):
        members = np.nonzero(strata == s)[0]
        k = min(len(members), max(minimum, int(np.ceil(len(members) * share))))
        picked.append(rng.choice(members, size=k, replace=False))
    return np.sort(np.concatenate(picked)) if picked else np.zeros(0, dtype=np.int64)


def operand_job(fmt, golden, field_names, out_field, rng, n_random: int, seed: int,
                corners: list | None = None, randoms: list | None = None,
                classes=None) -> Job:
    """A two-phase job for a unit with one input stream ``i`` and one output stream ``o``.

    ``golden(*operands) -> dict or array`` gives the expected output fields.  ``classes`` names
    the generation class of each random set (default: :func:`random_classes` when the randoms are
    :func:`random_operands`' own, else one class); the stall phase replays all corners and
    :func:`stall_selection`'s sets, in a shuffled order so that kinds follow each other.
    """
    arity = len(field_names)
    corners = corners if corners is not None else corner_tuples(fmt, arity)
    if randoms is None:
        randoms = random_operands(fmt, rng, n_random, arity)
        classes = random_classes(n_random) if classes is None else classes
    full = [np.concatenate([c, r]) for c, r in zip(corners, randoms)]
    # Separate from ``rng`` so that the stall phase's choice leaves the no-stall phase as it was.
    pick_rng = np.random.default_rng([seed, 2])
    chosen = len(corners[0]) + stall_selection(fmt, randoms, classes, pick_rng,
                                                max(1, n_random // STALL_SHARE))
    order = pick_rng.permutation(np.concatenate([np.arange(len(corners[0])), chosen]))
    short = [x[order] for x in full]

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
