# amaranth: UnusedElaboratable=no
"""pam_device: the golden composition vs float64, RTL vs golden (bit-exact, with and without
stalls), the cycle model vs RTL cycle counts, the manifest, presets and config errors.

A small config keeps the Verilator build short (head_dim 64, 2 PUs); the device runs with lanes 4
and an RU of 8 lanes so that the collector's width converter is in the path.
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
from pimforge.hw.catalog import HW_UNITS
from pimforge.hw.pam.config import PamDeviceConfig
from pimforge.hw.pam.device import PamDevice
from pimforge.hw.pam.device_timing import device_activity, device_cycles, device_schedule
from pimforge.registry import get_unit
from pimforge.sim.benches.pam.device import DEVICE_REQUESTS, device_job
from pimforge.sim.benches.pam.pu import random_set
from pimforge.sim.golden.pam import device as g_dev
from pimforge.sim.golden.pam import system as g_sys
from pimforge.software.devices import PAM_TIERS

DEVICE = get_unit("pam_device").preset_config("small")   # 2 PUs, d = 64, 4 lanes -> 8
# the default requests plus PU 0 idle (mask 0b10) and a request without tokens (mask 0, no output)
DEVICE_SIZES = DEVICE_REQUESTS[:2] + ((0, 3), (0, 0)) + DEVICE_REQUESTS[2:]


@pytest.mark.parametrize("acc, tol", [(FP16, 4e-3), (FP32, 1e-4)])
def test_golden_composition_against_float64(acc, tol):
    """Device outputs (O/l) against float64 attention, including a PU without tokens."""
    cfg = PamDeviceConfig(head_dim=64, acc=acc)
    rng = np.random.default_rng(11)
    for n in (3, 300, 200):
        q16, k16, v16 = random_set(cfg, rng, n)
        scale = cfg.pu_config().scale
        ref = g_sys.attention_f64(*(num.bits_float(FP16, x) for x in (q16, k16, v16)), scale)
        dev = g_dev.device_attention(acc, scale, q16, k16, v16, 4, 16)
        o = num.bits_float(acc, dev["O"]) / num.bits_float(acc, [dev["l"]])[0]
        assert np.abs(o - ref).max() <= tol * np.abs(ref).max()
        assert (0 in dev["pu_counts"]) == (n < 4)


@pytest.fixture(scope="module")
def device_run():
    require_sim("verilator")
    job = device_job(DEVICE, np.random.default_rng(1), sizes=DEVICE_SIZES)
    res = api.run_bench("pam_device", DEVICE, job=job)
    assert res.passed, f"pam_device RTL != golden model:\n{res.summary()}\n{res.log}"
    return res


def test_rtl_device_matches_golden_with_and_without_stalls(device_run):
    assert [p.name for p in device_run.phases] == ["no stalls", "random stalls p=0.3"]
    for ph in device_run.phases:
        assert len(ph.received["o"]) == (len(DEVICE_SIZES) - 1) * DEVICE.head_dim // 8
        assert len(ph.in_stamps["i_q"]) == len(DEVICE_SIZES) * DEVICE.head_dim // DEVICE.lanes
    # each PU gets the K/V beats of its own tokens only (PU 1 is idle in the one-token request)
    for k in range(DEVICE.pus):
        n = sum(num.spread(s, [1, 1])[k] if isinstance(s, int) else s[k] for s in DEVICE_SIZES)
        assert len(device_run.phases[0].in_stamps[f"i_kv{k}"]) == 2 * n * 64 // DEVICE.lanes


def test_rtl_device_cycle_model(device_run):
    sched = device_schedule(DEVICE, DEVICE_SIZES)
    assert sched[3] is None
    check_schedule(device_run, sched, DEVICE.head_dim // DEVICE.ru_vector_width)
    assert device_cycles(DEVICE, DEVICE_SIZES) == sched[-1][2] + 1


def test_rtl_device_activity_model_is_exact(device_run):
    """Both phases (without and with stalls) perform the actions of the device's parts: each
    active PU's token set, the RU's merge of one partial per active PU, the mask FIFO's push
    and pop per request with tokens; idle PUs and the request without tokens add nothing."""
    for ph in device_run.phases:
        assert_actions(ph, device_activity(DEVICE, DEVICE_SIZES), ph.name)


def test_rtl_device_one_request_is_the_registry_job(device_run):
    """One request of 37 tokens (the job of the registry's cycle and activity models, on the
    same build as ``device_run``): the exact cycle count and the exact action counts."""
    unit, n = get_unit("pam_device"), 37
    res = api.run_bench("pam_device", DEVICE,
                        job=device_job(DEVICE, np.random.default_rng(4), sizes=(n,), stalls=False))
    assert res.passed, res.summary()
    assert res.phases[0].cycles == unit.cycle_model(DEVICE, n)
    assert_actions(res.phases[0], unit.activity(DEVICE, n))


@pytest.mark.slow
def test_rtl_device_at_the_synthesis_bench_config():
    """The config `pimforge bench --only synth` places on ECP5 (small, the RU as wide as the
    PUs, op_depth 12: its synth_bench): bit-exact with and without stalls, and the exact cycle
    model (RU partial beats revisited every 16 cycles, so op_depth 12 is allowed)."""
    require_sim("verilator")
    spec = HW_UNITS["pam_device"].synth_bench
    cfg = api.config("pam_device", preset=spec["preset"], overrides=spec["set"])
    assert cfg.ru_vector_width == cfg.lanes and cfg.op_depth == 12
    res = api.run_bench("pam_device", cfg, job=device_job(cfg, np.random.default_rng(3), seed=3))
    assert res.passed, f"pam_device RTL != golden model:\n{res.summary()}\n{res.log}"
    check_schedule(res, device_schedule(cfg, DEVICE_REQUESTS), cfg.head_dim // cfg.ru_vector_width)


@pytest.mark.slow
def test_rtl_device_ddr_preset_fp32():
    """The ddr preset (4-lane PUs into a 16-lane RU: four PU beats per RU beat, d = 128) with
    an fp32 accumulator: bit-exact with and without stalls, the cycle model within 2%."""
    require_sim("verilator")
    cfg = get_unit("pam_device").config("ddr", {"acc": "fp32"})
    res = api.run_bench("pam_device", cfg, job=device_job(cfg, np.random.default_rng(2), seed=2))
    assert res.passed, f"pam_device RTL != golden model:\n{res.summary()}\n{res.log}"
    check_schedule(res, device_schedule(cfg, DEVICE_REQUESTS), cfg.head_dim // cfg.ru_vector_width)


def test_cycle_model_scales_with_the_pus():
    """Tokens spread over the PUs finish in about 1/pus of the time of one PU taking them all."""
    cfg = PamDeviceConfig(pus=4, head_dim=64)
    one = device_cycles(cfg, [[1024, 0, 0, 0]])
    four = device_cycles(cfg, [1024])
    assert 3.7 <= one / four <= 4.0
    assert device_cycles(cfg, [[0, 0, 0, 0]]) == 0


def test_manifest_lists_every_stream():
    man = PamDevice(PamDeviceConfig(pus=3, lanes=4, ru_vector_width=16)).manifest()
    assert set(man["streams"]) == {"i_q", "i_kv0", "i_kv1", "i_kv2", "o"}
    assert man["streams"]["o"]["direction"] == "out"
    q = {f["name"]: f for f in man["streams"]["i_q"]["fields"]}
    assert q["data"]["format"] == "fp16x4" and q["active"]["width"] == 3
    assert [f["name"] for f in man["streams"]["i_kv1"]["fields"]] == ["data", "is_v", "last"]
    assert man["streams"]["o"]["fields"][0]["format"] == "fp16x16"
    assert man["latency"] > 0


def test_presets():
    # the tier presets set the PU width; the system model's devices run at the clock the
    # preset's netlist supports (test_synth_timing): the paper's for HBM and DDR, below it for
    # SSD
    unit = get_unit("pam_device")
    for t, lanes, paper in (("hbm", 16, 666.0), ("ddr", 4, 500.0), ("ssd", 16, 1000.0)):
        cfg = unit.preset_config(t)
        clock = HW_UNITS["pam_device"].clocks[t]
        assert cfg.lanes == lanes and PAM_TIERS[t].clock_mhz == clock.mhz
        assert clock.mhz <= clock.paper_mhz == paper and (clock.mhz == paper) == (t != "ssd")
    assert (DEVICE.pus, DEVICE.lanes, DEVICE.ru_vector_width, DEVICE.head_dim) == (2, 4, 8, 64)


@pytest.mark.parametrize("overrides, field, text", [
    ({"lanes": 16, "ru_vector_width": 8}, "ru_vector_width", "multiple of lanes"),
    ({"ru_vector_width": 64, "lanes": 16}, "ru_vector_width", "head_dim/4"),
    ({"pus": 0}, "pus", ""),
    # the RU revisits a beat every head_dim/ru_vector_width = 4 cycles, the PU every 32
    ({"lanes": 4, "ru_vector_width": 32, "op_depth": 4}, "op_depth",
     "at most head_dim/ru_vector_width - 1 = 3"),
    ({"op_depth": 8}, "op_depth", "at most head_dim/lanes - 1 = 7"),
])
def test_bad_config_names_the_field(overrides, field, text):
    with pytest.raises(ConfigError) as e:
        api.config("pam_device", overrides=overrides)
    assert e.value.field == field and "pam_device" in str(e.value) and text in str(e.value)


def test_clock_mhz_is_an_unknown_field():
    """The device's clock changed nothing in the RTL or the cycle model: it is no longer a
    field (the tier clocks live in software/devices.py)."""
    with pytest.raises(UserError, match="pam_device: unknown field 'clock_mhz'"):
        get_unit("pam_device").config(None, {"clock_mhz": 500.0})
