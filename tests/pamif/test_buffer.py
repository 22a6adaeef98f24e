"""pamif_buffer (PAM §6.2): the RTL against the golden re-layout (bit-exact, token order and the
sender's interleaved order with random stalls on both sides), the cycle model against the RTL's
cycle count, and the default config's size (kept small for k-induction).

Two Verilator builds: the default config (HBM-like 32-bit words into DDR-like 8-bit words, 4
regions of 8 bytes) and the wide-from-narrow direction (lane-granular writes); the other pairs
run in the long run.
"""
import numpy as np
import pytest
from activity_checks import assert_actions
from conftest import require_sim

from pimforge import api
from pimforge.base.errors import ConfigError
from pimforge.hw.pamif.buffer_timing import buffer_activity, buffer_cycles, buffer_memory
from pimforge.hw.pamif.config import SIM_PRESETS, PamifConfig, pair_preset
from pimforge.registry import get_unit
from pimforge.sim.benches.pamif.buffer import buffer_job

DEFAULT = PamifConfig()


@pytest.fixture(scope="module")
def run():
    require_sim("verilator")
    res = api.run_bench("pamif_buffer", DEFAULT, job=buffer_job(DEFAULT, np.random.default_rng(1)))
    assert res.passed, f"pamif_buffer RTL does not match the golden re-layout:\n{res.summary()}"
    return res


def test_rtl_matches_golden_with_and_without_stalls(run):
    assert [p.name for p in run.phases] == ["token order", "read order, random stalls p=0.3"]
    n_tokens = len(run.phases[0].received["o_free"])
    assert n_tokens > 3 * DEFAULT.regions        # every region reused at least three times
    for ph in run.phases:
        assert len(ph.received["o"]) == n_tokens * DEFAULT.dst_words


def test_cycle_model_is_exact(run):
    ph = run.phases[0]
    assert ph.cycles == buffer_cycles(DEFAULT, len(ph.received["o_free"]))


def test_activity_model_is_exact(run):
    """Each fill word one write, each drain word one read, in token order without stalls (the
    cycle model's job: the unit's ``activity(cfg, n)``) and in the sender's order with stalls
    (the read waits for the drain, so stalls add no reads)."""
    for ph in run.phases:
        assert_actions(ph, get_unit("pamif_buffer").activity(DEFAULT, len(ph.received["o_free"])))


def test_activity_model_counts_words_not_lanes():
    """32-bit source words into 8-bit destination words: 2 writes and 8 reads of the one 32-bit
    word line per token (the default's 4 regions of 8 bytes are 8 lines)."""
    assert buffer_memory(DEFAULT) == (8, 32)
    assert buffer_activity(DEFAULT, 3) == {"sram:write:8x32": 6, "sram:read:8x32": 24}


def test_cycle_model_counts_the_window():
    """Narrow-to-wide drains faster than it fills, wide-to-narrow slower: with 4 regions the
    fill of the 5th token waits for the 1st token's release in the latter only."""
    fast = PamifConfig(src="ddr4_s", dst="hbm3_s")   # 8 fill words, 2 drain words per token
    slow = PamifConfig()                             # 2 fill words, 8 drain words per token
    # fill-bound: the last fill word at cycle 12 x 8 - 1, its two words read in the next two
    # cycles, the last leaves one cycle later; cycles count from 0
    assert buffer_cycles(fast, 12) == (12 * 8 - 1) + 2 + 1 + 1
    # drain-bound: reads from cycle 2 (after the first token's 2 fill words), 96 back to back
    assert buffer_cycles(slow, 12) == 2 + 12 * 8 + 1


def test_default_is_small_for_proofs():
    """Few regions, narrow words, no large memory at the default (k-induction)."""
    assert DEFAULT.regions == 4 and DEFAULT.wide_bits == 32
    assert DEFAULT.regions * DEFAULT.token_bytes * 8 <= 256


# small_ddr_to_hbm (8-bit words into 32-bit ones) is the default run's: the only pair whose fill
# writes one lane of a wide word (the write port's lane enables), one small build
@pytest.mark.parametrize("preset", [p if p == "small_ddr_to_hbm" else
                                    pytest.param(p, marks=pytest.mark.slow)
                                    for p in SIM_PRESETS if p != "small_hbm_to_ddr"])
def test_rtl_every_small_pair(preset):
    require_sim("verilator")
    cfg = pair_preset(preset)
    res = api.run_bench("pamif_buffer", cfg, job=buffer_job(cfg, np.random.default_rng(2)))
    assert res.passed, res.summary()
    assert res.phases[0].cycles == buffer_cycles(cfg, len(res.phases[0].received["o_free"]))
    for ph in res.phases:
        assert_actions(ph, buffer_activity(cfg, len(ph.received["o_free"])))


def test_config_errors():
    with pytest.raises(ConfigError, match="'regions'.*power of two"):
        PamifConfig(regions=6)
    with pytest.raises(ConfigError, match="'dst'.*other than src"):
        PamifConfig(src="ddr4_s", dst="ddr4_s")
    with pytest.raises(ConfigError, match="'token_bytes'.*at least two hbm3_s words"):
        PamifConfig(token_bytes=4)
    with pytest.raises(ConfigError, match="'src'.*hbm3, ddr4, ssd"):
        PamifConfig(src="hbm2")
    with pytest.raises(ConfigError, match="'dst_slots'.*at most 32"):
        PamifConfig(dst_slots=33)
