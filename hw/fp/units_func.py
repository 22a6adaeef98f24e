"""Registration of the special-function units ``fp_exp``, ``fp_log`` and ``fp_recip``.

Imported at the bottom of :mod:`pimforge.hw.fp.units`; nothing here imports that module back.
"""
from __future__ import annotations

import math

import numpy as np

from pimforge.hw.fp.configs import FpFuncConfig
from pimforge.hw.fp.exp import FpExp
from pimforge.hw.fp.log import FpLog
from pimforge.hw.fp.recip import FpRecip
from pimforge.hw.core.pipeline import streaming_cycles
from pimforge.registry import Unit, register

__all__ = ["FUNC_PRESETS", "func_operands", "edge_values"]

FUNC_PRESETS = {"fp16": {"fmt": "fp16"}, "fp32": {"fmt": "fp32"}}




def _float_bits(fmt, values) -> np.ndarray:
    """Bit patterns of ``values`` rounded to ``fmt`` (fp16 or fp32) by NumPy."""
    ftype, itype = (np.float16, np.uint16) if fmt.width == 16 else (np.float32, np.uint32)
    return np.asarray(values, dtype=np.float64).astype(ftype).view(itype).astype(np.int64)


def edge_values(fmt) -> np.ndarray:
    """Inputs where the special functions change behaviour: the exp overflow / normal-range /
    total-underflow thresholds and the last subnormal step, 1 for log, min-normal and huge
    inputs for the reciprocal, and every power of two (both signs, subnormal ones included)."""
    # ln(max finite), ln(min normal), ln(min subnormal / 2), ln(min subnormal)
    ln_edges = [math.log(fmt.to_float(fmt.max_finite)), fmt.emin * math.log(2.0),
                (fmt.emin - fmt.frac_bits - 1) * math.log(2.0),
                (fmt.emin - fmt.frac_bits) * math.log(2.0)]
    pivots = _float_bits(fmt, ln_edges + [1.0, 0.5, 2.0, 2.0 ** fmt.emin, 2.0 ** (fmt.emax - 1)])
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
    exp_range = _float_bits(fmt, rng.uniform(lo, hi, size=len(parts[1])))
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


def _bench(golden_name):
    def bench(cfg, rng, n_random=20000, seed=1):
        """Corners, then (fp16) all 65,536 inputs or (fp32) ``n_random`` sampled ones."""
        from pimforge.sim.benches.fp import operand_job
        from pimforge.sim.golden import fp_func
        golden = getattr(fp_func, golden_name)
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


register(Unit("fp_exp", "float exponential exp(a), table + quadratic, <= 1 ulp (i: a -> o: r)",
              FpFuncConfig, lambda cfg: FpExp(cfg), FUNC_PRESETS, _bench("fp_exp"), streaming_cycles))
register(Unit("fp_log", "float natural logarithm log(a), table + quadratic, <= 1 ulp (i: a -> o: r)",
              FpFuncConfig, lambda cfg: FpLog(cfg), FUNC_PRESETS, _bench("fp_log"), streaming_cycles))
register(Unit("fp_recip", "float reciprocal 1/a, table + quadratic, <= 1 ulp (i: a -> o: r)",
              FpFuncConfig, lambda cfg: FpRecip(cfg), FUNC_PRESETS, _bench("fp_recip"), streaming_cycles))
