"""Stimulus shared by the special-function benches (``fp_exp``, ``fp_log``, ``fp_recip``):
range-edge inputs, a sampler for fp32, and the bench itself (every fp16 input, or corners plus
``n_random`` sampled fp32 inputs)."""
from __future__ import annotations

import math

import numpy as np

from pimforge.base.numerics import float_bits
from pimforge.sim.benches.fp.common import operand_job

__all__ = ["edge_values", "func_operands", "func_bench"]


def edge_values(fmt) -> np.ndarray:
    """Inputs where the special functions change behaviour: the exp overflow / normal-range /
    total-underflow thresholds and the last subnormal step, 1 for log, min-normal and huge
    inputs for the reciprocal, and every power of two (both signs, subnormal ones included)."""
    # ln(max finite), ln(min normal), ln(min subnormal / 2), ln(min subnormal)
    ln_edges = [math.log(fmt.to_float(fmt.max_finite)), fmt.emin * math.log(2.0),
                (fmt.emin - fmt.frac_bits - 1) * math.log(2.0),
                (fmt.emin - fmt.frac_bits) * math.log(2.0)]
    pivots = float_bits(fmt, ln_edges + [1.0, 0.5, 2.0, 2.0 ** fmt.emin, 2.0 ** (fmt.emax - 1)])
    reach = 48 if fmt.width > 16 else 16
    near = (pivots[:, None] + np.arange(-reach, reach + 1)[None, :]).ravel()
    pow2_mag = np.concatenate([np.arange(1, fmt.exp_all_ones) << fmt.frac_bits,
                               1 << np.arange(fmt.frac_bits)])
    pow2 = np.concatenate([pow2_mag, pow2_mag | fmt.sign_bit])
    out = np.concatenate([near, near ^ fmt.sign_bit, pow2, fmt.corner_values()])
    return np.unique(out & ((1 << fmt.width) - 1))


def func_operands(fmt, rng, n: int) -> np.ndarray:
    """``n`` sampled inputs (for fp16 use all patterns instead): the edge values, then a mix of
    uniform bit patterns, the exp working range, the neighbourhood of 1, subnormals, and
    huge / tiny magnitudes."""
    edges = edge_values(fmt)
    if n <= len(edges):
        return rng.permutation(edges)[:n]
    rest = n - len(edges)
    parts = np.array_split(np.arange(rest), 6)
    w, fb = fmt.width, fmt.frac_bits
    uniform = rng.integers(0, 1 << w, size=len(parts[0]), dtype=np.int64)
    lo, hi = (-110.0, 95.0) if fmt.width > 16 else (-18.0, 12.0)
    exp_range = float_bits(fmt, rng.uniform(lo, hi, size=len(parts[1])))
    near_one = fmt.one + rng.integers(-(1 << (fb - 2)), 1 << (fb - 2), size=len(parts[2]))
    subnormal = rng.integers(1, 1 << fb, size=len(parts[3]), dtype=np.int64)
    huge_tiny_exp = rng.choice(np.array([0, 1, 2, fmt.exp_all_ones - 3, fmt.exp_all_ones - 2,
                                         fmt.exp_all_ones - 1]), size=len(parts[4]))
    huge_tiny = (huge_tiny_exp << fb) | rng.integers(0, 1 << fb, size=len(parts[4]))
    mid_range = rng.integers(fmt.one - (8 << fb), fmt.one + (8 << fb), size=len(parts[5]))
    signs = rng.integers(0, 2, size=rest, dtype=np.int64) * fmt.sign_bit
    sampled = np.concatenate([uniform, exp_range, near_one, subnormal | signs[parts[3]],
                              huge_tiny | signs[parts[4]], mid_range])
    ops = np.concatenate([edges, sampled & ((1 << w) - 1)])
    return rng.permutation(ops)


def func_bench(golden):
    def bench(cfg, rng, n_random=20000, seed=1):
        """Corners, then (fp16) all 65,536 inputs or (fp32) ``n_random`` sampled ones."""
        fmt = cfg.fmt
        if fmt.width <= 16:
            randoms = rng.permutation(np.arange(1 << fmt.width, dtype=np.int64))
            if n_random > len(randoms):
                randoms = np.concatenate(
                    [randoms, rng.integers(0, 1 << fmt.width, n_random - len(randoms))])
        else:
            randoms = func_operands(fmt, rng, n_random)
        corners = np.asarray(fmt.corner_values(), dtype=np.int64)
        return operand_job(fmt, lambda a: golden(cfg, a), ["a"], "r", rng, n_random, seed,
                           corners=[corners], randoms=[randoms])
    return bench
