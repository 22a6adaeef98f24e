"""``pam_system``: a ``pam_device`` per tier (HBM, DDR, SSD) and the final RU of the HBM tier
(PAM §5.2, Fig. 8; Alg. 1 lines 15-22).

A tier takes part in a request when its Q mask is non-zero, and a collector feeds the device
partials of the active tiers, in the order HBM, DDR, SSD, into the final RU.  Every link is a
valid/ready stream; the devices are :mod:`.device`'s, unchanged.  The cycle model
(:func:`system_schedule`) runs the device model of each tier and the final RU's timing.
"""
from __future__ import annotations

from types import SimpleNamespace

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import fifo, wiring
from amaranth.lib.wiring import In, Out

from pimforge.base.numerics import spread
from pimforge.hw.core.component import PimComponent
from pimforge.hw.core.unit import HwUnit
from pimforge.hw.pam.config import TIERS, PamSystemConfig
from pimforge.hw.pam.device import DeviceModel, PamDevice, collector, ru_go
from pimforge.hw.pam.ru import PamRu, ru_drain_depth
from pimforge.hw.pam.streams import kv_signature, partial_signature, q_signature

__all__ = ["PamSystem", "TIER_FIFO_DEPTH", "SYSTEM_PRESETS", "system_schedule", "system_cycles",
           "system_latency"]

TIER_FIFO_DEPTH = 8     # requests whose Q is in per tier (inactive tiers run ahead)

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


def _tier_tokens(cfg: PamSystemConfig, spec) -> list:
    """Per-tier token counts: an int is split over the tiers in proportion to their PU
    counts; a sequence of three is taken as given."""
    if isinstance(spec, int):
        return spread(spec, [cfg.pus(t) for t in TIERS])
    if len(spec) != len(TIERS):
        raise ValueError(f"{len(spec)} tier counts; give one per tier {TIERS}")
    return list(spec)


def system_schedule(cfg: PamSystemConfig, requests) -> list:
    """No-stall schedule of ``pam_system``: per request (total tokens, or tokens per tier, each
    tier's tokens spread evenly over its PUs), ``(last_kv, first_out, last_out)`` or None."""
    devs = [DeviceModel(cfg.device_config(t)) for t in TIERS]
    fin = cfg.device_config("hbm").ru_config(final=True)
    dd, bw = ru_drain_depth(fin), fin.beats
    pops, coll_free, ru_free, out = [], 0, 0, []
    for r, spec in enumerate(requests):
        q_min = pops[r - TIER_FIFO_DEPTH] + 1 if r >= TIER_FIFO_DEPTH else 0
        gos = [d.begin(spread(n, [1] * d.cfg.pus), q_min)
               for d, n in zip(devs, _tier_tokens(cfg, spec))]
        load = max(max(d.q_start for d in devs) + 1, coll_free)
        pops.append(load)
        t, beats = load, []
        for d, go in zip(devs, gos):
            if go is None:
                continue
            outs = []
            for _ in range(bw):
                t = max(t + 1, go + 1, ru_free)
                outs.append(t)
            d.finish(outs)
            beats += outs
        coll_free = t + 1
        if not beats:
            out.append(None)
            continue
        go = ru_go(fin, beats)
        ru_free = go + bw
        last_kv = max(d.last_kv for d, g in zip(devs, gos) if g is not None)
        out.append((last_kv, go + 1 + dd, go + bw + dd))
    return out


def system_cycles(cfg: PamSystemConfig, requests) -> int:
    """Cycles (to the last output transfer, inclusive) of requests sent back to back with no
    stalls; each request is a total token count (split over the tiers in proportion to their
    PU counts) or three per-tier counts."""
    ends = [s[2] for s in system_schedule(cfg, requests) if s]
    return ends[-1] + 1 if ends else 0


def system_latency(cfg: PamSystemConfig) -> int:
    """Cycles from the last K/V beat to the first output beat, ``tile_tokens`` tokens per PU
    in every tier."""
    n = [cfg.tile_tokens * cfg.pus(t) for t in TIERS]
    last_kv, first, _ = system_schedule(cfg, [n])[0]
    return first - last_kv


UNITS = (HwUnit("pam_system", "PAM system: HBM, DDR, SSD devices and the final RU "
                "(i_q_<tier>, i_kv_<tier><k> -> o: O, norm, m, l, lse)", PamSystemConfig,
                PamSystem, SYSTEM_PRESETS, lambda cfg, n: system_cycles(cfg, [n]),
                paper="PAM §5.2, Fig. 8; Alg. 1 lines 15-22",
                synth_bench={"skip": "three pam_device instances and an RU: pam_device and "
                                     "pam_ru are measured"}),)
