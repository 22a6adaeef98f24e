"""The stall phase of a float unit's bench, run on its own.

The bench's stall phase replays all corners and a stratified sample of the random operand sets
(:func:`~pimforge.sim.benches.fp.common.stall_selection`).  Run alone, it must catch a datapath
bug by itself: a stall phase that only ever sees easy operands passes wherever the no-stall
phase fails, and then proves nothing about the handshake under stalls.
"""
import numpy as np
from conftest import require_sim
from fp_checks import N_RTL_RANDOM

from pimforge import api
from pimforge.registry import get_unit
from pimforge.sim.harness.job import Job


def rtl_stall_phase_alone(unit, cfg, seed=1, n_random=N_RTL_RANDOM):
    """Run only the bench's stall phase on the RTL; it must match the golden model."""
    require_sim("verilator")
    job = get_unit(unit).bench(cfg, np.random.default_rng(seed), n_random=n_random, seed=seed)
    stall = job.phases[1]
    assert stall.valid_stall and stall.ready_stall, "the bench's second phase has no stalls"
    res = api.run_bench(unit, cfg, seed=seed, job=Job(phases=[stall]))
    assert res.passed, f"{unit} stall phase alone:\n{res.summary()}\nlog: {res.log}"
    return res
