"""``pam_system``: a ``pam_device`` per tier (HBM, DDR, SSD) and the final RU of the HBM tier
(PAM §5.2, Fig. 8; Alg. 1 lines 15-22).

A tier takes part in a request when its Q mask is non-zero, and a collector feeds the device
partials of the active tiers, in the order HBM, DDR, SSD, into the final RU.  Every link is a
valid/ready stream; the devices are :mod:`~pimforge.hw.pam.device`'s, unchanged.  The cycle model
(:func:`~pimforge.hw.pam.system_timing.system_schedule`) runs the device model of each tier and the
final RU's timing. """
from __future__ import annotations

from types import SimpleNamespace

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from pimforge.hw.core.activity import SyncFIFO
from pimforge.hw.core.component import PimComponent
from pimforge.hw.core.unit import HwUnit
from pimforge.hw.pam.config import TIERS, PamSystemConfig
from pimforge.hw.pam.device import PamDevice, collector
from pimforge.hw.pam.ru import PamRu
from pimforge.hw.pam.streams import kv_signature, partial_signature, q_signature
from pimforge.hw.pam.system_timing import (
    TIER_FIFO_DEPTH, system_activity_model, system_cycle_model, system_latency
)

__all__ = ["PamSystem", "SYSTEM_PRESETS"]


SYSTEM_PRESETS = {"default": {},
                  "small": {"hbm_pus": 2, "ddr_pus": 2, "ssd_pus": 2, "hbm_lanes": 8,
                            "ddr_lanes": 4, "ssd_lanes": 8, "ru_vector_width": 8,
                            "head_dim": 64}}


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
            ff = SyncFIFO(width=1, depth=TIER_FIFO_DEPTH)
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


UNITS = (HwUnit("pam_system", "PAM system: HBM, DDR, SSD devices and the final RU "
                "(i_q_<tier>, i_kv_<tier><k> -> o: O, norm, m, l, lse)", PamSystemConfig,
                PamSystem, SYSTEM_PRESETS, system_cycle_model,
                paper="PAM §5.2, Fig. 8; Alg. 1 lines 15-22",
                activity=system_activity_model,
                synth_bench={"skip": "three pam_device instances and an RU: pam_device and "
                                     "pam_ru are measured"}),)
