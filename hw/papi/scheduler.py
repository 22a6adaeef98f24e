"""``papi_scheduler``: PAPI's runtime FC scheduler, the decision logic of §5.2 (Fig. 5d).

::

    i_host (start / tlp / alpha / eos) ─► registers; start ─────────────────────┐
    i (token beats) ─► S1 <eos> flags ─► popcount tree (tree_stages) ─► D1 total ┴► D2 RLP update
         ─► D3 RLP x TLP (registered multiply) ─► D4 compare with alpha, flip ─► skid ─► o

* **Host** (``i_host``: ``kind``, ``value``; kinds :data:`~pimforge.hw.papi.config.HOST_KINDS`).
  ``tlp``, ``alpha`` and ``eos`` write their registers at once (§5.2.2: the host CPU updates the
  TLP register); a write applies to every token beat accepted after it.  ``start`` (value: the
  batch size, §5.2.1) waits until the previous batch is over and its decisions have left the
  pipeline, sets RLP and sends the batch's initial decision (iteration 0) down D1 .. D4.
  Reset values: TLP 1, alpha 0, <eos> id 0, placement FC-PIM.
* **Tokens** (``i``: ``tokens_per_beat`` ids, ``keep`` mask, ``last`` = the iteration's last
  beat).  ``i`` is ready only while a batch runs.  S1 registers one flag per lane (``keep`` and
  id == <eos>); the flags are summed by an adder tree with a register every ``tree_levels``
  levels; D1 accumulates the beats' counts (saturating) and, at ``last``, registers the
  iteration's total with the TLP and alpha sampled when the last beat was accepted.
  Convention: one <eos> per request that finishes in the iteration; finished requests send no
  more tokens (§5.2.2 "count the number of <eos> tokens ... to track changes in RLP").
* **D2** ``freed = min(total, RLP)``, ``RLP -= freed``, iteration + 1 (RLP is the one-cycle
  recurrence: a compare and a subtract).  **D3** ``RLP x TLP`` (eq. 2), registered.  **D4**
  ``RLP x TLP > alpha`` -> GPU (the PUs), else FC-PIM; ``migrate`` only when this differs from
  the placement in force.  RLP = 0 ends the batch: ``done``, placement kept, no migration, and
  ``i`` waits for the next ``start``.

Every stage advances on one enable, ``advance``, which is a register: D4 drives ``o`` through a
one-entry skid buffer (:func:`~pimforge.hw.core.pipeline.output_skid`), and the stages advance
while it is empty.  When ``o`` stalls, the decision in D4 moves into the skid buffer and the
stages stop a cycle later, so ``o.ready`` reaches no input's ``ready`` (``i.ready`` is the
enable and the batch-running bit; ``i_host.ready`` the enable, the write's kind and the
pipeline-empty bit); with ``o`` always ready the skid buffer stays empty.  Latency: an
iteration's decision is on ``o`` ``5 + tree_stages`` cycles after its last beat's transfer, a
start's 4 cycles after it; throughput one beat a cycle (a one-beat iteration a cycle).  Cycle
model: :func:`~pimforge.hw.papi.scheduler_timing.scheduler_schedule`.

Parameters
----------
cfg : SchedulerConfig
"""
from __future__ import annotations

from dataclasses import dataclass

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib.wiring import In, Out

from pimforge.hw.core.component import PimComponent
from pimforge.hw.core.pipeline import output_skid
from pimforge.hw.core.unit import HwUnit
from pimforge.hw.papi.config import HOST_KINDS, PLACEMENTS, SCHEDULER_PRESETS, SchedulerConfig
from pimforge.hw.papi.scheduler_formal import scheduler_response
from pimforge.hw.papi.scheduler_timing import (BEAT_LATENCY, START_LATENCY, scheduler_cycles,
                                              scheduler_unit_activity)
from pimforge.hw.papi.streams import decision_signature, host_signature, token_signature

__all__ = ["PapiScheduler"]


@dataclass
class SchedulerRegs:
    """The host-written registers (TLP, alpha, <eos> id) and the batch state."""
    tlp: Signal
    alpha: Signal
    eos: Signal
    active: Signal
    rlp: Signal
    iter: Signal
    cur: Signal         # the placement in force
    acc: Signal         # the iteration's <eos> count so far


class PapiScheduler(PimComponent):
    """The runtime FC scheduler (module docstring)."""

    UNIT = "papi_scheduler"

    def __init__(self, cfg: SchedulerConfig):
        super().__init__(cfg, {"i_host": In(host_signature(cfg)), "i": In(token_signature(cfg)),
                               "o": Out(decision_signature(cfg))})

    @property
    def latency(self) -> int:
        """Cycles from an iteration's last beat to its decision."""
        return BEAT_LATENCY + self.cfg.tree_stages

    @property
    def throughput(self) -> float:
        """Token beats per cycle."""
        return 1.0

    def manifest(self) -> dict:
        man = super().manifest()
        man["encoding"] = {"host_kinds": dict(HOST_KINDS), "placement": dict(PLACEMENTS),
                           "rule": "gpu when rlp * tlp > alpha; migrate on a flip; rlp 0: done",
                           "start_latency": START_LATENCY}
        return man

    def elaborate(self, platform):
        m = Module()
        cfg = self.cfg
        adv = Signal(name="advance")      # a register: the output skid buffer is empty
        r = self._registers()
        s1 = self._flags(m, r, adv)
        cnt = self._tree(m, s1, adv)
        d1 = self._total(m, r, cnt, adv)
        d2 = self._rlp_update(m, r, d1, adv)
        d3 = _regs("d3_", v=1, prod=cfg.ai_bits, rlp=cfg.rlp_bits, freed=cfg.rlp_bits,
                   iter=cfg.iter_bits, alpha=cfg.ai_bits, done=1)
        with m.If(adv):        # D3: RLP x TLP (eq. 2), registered
            m.d.sync += [d3["prod"].eq(_shift_add(d2["rlp"], d2["tlp"]))]
            m.d.sync += [d3[k].eq(d2[k]) for k in ("v", "rlp", "freed", "iter", "alpha", "done")]
        self._decide(m, r, d3, adv)
        # start waits for an empty pipeline (the last batch's decisions past D3)
        busy = Signal(name="busy")
        m.d.comb += busy.eq(r.active | s1["v"] | cnt["any_v"] | d1["v"] | d2["v"] | d3["v"])
        is_start = self.i_host.payload.kind == HOST_KINDS["start"]
        m.d.comb += self.i_host.ready.eq(~is_start | (adv & ~busy))
        take = self.i_host.valid & self.i_host.ready
        value = self.i_host.payload.value
        kind = self.i_host.payload.kind
        # one enable per register (no case statement: every kind of the 2-bit field is named)
        with m.If(take & (kind == HOST_KINDS["tlp"])):
            m.d.sync += r.tlp.eq(value[:cfg.tlp_bits])
        with m.If(take & (kind == HOST_KINDS["alpha"])):
            m.d.sync += r.alpha.eq(value[:cfg.ai_bits])
        with m.If(take & (kind == HOST_KINDS["eos"])):
            m.d.sync += r.eos.eq(value[:cfg.token_bits])
        with m.If(take & is_start):
            m.d.sync += [r.rlp.eq(value[:cfg.rlp_bits]), r.acc.eq(0),
                         r.active.eq(value[:cfg.rlp_bits] != 0)]
        m.d.comb += d1["start"].eq(take & is_start)
        return m

    # -- registers and S1 ------------------------------------------------------------------------

    def _registers(self) -> SchedulerRegs:
        cfg = self.cfg
        return SchedulerRegs(tlp=Signal(cfg.tlp_bits, init=1, name="tlp_reg"),
                             alpha=Signal(cfg.ai_bits, name="alpha_reg"),
                             eos=Signal(cfg.token_bits, name="eos_reg"),
                             active=Signal(name="batch_active"),
                             rlp=Signal(cfg.rlp_bits, name="rlp"),
                             iter=Signal(cfg.iter_bits, name="iteration"),
                             cur=Signal(name="placement_in_force"),
                             acc=Signal(cfg.rlp_bits, name="eos_acc"))

    def _flags(self, m, r, adv) -> dict:
        """S1: one registered flag per lane, ``keep & (id == <eos>)`` (§5.2.2 step 2), with the
        TLP and alpha of a last beat sampled at its transfer."""
        cfg, i = self.cfg, self.i
        n, w = cfg.tokens_per_beat, cfg.token_bits
        m.d.comb += i.ready.eq(adv & r.active)
        s1 = _regs("s1_", v=1, flags=n, last=1, tlp=cfg.tlp_bits, alpha=cfg.ai_bits)
        tok = i.payload.tokens
        eq = [i.payload.keep[j] & (tok[j * w:(j + 1) * w] == r.eos) for j in range(n)]
        with m.If(adv):
            m.d.sync += [s1["v"].eq(i.valid & i.ready), s1["last"].eq(i.payload.last),
                         s1["tlp"].eq(r.tlp), s1["alpha"].eq(r.alpha)]
            m.d.sync += [s1["flags"][j].eq(eq[j]) for j in range(n)]
        return s1

    def _tree(self, m, s1, adv) -> dict:
        """The popcount of S1's flags: a balanced adder tree, registered every ``tree_levels``
        levels (the last register holds the beat's count)."""
        cfg = self.cfg
        values = [s1["flags"][j] for j in range(cfg.tokens_per_beat)]
        carry = {k: s1[k] for k in ("v", "last", "tlp", "alpha")}
        valids = []
        level = stage = 0
        while len(values) > 1:
            values = [values[k] + values[k + 1] for k in range(0, len(values), 2)]
            level += 1
            if level % cfg.tree_levels and len(values) > 1:
                continue
            stage += 1
            regs = [Signal(len(v), name=f"tree{stage}_sum{k}") for k, v in enumerate(values)]
            nxt = _regs(f"tree{stage}_", v=1, last=1, tlp=cfg.tlp_bits, alpha=cfg.ai_bits)
            with m.If(adv):
                m.d.sync += [rg.eq(v) for rg, v in zip(regs, values)]
                m.d.sync += [nxt[k].eq(carry[k]) for k in carry]
            values, carry = regs, nxt
            valids.append(nxt["v"])
        any_v = Signal(name="tree_busy")
        m.d.comb += any_v.eq(0 if not valids else _or(valids))
        return {"count": values[0], **carry, "any_v": any_v}

    # -- D1 .. D4 --------------------------------------------------------------------------------

    def _total(self, m, r, cnt, adv) -> dict:
        """D1: the iteration's <eos> total (saturating at 2**rlp_bits - 1: more than RLP frees
        RLP anyway); a start enters here with total 0."""
        cfg = self.cfg
        d1 = _regs("d1_", v=1, total=cfg.rlp_bits, tlp=cfg.tlp_bits, alpha=cfg.ai_bits, init=1)
        d1["start"] = Signal(name="start_take")
        top = (1 << cfg.rlp_bits) - 1
        s = Signal(cfg.rlp_bits + 1, name="d1_sum")
        m.d.comb += s.eq(r.acc + cnt["count"])
        sat = Mux(s[cfg.rlp_bits], top, s[:cfg.rlp_bits])
        with m.If(adv):
            m.d.sync += [d1["v"].eq(d1["start"] | (cnt["v"] & cnt["last"])),
                         d1["init"].eq(d1["start"])]
            with m.If(d1["start"]):
                m.d.sync += [d1["total"].eq(0), d1["tlp"].eq(r.tlp),
                             d1["alpha"].eq(r.alpha)]
            with m.Elif(cnt["v"]):
                m.d.sync += [d1["total"].eq(sat), d1["tlp"].eq(cnt["tlp"]),
                             d1["alpha"].eq(cnt["alpha"]),
                             r.acc.eq(Mux(cnt["last"], 0, sat))]
        return d1

    def _rlp_update(self, m, r, d1, adv) -> dict:
        """D2 (§5.2.2 step 2): ``freed = min(total, RLP)``, ``RLP -= freed``; the iteration."""
        cfg = self.cfg
        d2 = _regs("d2_", v=1, rlp=cfg.rlp_bits, freed=cfg.rlp_bits, iter=cfg.iter_bits,
                   tlp=cfg.tlp_bits, alpha=cfg.ai_bits, done=1)
        rlp = r.rlp
        all_done = d1["total"] >= rlp
        left = Mux(all_done, 0, rlp - d1["total"])
        it = Mux(d1["init"], 0, r.iter + 1)
        with m.If(adv):
            m.d.sync += [d2["v"].eq(d1["v"]), d2["rlp"].eq(left),
                         d2["freed"].eq(Mux(all_done, rlp, d1["total"])), d2["iter"].eq(it),
                         d2["tlp"].eq(d1["tlp"]), d2["alpha"].eq(d1["alpha"]),
                         d2["done"].eq(all_done & ~d1["init"] | (rlp == 0))]
            with m.If(d1["v"]):
                m.d.sync += [rlp.eq(left), r.iter.eq(it)]
                with m.If(all_done & ~d1["init"]):
                    m.d.sync += r.active.eq(0)
        return d2

    def _decide(self, m, r, d3, adv):
        """D4 (§5.2.1, §5.2.2 step 4): RLP x TLP > alpha -> GPU; migrate on a flip.  D4 drives
        ``o`` through the output skid buffer, which drives ``adv``."""
        o, cur = self.o, r.cur
        gpu = d3["prod"] > d3["alpha"]
        place = Mux(d3["done"], cur, gpu)
        d4_v = Signal(name="d4_v")
        d4 = Signal(o.payload.shape(), name="d4")
        with m.If(adv):
            m.d.sync += [d4_v.eq(d3["v"]), d4.iteration.eq(d3["iter"]),
                         d4.rlp.eq(d3["rlp"]), d4.intensity.eq(d3["prod"]),
                         d4.placement.eq(place),
                         d4.migrate.eq(~d3["done"] & (gpu != cur)),
                         d4.freed.eq(d3["freed"]), d4.done.eq(d3["done"])]
            with m.If(d3["v"]):
                m.d.sync += cur.eq(place)
        output_skid(m, adv, d4_v, d4, o, "out")


def _regs(prefix: str, **widths) -> dict:
    """A stage's registers by name: ``name -> Signal(width, name=prefix + name)``."""
    return {k: Signal(w, name=f"{prefix}{k}") for k, w in widths.items()}


def _shift_add(a, b):
    """``a * b`` for a narrow ``b`` (TLP: 1-8 bits) as a balanced tree of ``len(b)`` partial
    products: on ECP5 a DSP block (MULT18X18D) for a 4 x 3 product costs more in routing to
    and from it than the adders."""
    terms = [Mux(b[j], a << j, 0) for j in range(len(b))]
    while len(terms) > 1:
        terms = [terms[k] + terms[k + 1] if k + 1 < len(terms) else terms[k]
                 for k in range(0, len(terms), 2)]
    return terms[0]


def _or(values):
    out = values[0]
    for v in values[1:]:
        out = out | v
    return out


# ---- cycle model ---------------------------------------------------------------------------------


UNITS = (HwUnit("papi_scheduler", "PAPI runtime FC scheduler: <eos> count per iteration -> RLP, "
                "RLP x TLP against alpha -> FC on GPU or FC-PIM, migrate on a flip, freed "
                "Attn-PIM requests (i_host, i -> o)", SchedulerConfig, PapiScheduler,
                SCHEDULER_PRESETS, scheduler_cycles, paper="PAPI §5.2, Fig. 5d",
                activity=scheduler_unit_activity,
                response=scheduler_response),)
