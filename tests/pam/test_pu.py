"""pam_pu: golden model vs float64, RTL vs golden (bit-exact, with and without stalls), the cycle
model vs RTL cycle counts, utilization, and config errors."""
import re

import numpy as np
import pytest
from activity_checks import assert_actions
from conftest import require_sim

from pimforge import api
from pimforge.base import numerics as num
from pimforge.base.errors import ConfigError, UserError
from pimforge.base.formats import FP16, FP32
from pimforge.hw.catalog import HW_UNITS
from pimforge.hw.pam.config import PamPuConfig
from pimforge.hw.pam.pu_timing import pu_activity, pu_cycles, pu_schedule
from pimforge.registry import get_unit
from pimforge.sim.benches.pam.beats import pu_beats
from pimforge.sim.benches.pam.pu import DEFAULT_SETS, pu_expected, pu_job, random_set
from pimforge.sim.golden.pam import pu as g_pu
from pimforge.sim.golden.pam import system as g_sys
from pimforge.sim.harness.job import Job, Phase
from pimforge.software.devices import PAM_TIERS

UNIT = get_unit("pam_pu")


def _rel_err(acc, r, q16, k16, v16, scale):
    o = num.bits_float(acc, r["O"]) / num.bits_float(acc, [r["l"]])[0]
    ref = g_sys.attention_f64(*(num.bits_float(FP16, x) for x in (q16, k16, v16)), scale)
    return np.abs(o - ref).max() / np.abs(ref).max()


@pytest.mark.parametrize("acc, tol", [(FP16, 4e-3), (FP32, 1e-3)])
def test_golden_partial_against_float64(acc, tol):
    """One PU's normalized partial O/l against float64 attention over its 1000 tokens."""
    cfg = PamPuConfig(acc=acc)
    rng = np.random.default_rng(3)
    q16, k16, v16 = random_set(cfg, rng, 1000)
    r = g_pu.pu_local_attention(acc, cfg.scale, q16, k16, v16, cfg.tile_tokens)
    assert _rel_err(acc, r, q16, k16, v16, cfg.scale) <= tol


def test_golden_tile_size_does_not_change_the_answer_beyond_rounding():
    cfg = PamPuConfig(acc=FP32)
    rng = np.random.default_rng(4)
    q16, k16, v16 = random_set(cfg, rng, 100)
    outs = [g_pu.pu_local_attention(FP32, cfg.scale, q16, k16, v16, t) for t in (1, 7, 16, 64)]
    norm = [num.bits_float(FP32, r["O"]) / num.bits_float(FP32, [r["l"]])[0] for r in outs]
    for o in norm[1:]:
        assert np.abs(o - norm[0]).max() <= 1e-5 * np.abs(norm[0]).max()


def _run(cfg, job):
    require_sim("verilator")
    res = api.run_bench("pam_pu", cfg, job=job)
    assert res.passed, f"pam_pu RTL does not match the golden model:\n{res.summary()}\nlog: {res.log}"
    return res


@pytest.fixture(scope="module")
def hbm_run():
    """The hbm tier preset (16 lanes, d = 128, fp16): default sets, no stalls then random stalls."""
    cfg = UNIT.preset_config("hbm")
    return cfg, _run(cfg, pu_job(cfg, np.random.default_rng(1), seed=1))


def test_rtl_hbm_matches_golden_with_and_without_stalls(hbm_run):
    cfg, res = hbm_run
    assert [p.name for p in res.phases] == ["no stalls", "random stalls p=0.3"]
    assert len(res.phases[0].received["o"]) == len(DEFAULT_SETS) * cfg.beats


def test_rtl_hbm_cycle_model_is_exact(hbm_run):
    """The no-stall phase runs the default sets back to back; the model predicts its length."""
    cfg, res = hbm_run
    ph = res.phases[0]
    sched = pu_schedule(cfg, DEFAULT_SETS)
    assert ph.cycles == sched[-1][1] + 1
    outs = ph.out_stamps["o"]
    assert [outs[i * cfg.beats] for i in range(len(DEFAULT_SETS))] == [s[0] for s in sched]


def test_rtl_hbm_utilization_at_1024_tokens(hbm_run):
    """One beat per cycle at steady state: >= 0.97 of the cycles move a K or V beat for N = 1024,
    including the tile merges (rescaling of O), and the cycle model agrees exactly."""
    cfg, _ = hbm_run
    n = 1024
    job = pu_job(cfg, np.random.default_rng(7), sets=(n,), stalls=False)
    res = _run(cfg, job)
    ph = res.phases[0]
    kv = ph.in_stamps["i_kv"]
    busy = len(kv)
    assert busy == 2 * n * cfg.beats
    elapsed = ph.out_stamps["o"][-1] + 1 - kv[0]
    assert busy / elapsed >= 0.97
    assert kv == list(range(kv[0], kv[0] + busy)), "the PU stalled its input"
    assert ph.cycles == pu_cycles(cfg, n)
    # the run is the cycle model's job, so the registry's activity model predicts its actions
    assert_actions(ph, UNIT.activity(cfg, n))


def test_rtl_hbm_activity_model_is_exact(hbm_run):
    """The probe counts of both phases (the default sets without and with stalls) equal the
    activity model's: every action follows a token, tile or beat, not the cycles the stalls
    add."""
    cfg, res = hbm_run
    for ph in res.phases:
        assert_actions(ph, pu_activity(cfg, DEFAULT_SETS), ph.name)


def test_checker_catches_a_one_bit_error(hbm_run):
    cfg, _ = hbm_run
    job = pu_job(cfg, np.random.default_rng(1), seed=1, sets=(5,), stalls=False)
    exp = job.phases[0].expected["o"]
    exp["data"][1] ^= 1 << 37
    require_sim("verilator")
    res = api.run_bench("pam_pu", cfg, job=job)
    assert not res.passed
    assert "transfer #1" in res.summary() or any("transfer #1" in e for e in res.phases[0].errors)


@pytest.mark.parametrize("overrides, sets", [
    # long run (the suite's time budget, 42 s): fp32 accumulation is the same generator in
    # another format, and the default run's hbm preset and the RAW edge below are fp16
    pytest.param({"lanes": 4, "head_dim": 64, "acc": "fp32", "tile_tokens": 8}, (1, 3, 8, 9, 30),
                 marks=pytest.mark.slow),
    # the O_t / l_t read-after-write edge: B = 8 beats per row and op_depth 7, so each beat's
    # fma result is written back in the cycle before the next token reads it
    ({"lanes": 8, "head_dim": 64, "op_depth": 7}, (1, 17, 40)),
    # the same edge at op_depth 15 (B = 16): every float operation 15 registers deep
    pytest.param({"lanes": 4, "head_dim": 64, "op_depth": 15}, (1, 17, 40),
                 marks=pytest.mark.slow),
])
def test_rtl_other_configs(overrides, sets):
    """A 4-lane (DDR-like) PU with fp32 accumulation and short tiles, and a PU at the deepest
    op_depth its row allows: bit-exact, stalls, the exact cycle model (including the
    tile-merge interlock of one-token tiles) and the exact activity model."""
    cfg = UNIT.config(None, overrides)
    res = _run(cfg, pu_job(cfg, np.random.default_rng(2), seed=2, sets=sets))
    assert res.phases[0].cycles == pu_schedule(cfg, sets)[-1][1] + 1
    for ph in res.phases:
        assert_actions(ph, pu_activity(cfg, sets), ph.name)


def test_presets_and_manifest():
    # the tier presets set the PU width; the system model's devices run at the clocks the
    # presets' netlists support (checked against synthesis in test_synth_timing): the paper's
    # where the netlist meets it (HBM's 666 MHz at op_depth 3, DDR's 500), below it for SSD
    for name, lanes, paper in (("hbm", 16, 666.0), ("ddr", 4, 500.0), ("ssd", 16, 1000.0)):
        cfg = UNIT.preset_config(name)
        assert cfg.lanes == PAM_TIERS[name].lanes == lanes
        clock = HW_UNITS["pam_pu"].clocks[name]
        assert PAM_TIERS[name].clock_mhz == clock.mhz <= clock.paper_mhz == paper
        assert (clock.mhz == paper) == (name != "ssd")
    ddr = UNIT.preset_config("ddr")
    assert (ddr.lanes, ddr.beats) == (4, 32)
    man = api.elaborate("pam_pu", ddr)[1]
    assert set(man["streams"]) == {"i_q", "i_kv", "o"}
    assert man["streams"]["i_kv"]["fields"][0]["format"] == "fp16x4"
    # Q (256 B) and O (256 B) at d = 128: the storage the PU actually holds
    assert man["storage_bytes"] == 512 and "buffer_fits" not in man


@pytest.mark.parametrize("field, value", [("clock_mhz", 500.0), ("buffer_bytes", 512)])
def test_removed_parameters_are_unknown_fields(field, value):
    """clock_mhz (the tier clock lives in software/devices.py) and buffer_bytes (it only set a
    manifest flag) changed nothing in the RTL or the cycle model: they are no longer fields."""
    with pytest.raises(UserError, match=f"pam_pu: unknown field '{field}'"):
        UNIT.config(None, {field: value})
    assert field not in {f for p in UNIT.presets for f in UNIT.presets[p]}


@pytest.mark.parametrize("overrides, field", [
    ({"lanes": 64, "head_dim": 128}, "lanes"),
    ({"lanes": 12}, "lanes"),
    ({"head_dim": 96}, "head_dim"),
    ({"acc": "bf16"}, "acc"),
    ({"tile_tokens": 0}, "tile_tokens"),
    ({"op_depth": 17, "lanes": 2}, "op_depth"),         # above the float operators' 16
    ({"op_depth": 9}, "op_depth"),
    ({"op_depth": 8}, "op_depth"),                      # B = 8: a beat's fma may take 7
    ({"op_depth": 4, "head_dim": 64}, "op_depth"),      # B = 4
])
def test_bad_config_names_the_field(overrides, field):
    with pytest.raises(ConfigError) as e:
        UNIT.config(None, overrides)
    assert e.value.field == field and "pam_pu" in str(e.value)


def test_rtl_row_max_orders_signed_zeros(hbm_run):
    """Scores -0 then +0 (q = 0, K rows of opposite signs): the Row-wise Max Unit must pick +0,
    as the golden model's order (-0 < +0) says; a comparator that calls them equal would not."""
    cfg, _ = hbm_run
    d = cfg.head_dim
    q16 = np.zeros(d, dtype=np.int64)
    k16 = num.float_bits(FP16, np.stack([-np.ones(d), np.ones(d), -np.ones(d)]))
    v16 = num.float_bits(FP16, np.random.default_rng(9).standard_normal((3, d)))
    exp = pu_expected(cfg, q16, k16, v16)
    assert exp["m"][0] == 0, "golden row max of (-0, +0, -0) is +0"
    qf, kvf = pu_beats(cfg, q16, k16, v16)
    _run(cfg, Job([Phase("signed zeros", {"i_q": qf, "i_kv": kvf}, {"o": exp})]))


# Operand logic priced as a stage of the float operation it feeds (float_op ``pre``) gets a
# register of that operation's own at op_depth 12, at the same latency, and none at the presets'
# depth 2.  Unregistered, each would be an ECP5 critical path at 4 lanes, d 64, op_depth 12:
# - the O memories' read and the fma operand selects (and the tile-l add's);
# - the score memory's read into the P path's subtraction, with the P sequencer's token count
#   (in pam_device too).
@pytest.mark.parametrize("op_depth, registered", [(12, True), (2, False)])
def test_priced_operand_reads_get_a_register_when_deep(op_depth, registered):
    cfg = api.config("pam_pu", overrides={"lanes": 4, "head_dim": 64, "op_depth": op_depth})
    text, _, _ = api.elaborate("pam_pu", cfg)
    for reg in ("vfma0_p0_a", "vfma3_p0_c", "tile_l_add_p0_a", "pexp_sub_p0_a", "pexp_sub_p0_b"):
        assert (re.search(rf"\breg\b[^;]*\b{reg}\b", text) is not None) == registered, reg
