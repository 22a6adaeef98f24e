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

Cycle model (:func:`kernel_schedule`): composed from its units' own models. The kernel is a pipeline of ``qk_gemv`` -> pass 1 -> (DRAM) -> pass 2 -> ``sv_gemv`` with
flow control between them, so the composition follows each job's blocks through the units:

* ``qk_gemv``: :func:`~pimforge.hw.hilos.qk_timing.qk_schedule` over the jobs' stored tokens (K
  offered from cycle ``latency``).  A job's precomputed score beats follow its last K-derived
  score beat, one per cycle.
* pass 1 ends with the job's last score beat; its statistics are ready ``stats + 1`` cycles
  later (:func:`~pimforge.hw.hilos.two_pass_softmax.softmax_timing`).  Pass 2 of job h starts
  then, after pass 2 of job h-1, and once its first score beat has come back from the DRAM model
  (written one cycle after it passed, readable ``latency + 1`` cycles later).
* pass 2 emits one ``y`` beat per cycle, ``normalize + 1`` cycles after its input beat, into
  ``sv_gemv``'s two P-buffer slots: block i's ``y`` beats wait for the slot that block i-2's
  V rows free.  V rows follow :func:`~pimforge.hw.hilos.sv_gemv.sv_schedule`'s rules.

The composition ignores second-order couplings (the concatenation holding the next job's scores
while the precomputed ones pass, pass 2's output FIFO), which cost a few cycles per job; the tests
check the model against the RTL within the issue's 2%.
"""
from __future__ import annotations

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import fifo, stream
from amaranth.lib.wiring import In, Out

from pimforge.base.formats import FP16
from pimforge.base.numerics import block_starts
from pimforge.hw.core.component import PimComponent
from pimforge.hw.core.payload import flag, payload_layout, vec
from pimforge.hw.core.unit import HwUnit
from pimforge.hw.hilos.config import HILOS_PRESETS, KERNEL_CLOCK, HilosAttentionConfig
from pimforge.hw.hilos.qk_gemv import QkGemv
from pimforge.hw.hilos.qk_timing import qk_schedule
from pimforge.hw.hilos.streams import k_signature, score_signature, v_signature, vec_signature
from pimforge.hw.hilos.sv_gemv import SvGemv, sv_timing
from pimforge.hw.hilos.two_pass_softmax import TwoPassSoftmax, softmax_timing

__all__ = ["HilosAttention", "q_top_signature"]


def q_top_signature(elems: int) -> stream.Signature:
    """Q beats of the top: ``data`` (E x fp16) and ``pre`` (the job has precomputed scores)."""
    return stream.Signature(payload_layout(data=vec(FP16, elems), pre=flag()))


class HilosAttention(PimComponent):
    """The HILOS attention kernel (see the module docstring for the dataflow and README, "HILOS
    attention kernel", for the beat formats).

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
        m.submodules.jobs = jobs = fifo.SyncFIFO(width=1, depth=4)
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
        m.submodules.dram_w = dram_w = fifo.SyncFIFO(width=width, depth=4)
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


def _blocks(cfg, n_k: int, n: int) -> int:
    """Row blocks of one query: the stored tokens' blocks plus the precomputed ones'."""
    c = n - n_k
    return -(-n_k // cfg.block) + (-(-c // cfg.block) if c else 0)


def bound_parts(cfg, jobs) -> dict:
    """The three limits of a kernel run, in cycles, for ``jobs`` = [(n_k, n), ...]:
    QK^T beats (K rows of the stored tokens), S.V beats (V rows of all tokens) and the cycles of
    one softmax pass (``d_group`` rows of ``block / lanes`` beats per block)."""
    rb = cfg.row_beats
    return {"qk_beats": sum(n_k * rb for n_k, _ in jobs),
            "sv_beats": sum(n * rb for _, n in jobs),
            "softmax_pass": sum(cfg.d_group * _blocks(cfg, n_k, n) * cfg.block_beats
                                for n_k, n in jobs)}


def kernel_bound(cfg, jobs) -> int:
    """max(QK^T beats, S.V beats, softmax pass cycles): what the kernel cannot beat at one beat
    per cycle per unit."""
    return max(bound_parts(cfg, jobs).values())


def attention_cycles(cfg: HilosAttentionConfig, n_tokens: int, jobs: int = 1) -> int:
    """Cycle model of ``jobs`` back-to-back jobs of ``n_tokens`` stored tokens each (no stalls,
    DRAM at one beat per cycle with zero latency), first input to last output beat."""
    return kernel_schedule(cfg, [(n_tokens, n_tokens)] * jobs)["cycles"]


def attention_tail_cycles(cfg: HilosAttentionConfig) -> int:
    return kernel_schedule(cfg, [(cfg.block, cfg.block)])["tail"]


def kernel_schedule(cfg, jobs, latency: int = 0) -> dict:
    """``jobs`` = [(n_k, n), ...] (stored tokens, all tokens); returns ``cycles`` (first cycle
    to the last output beat, inclusive), ``tail`` (last V beat to the first output beat of the
    last job) and per job the cycles of its ``first_out`` and ``last_out`` beats."""
    qk = qk_schedule(cfg.qk_config(), [n_k for n_k, _ in jobs])
    st = softmax_timing(cfg.softmax_config())
    sv = sv_timing(cfg.sv_config())
    G, RB = cfg.d_group, cfg.row_beats
    p_beats = G * cfg.block_beats
    lag = st["normalize"] + 1
    out = []
    cat_end = -1             # last score beat into pass 1 (and the DRAM write FIFO)
    s_end = -1               # pass 2's last input beat
    y_end = -1               # last y beat into sv_gemv
    v_ends = [-1, -1]        # last V beat of blocks i-2 and i-1
    drain_ends = [-1, -1]    # last drain read of jobs h-2 and h-1
    for h, (n_k, n) in enumerate(jobs):
        q = qk[h]
        c = n - n_k
        segments = [n_k, c] if c else [n_k]
        blocks = [e - a for a, e in block_starts(n, cfg.block, segments)]
        pre_beats = (len(blocks) - len(block_starts(n_k, cfg.block))) * p_beats
        first_cat = max(q["first_out"] + latency, cat_end + 1)
        cat_end = max(q["last_out"] + latency, cat_end + 1) + pre_beats
        s_start = max(cat_end + st["stats"] + 1, s_end + 1, first_cat + 1 + latency + 1)
        v_first = None
        for k, n_b in enumerate(blocks):
            y_start = max(s_start + k * p_beats + lag, y_end + 1, v_ends[0] + 1)
            y_end = y_start + p_beats - 1
            v_start = max(y_end + 1, v_ends[1] + 1, latency)
            if k == 0:
                v_start = max(v_start, drain_ends[0] + 1)
                v_first = v_start
            v_ends = [v_ends[1], v_start + n_b * RB - 1]
        s_end = y_end - lag
        v_last = v_ends[1]
        d_start = max(v_last + sv["mul"] + sv["add"] + 1, drain_ends[1] + 1)
        d_end = d_start + G * RB - 1
        drain_ends = [drain_ends[1], d_end]
        out.append({"v_first": v_first, "v_last": v_last, "first_out": d_start + sv["conv"] + 1,
                    "last_out": d_end + sv["conv"] + 1})
    last = out[-1]
    return {"cycles": last["last_out"] + 1, "tail": last["first_out"] - last["v_last"],
            "jobs": out}


UNITS = (HwUnit("hilos_attention", "HILOS attention kernel: qk_gemv -> two_pass_softmax -> sv_gemv "
                "as a block pipeline with a DRAM model (i_q, i_k, i_pre, i_s, i_v -> o_s, o)",
                HilosAttentionConfig, HilosAttention, HILOS_PRESETS, attention_cycles,
                paper="HILOS §4.4, Fig. 7a", clocks=dict.fromkeys(HILOS_PRESETS, KERNEL_CLOCK),
                synth_bench={"skip": "wires qk_gemv, two_pass_softmax and sv_gemv (measured) to "
                                     "its DRAM port"}),)
