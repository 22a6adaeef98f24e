"""papi_scheduler (PAPI §5.2, the runtime FC scheduler): a Fig. 5d-like example worked by hand,
the golden model against an independent per-request simulation, the bench's token streams
against the request traces they come from, the RTL against the golden model decision for
decision with and without random stalls (edge cases included), the cycle model against the
RTL's stamps and the config errors.  One Verilator build (default config) in the default run."""
import numpy as np
import pytest
from activity_checks import assert_actions
from conftest import require_sim

from pimforge import api
from pimforge.base.errors import ConfigError
from pimforge.hw.papi.config import SCHEDULER_PRESETS, SchedulerConfig
from pimforge.hw.catalog import HW_UNITS
from pimforge.hw.papi.scheduler_timing import (scheduler_activity, scheduler_cycles,
                                               scheduler_schedule)
from pimforge.sim.benches.papi.scheduler import (
    batch_events, edge_events, fig5d_events, random_session, scheduler_job
)
from pimforge.sim.golden.papi.scheduler import (
    SchedulerModel, eos_per_iteration, finish_iterations, schedule
)

DEFAULT = SchedulerConfig()


@pytest.fixture(scope="module")
def run():
    require_sim("verilator")
    res = api.run_bench("papi_scheduler", DEFAULT,
                        job=scheduler_job(DEFAULT, np.random.default_rng(1)))
    assert res.passed, f"papi_scheduler RTL does not match the golden model:\n{res.summary()}"
    return res


def _decisions(res, phase: int) -> list:
    man = api.elaborate("papi_scheduler", DEFAULT)[1]
    fields = man["streams"]["o"]["fields"]
    return [{f["name"]: (p >> f["offset"]) & ((1 << f["width"]) - 1) for f in fields}
            for p in res.phases[phase].received["o"]]


# Fig. 5d-like, by hand: batch 4 (output lengths 4, 6, 8, 14), TLP 4, alpha 8; TLP 2 from the
# third decoding.  Iteration 1 (4 tokens each): request 0 ends.  Iteration 2: requests 1 and 2
# end (8 >= 6, 8 >= 8).  Request 3 has 8 tokens, then 2 a decoding: 10, 12, 14 -> ends in 5.
# Decisions (rlp, rlp x tlp, placement, migrate, freed, done):
#   0: 4 x 4 = 16 > 8 -> gpu, migrate (reset placement pim)
#   1: 3 x 4 = 12 -> gpu            2: 1 x 2 = 2 -> pim, migrate (TLP now 2)
#   3, 4: 1 x 2 -> pim              5: RLP 0 -> done, pim kept
FIG5D = [(0, 4, 16, "gpu", True, 0, False), (1, 3, 12, "gpu", False, 1, False),
         (2, 1, 2, "pim", True, 2, False), (3, 1, 2, "pim", False, 0, False),
         (4, 1, 2, "pim", False, 0, False), (5, 0, 0, "pim", False, 1, True)]


def _tuple(d):
    return (d.iteration, d.rlp, d.intensity, d.placement, d.migrate, d.freed, d.done)


def test_fig5d_golden_by_hand():
    assert finish_iterations([4, 6, 8, 14], [4, 4, 2]) == [1, 2, 2, 5]
    assert eos_per_iteration([4, 6, 8, 14], [4, 4, 2]) == [1, 2, 0, 0, 1]
    got = schedule(4, [4, 4, 2, 2, 2, 2], 8, [1, 2, 0, 0, 1])
    assert [_tuple(d) for d in got] == FIG5D


def test_schedule_api():
    """An int TLP; a wrong-length TLP list; the placement before the batch; iterations after
    RLP reached 0; every request finishing at once; more <eos> than requests."""
    assert [_tuple(d) for d in schedule(2, 3, 5, [0, 2])] == [
        (0, 2, 6, "gpu", True, 0, False), (1, 2, 6, "gpu", False, 0, False),
        (2, 0, 0, "gpu", False, 2, True)]
    assert schedule(2, 3, 5, [], placement="gpu")[0].migrate is False
    assert [_tuple(d) for d in schedule(3, 1, 0, [5])][1] == (1, 0, 0, "gpu", False, 3, True)
    with pytest.raises(ValueError, match="one value per decision"):
        schedule(2, [1, 1], 5, [0, 2])
    with pytest.raises(ValueError, match="after RLP reached 0"):
        schedule(2, 1, 5, [2, 0])


def _per_request(lengths, tlps, alpha):
    """Independent reference: each request's tokens so far, one decoding at a time; RLP is the
    number of unfinished requests; the placement rule of §5.2.1 as (rlp, tlp, alpha) rows."""
    made = [0] * len(lengths)
    rows = [(len(lengths), len(lengths) * tlps[0])]
    k = 0
    while any(m < n for m, n in zip(made, lengths)):
        made = [m if m >= n else m + tlps[min(k, len(tlps) - 1)] for m, n in zip(made, lengths)]
        k += 1
        rlp = sum(m < n for m, n in zip(made, lengths))
        rows.append((rlp, rlp * tlps[min(k, len(tlps) - 1)] if rlp else 0))
    return rows


def test_golden_against_per_request_reference():
    rng = np.random.default_rng(7)
    compared = 0
    for _ in range(200):
        lengths = [int(x) for x in rng.integers(1, 40, size=int(rng.integers(1, 129)))]
        tlps = [int(x) for x in rng.integers(1, 9, size=12)]
        alpha = int(rng.integers(0, 400))
        eos = eos_per_iteration(lengths, tlps)
        tl = [tlps[min(k, len(tlps) - 1)] for k in range(len(eos) + 1)]
        got = schedule(len(lengths), tl, alpha, eos)
        ref = _per_request(lengths, tlps, alpha)
        assert [(d.rlp, d.intensity) for d in got] == ref
        place = "pim"
        for d in got[:-1]:
            want = "gpu" if d.rlp * tl[d.iteration] > alpha else "pim"
            assert (d.placement, d.migrate) == (want, want != place)
            place = want
        assert got[-1].done and got[-1].placement == place and not got[-1].migrate
        assert sum(d.freed for d in got) == len(lengths)
        compared += len(got)
    assert compared > 2000


def test_bench_tokens_carry_the_trace():
    """The beat-level model over a batch's token beats (holes, masked <eos> lanes, TLP writes
    before the last beat) decides as :func:`schedule` over the trace's <eos> counts."""
    rng = np.random.default_rng(3)
    for _ in range(20):
        lengths = [int(x) for x in rng.integers(1, 20, size=int(rng.integers(1, 16)))]
        tlps = [int(x) for x in rng.integers(1, 5, size=6)]
        ev = batch_events(DEFAULT, rng, lengths, tlps, 13, int(rng.integers(256)), hole_p=0.3)
        eos = eos_per_iteration(lengths, tlps)
        tl = [tlps[min(k, len(tlps) - 1)] for k in range(len(eos) + 1)]
        got = SchedulerModel(DEFAULT).replay(ev).decisions
        assert got == schedule(len(lengths), tl, 13, eos)


# --- RTL against the golden model -----------------------------------------------------------------

def test_rtl_matches_golden(run):
    assert [p.name for p in run.phases] == ["fig 5d", "random batches", "random stalls p=0.4",
                                            "edge cases"]
    n = [len(p.received["o"]) for p in run.phases]
    assert n[1] > 40 and n[2] > 40 and n[3] == 272
    flips = [d["migrate"] for d in _decisions(run, 1) + _decisions(run, 2)]
    assert 0 < sum(flips) < len(flips)


def test_fig5d_rtl(run):
    got = [(d["iteration"], d["rlp"], d["intensity"], "gpu" if d["placement"] else "pim",
            bool(d["migrate"]), d["freed"], bool(d["done"])) for d in _decisions(run, 0)]
    assert got == FIG5D


def test_edge_cases_rtl(run):
    """By hand (eos id 7): six finish at once (6 x 2 = 12 > 5: gpu); 3 and 20 <eos> for RLP
    2 and 3 (freed 2 and 3); a batch of 0; 15 x 7 = 105 against alpha 127 then 104; a
    one-request batch of 260 iterations (the 8-bit counter wraps to 4)."""
    d = _decisions(run, 3)
    row = [(x["iteration"], x["rlp"], x["intensity"], x["placement"], x["migrate"], x["freed"],
            x["done"]) for x in d]
    assert row[:2] == [(0, 6, 12, 1, 1, 0, 0), (1, 0, 0, 1, 0, 6, 1)]
    assert row[2:6] == [(0, 2, 4, 0, 1, 0, 0), (1, 0, 0, 0, 0, 2, 1),
                        (0, 3, 6, 1, 1, 0, 0), (1, 0, 0, 1, 0, 3, 1)]
    assert row[6] == (0, 0, 0, 1, 0, 0, 1)
    assert row[7:11] == [(0, 15, 105, 0, 1, 0, 0), (1, 15, 105, 1, 1, 0, 0),
                         (2, 2, 14, 0, 1, 13, 0), (3, 0, 0, 0, 0, 2, 1)]
    assert row[11] == (0, 1, 1, 1, 1, 0, 0) and row[-1] == (260 % 256, 0, 0, 1, 0, 1, 1)
    assert len(row) == 11 + 261


def test_cycle_model_is_exact(run):
    """No-stall phases: every host write, token beat and decision at the model's cycle."""
    rng = np.random.default_rng(1)
    for ph, events in [(run.phases[0], fig5d_events(DEFAULT)),
                       (run.phases[1], random_session(DEFAULT, rng, 8))]:
        sc = scheduler_schedule(DEFAULT, events)
        t0 = min(ph.in_stamps["i_host"][0], ph.in_stamps["i"][0])
        for s in ("i_host", "i"):
            assert [t - t0 for t in ph.in_stamps[s]] == sc[s], s
        assert [t - t0 for t in ph.out_stamps["o"]] == sc["o"]


def test_activity_model_against_rtl(run):
    """No probe counts anything in any phase, as :func:`scheduler_activity` and
    ``HwUnit.activity`` say: a memory, FIFO or float operator added to the scheduler must come
    with its model."""
    rng = np.random.default_rng(1)
    sessions = [fig5d_events(DEFAULT), random_session(DEFAULT, rng, 8)]
    for ph, events in zip(run.phases, sessions):
        assert_actions(ph, scheduler_activity(DEFAULT, events), ph.name)
    for ph in run.phases:
        assert ph.probe_cycles > 0
        assert_actions(ph, HW_UNITS["papi_scheduler"].activity(DEFAULT, 1), ph.name)


def test_unit_cycle_model():
    """A start, n one-beat iterations back to back, the last decision 5 + 1 cycles later
    (one tree stage at 4 tokens a beat)."""
    assert [scheduler_cycles(DEFAULT, n) for n in (1, 8)] == [1 + n + 6 for n in (1, 8)]
    assert api.elaborate("papi_scheduler", DEFAULT)[1]["latency"] == 6


@pytest.mark.slow
@pytest.mark.parametrize("sets", [{"tokens_per_beat": 1}, SCHEDULER_PRESETS["paper"],
                                  {"tokens_per_beat": 32, "tree_levels": 1, "max_batch": 4}])
def test_rtl_other_configs(sets):
    """No tree (one token a beat); the paper preset (16 lanes, 2 tree stages); 32 lanes with
    a register at each of the 5 tree levels.  About 25 s each with the build (long run)."""
    require_sim("verilator")
    cfg = SchedulerConfig(**sets)
    res = api.run_bench("papi_scheduler", cfg, job=scheduler_job(cfg, np.random.default_rng(4)))
    assert res.passed, res.summary()
    sc = scheduler_schedule(cfg, random_session(cfg, np.random.default_rng(4), 8))
    ph = res.phases[1]
    t0 = min(ph.in_stamps["i_host"][0], ph.in_stamps["i"][0])
    assert [t - t0 for t in ph.out_stamps["o"]] == sc["o"]


# --- config --------------------------------------------------------------------------------------

def test_config_derived_widths():
    paper = SchedulerConfig(**SCHEDULER_PRESETS["paper"])
    assert (paper.rlp_bits, paper.tlp_bits, paper.ai_bits) == (8, 4, 12)     # 128 x 8 = 1024
    assert paper.tree_depth == 4 and paper.tree_stages == 2
    assert SchedulerConfig(tokens_per_beat=1).tree_stages == 0
    assert SchedulerConfig(tokens_per_beat=32, tree_levels=2).tree_stages == 3


@pytest.mark.parametrize("sets, field", [
    ({"tokens_per_beat": 3}, "tokens_per_beat"), ({"token_bits": 0}, "token_bits"),
    ({"max_batch": 0}, "max_batch"), ({"max_tlp": 256}, "max_tlp"),
    ({"iter_bits": 0}, "iter_bits"), ({"tree_levels": 6}, "tree_levels")])
def test_config_errors(sets, field):
    with pytest.raises(ConfigError, match=f"field '{field}'") as e:
        SchedulerConfig(**sets)
    assert "\n" not in str(e.value)
