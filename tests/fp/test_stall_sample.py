"""What the float benches replay under stalls: every corner, and operands of every kind and
every generation class (no prefix of the random sets, which was all nearby-exponent pairs).

Cheap checks on the bench's job (no simulation); tests/fp/test_add.py runs the stall phase on
the RTL by itself (``-k stall``).
"""
import numpy as np
import pytest

from pimforge.registry import get_unit
from pimforge.sim.benches.fp.common import (KINDS, STALL_MIN_PER_STRATUM, STALL_SHARE,
                                            corner_tuples, operand_kinds)
from pimforge.sim.benches.fp.fma import fma_classes, window_corners

N = 10_000
# (unit, preset): every bench built on sim/benches/fp/common.py
BENCHES = [("fp_add", "fp16"), ("fp_add", "fp32"), ("fp_sub", "bf16"), ("fp_mul", "fp16"),
           ("fp_mul", "fp32"), ("fp_fma", "fp16"), ("fp_fma", "fp32"), ("fp_cmp", "fp16"),
           ("fp_convert", None), ("fp_exp", "fp32"), ("fp_log", "fp16"), ("fp_recip", "fp32")]


def _job(unit, preset):
    u = get_unit(unit)
    cfg = u.config(preset) if preset else u.default_config()
    job = u.bench(cfg, np.random.default_rng(1), n_random=N, seed=1)
    fmt = cfg.src if unit == "fp_convert" else cfg.fmt
    return fmt, job


def _tuples(ops):
    return set(zip(*[np.asarray(o).tolist() for o in ops]))


@pytest.mark.parametrize("unit,preset", BENCHES)
def test_stall_phase_samples_every_kind(unit, preset):
    fmt, job = _job(unit, preset)
    full, stall = (list(p.inputs["i"].values()) for p in job.phases)
    arity = len(full)
    n_full, n_stall = len(full[0]), len(stall[0])
    # about a quarter of the random sets, plus the corners and the strata minimums
    assert N // STALL_SHARE < n_stall < N // STALL_SHARE + len(KINDS) * 3 * STALL_MIN_PER_STRATUM \
        + len(corner_tuples(fmt, arity)[0]) + 200
    # every replayed set is one of the no-stall phase's, and so are its expected outputs
    assert _tuples(stall) <= _tuples(full)
    kinds, all_kinds = operand_kinds(fmt, stall), operand_kinds(fmt, full)
    wanted = KINDS if arity >= 2 else ("special", "zero or subnormal", "other")
    for name in wanted:
        k = KINDS.index(name)
        have = np.count_nonzero(all_kinds == k)
        assert have and np.count_nonzero(kinds == k) >= min(have, STALL_MIN_PER_STRATUM), name
    if arity >= 2 and unit != "fp_fma":
        # alignment shifts that put some bits, not all, into the sticky bit
        e = [(np.asarray(o) >> fmt.frac_bits) & fmt.exp_all_ones for o in stall[:2]]
        d = np.abs(e[0] - e[1])
        assert np.count_nonzero((d > 3) & (d <= fmt.precision + 3) & (e[0] > 0) & (e[1] > 0)) \
            >= STALL_MIN_PER_STRATUM
    # random sets from the whole stream, not a prefix of it: the no-stall phase's last quarter
    # (random sets only) is replayed at about the same share as the rest
    n_corner = len(corner_tuples(fmt, arity)[0]) + (len(window_corners(fmt)[0]) if unit == "fp_fma"
                                                   else 0)
    n_rand = n_full - n_corner
    back = _tuples([o[n_full - n_rand // 4:] for o in full])
    share = len(_tuples(stall) & back) / len(back)
    assert share > 0.5 * N / n_rand / STALL_SHARE, share


@pytest.mark.parametrize("preset", ["fp16", "fp32"])
def test_fma_stall_phase_samples_every_class(preset):
    """Each part of the FMA stimulus (random, near-cancellation, c near the product) is
    replayed under stalls in proportion."""
    fmt, job = _job("fp_fma", preset)
    full, stall = (list(p.inputs["i"].values()) for p in job.phases)
    n_corner = len(full[0]) - N
    classes = fma_classes(N)
    got = _tuples(stall)
    for c in range(3):
        idx = n_corner + np.nonzero(classes == c)[0]
        members = _tuples([o[idx] for o in full])
        share = len(got & members) / len(members)
        assert 0.8 / STALL_SHARE < share < 1.6 / STALL_SHARE, (c, share)


def test_stall_phase_is_shuffled():
    """Kinds follow each other under stalls: the corners are not all replayed first."""
    fmt, job = _job("fp_add", "fp16")
    stall = list(job.phases[1].inputs["i"].values())
    corners = _tuples(corner_tuples(fmt, 2))
    head = list(zip(*[o[:len(corners)].tolist() for o in stall]))
    assert 0 < sum(t in corners for t in head) < len(corners) // 2
