"""Ready paths (`pimforge.synth.timing.ready_paths`): how far a stream's back-pressure runs
combinationally.  The analysis on hand-made designs (a ready chain through k stages, a plain wire,
a skid buffer with and without an injected leak), then every unit's small config: no output's
``ready`` reaches an input's ``ready`` without a register in between, except the units listed in
:data:`READY_PASS`, and those within :data:`MAX_READY_LEVELS` gate levels."""
import pytest
from amaranth.back import verilog
from amaranth.hdl import Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out
from synth_checks import SMALL_SYNTH, small_synth_config

from pimforge.registry import get_unit, units
from pimforge.synth import flows, run

WIDTH = 8


class ReadyChain(wiring.Component):
    """``stages`` registers, each taking a beat while it is empty or its successor takes one:
    ``ready_j = ~valid_j | ready_{j+1}``, so ``o.ready`` reaches ``i.ready`` through every
    stage (the chain the issue is about).  ``stages = 0`` is a plain wire."""
    i: In(stream.Signature(WIDTH))
    o: Out(stream.Signature(WIDTH))

    def __init__(self, stages: int):
        self.stages = stages
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        valid, data, ready = self.i.valid, self.i.payload, self.i.ready
        for j in range(self.stages):
            v, d, r = Signal(name=f"s{j}_valid"), Signal(WIDTH, name=f"s{j}_data"), \
                Signal(name=f"s{j}_ready")
            m.d.comb += ready.eq(~v | r)
            with m.If(ready):
                m.d.sync += [v.eq(valid), d.eq(data)]
            valid, data, ready = v, d, r
        m.d.comb += [self.o.valid.eq(valid), self.o.payload.eq(data), ready.eq(self.o.ready)]
        return m


class SkidBuffer(wiring.Component):
    """An output register and a one-entry skid buffer: ``i.ready`` is a register (the skid is
    empty), ``o.valid`` another.  ``leak`` injects the mistake the analysis must catch:
    ``i.ready`` also waits for ``o.ready``."""
    i: In(stream.Signature(WIDTH))
    o: Out(stream.Signature(WIDTH))

    def __init__(self, leak: bool = False):
        self.leak = leak
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        out_v, out_d = Signal(name="out_valid"), Signal(WIDTH, name="out_data")
        skid_v, skid_d = Signal(name="skid_valid"), Signal(WIDTH, name="skid_data")
        m.d.comb += [self.i.ready.eq(~skid_v & (self.o.ready if self.leak else 1)),
                     self.o.valid.eq(out_v), self.o.payload.eq(out_d)]
        with m.If(~out_v | self.o.ready):
            with m.If(skid_v):
                m.d.sync += [out_v.eq(1), out_d.eq(skid_d), skid_v.eq(0)]
            with m.Else():
                m.d.sync += [out_v.eq(self.i.valid & self.i.ready), out_d.eq(self.i.payload)]
        with m.Elif(self.i.valid & self.i.ready):
            m.d.sync += [skid_v.eq(1), skid_d.eq(self.i.payload)]
        return m


class ValidLeak(wiring.Component):
    """A protocol breach (a producer whose ``valid`` waits for ``ready``): ``o.valid`` depends
    on ``o.ready``, which the analysis reports as a reached ``*__valid`` output."""
    i: In(stream.Signature(WIDTH))
    o: Out(stream.Signature(WIDTH))

    def elaborate(self, platform):
        m = Module()
        full, data = Signal(name="full"), Signal(WIDTH, name="data")
        m.d.comb += [self.i.ready.eq(~full), self.o.valid.eq(full & self.o.ready),
                     self.o.payload.eq(data)]
        with m.If(self.i.valid & ~full):
            m.d.sync += [full.eq(1), data.eq(self.i.payload)]
        with m.Elif(self.o.ready):
            m.d.sync += full.eq(0)
        return m


def _ready_paths(comp, tmp_path) -> dict:
    text = verilog.convert(comp, name="top", emit_src=False)
    return flows.generic(text, "top", tmp_path)["timing"]["ready_paths"]


@pytest.mark.parametrize("stages", [0, 1, 4, 16])
def test_a_ready_chain_is_reported(stages, tmp_path):
    h = _ready_paths(ReadyChain(stages), tmp_path)
    [row] = h["inputs"]
    assert row["port"] == "o__ready"
    # o.ready reaches i.ready: a wire (0 levels) or through the OR of the stages' valids: at
    # least one level, at most two per stage (an inverter and an OR; ABC keeps the chain, which
    # every stage's enable taps: 2, 2, 4, 8, 16 levels for 1, 2, 4, 8, 16 stages)
    assert set(row["reaches"]) == {"i__ready"}, row
    assert h["ready_to_ready"] == row["reaches"]["i__ready"]
    assert (h["ready_start"], h["ready_end"]) == ("o__ready", "i__ready")
    if stages == 0:
        assert h["ready_to_ready"] == 0
    else:
        assert 1 <= h["ready_to_ready"] <= 2 * stages, h
    if stages == 16:   # a longer chain is a deeper path
        assert h["ready_to_ready"] > _ready_paths(ReadyChain(1), tmp_path / "one")["ready_to_ready"]


@pytest.mark.parametrize("leak", [False, True])
def test_a_skid_buffer_has_no_ready_path_and_a_leak_is_caught(leak, tmp_path):
    h = _ready_paths(SkidBuffer(leak), tmp_path)
    [row] = h["inputs"]
    assert row["levels"] >= 1            # o.ready still steers the registers
    if leak:
        assert row["reaches"] == {"i__ready": h["ready_to_ready"]} and h["ready_to_ready"] >= 1
    else:
        assert row["reaches"] == {} and h["ready_to_ready"] is None, h


def test_a_valid_that_waits_for_ready_is_reported(tmp_path):
    h = _ready_paths(ValidLeak(), tmp_path)
    assert h["inputs"][0]["reaches"] == {"o__valid": 1}
    assert h["ready_to_ready"] is None


# -- every unit ---------------------------------------------------------------------------------

MAX_READY_LEVELS = 8
"""Bound on a unit's ready-to-ready depth: the pipeline register's own ``~o.valid | o.ready``
is one or two levels; 8 levels is about 290 ps at ASAP7 (``timing.ASAP7_TIMING``), under a third
of the tightest preset clock's period (1 GHz: 25 levels fit), so two such units back to back
still leave most of the cycle to the logic behind the ready."""

READY_PASS = {
    # one register stage: i.ready = ~o_wr.valid | o_wr.ready (2 levels); in pam_interface the
    # re-layout buffer in front of it takes no ready into its i.ready
    "pamif_receiver": ("o_wr__ready", "i__ready"),
    # the source's read data goes on as fill words without a register: a wire (0 levels) from
    # the buffer's i.ready, which depends on its region counts only
    "pamif_sender": ("o_fill__ready", "i_rd__ready"),
}
"""Units whose output ``ready`` reaches an input ``ready`` combinationally, and why that is
short; every other unit breaks the path (skid buffer, FIFO credits or registered ready)."""

SMALL = {**SMALL_SYNTH, "papi_pu": ("small_1p1b", {}), "lolpim_pingpong": ("serial", {}),
         **{u: ("small_hbm_to_ddr", {}) for u in ("pamif_buffer", "pamif_receiver",
                                                  "pamif_sender", "pam_interface")}}
"""The smoke test's small configs (tests/synth_checks.py: the same Verilog, synthesized once for
both files), a small preset of papi_pu, lolpim_pingpong and the PAM interface units, and the
float units' default (fp16 or fp32)."""

# Long run only: the float units all stall through hw/core/pipeline.py's output skid buffer
# (fp_add checks it in the default run; fp_exp and fp_log take 10-20 s each), and the three
# compositions wire units measured here (pam_system about 60 s, hilos_attention about 15 s,
# pam_device about 15 s: PUs and an RU).
LONG_ONLY = {"fp_cmp", "fp_convert", "fp_exp", "fp_fma", "fp_log", "fp_mul", "fp_recip",
             "fp_sub", "pam_system", "hilos_attention", "pam_device"}


def unit_ready_paths(unit: str) -> dict:
    preset, cfg = small_synth_config(unit, SMALL)
    return run.unit_part(run.SynthJob(get_unit(unit), cfg, preset or "small"))["timing"][
        "ready_paths"]


@pytest.mark.parametrize("unit", [pytest.param(u, marks=pytest.mark.slow) if u in LONG_ONLY
                                  else u for u in sorted(units())])
def test_no_long_ready_path(unit, synth_cache):
    h = unit_ready_paths(unit)
    assert h["inputs"], f"{unit}: no *__ready input found"
    pairs = {(r["port"], p) for r in h["inputs"] for p in r["reaches"] if p.endswith("__ready")}
    assert pairs == ({READY_PASS[unit]} if unit in READY_PASS else set()), h
    if unit in READY_PASS:
        assert 0 <= h["ready_to_ready"] <= MAX_READY_LEVELS, h
    # no valid waits for a ready (lib/stream's rule)
    assert not any(p.endswith("__valid") for r in h["inputs"] for p in r["reaches"]), h
