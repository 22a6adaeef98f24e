# amaranth: UnusedElaboratable=no
"""pam_system: the golden composition vs float64, RTL vs golden (bit-exact, with and without
stalls), the cycle model vs RTL cycle counts, the manifest, presets and config errors.

The small config (head_dim 64, 2 PUs per tier) keeps the Verilator build as short as it gets;
the system RTL test (6 PUs, several minutes to build) is a long test.
"""
import numpy as np
import pytest
from activity_checks import assert_actions
from conftest import require_sim
from pam_checks import check_schedule

from pimforge import api
from pimforge.base import numerics as num
from pimforge.base.errors import ConfigError, UserError
from pimforge.base.formats import FP16, FP32
from pimforge.hw.pam.config import TIERS, PamSystemConfig
from pimforge.hw.pam.device_timing import device_cycles
from pimforge.hw.pam.system import PamSystem
from pimforge.hw.pam.system_timing import system_activity, system_cycles, system_schedule
from pimforge.registry import get_unit
from pimforge.sim.benches.pam.pu import random_set
from pimforge.sim.benches.pam.system import SYSTEM_REQUESTS, system_job
from pimforge.sim.golden.pam import system as g_sys

SYSTEM = get_unit("pam_system").preset_config("small")   # 2 PUs per tier, lanes 8/4/8 -> 8


@pytest.mark.parametrize("acc, tol", [(FP16, 4e-3), (FP32, 1e-4)])
def test_golden_composition_against_float64(acc, tol):
    """System outputs (fp16 norm) against float64 attention, including a tier without tokens."""
    cfg = PamSystemConfig(head_dim=64, acc=acc)
    rng = np.random.default_rng(11)
    for n, split in ((3, (1, 1, 1)), (300, (2, 1, 1)), (200, (1, 0, 3))):
        q16, k16, v16 = random_set(cfg, rng, n)
        scale = cfg.device_config("hbm").pu_config().scale
        ref = g_sys.attention_f64(*(num.bits_float(FP16, x) for x in (q16, k16, v16)), scale)
        sysr = g_sys.system_attention(acc, scale, q16, k16, v16, split, (2, 2, 2), 16)
        norm = num.bits_float(FP16, sysr["norm"])
        # the system's output is fp16 (half an ulp is 4.9e-4 of the value): 2e-3 at least
        assert np.abs(norm - ref).max() <= max(tol, 2e-3) * np.abs(ref).max()


@pytest.mark.slow
def test_rtl_system_matches_golden_and_cycle_model():
    """Three devices (2 PUs each, 8/4/8 lanes) and the final RU: bit-exact with and without
    stalls, idle tiers included; the exact cycle model and the exact activity model."""
    require_sim("verilator")
    res = api.run_bench("pam_system", SYSTEM, job=system_job(SYSTEM, np.random.default_rng(1)))
    assert res.passed, f"pam_system RTL != golden model:\n{res.summary()}\n{res.log}"
    reqs = [num.spread(n, split) for n, split in SYSTEM_REQUESTS]
    check_schedule(res, system_schedule(SYSTEM, reqs), SYSTEM.head_dim // SYSTEM.ru_vector_width)
    assert len(res.phases[0].in_stamps["i_kv_ddr0"]) < len(res.phases[0].in_stamps["i_kv_hbm0"])
    # the activity model, the sum of the devices' and the final RU's, on both phases
    for ph in res.phases:
        assert_actions(ph, system_activity(SYSTEM, reqs), ph.name)
    # one request split as the registry's models split it (by the tiers' PU counts), on the
    # same build: the exact cycle and action counts of the registry's job
    unit, n = get_unit("pam_system"), 23
    split = tuple(SYSTEM.pus(t) for t in TIERS)
    one = api.run_bench("pam_system", SYSTEM, job=system_job(
        SYSTEM, np.random.default_rng(2), requests=((n, split),), stalls=False))
    assert one.passed, one.summary()
    assert one.phases[0].cycles == unit.cycle_model(SYSTEM, n)
    assert_actions(one.phases[0], unit.activity(SYSTEM, n))


def test_cycle_model_is_the_device_time_plus_the_final_merge():
    """A system request on one tier costs that tier's device time plus the final merge."""
    sc = PamSystemConfig(head_dim=64)
    dev = device_cycles(sc.device_config("ddr"), [100])
    sysc = system_cycles(sc, [(0, 100, 0)])
    assert dev < sysc <= dev + 40
    assert system_cycles(sc, [(0, 0, 0)]) == 0


def test_manifest_lists_every_stream():
    sc = PamSystemConfig(hbm_pus=1, ddr_pus=2, ssd_pus=3)
    man = PamSystem(sc).manifest()
    kv = [f"i_kv_{t}{k}" for t in TIERS for k in range(sc.pus(t))]
    assert set(man["streams"]) == {"i_q_hbm", "i_q_ddr", "i_q_ssd", "o", *kv}
    assert all(man["streams"][s]["direction"] == "in" for s in kv)
    assert [f["name"] for f in man["streams"]["o"]["fields"]] == ["data", "norm", "m", "l", "lse"]
    assert man["streams"]["i_kv_ddr1"]["fields"][0]["format"] == "fp16x4"


def test_presets():
    sc = get_unit("pam_system").preset_config("default")
    assert [sc.pus(t) for t in TIERS] == [4, 4, 4]
    assert [SYSTEM.pus(t) for t in TIERS] == [2, 2, 2] and SYSTEM.head_dim == 64


@pytest.mark.parametrize("overrides, field, text", [
    ({"ddr_lanes": 32}, "ru_vector_width", "multiple of ddr_lanes (32)"),
    ({"ssd_lanes": 12}, "ssd_lanes", "power of two"),
    ({"hbm_pus": 17}, "hbm_pus", ""),
])
def test_bad_config_names_the_field(overrides, field, text):
    with pytest.raises(ConfigError) as e:
        api.config("pam_system", overrides=overrides)
    assert e.value.field == field and "pam_system" in str(e.value) and text in str(e.value)


def test_clock_mhz_is_an_unknown_field():
    """The system has no clock field: the tier clocks live in software/devices.py."""
    with pytest.raises(UserError, match="pam_system: unknown field 'clock_mhz'"):
        get_unit("pam_system").config(None, {"clock_mhz": 500.0})
