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

Every link is a valid/ready stream; the PUs and RUs are the units of :mod:`.pu` and :mod:`.ru`,
unchanged.  Timing is given by the cycle models in :mod:`.units_device`.
"""
from __future__ import annotations

from types import SimpleNamespace

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import fifo, wiring
from amaranth.lib.wiring import In, Out

from pimforge.hw.core.component import PimComponent
from pimforge.hw.pam.streams import kv_signature, partial_signature, q_signature
from pimforge.hw.pam.config import TIERS, PamDeviceConfig, PamSystemConfig
from pimforge.hw.pam.pu import PamPu
from pimforge.hw.pam.ru import PamRu

__all__ = ["PamDevice", "PamSystem", "MASK_FIFO_DEPTH", "TIER_FIFO_DEPTH"]

MASK_FIFO_DEPTH = 4     # requests whose Q is in while their partials are not yet collected
TIER_FIFO_DEPTH = 8     # the same per tier in pam_system (inactive tiers run ahead)


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
        from pimforge.hw.pam.units_device import device_latency
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
        m.submodules.mask_fifo = mf = fifo.SyncFIFO(width=n, depth=MASK_FIFO_DEPTH)
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


class PamSystem(PimComponent):
    """``pam_system``: HBM, DDR and SSD devices and the final RU in the HBM tier (PAM §5.2,
    Alg. 1 lines 15-22).

    Streams: ``i_q_<tier>`` (the tier's ``pam_device`` ``i_q``), ``i_kv_<tier><k>`` (PU k of the
    tier), ``o`` (final RU: ``data``, ``norm``, ``m``, ``l``, ``lse``).  Every tier receives a Q
    load for every request (mask 0 when the tier has no tokens), so the tier masks stay aligned;
    the final RU merges the partials of the tiers with a non-zero mask in tier order.

    Parameters
    ----------
    cfg : PamSystemConfig
    """

    UNIT = "pam_system"

    def __init__(self, cfg: PamSystemConfig):
        acc, w = cfg.acc, cfg.ru_vector_width
        members = {}
        for t in TIERS:
            dc = cfg.device_config(t)
            members[f"i_q_{t}"] = In(q_signature(dc.lanes, dc.pus))
            for k in range(dc.pus):
                members[f"i_kv_{t}{k}"] = In(kv_signature(dc.lanes))
        members["o"] = Out(partial_signature(acc, w, final=True))
        super().__init__(cfg, members)

    @property
    def latency(self) -> int:
        from pimforge.hw.pam.units_device import system_latency
        return system_latency(self.cfg)

    @property
    def throughput(self) -> float:
        """K/V beats per cycle per PU."""
        return 1.0

    def manifest(self) -> dict:
        man = super().manifest()
        man["pus"] = {t: self.cfg.pus(t) for t in TIERS}
        man["tier_fifo_depth"] = TIER_FIFO_DEPTH
        return man

    def elaborate(self, platform):
        cfg = self.cfg
        m = Module()
        devs, flags = [], []
        for t in TIERS:
            dc = cfg.device_config(t)
            dev = PamDevice(dc)
            m.submodules[f"dev_{t}"] = dev
            devs.append(dev)
            for k in range(dc.pus):
                wiring.connect(m, wiring.flipped(getattr(self, f"i_kv_{t}{k}")),
                               getattr(dev, f"i_kv{k}"))
            # the tier's activity flag, read at its Q beat 0 and queued
            q = getattr(self, f"i_q_{t}")
            qb = Signal(range(dc.head_dim // dc.lanes), name=f"q_beat_{t}")
            ff = fifo.SyncFIFO(width=1, depth=TIER_FIFO_DEPTH)
            m.submodules[f"tier_fifo_{t}"] = ff
            ok = (qb != 0) | ff.w_rdy
            m.d.comb += [dev.i_q.valid.eq(q.valid & ok),
                         dev.i_q.payload.eq(q.payload.as_value()),
                         q.ready.eq(dev.i_q.ready & ok),
                         ff.w_data.eq(q.payload.active != 0),
                         ff.w_en.eq(q.valid & q.ready & (qb == 0))]
            with m.If(q.valid & q.ready):
                m.d.sync += qb.eq(Mux(qb == dc.head_dim // dc.lanes - 1, 0, qb + 1))
            flags.append(ff)
        m.submodules.ru = ru = PamRu(cfg.device_config("hbm").ru_config(final=True))
        wiring.connect(m, ru.o, wiring.flipped(self.o))

        # the three tier FIFOs read as one FIFO of 3-bit masks
        masks = SimpleNamespace(r_rdy=Cat(f.r_rdy for f in flags).all(),
                                r_data=Cat(f.r_data for f in flags),
                                r_en=Signal(name="tier_masks_r_en"))
        for f in flags:
            m.d.comb += f.r_en.eq(masks.r_en)
        collector(m, [d.o for d in devs], cfg.head_dim // cfg.ru_vector_width, 1, ru.i, masks,
                  name="tiers")
        return m
