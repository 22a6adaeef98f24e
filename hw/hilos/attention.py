"""``hilos_attention``: the HILOS attention kernel, its four units as a concurrent block pipeline
(HILOS §4.4, Fig. 7a).

Dataflow of one job (one KV head and its ``d_group`` queries)::

    i_q ──► qk_gemv (K-Buf / K^T view, E x d_group MACs) ──┐ scores, row-block order
    i_k ──►                                                 ├─► concat ─► fork ─► o_s (DRAM)
    i_pre (host-precomputed scores, §4.3) ─────────────────┘              │
                                          two_pass_softmax pass 1 ◄────────┘ (m, Z per query)
    i_s (scores read back from DRAM) ──► two_pass_softmax pass 2 ──► y ──► sv_gemv ──► o
    i_v ──────────────────────────────────────────────────────────────────► sv_gemv

* The scores of a job are written to the DRAM model (``o_s``) while pass 1 aggregates their
  statistics, and read back (``i_s``) for pass 2 once the job's statistics are final: Alg. 1
  needs the global ``m`` and ``Z`` before it can normalize.  So within one job QK^T and S.V
  cannot overlap; across jobs they do: while pass 2 and S.V work on job h, qk_gemv and pass 1
  work on job h+1.  A kernel of J jobs therefore takes about ``(J + 1) / J`` times the bound
  ``max(QK^T beats, S.V beats, softmax pass cycles)``.
* ``i_q`` carries a ``pre`` flag (the same on every Q beat of a job): the job has host-precomputed
  scores, which follow its K-derived scores as a segment of their own (``i_pre`` beats are in the
  score format and row-block order, ``last`` on the final one).  Their V rows come in ``i_v`` after
  the stored tokens' rows, like any other.
* Flow control is the units' own; the top adds a job FIFO (the ``pre`` flags), the concatenation
  and a fork whose DRAM side has a small FIFO, so neither side waits for the other's ``ready``.

Cycle model (:func:`~pimforge.hw.hilos.attention_timing.kernel_schedule`): composed from its units'
own models. The kernel is a pipeline of ``qk_gemv`` -> pass 1 -> (DRAM) -> pass 2 -> ``sv_gemv``
with flow control between them, so the composition follows each job's blocks through the units:

* ``qk_gemv``: :func:`~pimforge.hw.hilos.qk_gemv_timing.qk_schedule` over the jobs' stored tokens (K
  offered from cycle ``latency``).  A job's precomputed score beats follow its last K-derived
  score beat, one per cycle.
* pass 1 ends with the job's last score beat; its statistics are ready ``stats + 1`` cycles
  later (:func:`~pimforge.hw.hilos.two_pass_softmax_timing.softmax_timing`).  Pass 2 of job h starts
  then, after pass 2 of job h-1, and once its first score beat has come back from the DRAM model
  (written one cycle after it passed, readable ``latency + 1`` cycles later).
* pass 2 emits one ``y`` beat per cycle, ``normalize + 1`` cycles after its input beat, into
  ``sv_gemv``'s two P-buffer slots: block i's ``y`` beats wait for the slot that block i-2's
  V rows free.  V rows follow :func:`~pimforge.hw.hilos.sv_gemv_timing.sv_schedule`'s rules.

The composition ignores second-order couplings (the concatenation holding the next job's scores
while the precomputed ones pass, pass 2's output FIFO), which cost a few cycles per job; the tests
check the model against the RTL within the issue's 2%.
"""
from __future__ import annotations

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib.wiring import In, Out

from pimforge.hw.core.activity import SyncFIFO
from pimforge.hw.core.component import PimComponent
from pimforge.hw.core.unit import HwUnit
from pimforge.hw.hilos.attention_timing import (
    attention_activity, attention_cycles, attention_tail_cycles
)
from pimforge.hw.hilos.config import HILOS_PRESETS, KERNEL_CLOCK, HilosAttentionConfig
from pimforge.hw.hilos.qk_gemv import QkGemv
from pimforge.hw.hilos.streams import (
    k_signature, q_top_signature, score_signature, v_signature, vec_signature
)
from pimforge.hw.hilos.sv_gemv import SvGemv
from pimforge.hw.hilos.two_pass_softmax import TwoPassSoftmax

__all__ = ["HilosAttention"]


class HilosAttention(PimComponent):
    """The HILOS attention kernel (see the module docstring for the dataflow and
    :mod:`pimforge.hw.hilos.streams` for the beat formats).

    K and V are each consumed at one beat per cycle at steady state; a kernel of J back-to-back
    jobs of n tokens takes about ``(J + 1) * n * head_dim / beat_elems`` cycles.

    Parameters
    ----------
    cfg : HilosAttentionConfig
    """

    UNIT = "hilos_attention"

    def __init__(self, cfg: HilosAttentionConfig):
        E, U, fmt = cfg.beat_elems, cfg.lanes, cfg.score_fmt
        super().__init__(cfg, {
            "i_q": In(q_top_signature(E)),
            "i_k": In(k_signature(E)),
            "i_pre": In(score_signature(U, fmt)),
            "o_s": Out(score_signature(U, fmt)),
            "i_s": In(score_signature(U, fmt)),
            "i_v": In(v_signature(E)),
            "o": Out(vec_signature(E)),
        })

    @property
    def latency(self) -> int:
        """Cycles from a job's last V beat to its first output beat (no stalls)."""
        return attention_tail_cycles(self.cfg)

    @property
    def throughput(self) -> float:
        """K (and V) beats per cycle at steady state."""
        return 1.0

    def manifest(self) -> dict:
        man = super().manifest()
        man["mac_lanes"] = {"qk_gemv": self.cfg.beat_elems * self.cfg.d_group,
                            "sv_gemv": self.cfg.beat_elems * self.cfg.d_group}
        man["exp_units_per_pass"] = self.cfg.lanes
        return man

    def elaborate(self, platform):
        cfg = self.cfg
        m = Module()
        m.submodules.qk = qk = QkGemv(cfg.qk_config())
        m.submodules.softmax = sm = TwoPassSoftmax(cfg.softmax_config())
        m.submodules.sv = sv = SvGemv(cfg.sv_config())

        # ---- Q in: pass data to qk_gemv, remember each job's `pre` flag
        q_per_job = cfg.d_group * cfg.row_beats
        m.submodules.jobs = jobs = SyncFIFO(width=1, depth=4)
        q_beat = Signal(range(q_per_job), name="q_beat")
        q_fire = Signal(name="q_fire")
        m.d.comb += [qk.i_q.payload.data.eq(self.i_q.payload.data),
                     qk.i_q.valid.eq(self.i_q.valid & jobs.w_rdy),
                     self.i_q.ready.eq(qk.i_q.ready & jobs.w_rdy),
                     q_fire.eq(self.i_q.valid & self.i_q.ready),
                     jobs.w_data.eq(self.i_q.payload.pre),
                     jobs.w_en.eq(q_fire & (q_beat == 0))]
        with m.If(q_fire):
            m.d.sync += q_beat.eq(Mux(q_beat == q_per_job - 1, 0, q_beat + 1))
        m.d.comb += [qk.i_k.payload.eq(self.i_k.payload), qk.i_k.valid.eq(self.i_k.valid),
                     self.i_k.ready.eq(qk.i_k.ready)]

        # ---- concatenation: the job's K-derived scores, then (pre) its precomputed scores
        from_pre = Signal(name="from_pre")
        job_pre = jobs.r_data[0]
        cat = Signal(self.o_s.payload.shape(), name="cat_payload")
        cat_valid = Signal(name="cat_valid")
        cat_ready = Signal(name="cat_ready")
        with m.If(from_pre):
            m.d.comb += [cat.eq(self.i_pre.payload), cat_valid.eq(self.i_pre.valid),
                         self.i_pre.ready.eq(cat_ready)]
        with m.Else():
            m.d.comb += [cat.eq(qk.o.payload), cat.last.eq(qk.o.payload.last & ~job_pre),
                         cat_valid.eq(qk.o.valid & jobs.r_rdy),
                         qk.o.ready.eq(cat_ready & jobs.r_rdy)]
        cat_fire = cat_valid & cat_ready
        with m.If(cat_fire & ~from_pre & qk.o.payload.last):
            with m.If(job_pre):
                m.d.sync += from_pre.eq(1)
            with m.Else():
                m.d.comb += jobs.r_en.eq(1)
        with m.If(cat_fire & from_pre & self.i_pre.payload.last):
            m.d.sync += from_pre.eq(0)
            m.d.comb += jobs.r_en.eq(1)

        # ---- fork: pass 1 and the DRAM write (through a FIFO, so neither waits on the other)
        width = len(self.o_s.payload.as_value())
        m.submodules.dram_w = dram_w = SyncFIFO(width=width, depth=4)
        m.d.comb += [sm.i.payload.eq(cat), sm.i.valid.eq(cat_valid & dram_w.w_rdy),
                     cat_ready.eq(sm.i.ready & dram_w.w_rdy),
                     dram_w.w_data.eq(cat), dram_w.w_en.eq(cat_fire),
                     self.o_s.payload.eq(dram_w.r_data), self.o_s.valid.eq(dram_w.r_rdy),
                     dram_w.r_en.eq(self.o_s.ready)]

        # ---- pass 2 from the DRAM read-back, then S.V
        m.d.comb += [sm.i_s.payload.eq(self.i_s.payload), sm.i_s.valid.eq(self.i_s.valid),
                     self.i_s.ready.eq(sm.i_s.ready),
                     sv.i_p.payload.eq(sm.o.payload), sv.i_p.valid.eq(sm.o.valid),
                     sm.o.ready.eq(sv.i_p.ready),
                     sv.i_v.payload.eq(self.i_v.payload), sv.i_v.valid.eq(self.i_v.valid),
                     self.i_v.ready.eq(sv.i_v.ready),
                     self.o.payload.eq(sv.o.payload), self.o.valid.eq(sv.o.valid),
                     sv.o.ready.eq(self.o.ready)]
        return m


UNITS = (HwUnit("hilos_attention", "HILOS attention kernel: qk_gemv -> two_pass_softmax -> sv_gemv "
                "as a block pipeline with a DRAM model (i_q, i_k, i_pre, i_s, i_v -> o_s, o)",
                HilosAttentionConfig, HilosAttention, HILOS_PRESETS, attention_cycles,
                paper="HILOS §4.4, Fig. 7a", clocks=dict.fromkeys(HILOS_PRESETS, KERNEL_CLOCK),
                activity=attention_activity,
                synth_bench={"skip": "wires qk_gemv, two_pass_softmax and sv_gemv (measured) to "
                                     "its DRAM port"}),)
