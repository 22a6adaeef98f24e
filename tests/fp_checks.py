"""Checks shared by the float-unit tests: golden vs SoftFloat, RTL vs golden, cycle behaviour."""
import os

import numpy as np

from conftest import assert_matches_reference, require_sim
from pimforge import api
from pimforge.sim.benches.fp.common import corner_tuples, random_operands

N_SOFTFLOAT_RANDOM = 1_000_000
# RTL random operations per unit and format: 20,000 by default; PIMFORGE_LONG=1 raises it to
# 500,000 and PIMFORGE_RTL_RANDOM=N sets it explicitly (each unit's builds are reused).
N_RTL_RANDOM = int(os.environ.get("PIMFORGE_RTL_RANDOM",
                                  500_000 if os.environ.get("PIMFORGE_LONG", "") not in ("", "0") else 20_000))


def golden_vs_reference(fmt, golden, reference, arity, seed, n_random=N_SOFTFLOAT_RANDOM, ftz=False,
                        label=""):
    """Corner tuples plus ``n_random`` random tuples: golden must equal the reference bit for bit.

    With ``ftz`` the reference is SoftFloat on flushed inputs with the result flushed afterwards.
    Returns the number of mismatches (always 0, or the assertion fires).
    """
    from pimforge.sim.reference.softfloat import flush_subnormals
    ops = [np.concatenate([c, r]) for c, r in
           zip(corner_tuples(fmt, arity), random_operands(fmt, np.random.default_rng(seed), n_random, arity))]
    got = golden(*ops)
    ref_ops = [flush_subnormals(fmt, o) for o in ops] if ftz else ops
    ref = reference(*ref_ops)
    if ftz:
        ref = flush_subnormals(fmt, ref)
    return assert_matches_reference(fmt, got, ref, ops, label)


def rtl_bench_and_cycles(unit, cfg, seed=1, n_random=N_RTL_RANDOM):
    """Run the unit's bench (corners + random, then with random stalls) and assert the cycle
    contract: N back-to-back ops finish within N + latency + 2 cycles, the measured latency
    equals the manifest's, and the unit's cycle model predicts the measured cycle count exactly."""
    require_sim("verilator")
    res = api.run_bench(unit, cfg, seed=seed, n_random=n_random)
    assert res.passed, f"{unit} RTL does not match the golden model:\n{res.summary()}\nlog: {res.log}"
    nostall = res.phases[0]
    n = len(nostall.in_stamps["i"])
    assert n >= n_random
    latency = res.manifest["latency"]
    measured = nostall.out_stamps["o"][0] - nostall.in_stamps["i"][0]
    assert measured == latency, f"measured latency {measured} != manifest latency {latency}"
    assert nostall.cycles <= n + latency + 2, f"{n} ops took {nostall.cycles} cycles"
    # every cycle after the pipeline fills moves one operation
    assert nostall.in_stamps["i"] == list(range(n)), "input stream stalled with no back-pressure"
    from pimforge.registry import get_unit
    predicted = get_unit(unit).cycle_model(cfg, n)
    assert predicted == nostall.cycles, f"cycle model {predicted} != RTL {nostall.cycles} cycles"
    return res
