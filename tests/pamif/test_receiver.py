"""pamif_receiver (PAM §6.2, the address generation unit): released words to writes at the
destination layout's addresses (§6.1), data from the golden re-layout, with and without random
stalls; the cycle model against the RTL.  One Verilator build (the default config)."""
import numpy as np
import pytest
from activity_checks import assert_actions
from conftest import require_sim

from pimforge import api
from pimforge.hw.pamif.config import SIM_PRESETS, PamifConfig, pair_preset
from pimforge.hw.pamif.layout import slot_fields
from pimforge.hw.pamif.receiver_timing import receiver_cycles
from pimforge.hw.pamif.streams import bits
from pimforge.registry import get_unit
from pimforge.sim.benches.pamif.common import make_migration
from pimforge.sim.benches.pamif.receiver import receiver_job


def _run(cfg, seed=1):
    require_sim("verilator")
    res = api.run_bench("pamif_receiver", cfg, job=receiver_job(cfg, np.random.default_rng(seed)))
    assert res.passed, f"pamif_receiver RTL does not match the golden model:\n{res.summary()}"
    return res


@pytest.fixture(scope="module")
def run():
    return _run(PamifConfig())


def _check(cfg, res, seed=1):
    """Every write lands in its token's bank group, bank, row and column (§6.1 fields decoded
    from the written address), and the no-stall phase takes one cycle per word plus one."""
    mig = make_migration(cfg, np.random.default_rng(seed), min(cfg.capacity, cfg.dst_slots))
    d, ab = cfg.dst_tier, bits(cfg.dst_tier.words())
    addrs = [p & ((1 << ab) - 1) for p in res.phases[0].received["o_wr"]]
    for k, a in enumerate(addrs):
        j, w = divmod(k, cfg.dst_words)
        g, b, row, col = slot_fields(d, cfg.token_bytes, mig.entries[j][2])
        assert a % d.row_words == col + w
        assert a // d.row_words == (g * d.banks + b) * d.rows + row
    assert res.phases[0].cycles == receiver_cycles(cfg, len(addrs))
    # no memory, no float operation: nothing to count, with or without stalls
    for ph in res.phases:
        assert_actions(ph, get_unit("pamif_receiver").activity(cfg, len(ph.received["o_wr"])))


def test_rtl_matches_golden(run):
    assert [p.name for p in run.phases] == ["no stalls", "random stalls p=0.3"]
    _check(PamifConfig(), run)


@pytest.mark.slow
@pytest.mark.parametrize("preset", [p for p in SIM_PRESETS if p != "small_hbm_to_ddr"])
def test_every_small_pair(preset):
    cfg = pair_preset(preset)
    _check(cfg, _run(cfg, seed=2), seed=2)
