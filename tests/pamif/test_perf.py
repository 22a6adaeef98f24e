"""The system model's O(1) migration estimate (hw/pamif/perf.py) against the exact cycle model on
1 MB migrations of every Table 1 pair, and its API."""
import numpy as np
import pytest

from pimforge.hw.pamif.config import PAPER_PAIRS, pair_preset
from pimforge.hw.pamif.interface_timing import migration_cycles
from pimforge.hw.pamif.layout import TIERS
from pimforge.hw.pamif.migration import interleaved_list
from pimforge.hw.pamif.perf import TOLERANCE, migration_estimate


@pytest.mark.parametrize("pair", PAPER_PAIRS, ids=lambda p: f"{p[0]}_to_{p[1]}")
def test_estimate_within_tolerance_of_the_exact_model(pair):
    a, b = pair
    cfg = pair_preset(f"{a}_to_{b}")
    n = (1 << 20) // cfg.token_bytes // 4           # 256 KB: the 1 MB runs are in test_interface
    exact = migration_cycles(cfg, interleaved_list(cfg, n))
    est = migration_estimate(a, b, n, cfg.token_bytes)
    assert abs(est["cycles"] - exact) / exact < TOLERANCE, (est["cycles"], exact)


def test_api():
    r = migration_estimate("hbm3", "ddr4", n_bytes=1 << 20)
    assert set(r) == {"cycles", "seconds", "bandwidth_fraction", "slower_side_bw", "bytes"}
    assert r["bytes"] == 1 << 20
    # the slower side is the HBM3 pseudo-channel: 32 B per tBL = 4 tCK of 385 ps (the 256-bit
    # DDR4 port keeps up with its rank's 25.6 GB/s)
    assert r["slower_side_bw"] == pytest.approx(32 / (4 * 385e-12))
    assert 0 <= r["cycles"] * 1e-9 - r["seconds"] < 1e-9        # cycles round up (< 1 cycle)
    assert 0.9 < r["bandwidth_fraction"] < 1.0
    same = migration_estimate(TIERS["hbm3"], TIERS["ddr4"], 2048, 512)
    assert same["cycles"] == r["cycles"]
    vec = migration_estimate("ssd", "hbm3", np.array([0, 1, 2048]))
    assert vec["cycles"][0] == 0 and vec["cycles"][1] < vec["cycles"][2]
    # more bytes, more time; a slower pair, more time
    assert migration_estimate("hbm3", "ssd", 2048)["seconds"] > r["seconds"]
    with pytest.raises(ValueError, match="exactly one"):
        migration_estimate("hbm3", "ddr4")
