"""Shared pytest fixtures and helpers.

* ``PIMFORGE_LONG=1`` enables the long sweeps (tests marked ``slow``).
* Simulator choice: Verilator always; Icarus tests skip with a reason when iverilog is absent.
* Verilator models are compiled with ``PIMFORGE_VERILATOR_OPT_FAST=-O0`` unless set.
"""
import os

# Two workers share two cores: a multi-threaded BLAS in each (the LLM tests' matrix-vector
# products) would oversubscribe them many times over.  Set before NumPy loads its BLAS.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

os.environ.setdefault("PIMFORGE_QUIET", "1")
# The suite's Verilator builds outweigh its simulations: the models' per-cycle C++ at -O0 builds
# about 30% faster (pam_ru fp32: 41 s -> 29 s) and gives the same bits; users' default stays -O1.
os.environ.setdefault("PIMFORGE_VERILATOR_OPT_FAST", "-O0")

LONG = os.environ.get("PIMFORGE_LONG", "") not in ("", "0")


# The heaviest test files (suite seconds on a fresh clone, Verilator builds included), run first:
# `make test` hands whole files to its two workers (`--dist loadfile`), so a heavy file collected
# last (the root's test_formal, test_lint, test_synth* sort after the unit folders) would leave
# the other worker idle at the end.  Within a file the order is unchanged.
HEAVY_FIRST = ("tests/test_formal.py", "tests/test_lint.py", "tests/test_synth_smoke.py",
               "tests/software/llm/test_hilos.py", "tests/software/llm/test_pam.py",
               "tests/software/llm/test_agreement.py",
               "tests/pam/test_ru.py", "tests/software/test_model_pam.py",
               "tests/software/test_reproduce_baseline.py",
               "tests/software/test_pam_attention_cli.py", "tests/software/test_hilos_attention.py",
               "tests/test_synth.py", "tests/test_ready_paths.py", "tests/hermes/test_act.py",
               "tests/hilos/test_two_pass_softmax.py", "tests/test_synth_timing.py",
               "tests/software/test_model_hermes.py", "tests/pam/test_pu.py",
               "tests/pam/test_device.py")


def _file_rank(item) -> int:
    path = item.nodeid.split("::")[0]
    return HEAVY_FIRST.index(path) if path in HEAVY_FIRST else len(HEAVY_FIRST)


def pytest_collection_modifyitems(config, items):
    from pimforge.sim.reference import softfloat
    items.sort(key=_file_rank)          # stable: files keep their own order
    skip_long = pytest.mark.skip(reason="long sweep: set PIMFORGE_LONG=1 (or `make test-long`) to run")
    skip_sf = pytest.mark.skip(reason=softfloat.UNAVAILABLE_REASON)
    for item in items:
        if "slow" in item.keywords and not LONG:
            item.add_marker(skip_long)
        if "softfloat" in item.keywords and not softfloat.available():
            item.add_marker(skip_sf)


@pytest.fixture(scope="session")
def shared_synth_cache(tmp_path_factory):
    """One synthesis cache for the whole run, shared by the pytest-xdist workers (their base
    temporary directories are siblings under the run's): a unit part or a float operator that one
    test file synthesized is not synthesized again by another (the smoke test and the ready-path
    test synthesize the same small configs; test_synth, test_synth_timing and the smoke test
    share operators).  Keys hash the Verilog, the flow and the tool versions, and one process at
    a time computes a key (synth/run.py's locks), so sharing changes no result."""
    base = tmp_path_factory.getbasetemp()
    root = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    path = root / "synth-cache-shared"
    path.mkdir(exist_ok=True)
    return path


@pytest.fixture
def synth_cache(shared_synth_cache, monkeypatch):
    """Point `pimforge synth`'s cache (``PIMFORGE_SYNTH_CACHE``) at :func:`shared_synth_cache`."""
    monkeypatch.setenv("PIMFORGE_SYNTH_CACHE", str(shared_synth_cache))
    return shared_synth_cache


def require_sim(sim: str):
    from pimforge.sim.harness.runner import simulator_available
    ok, why = simulator_available(sim)
    if not ok:
        pytest.skip(f"{sim} unavailable: {why}")


def is_nan(fmt, x):
    x = np.asarray(x, dtype=np.int64)
    e = (x >> fmt.frac_bits) & fmt.exp_all_ones
    return (e == fmt.exp_all_ones) & ((x & ((1 << fmt.frac_bits) - 1)) != 0)


def assert_matches_reference(fmt, got, ref, operands, label):
    """Bit-exact match, except that any reference NaN must be our canonical quiet NaN."""
    got = np.asarray(got, dtype=np.int64)
    ref = np.asarray(ref, dtype=np.int64)
    ok = (got == ref) | (is_nan(fmt, ref) & (got == fmt.canonical_nan))
    bad = np.nonzero(~ok)[0]
    if len(bad):
        k = bad[0]
        ops = ", ".join(hex(int(o[k])) for o in operands)
        raise AssertionError(f"{label}: {len(bad)} mismatches vs SoftFloat; first: ({ops}) -> "
                             f"golden {int(got[k]):#x}, reference {int(ref[k]):#x}")
    return 0
