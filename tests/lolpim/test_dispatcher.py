"""lolpim_dispatcher (LoL-PIM §5.2-5.3, the on-module DPA dispatcher): Table 4's example by hand,
the golden interpreter against hand-expanded programs, the RTL against the golden model command
for command with and without random stalls, every error code, the cycle model against the RTL's
stamps, the paper preset's buffer sizes and the config errors.  One Verilator build (default)."""
import numpy as np
import pytest
from activity_checks import assert_actions
from conftest import require_sim

from pimforge import api
from pimforge.base.errors import ConfigError
from pimforge.hw.lolpim.config import DISPATCHER_PRESETS, DispatcherConfig
from pimforge.hw.catalog import HW_UNITS
from pimforge.hw.lolpim.dispatcher_timing import (dispatch_schedule, dispatcher_activity,
                                                  dispatcher_cycles)
from pimforge.hw.lolpim.dpa import STATUS, loop_bound, word
from pimforge.sim.benches.lolpim.dispatcher import (
    cmd_beats, dispatcher_job, error_beats, map_beat, random_beats, run_beat, session_phase,
    table4_beats
)
from pimforge.sim.harness.job import Job
from pimforge.sim.golden.lolpim.dispatcher import Session

DEFAULT = DispatcherConfig(**DISPATCHER_PRESETS["small"])   # the simulation config
OPS = {"dot_prod": 0, "rd_out": 1, "wr_inp": 2}        # Table 3's commands, as the output op


@pytest.fixture(scope="module")
def run():
    require_sim("verilator")
    res = api.run_bench("lolpim_dispatcher", DEFAULT,
                        job=dispatcher_job(DEFAULT, np.random.default_rng(1)))
    assert res.passed, f"lolpim_dispatcher RTL does not match the golden model:\n{res.summary()}"
    return res


def _unpack_o(res, phase: int, stream: str = "o"):
    man = api.elaborate("lolpim_dispatcher", DEFAULT)[1]
    fields = man["streams"][stream]["fields"]
    return [{f["name"]: (p >> f["offset"]) & ((1 << f["width"]) - 1) for f in fields}
            for p in res.phases[phase].received[stream]]


# --- golden model against the paper and hand expansion -------------------------------------------

def test_table4_golden_by_hand():
    """§5.2: request 2 at T_cur = 300: LB = 2, LE = 4; its DOT-PRODs at rows 33 and 34; request
    1 (T_cur = 200: one 256-token row) at row 22."""
    assert -(-300 // 256) == 2 == loop_bound(300, 8)
    req2, req1 = Session(DEFAULT).replay(table4_beats(DEFAULT)).runs
    assert req2.loops == [(0, 2, 4)] and req1.loops == [(0, 1, 4)]
    dots = [c for c in req2.commands if c["op"] == OPS["dot_prod"]]
    assert [c["row"] for c in dots] == [33, 34] and [c["iter"] for c in dots] == [0, 1]
    assert [c["op"] for c in req2.commands] == [OPS["wr_inp"], OPS["dot_prod"], OPS["rd_out"]] * 2
    assert [c["row"] for c in req1.commands if c["op"] == OPS["dot_prod"]] == [22]
    assert (req2.code, req1.code) == (0, 0)


def test_golden_strides_and_layers_by_hand():
    """A Dyn-Loop at shift 4 with T_cur = 40 (LB = 3) over a column stride 5 and a row stride 2
    (base 1: virtual rows 1, 3, 5 -> 100 + v), two layers from layer 1."""
    w = lambda op, **f: word(DEFAULT, op, **f)    # noqa: E731
    prog = [w("wr_inp", row=9, col=7), w("dyn_loop", le=4, shift=4),
            w("dyn_modi", target=1, coef=5), w("rd_out", row=3, col=2),
            w("dyn_modi", target=0, coef=2), w("dot_prod", row=1, col=4)]
    beats = cmd_beats(prog) + [map_beat(DEFAULT, 3, v, 100 + v) for v in range(16)] + \
        [run_beat(DEFAULT, len(prog), 40, 3, layer=1, layers=3)]
    (out,) = Session(DEFAULT).replay(beats).runs
    one_layer = [(2, 9, 7)]
    for k in range(3):
        one_layer += [(1, 3, 2 + 5 * k), (0, 100 + 1 + 2 * k, 4)]
    got = [(c["op"], c["row"], c["col"]) for c in out.commands]
    assert got == one_layer * 2
    assert [c["layer"] for c in out.commands] == [1] * 7 + [2] * 7
    assert (out.code, out.index) == (0, len(prog))


def test_golden_error_codes():
    """Each error program stops where its comment says (hand-derived index and issued count)."""
    runs = Session(DEFAULT).replay(error_beats(DEFAULT)).runs
    want = [("va2pa_miss", 3, 5), ("loop_bound", 1, 1), ("loop_range", 1, 1),
            ("loop_range", 1, 1), ("nested_loop", 2, 1), ("operand_range", 2, 4),
            ("operand_range", 2, 4), ("bad_modi", 1, 1), ("bad_modi", 2, 1),
            ("bad_modi", 1, 1), ("bad_modi", 1, 1), ("bad_opcode", 1, 1),
            ("bad_config", 0, 0), ("bad_config", 0, 0), ("ok", 2, 5)]
    assert [(r.code, r.index, len(r.commands)) for r in runs] == \
        [(STATUS[c], i, n) for c, i, n in want]


# --- RTL against the golden model -----------------------------------------------------------------

def test_rtl_matches_golden(run):
    assert [p.name for p in run.phases] == ["table 4", "random session", "random stalls p=0.3",
                                            "errors"]
    # the random phases issue hundreds of commands, loops and strides included
    assert len(run.phases[1].received["o"]) > 200
    assert len({c["iter"] for c in _unpack_o(run, 1)}) > 1


def test_table4_rtl(run):
    """The RTL's own commands: LB (repetitions), LE (the body's program indices) and rows."""
    cmds = _unpack_o(run, 0)[:6]
    assert max(c["iter"] for c in cmds) + 1 == 2
    assert max(c["pc"] for c in cmds) - min(c["pc"] for c in cmds) + 1 == 4
    assert [c["row"] for c in cmds if c["op"] == OPS["dot_prod"]] == [33, 34]


def test_every_error_code(run):
    codes = [s["code"] for s in _unpack_o(run, 3, "o_status")]
    assert sorted(set(codes)) == sorted(STATUS.values())
    assert codes[-1] == STATUS["ok"]


def test_cycle_model_is_exact(run):
    """No-stall phases: every host write, command and status at the cycle the model says."""
    rng = np.random.default_rng(1)
    for ph, beats in [(run.phases[0], table4_beats(DEFAULT)),
                      (run.phases[1], random_beats(DEFAULT, rng))]:
        sc = dispatch_schedule(DEFAULT, beats)
        t0 = ph.in_stamps["i"][0]
        assert [t - t0 for t in ph.in_stamps["i"]] == sc["i"]
        assert [t - t0 for t in ph.out_stamps["o"]] == sc["o"]
        assert [t - t0 for t in ph.out_stamps["o_status"]] == sc["o_status"]


def test_activity_model_against_rtl(run):
    """The buffers' writes and reads equal :func:`dispatcher_activity` in the phases without
    errors (the model covers error-free runs), the stalled one too: the reads wait for the
    same advance as the sequencer."""
    rng = np.random.default_rng(1)
    sessions = [table4_beats(DEFAULT), random_beats(DEFAULT, rng), random_beats(DEFAULT, rng)]
    for ph, beats in zip(run.phases[:3], sessions):
        assert_actions(ph, dispatcher_activity(DEFAULT, beats), ph.name)


def test_unit_activity_against_rtl():
    """``HwUnit.activity(cfg, n)`` on the cycle model's session: n command writes, a run of
    the n DOT-PROD commands (n reads, no Va2Pa lookup)."""
    require_sim("verilator")
    n = 5
    beats = cmd_beats([word(DEFAULT, "dot_prod", row=k, col=k) for k in range(n)]) + \
        [run_beat(DEFAULT, n, 0, 0)]
    res = api.run_bench("lolpim_dispatcher", DEFAULT, job=Job([session_phase(DEFAULT, "unit", beats)]))
    assert res.passed, res.summary()
    assert res.phases[0].cycles == dispatcher_cycles(DEFAULT, n)
    assert_actions(res.phases[0], HW_UNITS["lolpim_dispatcher"].activity(DEFAULT, n))


def test_unit_cycle_model():
    """n writes, n commands one a cycle, one cycle for the layer end, the pipeline (6 cycles)."""
    assert [dispatcher_cycles(DEFAULT, n) for n in (1, 8)] == [2 * n + 1 + 6 + 1 for n in (1, 8)]
    assert api.elaborate("lolpim_dispatcher", DEFAULT)[1]["latency"] == 6


@pytest.mark.slow
def test_rtl_table5_default_matches_golden():
    """The default config (Table 5's 96 KB buffers, 15-bit rows, 80 layers) against the golden
    model: every Va2Pa entry of 48 requests written, random 256-word programs, stalls and error
    runs (about 15 s with its Verilator build: long run)."""
    require_sim("verilator")
    cfg = DispatcherConfig()
    res = api.run_bench("lolpim_dispatcher", cfg, job=dispatcher_job(cfg, np.random.default_rng(3)))
    assert res.passed, res.summary()
    assert sum(len(p.received["o"]) for p in res.phases) > 1000


# --- config --------------------------------------------------------------------------------------

def test_default_is_table5():
    """Table 5: a 96 KB DPA command buffer and a 96 KB address-map (Va2Pa) buffer, the default
    and the ``paper`` preset."""
    p = DispatcherConfig(**DISPATCHER_PRESETS["paper"])
    assert p == DispatcherConfig()
    assert p.cmd_bytes == p.map_bytes == 96 * 1024
    assert DEFAULT.cmd_depth == DEFAULT.map_depth == 64


def test_manifest_has_the_encoding():
    man = api.elaborate("lolpim_dispatcher", DEFAULT)[1]
    enc = man["encoding"]
    assert enc["opcodes"]["dyn_loop"] == 3 and enc["status"] == STATUS
    assert sum(f["width"] for f in enc["words"]["pim"]) == DEFAULT.word_bits


@pytest.mark.parametrize("sets, field", [
    ({"vrows": 12}, "vrows"), ({"vrows": 512}, "vrows"), ({"cmd_depth": 1}, "cmd_depth"),
    ({"cmd_depth": 1 << 16, "row_bits": 4, "col_bits": 4}, "cmd_depth"),
    ({"row_bits": 30}, "row_bits"), ({"max_lb": 0}, "max_lb")])
def test_config_errors(sets, field):
    """On the small config (vrows 512 > 2**row_bits = 256)."""
    with pytest.raises(ConfigError, match=f"field '{field}'") as e:
        DispatcherConfig(**{**DISPATCHER_PRESETS["small"], **sets})
    assert "\n" not in str(e.value)
