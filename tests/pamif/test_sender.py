"""pamif_sender (PAM §6.2, the command reorder unit) alone: its read requests in the predicted
order, its fill words (region, word, destination slot, data) against the golden re-layout's
reads, with and without random stalls; every bad-list status; the cycle model against the
RTL's stamps.  One Verilator build (the default config)."""
import numpy as np
import pytest
from activity_checks import assert_actions
from conftest import require_sim

from pimforge import api
from pimforge.hw.pamif.config import SIM_PRESETS, STATUS, PamifConfig, pair_preset
from pimforge.hw.pamif.sender_timing import sender_activity, sender_cycles, sender_schedule
from pimforge.registry import get_unit
from pimforge.sim.benches.pamif.common import list_lengths, make_migration
from pimforge.sim.benches.pamif.sender import sender_job

DEFAULT = PamifConfig()


def _run(cfg, seed=1):
    require_sim("verilator")
    res = api.run_bench("pamif_sender", cfg, job=sender_job(cfg, np.random.default_rng(seed)))
    assert res.passed, f"pamif_sender RTL does not match the golden model:\n{res.summary()}"
    return res


@pytest.fixture(scope="module")
def run():
    return _run(DEFAULT)


def _check_cycle_model(cfg, res, seed=1):
    mig = make_migration(cfg, np.random.default_rng(seed), min(cfg.capacity, cfg.dst_slots))
    sc = sender_schedule(cfg, mig.entries)
    ph = res.phases[0]
    assert ph.out_stamps["o_rd"] == sc["rd"]
    assert ph.out_stamps["o_fill"] == sc["fill"]
    assert ph.in_stamps["i_free"] == sc["free"]
    assert ph.out_stamps["o_status"] == [sc["status"]] and ph.cycles == sc["cycles"]


def test_rtl_matches_golden(run):
    assert [p.name for p in run.phases] == ["ideal memory", "random stalls p=0.3", "bad lists"]
    n = min(DEFAULT.capacity, DEFAULT.dst_slots)
    for ph in run.phases[:2]:
        assert len(ph.received["o_rd"]) == len(ph.received["o_fill"]) == n * DEFAULT.src_words


def test_bad_lists(run):
    codes = [p & 7 for p in run.phases[2].received["o_status"]]
    assert sorted(set(codes)) == sorted(STATUS.values())
    assert codes[0] == codes[-1] == 0


def test_cycle_model_is_exact(run):
    _check_cycle_model(DEFAULT, run)


def _check_activity(cfg, res, seed=1):
    """One random list without stalls (the unit's ``activity(cfg, n)``), another with stalls,
    and the bad-list session, whose lists (their lengths from the job's ``last`` beats) are
    stored entry by entry whatever their checks decide, the too-long one up to ``capacity``."""
    job = sender_job(cfg, np.random.default_rng(seed))
    n = min(cfg.capacity, cfg.dst_slots)
    for ph in res.phases[:2]:
        assert_actions(ph, get_unit("pamif_sender").activity(cfg, n))
    lengths = list_lengths(job.phases[2].inputs["i_cmd"])
    assert_actions(res.phases[2], sender_activity(cfg, *lengths))


def test_activity_model_is_exact(run):
    _check_activity(DEFAULT, run)


def test_activity_model_stores_at_most_capacity():
    """Source and destination slots are 5 bits each (32 slots of 8-byte tokens; one memory
    shape, so one key), queue entries 4 bits (16 entries): a 20-entry list stores 16."""
    assert sender_activity(DEFAULT, 20, 3) == {"sram:write:16x5": 2 * 19, "sram:write:16x4": 19}


def test_unit_cycle_model():
    """Slots 0 .. n-1 spread over both source groups: one read a cycle after the load."""
    n = 8
    assert sender_cycles(DEFAULT, n) >= n + 2 + n * DEFAULT.src_words


@pytest.mark.slow
@pytest.mark.parametrize("preset", [p for p in SIM_PRESETS if p != "small_hbm_to_ddr"])
def test_every_small_pair(preset):
    cfg = pair_preset(preset)
    res = _run(cfg, seed=2)
    _check_cycle_model(cfg, res, seed=2)
    _check_activity(cfg, res, seed=2)
