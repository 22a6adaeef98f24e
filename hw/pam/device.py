"""``pam_device`` and ``pam_system``: PUs and reduction units composed into a PAM device and
the three-tier PAM system (PAM §5.2, Fig. 8; Alg. 1 ``Local_Attention`` + ``Reduction``).

``pam_device`` (one memory tier)::

    i_q ──► Q fork (beat to every active PU) ──► PU 0 .. PU n-1 ◄── i_kv0 .. i_kv{n-1}
      │ active mask of beat 0                        │ o (O, m, l)
      └──► mask FIFO ──► collector: partials of the active PUs in PU order, width
                         converter lanes -> ru_vector_width, ``last`` ──► RU ──► o

``pam_system``: a ``pam_device`` per tier (HBM, DDR, SSD); a tier takes part in a request when
its Q mask is non-zero, and a second collector feeds the device partials of the active tiers, in
the order HBM, DDR, SSD, into the final RU of the HBM tier (Alg. 1 lines 15-22).

Every link is a valid/ready stream; the PUs and RUs are the units of
:mod:`~pimforge.hw.pam.pu` and :mod:`~pimforge.hw.pam.ru`, unchanged.  Timing is given by the
cycle model below
(:func:`~pimforge.hw.pam.device_timing.device_schedule`).

Cycle model: it replays, request by request, what the RTL does with no stalls: the shared Q
stream of a device (a beat moves once every active PU can take it), each PU's K/V phase and
output (from :func:`~pimforge.hw.pam.pu_timing.pu_schedule`), the collector (one source beat per
cycle, PU after PU, ``ru_vector_width / lanes`` beats per RU beat) and the RU (its statistics and
scratch write-back, then a reader that blocks the RU input until the merged partial has been
read out; :mod:`pimforge.hw.pam.ru`).  Back-pressure links them: a PU takes its next set's K/V
only when its partial has been collected, and the RU takes the next request only after its
reader is done.
"""
from __future__ import annotations

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from pimforge.hw.core.activity import SyncFIFO
from pimforge.hw.core.component import PimComponent
from pimforge.hw.core.unit import HwUnit
from pimforge.hw.pam.config import PU_TIER_PRESETS, TIERS, TIER_CLOCKS, PamDeviceConfig
from pimforge.hw.pam.device_timing import (
    MASK_FIFO_DEPTH, device_activity_model, device_cycle_model, device_latency
)
from pimforge.hw.pam.pu import PamPu
from pimforge.hw.pam.ru import PamRu
from pimforge.hw.pam.streams import kv_signature, partial_signature, q_signature

__all__ = ["PamDevice", "DEVICE_PRESETS", "collector"]


def _lowest(m, bits: Signal, width: int):
    """One-hot lowest set bit of ``bits`` (0 when none)."""
    low = Signal(width, name=f"{bits.name}_low")
    m.d.comb += low.eq(bits & (~bits + 1)[:width])
    return low


def _select(onehot, values: list):
    """AND-OR multiplexer: the value whose one-hot bit is set (0 when none)."""
    out = Const(0, len(Cat(values[0])))
    for k, v in enumerate(values):
        out = out | Mux(onehot[k], Cat(v), 0)
    return out


def collector(m, ports: list, beats: int, ratio: int, ru_i, masks, name: str):
    """Forward the partials (``beats`` beats each) of a request's active ``ports``, in index
    order, into ``ru_i`` (``data``, ``m``, ``l``, ``last``), ``ratio`` (a power of two) source
    beats per RU beat, element 0 first.

    ``masks`` is the read side (``r_rdy``, ``r_data``, ``r_en``) of a FIFO of per-request masks
    (bit k: port k takes part); the next mask is taken once the previous request has been
    forwarded, and ``last`` marks the final beat of the last active port's partial.
    """
    n = len(ports)
    rem = Signal(n, name=f"{name}_remaining")       # active ports not yet forwarded
    cur = _lowest(m, rem, n)
    beat = Signal(range(beats), name=f"{name}_beat")
    with m.If((rem == 0) & masks.r_rdy):
        m.d.comb += masks.r_en.eq(1)
        m.d.sync += rem.eq(masks.r_data)
    sel_valid = _select(cur, [p.valid for p in ports])[0]
    sel_data = _select(cur, [p.payload.data for p in ports])
    sel_m = _select(cur, [p.payload.m for p in ports])
    sel_l = _select(cur, [p.payload.l for p in ports])
    sub = beat[:(ratio - 1).bit_length()] if ratio > 1 else Const(0, 1)
    emit = sub == ratio - 1                         # this source beat completes an RU beat
    sel_ready = ~emit | ru_i.ready
    for k, p in enumerate(ports):
        m.d.comb += p.ready.eq(cur[k] & sel_ready)
    held = [Signal(len(sel_data), name=f"{name}_held{j}") for j in range(ratio - 1)]
    m.d.comb += [ru_i.valid.eq(sel_valid & emit),
                 ru_i.payload.data.eq(Cat(*held, sel_data)),
                 ru_i.payload.m.eq(sel_m), ru_i.payload.l.eq(sel_l),
                 ru_i.payload.last.eq(((rem & ~cur) == 0) & (beat == beats - 1))]
    with m.If(sel_valid & sel_ready):
        m.d.sync += beat.eq(Mux(beat == beats - 1, 0, beat + 1))
        for j, h in enumerate(held):                # width converter: keep beats 0..ratio-2
            with m.If(sub == j):
                m.d.sync += h.eq(sel_data)
        with m.If(beat == beats - 1):
            m.d.sync += rem.eq(rem & ~cur)


class PamDevice(PimComponent):
    """``pam_device``: ``pus`` PUs of one tier and the intra-device RU (PAM §5.2).

    Streams: ``i_q`` (``data``: lanes fp16, ``active``: bit k = PU k has tokens in this request;
    B = head_dim / lanes beats, the mask is read at beat 0), ``i_kv0`` .. ``i_kv{pus-1}`` (each
    PU's K/V stream, the ``pam_pu`` format), ``o`` (the RU's merged partial: ``data``, ``m``,
    ``l``, head_dim / ru_vector_width beats).  A request with mask 0 produces no output.

    Throughput: every PU takes one K/V beat per cycle.  :attr:`latency`: cycles from the last
    K/V beat to the first output beat for a request of ``tile_tokens`` tokens per PU.

    Parameters
    ----------
    cfg : PamDeviceConfig
    """

    UNIT = "pam_device"

    def __init__(self, cfg: PamDeviceConfig):
        members = {"i_q": In(q_signature(cfg.lanes, cfg.pus))}
        for k in range(cfg.pus):
            members[f"i_kv{k}"] = In(kv_signature(cfg.lanes))
        members["o"] = Out(partial_signature(cfg.acc, cfg.ru_vector_width))
        super().__init__(cfg, members)

    @property
    def latency(self) -> int:
        return device_latency(self.cfg)

    @property
    def throughput(self) -> float:
        """K/V beats per cycle per PU."""
        return 1.0

    def manifest(self) -> dict:
        man = super().manifest()
        man["pus"] = self.cfg.pus
        man["mask_fifo_depth"] = MASK_FIFO_DEPTH
        man["storage_bytes"] = (self.cfg.pus * self.cfg.pu_config().storage_bytes
                                + self.cfg.head_dim * self.cfg.acc.width // 8)
        return man

    def elaborate(self, platform):
        cfg = self.cfg
        m = Module()
        n, B = cfg.pus, cfg.head_dim // cfg.lanes
        pus = []
        for k in range(n):
            pu = PamPu(cfg.pu_config())
            m.submodules[f"pu{k}"] = pu
            wiring.connect(m, wiring.flipped(getattr(self, f"i_kv{k}")), pu.i_kv)
            pus.append(pu)
        m.submodules.ru = ru = PamRu(cfg.ru_config(final=False))
        wiring.connect(m, ru.o, wiring.flipped(self.o))

        # ---- Q fork: a beat transfers once every active PU has taken it (per-PU done flags)
        q = self.i_q
        qb = Signal(range(B), name="q_beat")
        mask_hold = Signal(n, name="q_mask")
        mask = Mux(qb == 0, q.payload.active, mask_hold)
        done = Signal(n, name="q_taken")
        m.submodules.mask_fifo = mf = SyncFIFO(width=n, depth=MASK_FIFO_DEPTH)
        slot_ok = (qb != 0) | (q.payload.active == 0) | mf.w_rdy
        took = []
        for k, pu in enumerate(pus):
            m.d.comb += [pu.i_q.valid.eq(q.valid & mask[k] & ~done[k] & slot_ok),
                         pu.i_q.payload.data.eq(q.payload.data)]
            took.append(pu.i_q.valid & pu.i_q.ready)
        m.d.comb += q.ready.eq(slot_ok & Cat(~mask[k] | done[k] | pus[k].i_q.ready
                                             for k in range(n)).all())
        fire = q.valid & q.ready
        with m.If(fire):
            m.d.sync += [done.eq(0), qb.eq(Mux(qb == B - 1, 0, qb + 1))]
            with m.If(qb == 0):
                m.d.sync += mask_hold.eq(q.payload.active)
        with m.Elif(q.valid):
            m.d.sync += done.eq(done | Cat(*took))
        m.d.comb += [mf.w_data.eq(q.payload.active),
                     mf.w_en.eq(fire & (qb == 0) & (q.payload.active != 0))]

        # ---- collector: partials of the active PUs in PU order into the RU
        collector(m, [pu.o for pu in pus], B, cfg.ru_vector_width // cfg.lanes, ru.i, mf,
                  name="collect")
        return m


# PAM §5.2.1, Table 1: the tiers' PU widths; two PUs per device keep the presets quick to build
# and simulate (``pus`` sets the paper's count).  ``small`` (d = 64, 4-lane PUs into an 8-lane RU)
# and the system's ``small`` are the configs of the RTL tests and the demo.
DEVICE_PRESETS = {**{t: {**PU_TIER_PRESETS[t], "pus": 2} for t in TIERS},
                  "small": {"pus": 2, "lanes": 4, "ru_vector_width": 8, "head_dim": 64}}


UNITS = (HwUnit("pam_device", "PAM device: PUs of one tier and the intra-device RU "
                "(i_q, i_kv0.. -> o: O, m, l)", PamDeviceConfig, PamDevice, DEVICE_PRESETS,
                device_cycle_model, paper="PAM §5.2, Fig. 8; Alg. 1",
                clocks=TIER_CLOCKS, activity=device_activity_model,
                # its RU as wide as its PUs, so the operators may be as deep as pam_pu's
                # 100 MHz config; placement takes up to 45 minutes beside another run
                synth_bench={"preset": "small", "set": {"ru_vector_width": 4, "op_depth": 12},
                             "timeout_s": 3600}),)
