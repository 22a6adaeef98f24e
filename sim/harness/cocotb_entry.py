"""cocotb test module launched by :mod:`pimforge.sim.harness.runner` for every bench.

The job (phases, stimulus, expectations) and the manifest come from the pickle file named by the
``PIMFORGE_JOB`` environment variable; results are written beside it.
"""
import os
import pickle
import time

import cocotb

from pimforge.sim.harness.engine import run_job


@cocotb.test()
async def stream_bench(dut):
    path = os.environ["PIMFORGE_JOB"]
    with open(path, "rb") as fh:
        manifest, job = pickle.load(fh)
    t0 = time.perf_counter()
    results = await run_job(dut, manifest, job)
    wall = time.perf_counter() - t0
    with open(path + ".result", "wb") as fh:
        pickle.dump({"phases": results, "wall_s": wall}, fh)
    errors = [f"[{r.name}] {e}" for r in results for e in r.errors]
    assert not errors, "stream checker failed:\n" + "\n".join(errors)
