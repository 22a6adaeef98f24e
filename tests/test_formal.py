"""The formal flow: the stream-protocol checker, the sby runner, `pimforge prove`, unit proofs.

Every proof is shown able to fail: the checker on broken stages, the FIFO check on a FIFO with
one credit too many, the unit proofs on mutated units (``MutantShell`` between a unit and the
checker, or an output FIFO one entry too shallow for its credits), and the input-side response
on units rebuilt from their source with a one-line input-side mutation that the stream rules
pass (``RESPONSE_MUTATIONS``, the rows of tests/mutations/formal.yaml).  The full per-unit sweep is
in ``UNIT_PROOFS``; the default run proves the ones marked ``fast`` (the file: about 60 s of CPU),
``PIMFORGE_LONG=1`` the rest.
"""
import dataclasses
import types
from pathlib import Path

import pytest
from amaranth.hdl import Fragment

from formal_shells import SHELL_BUGS, STAGE_BUGS, CreditFifo, MutantShell, NeverValid, PipeStage, \
    TinyStage, zero_data
from pimforge import cli, prove_cli
from pimforge.base.errors import UserError
from pimforge.hw.catalog import HW_UNITS
from pimforge.hw.core.fanout import SplitFifo
from pimforge.hw.core.formal import FormalTop, has_response, per_transfer, unit_response
from pimforge.hw.hermes import act as hermes_act
from pimforge.hw.hermes import gemv as hermes_gemv
from pimforge.hw.lolpim import dispatcher as lolpim_dispatcher
from pimforge.hw.lolpim import pingpong as lolpim_pingpong
from pimforge.hw.pam import ru as pam_ru
from pimforge.hw.pamif import receiver as pamif_receiver
from pimforge.hw.pamif import sender as pamif_sender
from pimforge.hw.papi import pu as papi_pu
from pimforge.hw.papi import scheduler as papi_scheduler
from pimforge.synth.formal import MAX_DEPTH, default_depth, prove

# (unit, config overrides, depth or None for latency + 6, FIFO no-loss too, fast): small configs,
# depth covering one full pipeline (docs/guide/formal.md).
# The job-based units (JOB_UNITS) send their first output only after a whole job, so their depth
# is the cycle of the first output of the smallest legal job (the unit's cycle model, step 1 =
# the first cycle after reset) plus 3 to 5, and their sweep test also runs cover at that depth: a
# depth that ends before any output transfer fails instead of passing vacuously.
# hermes_act at fp16: the same control (credits, FIFO, the max/sum/normalize passes) as at fp32
# with half the datapath for the solver; its three checks take 15-17 s each instead of 29 s
ACT_SMALL = {"lanes": 4, "max_len": 8, "op_depth": 1, "acc": "fp16"}
# sv_gemv: 32 y beats (block 32, one query) then 2 V beats; first output at step 42; depth 46
# reaches the response's deadline (the job's last output beat).
SV_SMALL = {"block": 32, "beat_elems": 32, "head_dim": 64, "d_group": 1, "op_depth": 1}
# pam_ru: a request of one partial is 4 beats; first output at step 15 (a one-beat request with
# `last`, which the free input allows, already at step 12; cover first reaches `o` at depth 14);
# depth 21 reaches the response's deadline for a one-partial request (its last output beat).
RU_SMALL = {"vector_width": 16, "head_dim": 64, "op_depth": 1}
# pam_pu under its job format (hw/pam/pu_formal.py): Q 4 beats, one token's K and V rows 4 beats
# each; first output at step 40.
PAM_PU_SMALL = {"lanes": 16, "head_dim": 64, "tile_tokens": 1, "op_depth": 1}
# hermes_gemv: the first output (cover) is a column-mode job with n = 0 at step 7 (unreached at
# 6); a row-mode job of one vector, one row of one beat, is 12 cycles later in the cycle model.
GEMV_SMALL = {"multipliers": 8, "serial_cycles": 8, "beat_words": 1, "max_batch": 1,
              "buffer_bytes": 256, "op_depth": 1, "acc": "fp16"}
# lolpim_pingpong: 1 bank x 2 lanes, a 2-beat GB set, no GDDR6 I/O latencies: a one-beat load,
# a one-step drained tile, first output at step 13 (one of them the register in front of the
# accumulator bank; cover first reaches `o` at depth 17); depth 24 covers a second set of
# each (both ping-pong bits flipped).  bmc 6 s + cover 4 s of CPU.
PINGPONG_SMALL = {"banks": 1, "lanes": 2, "gb_elems": 4, "rd_latency": 0, "wr_latency": 0}
# 8-element beats: the FIFOs of 32-element ones, in a quarter of the multipliers (5 s, not 13 s)
HILOS_SMALL = {"block": 32, "beat_elems": 8, "head_dim": 64, "op_depth": 1}
# lolpim_dispatcher: 8-word program, 2 requests x 4 virtual rows, LB <= 3, 2 layers.  Its first
# command leaves at step 9 (one program write, the run, 6 cycles); depth 24 also reaches a
# Dyn-Loop's redirect and a run's status (cover).  bmc 24: 3.5-4.5 s, cover 24: 1.5-3 s.
DISP_SMALL = {"cmd_depth": 8, "requests": 2, "vrows": 4, "row_bits": 4, "col_bits": 3,
              "t_bits": 6, "max_lb": 3, "max_layers": 2}
# papi_pu: a 1P1B slice of 2 lanes, one beat per row, reuse <= 1, a 2-beat column buffer; every
# port transfers by step 16 (cover).  bmc 16: 3 s, cover 3 s.  The FIFO check holds the column
# buffer to writes on a transfer only (a write on i_w.valid alone would be asserted while full).
PU_SMALL = {"fpus": 1, "banks": 1, "lanes": 2, "max_reuse": 1, "max_beats": 1, "wbuf": 2,
            "op_depth": 1}
# papi_scheduler: 2 tokens of 2 bits a beat, batch <= 3, TLP <= 2: a start's decision at step 5,
# a one-beat iteration's (start, beat, then 6 cycles) at step 8; depth 16 reaches a batch's
# end and the next start (cover).
SCHED_SMALL = {"tokens_per_beat": 2, "token_bits": 2, "max_batch": 3, "max_tlp": 2,
               "iter_bits": 2}
# bmc with memory_map (memories as registers): sv_gemv 3 min of CPU with it, over 9.5 min (not
# finished) without; pam_pu about 7 min with it, over 12 min (not finished) without.
MEMORY_MAP = {"sv_gemv", "pam_pu"}
JOB_UNITS = {"sv_gemv", "pam_ru", "pam_pu", "hermes_gemv", "qk_gemv", "two_pass_softmax",
             "lolpim_pingpong", "papi_pu"}
UNIT_PROOFS = [
    ("fp_add", {}, None, True, True),
    ("fp_sub", {}, None, True, False),
    ("fp_mul", {}, None, True, False),
    ("fp_fma", {}, None, True, False),
    ("fp_cmp", {}, None, True, False),
    ("fp_convert", {}, None, True, False),
    ("fp_exp", {}, None, True, True),
    ("fp_log", {}, None, True, False),
    ("fp_recip", {}, None, True, False),
    ("online_softmax", {}, None, True, True),
    ("pam_ru", RU_SMALL, 21, True, False),
    ("pam_pu", PAM_PU_SMALL, 43, True, False),
    ("sv_gemv", SV_SMALL, 46, True, False),
    ("hermes_act", ACT_SMALL, 20, True, False),
    ("hermes_gemv", GEMV_SMALL, 20, True, False),
    # PAM interface, default configs: bmc at latency + 6 (8, 7, 9 cycles; 1-3 s each), a depth
    # at which every output transfers (test_unit_output_reachable).  pamif_sender under its
    # memory's and buffer's contract (hw/pamif/sender_formal.py; bmc 14 takes 46 s, so 8).
    # pamif_buffer's full proof (prove mode, its harness) is in tests/pamif/test_formal_buffer.py,
    # so its sweep entry is in the long run.
    ("pamif_sender", {}, None, True, True),
    ("pamif_receiver", {}, None, True, True),
    ("pam_interface", {}, None, True, True),
    ("pamif_buffer", {}, None, True, False),
    ("lolpim_dispatcher", DISP_SMALL, 24, True, True),
    ("lolpim_pingpong", PINGPONG_SMALL, 24, True, True),
    ("papi_scheduler", SCHED_SMALL, 16, True, True),
    ("papi_pu", PU_SMALL, 16, True, True),
]


def _depth_of(name):
    return next(d for n, _, d, *_ in UNIT_PROOFS if n == name)


def _unit(name, sets):
    u = HW_UNITS[name]
    return u.factory(u.config(None, sets))


def _response(name, sets, dut):
    u = HW_UNITS[name]
    return unit_response(u, u.config(None, sets), dut)


# --- the checker on small components -------------------------------------------------------------

@pytest.mark.parametrize("bug", STAGE_BUGS)
def test_checker_on_tiny_stage(bug, tmp_path):
    res = prove(TinyStage(bug), tmp_path, depth=6)
    if bug is None:
        assert res.status == "pass", res.failed
        assert res.vcd is None
        return
    assert res.status == "fail"
    assert res.vcd is not None and res.vcd.exists() and res.vcd.stat().st_size > 0
    want = "o_valid_held" if bug == "drop_valid" else "o_payload_held"
    assert any(want in f for f in res.failed), res.failed


@pytest.mark.parametrize("depth", [0, 2])
def test_checker_passes_project_pipeline(depth, tmp_path):
    """depth 0 is combinational (o = f(i)): it passes only because the input rules are assumed."""
    res = prove(PipeStage(depth), tmp_path, depth=8)
    assert res.status == "pass", res.failed


def test_prove_mode_closes_on_pipeline(tmp_path):
    res = prove(PipeStage(2), tmp_path, depth=4, mode="prove")
    assert res.status == "pass", res.failed


@pytest.mark.parametrize("credits,ok", [(2, True), (3, False)])
def test_fifo_no_loss(credits, ok, tmp_path):
    dut = CreditFifo(depth=2, credits=credits)
    res = prove(dut, tmp_path, depth=10)
    if ok:
        assert res.status == "pass", res.failed
    else:
        assert res.status == "fail"
        assert any("out_fifo_no_overflow" in f for f in res.failed), res.failed
        assert res.vcd.exists()


def test_memory_map_keeps_the_verdict(tmp_path):
    """memory_map (sv_gemv's sweep entry) maps the FIFO's memory to registers: same verdicts."""
    res = prove(CreditFifo(depth=2, credits=3), tmp_path / "bad", depth=10, memory_map=True)
    assert "memory_map" in (tmp_path / "bad" / "bmc.sby").read_text()
    assert res.status == "fail" and any("out_fifo_no_overflow" in f for f in res.failed)
    res = prove(CreditFifo(depth=2, credits=2), tmp_path / "ok", depth=10, memory_map=True)
    assert res.status == "pass", res.failed


def test_cover_catches_vacuous_pass(tmp_path):
    """A unit that never sends passes every assertion; the cover run says so."""
    assert prove(NeverValid(), tmp_path / "bmc", depth=6).status == "pass"
    res = prove(NeverValid(), tmp_path / "cover", depth=6, mode="cover")
    assert res.status == "fail"
    assert any("o_transfer" in f for f in res.failed), res.failed
    assert prove(TinyStage(), tmp_path / "ok", depth=6, mode="cover").status == "pass"
    # the sweep's cover runs add zero_data; it does not hide a unit that never sends
    res = prove(NeverValid(), tmp_path / "zero", depth=6, mode="cover", extra=zero_data())
    assert res.status == "fail" and any("o_transfer" in f for f in res.failed), res.failed


def test_bad_depth_and_mode_are_user_errors(tmp_path):
    dut = types.SimpleNamespace(latency=1)  # refused before it is elaborated
    with pytest.raises(UserError, match="--depth"):
        prove(dut, tmp_path, depth=0)
    with pytest.raises(UserError, match="--depth"):
        prove(dut, tmp_path, depth=MAX_DEPTH + 1)
    with pytest.raises(UserError, match="--mode"):
        prove(dut, tmp_path, depth=4, mode="sim")
    assert not any(tmp_path.iterdir())


# --- every unit's protocol proof -----------------------------------------------------------------

@pytest.mark.parametrize("name,sets,depth,fifos", [
    pytest.param(n, s, d, f, id=n, marks=() if fast else pytest.mark.slow)
    for n, s, d, f, fast in UNIT_PROOFS])
def test_unit_protocol(name, sets, depth, fifos, tmp_path):
    dut = _unit(name, sets)
    extra, mm = HW_UNITS[name].formal, name in MEMORY_MAP
    res = prove(dut, tmp_path / "bmc", depth=depth, fifos=fifos, extra=extra, memory_map=mm,
                response=_response(name, sets, dut))
    assert res.status == "pass", f"{name}: {res.failed}; trace {res.vcd}"
    assert res.depth >= dut.latency + 1
    if name in JOB_UNITS:
        # the depth must reach an output transfer, or the pass above says nothing about `o`
        # (input data fixed at 0 for the solver's sake: reached so, reached without it)
        cov = prove(dut, tmp_path / "cover", depth=res.depth, mode="cover",
                    extra=zero_data(extra))
        assert cov.status == "pass", f"{name}: not every transfer reachable: {cov.failed}"


@pytest.mark.slow
def test_pam_pu_needs_its_job_format(tmp_path):
    """Under the stream rules alone (no job format), pam_pu's tile FIFO takes a write when full
    (step 20 at the sweep's config: alternating single K and V beats end a scoreless "tile" per
    V beat; hw/pam/pu_formal.py).  With the format the sweep's bmc (depth 43) passes.  About
    20 s of CPU."""
    res = prove(_unit("pam_pu", PAM_PU_SMALL), tmp_path, depth=22)
    assert res.status == "fail"
    assert any("tile_fifo_no_overflow" in f for f in res.failed), res.failed


@pytest.mark.parametrize("name,sets,want", [
    ("sv_gemv", SV_SMALL, ["out_fifo"]),
    ("hermes_act", ACT_SMALL, ["out_fifo"]),
    ("pam_pu", PAM_PU_SMALL, ["v_fifo", "tile_fifo", "p_fifo"]),
    ("hilos_attention", HILOS_SMALL, ["qk__out_fifo", "softmax__stats_fifo", "softmax__out_fifo",
                                      "sv__out_fifo", "jobs", "dram_w"]),
])
def test_fifos_found_in_units(name, sets, want):
    """The no-loss check reaches the units' FIFOs, in a composite also its units' FIFOs."""
    top = FormalTop(_unit(name, sets))
    Fragment.get(top, None)
    assert [n for n, _ in top.checked_fifos] == want
    one = FormalTop(_unit(name, sets), fifo_levels=1)
    Fragment.get(one, None)
    assert [n for n, _ in one.checked_fifos] == [n for n in want if "__" not in n]


@pytest.mark.parametrize("name", ["online_softmax", "hermes_act", "pamif_sender",
                                  "pamif_receiver", "pam_interface", "lolpim_dispatcher",
                                  "papi_scheduler"])
def test_unit_output_reachable(name, tmp_path):
    """The sweep's depth reaches a transfer on every port (so its pass is not vacuous)."""
    sets = next(s for n, s, *_ in UNIT_PROOFS if n == name)
    res = prove(_unit(name, sets), tmp_path, depth=_depth_of(name), mode="cover",
                extra=HW_UNITS[name].formal)
    assert res.status == "pass", res.failed


def test_sweep_covers_every_unit():
    """Every unit of the catalog has a proof here, except the composites (optional)."""
    composites = {"pam_device", "pam_system", "hilos_attention", "qk_gemv", "two_pass_softmax"}
    assert set(HW_UNITS) - composites <= {n for n, *_ in UNIT_PROOFS}


# --- mutated units fail ---------------------------------------------------------------------------

@pytest.mark.parametrize("name,sets,bug", [
    ("fp_add", {}, "ignore_ready"),
    ("fp_add", {}, "drop_valid"),
    ("fp_add", {}, "payload_glitch"),
    ("online_softmax", {}, "ignore_ready"),
    # long run (13 s): the same mutation is caught in the other units here, and hermes_act's
    # own no-loss check is caught failing by the shallow-FIFO test below
    pytest.param("hermes_act", ACT_SMALL, "ignore_ready", marks=pytest.mark.slow),
    ("lolpim_dispatcher", DISP_SMALL, "ignore_ready"),
    ("papi_scheduler", SCHED_SMALL, "ignore_ready"),
])
def test_mutated_unit_fails(name, sets, bug, tmp_path):
    dut = _unit(name, sets)
    res = prove(dut, tmp_path, depth=_depth_of(name), shell=MutantShell(dut, bug))
    assert res.status == "fail", f"{name} with {bug} passed"
    assert res.vcd is not None and res.vcd.exists()


def _shallow_fifo(widths, depth, name="fifo", lut_ram=False):
    """``SplitFifo`` one entry shallower than asked: the unit's credits then exceed its FIFO."""
    return SplitFifo(widths, depth - 1, name, lut_ram=lut_ram)


# Long run (about 21 s of the default run's budget): the proof's power to catch a real bug stays
# in the default run through test_mutated_unit_fails (fp_add, online_softmax, the dispatcher and
# the scheduler), and hermes_act's output cover stays there too (its protocol proof is long-run).
@pytest.mark.slow
def test_fifo_too_shallow_for_credits_loses_a_write(tmp_path, monkeypatch):
    """hermes_act with its output FIFO one entry short (a write skipped when full): caught."""
    assert hermes_act.SplitFifo is SplitFifo   # the name the generator builds its FIFO with
    monkeypatch.setattr(hermes_act, "SplitFifo", _shallow_fifo)
    dut = _unit("hermes_act", ACT_SMALL)
    res = prove(dut, tmp_path, depth=20)
    assert res.status == "fail"
    assert any("out_fifo_no_overflow" in f for f in res.failed), res.failed
    assert res.vcd.exists()


# --- the input-side response ----------------------------------------------------------------------

# Units with a cycle model but no response yet, and why: job units whose outputs answer a whole
# job (a job's last input to its outputs needs a per-unit job format, as pam_pu's), composites
# of them, and units whose own harness already bounds the answer (pamif_buffer's release bound).
NO_RESPONSE = {
    "pam_pu": "job unit: a token set's output follows its K/V tiles",
    "pam_device": "composite of pam_pu and pam_ru",
    "pam_system": "composite of pam_device",
    "qk_gemv": "job unit: a block's scores follow its keys",
    # one o beat per i_s beat was tried: the first i_s transfer comes only after pass 1 and the
    # statistics (cover unreached at depth 64, reached at 96); its bmc at 96 did not finish in
    # half an hour
    "two_pass_softmax": "job unit: its response needs a bmc depth far too slow for the sweep",
    "hilos_attention": "composite of qk_gemv, two_pass_softmax, sv_gemv",
    # a response per ReLU beat and per softmax vector was tried: it passes, but its bmc at the
    # sweep's config took about 60 times the CPU of the protocol proof alone
    "hermes_act": "job unit: its response makes the bmc far too slow for the sweep",
    # a conservation property instead of a count (a word's release waits for the rest of its
    # region, which the environment sends when it likes): proved by k-induction in
    # tests/pamif/test_formal_buffer.py
    "pamif_buffer": "its harness (hw/pamif/buffer_formal.py) states its own: every word taken "
                    "leaves on o once, unchanged (track_out_once_after_in, "
                    "track_in_buffer_or_output, count<r>_is_words_in), and a complete head "
                    "region is released within release_bound = dst_words cycles of o.ready "
                    "(release_within_bound)",
    # a response (a list's last read answer owes its writes) needs the source memory's contract
    # (answers in request order, as pamif_sender's harness assumes), and its deadline is past
    # the sweep's depth: the first list's last write leaves about 33 cycles after reset
    "pam_interface": "composite: its response's bmc at a depth that reaches a deadline is far "
                     "too slow; free i_rd answers break o_rd's rules past the sweep's depth, "
                     "the parts' responses (pamif_sender, pamif_receiver) and the buffer's "
                     "harness cover the path",
}


def test_every_unit_states_a_response_or_a_reason():
    """A unit with a cycle model has an input-side response, or a reason here: a new unit
    cannot silently skip it."""
    stated = {n for n, u in HW_UNITS.items() if u.cycle_model is not None and has_response(u)}
    assert stated.isdisjoint(NO_RESPONSE)
    assert {n for n, u in HW_UNITS.items() if u.cycle_model is not None} == \
        stated | set(NO_RESPONSE)
    assert {"papi_scheduler", "pamif_receiver", "hermes_gemv", "fp_add", "online_softmax"} <= \
        stated


# lolpim_dispatcher's host data carries its programs and runs: fixed at 0, every run is a bad
# configuration and no command leaves; its cover is fast without zero_data
COVER_FREE_DATA = {"lolpim_dispatcher"}


@pytest.mark.parametrize("name,sets,depth", [
    pytest.param(n, s, d, id=n, marks=() if fast else pytest.mark.slow)
    for n, s, d, _, fast in UNIT_PROOFS if n not in NO_RESPONSE])
def test_unit_response_reached(name, sets, depth, tmp_path):
    """The sweep's depth reaches a tracked transfer's deadline (resp_deadline), so the
    response's pass in test_unit_protocol checked an answer, not nothing."""
    dut = _unit(name, sets)
    extra = HW_UNITS[name].formal
    res = prove(dut, tmp_path, depth=depth, mode="cover",
                extra=extra if name in COVER_FREE_DATA else zero_data(extra),
                response=_response(name, sets, dut))
    assert res.status == "pass", res.failed


def _mutant_factory(module, original, mutated, cls):
    """``cls`` of ``module`` rebuilt from its source with ``original`` replaced by ``mutated``
    (the same one-line mutation as tests/mutations/formal.yaml; the module under its own name,
    so its dataclasses resolve)."""
    path = Path(module.__file__)
    src = path.read_text()
    assert src.count(original) == 1, f"{original!r} not once in {path}"
    ns = {"__name__": module.__name__, "__file__": str(path)}
    exec(compile(src.replace(original, mutated), str(path), "exec"), ns)
    return ns[cls]


# (unit, sets, depth, module, class, original, mutated, fast): input-side mutations that the
# stream rules pass (checked here with the response left out) and the response fails.
RESPONSE_MUTATIONS = [
    # the scheduler takes a token beat while its skid buffer is full: the beat is lost
    ("papi_scheduler", SCHED_SMALL, 16, papi_scheduler, "PapiScheduler",
     "m.d.comb += i.ready.eq(adv & r.active)", "m.d.comb += i.ready.eq(r.active)", True),
    # the receiver takes a token's last word and never writes it
    ("pamif_receiver", {}, None, pamif_receiver, "PamifReceiver",
     "with m.If(i.valid & i.ready):", "with m.If(i.valid & i.ready & ~i.payload.last):", True),
    # hermes_gemv takes a weight beat the issue holds back (no credit, no merge partial):
    # its row never finishes.  About a minute of CPU per run.
    ("hermes_gemv", GEMV_SMALL, 20, hermes_gemv, "HermesGemv",
     "iw.ready.eq(can & g_last),", 'iw.ready.eq(fsm.ongoing("RUN") & g_last),', False),
    # papi_pu takes a weight beat while it still loads its vectors and writes its column buffer
    # only once it runs: the beat is lost and its row never finishes
    ("papi_pu", PU_SMALL, 16, papi_pu, "PapiPu",
     "wf.w_en.eq(self.i_w.valid & wf.w_rdy),",
     'wf.w_en.eq(self.i_w.valid & wf.w_rdy & j.fsm.ongoing("RUN")),', True),
    # lolpim_pingpong's MAC engine waits for one bank beat more than its tile's command says:
    # the tile's last beat is taken and its accumulation never drains.  Long run (about 10 s of
    # CPU): the default run's papi_pu, dispatcher and sender rows show the same power.
    ("lolpim_pingpong", PINGPONG_SMALL, 24, lolpim_pingpong, "LolpimPingpong",
     "last.eq(p.last_step),", "last.eq(p.last_step + 1),", False),
    # lolpim_dispatcher's host port is ready while a status waits: a run written then is
    # dropped and never reports
    ("lolpim_dispatcher", DISP_SMALL, 24, lolpim_dispatcher, "LolpimDispatcher",
     "m.d.comb += i.ready.eq(idle)", "m.d.comb += i.ready.eq(~r.running)", True),
    # pamif_sender takes a token's last read answer and never passes it to the buffer
    ("pamif_sender", {}, None, pamif_sender, "PamifSender",
     "o.valid.eq(i.valid), i.ready.eq(o.ready),",
     "o.valid.eq(i.valid & (i.payload.word != cfg.src_words - 1)), i.ready.eq(o.ready),", True),
    # pam_ru takes a request's last beat and never marks it written: the reader never starts
    # and the request's merged partial never leaves.  Minutes of CPU per run.
    ("pam_ru", RU_SMALL, 21, pam_ru, "PamRu",
     'with m.If(wv & ws["last"]):', 'with m.If(wv & ws["last"] & (ws["beat"] == 0)):', False),
]


@pytest.mark.parametrize("name,sets,depth,module,cls,original,mutated", [
    pytest.param(*row[:-1], id=row[0], marks=() if row[-1] else pytest.mark.slow)
    for row in RESPONSE_MUTATIONS])
def test_response_catches_input_mutation(name, sets, depth, module, cls, original, mutated,
                                         tmp_path):
    u = HW_UNITS[name]
    cfg = u.config(None, sets)
    make = _mutant_factory(module, original, mutated, cls)
    res = prove(make(cfg), tmp_path / "rules", depth=depth, extra=u.formal)
    assert res.status == "pass", f"the stream rules alone catch it: {res.failed}"
    dut = make(cfg)
    res = prove(dut, tmp_path / "response", depth=depth, extra=u.formal,
                response=unit_response(u, cfg, dut))
    assert res.status == "fail", f"{name}: the mutation passed the response"
    assert any("resp_answered_in_time" in f for f in res.failed), res.failed


def test_response_on_small_stages(tmp_path):
    """The generic checker: a one-register stage answers within its latency 1 (slack 1: the
    stall in the pick's own cycle); a two-stage pipeline passes at its latency 2 and fails at
    a latency stated one short (slack 0: nothing to spare)."""
    one = per_transfer({"i": 1}, "o")
    assert prove(TinyStage(), tmp_path / "ok", depth=8, response=one).status == "pass"
    res = prove(PipeStage(2), tmp_path / "short", depth=8, response=per_transfer({"i": 1}, "o",
                                                                                slack=0))
    assert res.status == "fail" and any("resp_answered_in_time" in f for f in res.failed)
    assert prove(PipeStage(2), tmp_path / "pipe", depth=8,
                 response=per_transfer({"i": 2}, "o")).status == "pass"


# --- pimforge prove --------------------------------------------------------------------------------

def test_cli_prove_passes(tmp_path, capsys):
    rc = cli.main(["prove", "fp_add", "--depth", "6", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "fp_add: PASS" in out and "depth 6" in out
    assert (tmp_path / "formal_top.il").exists() and (tmp_path / "bmc.sby").exists()


def test_cli_prove_default_depth_and_preset(tmp_path, capsys):
    rc = cli.main(["prove", "fp_mul", "--preset", "bf16", "--set", "pipeline_depth=1",
                   "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert f"depth {default_depth(1)}" in out


def test_cli_prove_fails_with_counterexample(tmp_path, capsys, monkeypatch):
    """A unit whose generator drops its ready term: exit 1, the failed property, the VCD."""
    real = prove_cli.get_unit

    def broken(name):
        u = real(name)
        return dataclasses.replace(u, factory=lambda cfg: _IgnoreReadyUnit(u.factory(cfg)))
    monkeypatch.setattr(prove_cli, "get_unit", broken)
    rc = cli.main(["prove", "fp_add", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert rc == 1, out
    assert "fp_add: FAIL" in out and "o_payload_held" in out
    vcd = out.split("counterexample: ", 1)[1].split()[0]
    assert vcd.endswith(".vcd") and (tmp_path / "bmc" / "engine_0").exists()
    assert Path(vcd).exists()


def test_cli_prove_response_on_by_default(tmp_path, capsys, monkeypatch):
    """`pimforge prove` runs the response unless told not to: the scheduler that takes a beat
    while stalled fails it (exit 1, the property named) and passes with --no-response."""
    real = prove_cli.get_unit
    row = RESPONSE_MUTATIONS[0]
    make = _mutant_factory(row[3], row[5], row[6], row[4])

    def mutated(name):
        return dataclasses.replace(real(name), factory=make)
    monkeypatch.setattr(prove_cli, "get_unit", mutated)
    sets = [a for k, v in SCHED_SMALL.items() for a in ("--set", f"{k}={v}")]
    argv = ["prove", "papi_scheduler", *sets, "--depth", str(row[2])]
    rc = cli.main(argv + ["--out", str(tmp_path / "on")])
    out = capsys.readouterr().out
    assert rc == 1 and "resp_answered_in_time" in out and ", response)" in out, out
    rc = cli.main(argv + ["--no-response", "--out", str(tmp_path / "off")])
    out = capsys.readouterr().out
    assert rc == 0 and "PASS" in out and ", response)" not in out, out


class _IgnoreReadyUnit(MutantShell):
    """A unit with its output ready term dropped, as one component (the CLI takes no shell)."""

    def __init__(self, dut):
        super().__init__(dut, "ignore_ready")

    def elaborate(self, platform):
        m = super().elaborate(platform)
        m.submodules.unit = self.dut
        return m


@pytest.mark.parametrize("argv,msg", [
    (["prove", "no_such_unit"], "unknown unit 'no_such_unit'"),
    (["prove", "fp_add", "--depth", "0"], "--depth: got 0"),
    (["prove", "fp_add", "--depth", str(MAX_DEPTH + 1)], f"--depth: got {MAX_DEPTH + 1}"),
    (["prove", "fp_add", "--mode", "sim"], "invalid choice: 'sim'"),
    (["prove", "fp_add", "--set", "pipeline_depth=99"], "field 'pipeline_depth'"),
    (["prove", "fp_add", "--preset", "fp64"], "fp64"),
])
def test_cli_prove_user_errors(argv, msg, capsys, tmp_path):
    rc = cli.main(argv + ["--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert rc == 2
    lines = [ln for ln in err.splitlines() if not ln.startswith("[pimforge]")]
    assert len(lines) == 1 and lines[0].startswith("error: ") and msg in lines[0], err
    assert not (tmp_path / "formal_top.il").exists()


def test_sender_needs_its_environment(tmp_path):
    """Without its memory's and buffer's contract (hw/pamif/sender_formal.py), a read answered
    before it was requested waits while its list entry is loaded: o_fill's slot changes."""
    res = prove(_unit("pamif_sender", {}), tmp_path, depth=8)
    assert res.status == "fail"
    assert any("o_fill_payload_held" in f for f in res.failed), res.failed
