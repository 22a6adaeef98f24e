"""The operand sample and the calls shared by the rational-reference tests
(``tests/fp/test_rational.py`` on every Python, ``tests/fp/test_rational_vs_softfloat.py`` where
SoftFloat is installed)."""
import numpy as np

from pimforge.sim.benches.fp.common import corner_tuples, random_operands
from pimforge.sim.benches.fp.fma import fma_operands
from pimforge.sim.golden.fp.add import fp_add
from pimforge.sim.golden.fp.fma import fp_fma
from pimforge.sim.golden.fp.mul import fp_mul
from pimforge.sim.reference import rational as rat
from pimforge.sim.reference.ties import tie_operands

N_RANDOM = 3000
N_TIES = 1500
ARITY = {"add": 2, "sub": 2, "mul": 2, "fma": 3}
OPS = list(ARITY)
FMTS = ["fp16", "bf16", "fp32"]
CONVERT_PAIRS = [("fp16", "bf16"), ("fp16", "fp32"), ("bf16", "fp16"), ("bf16", "fp32"),
                 ("fp32", "fp16"), ("fp32", "bf16")]


def sample(op, fmt, seed, n_random=N_RANDOM, n_ties=N_TIES, dst=None):
    """Corners, random operand sets (plus the FMA bench's near-cancellations) and ties."""
    rng = np.random.default_rng(seed)
    arity = 1 if op == "convert" else ARITY[op]
    parts = [corner_tuples(fmt, arity), random_operands(fmt, rng, n_random, arity)]
    if op == "fma":
        parts.append(fma_operands(fmt, rng, n_random // 2))
    if op != "convert" or dst.precision < fmt.precision or dst.emin > fmt.emin:
        parts.append(tie_operands(op, fmt, rng, n_ties, dst=dst))
    return [np.concatenate([p[k] for p in parts]) for k in range(arity)]


def reference(op, fmt, ops, ftz=False):
    if op == "fma":
        return rat.fma(fmt, *ops, ftz=ftz)
    return rat.binary(op, fmt, *ops, ftz=ftz)


def golden(op, cfg, ops):
    if op in ("add", "sub"):
        return fp_add(cfg, *ops, op == "sub")
    return fp_mul(cfg, *ops) if op == "mul" else fp_fma(cfg, *ops)
