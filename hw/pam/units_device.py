"""Registration of ``pam_device`` and ``pam_system``, and their cycle models.

The cycle models replay, request by request, what the RTL does with no stalls: the shared Q
stream of a device (a beat moves once every active PU can take it), each PU's K/V phase and
output (from :func:`~pimforge.hw.pam.units_pu.pu_schedule`), the collector (one source beat per
cycle, PU after PU, ``ru_vector_width / lanes`` beats per RU beat) and the RU (its statistics and
scratch write-back, then a reader that blocks the RU input until the merged partial has been
read out; :mod:`pimforge.hw.pam.ru`).  Back-pressure links them: a PU takes its next set's K/V
only when its partial has been collected, and the RU takes the next request only after its
reader is done.
"""
from __future__ import annotations

from functools import lru_cache

from pimforge.hw.pam.config import (PU_TIER_PRESETS, TIERS, PamDeviceConfig, PamSystemConfig)
from pimforge.registry import Unit, register

__all__ = ["device_cycles", "system_cycles", "device_schedule", "system_schedule",
           "device_latency", "system_latency", "DEVICE_PRESETS", "SYSTEM_PRESETS"]

# PAM §5.2.1, Table 1: the tiers' PU widths and clocks; two PUs per device keep the presets quick
# to build and simulate (``pus`` sets the paper's count).  ``small`` (d = 64, 4-lane PUs into an
# 8-lane RU) and the system's ``small`` are the configs of the RTL tests and the demo.
DEVICE_PRESETS = {**{t: {"lanes": PU_TIER_PRESETS[t]["lanes"], "pus": 2,
                         "clock_mhz": PU_TIER_PRESETS[t]["clock_mhz"]} for t in TIERS},
                  "small": {"pus": 2, "lanes": 4, "ru_vector_width": 8, "head_dim": 64}}
SYSTEM_PRESETS = {"default": {},
                  "small": {"hbm_pus": 2, "ddr_pus": 2, "ssd_pus": 2, "hbm_lanes": 8,
                            "ddr_lanes": 4, "ssd_lanes": 8, "ru_vector_width": 8,
                            "head_dim": 64}}


def _ru_timing(ru_cfg) -> tuple:
    """(write-back, statistics) delays of the RU: its reader may start ``written`` cycles after
    the request's last input beat and ``stats`` cycles after the last partial's beat 0."""
    from pimforge.hw.pam.blocks import op_latency
    from pimforge.hw.pam.ru import stats_ready
    from pimforge.hw.pam.softmax import merge_latency
    od = ru_cfg.op_depth
    return merge_latency(od, ru_cfg.acc) + op_latency("fma", od) + 1, stats_ready(ru_cfg)


def _ru_go(ru_cfg, beats: list) -> int:
    """Cycle the RU reader starts, given the cycles of a request's input beats."""
    written, stats = _ru_timing(ru_cfg)
    return max(beats[-1] + written, beats[-ru_cfg.beats] + stats)


@lru_cache(maxsize=None)
def _pu_tail(pu_cfg, n: int) -> int:
    """Cycles from a PU's first K beat of an n-token set to its first output beat."""
    from pimforge.hw.pam.units_pu import pu_schedule
    return pu_schedule(pu_cfg, [n])[0][0] - pu_cfg.beats      # that set's K starts after Q


class _DeviceModel:
    """State of one device between requests (all cycles are the first free cycle)."""

    def __init__(self, cfg: PamDeviceConfig):
        from pimforge.hw.pam.device import MASK_FIFO_DEPTH
        self.cfg, self.pu_cfg, self.ru_cfg = cfg, cfg.pu_config(), cfg.ru_config(False)
        self.B = cfg.head_dim // cfg.lanes
        self.ratio = cfg.ru_vector_width // cfg.lanes
        self.depth = MASK_FIFO_DEPTH
        self.q_free = 0
        self.pu_q = [0] * cfg.pus          # PU k's i_q ready (its previous set's K/V are in)
        self.pu_kv = [0] * cfg.pus         # PU k's i_kv ready (its previous partial collected)
        self.coll_free = 0                 # the collector may take the next mask
        self.ru_free = 0                   # the RU input takes the next request
        self.pops = []                     # cycles the masks left the mask FIFO
        self.q_start = self.last_kv = 0

    def begin(self, counts, q_min: int = 0):
        """Q, K/V, PU partials and collector for one request of per-PU token ``counts``;
        returns the cycle the RU reader starts, or None for a request without tokens."""
        B = self.B
        active = [k for k, c in enumerate(counts) if c]
        qs = max(self.q_free, q_min, *(self.pu_q[k] for k in active))
        if active and len(self.pops) >= self.depth:     # mask FIFO full
            qs = max(qs, self.pops[-self.depth] + 1)
        self.q_start, self.q_free = qs, qs + B
        if not active:
            return None
        first_out = {}
        for k in active:
            kv = max(qs + B, self.pu_kv[k])
            first_out[k] = kv + _pu_tail(self.pu_cfg, counts[k])
            self.pu_q[k] = kv + 2 * counts[k] * B
        self.last_kv = max(self.pu_q[k] for k in active) - 1
        load = max(qs + 1, self.coll_free)              # the mask is read from the FIFO
        self.pops.append(load)
        t, ru_beats = load, []
        for k in active:
            for i in range(B):
                t = max(t + 1, first_out[k])
                if i % self.ratio == self.ratio - 1:
                    t = max(t, self.ru_free)
                    ru_beats.append(t)
            self.pu_kv[k] = t + 1
        self.coll_free = t + 1
        return _ru_go(self.ru_cfg, ru_beats)

    def finish(self, outs: list):
        """The merged partial left at cycles ``outs``; the reader frees the RU input one cycle
        after it has read the last entry (at the second-to-last output transfer)."""
        self.ru_free = outs[-2] + 1


def _tokens(cfg, spec) -> list:
    """Per-PU counts of a request: an int is spread evenly over the PUs (PUs 0.. get the
    extra tokens), a sequence is taken as given."""
    from pimforge.sim.golden.pam import spread
    if isinstance(spec, int):
        return spread(spec, [1] * cfg.pus)
    if len(spec) != cfg.pus:
        raise ValueError(f"{len(spec)} per-PU counts for {cfg.pus} PUs")
    return list(spec)


def device_schedule(cfg: PamDeviceConfig, requests) -> list:
    """No-stall schedule of ``pam_device``: for each request (token count, or per-PU counts),
    ``(last_kv, first_out, last_out)`` cycles, or None for a request without tokens."""
    dev, out = _DeviceModel(cfg), []
    for spec in requests:
        go = dev.begin(_tokens(cfg, spec))
        if go is None:
            out.append(None)
            continue
        outs = [go + 1 + j for j in range(dev.ru_cfg.beats)]
        dev.finish(outs)
        out.append((dev.last_kv, outs[0], outs[-1]))
    return out


def device_cycles(cfg: PamDeviceConfig, counts_per_request) -> int:
    """Cycles (to the last output transfer, inclusive) of requests sent back to back with no
    stalls; each request is a token count spread evenly over the PUs, or per-PU counts."""
    ends = [s[2] for s in device_schedule(cfg, counts_per_request) if s]
    return ends[-1] + 1 if ends else 0


def device_latency(cfg: PamDeviceConfig) -> int:
    """Cycles from the last K/V beat to the first output beat, ``tile_tokens`` tokens per PU."""
    last_kv, first, _ = device_schedule(cfg, [[cfg.tile_tokens] * cfg.pus])[0]
    return first - last_kv


def _tier_tokens(cfg: PamSystemConfig, spec) -> list:
    """Per-tier token counts: an int is split over the tiers in proportion to their PU
    counts; a sequence of three is taken as given."""
    from pimforge.sim.golden.pam import spread
    if isinstance(spec, int):
        return spread(spec, [cfg.pus(t) for t in TIERS])
    if len(spec) != len(TIERS):
        raise ValueError(f"{len(spec)} tier counts; give one per tier {TIERS}")
    return list(spec)


def system_schedule(cfg: PamSystemConfig, requests) -> list:
    """No-stall schedule of ``pam_system``: per request (total tokens, or tokens per tier, each
    tier's tokens spread evenly over its PUs), ``(last_kv, first_out, last_out)`` or None."""
    from pimforge.hw.pam.device import TIER_FIFO_DEPTH
    from pimforge.hw.pam.ru import ru_drain_depth
    from pimforge.sim.golden.pam import spread
    devs = [_DeviceModel(cfg.device_config(t)) for t in TIERS]
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
        go = _ru_go(fin, beats)
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


def _device_bench(cfg, rng, seed=1, n_random=None, **kw):
    """The device bench; ``n_random`` (the float units' operand count) does not apply."""
    from pimforge.sim.benches.pam_device import device_job
    return device_job(cfg, rng, seed=seed, **kw)


def _system_bench(cfg, rng, seed=1, n_random=None, **kw):
    from pimforge.sim.benches.pam_device import system_job
    return system_job(cfg, rng, seed=seed, **kw)


def _device_factory(cfg):
    from pimforge.hw.pam.device import PamDevice
    return PamDevice(cfg)


def _system_factory(cfg):
    from pimforge.hw.pam.device import PamSystem
    return PamSystem(cfg)


register(Unit("pam_device", "PAM device: PUs of one tier and the intra-device RU "
              "(i_q, i_kv0.. -> o: O, m, l)", PamDeviceConfig, _device_factory, DEVICE_PRESETS,
              _device_bench, lambda cfg, n: device_cycles(cfg, [n])))
register(Unit("pam_system", "PAM system: HBM, DDR, SSD devices and the final RU "
              "(i_q_<tier>, i_kv_<tier><k> -> o: O, norm, m, l, lse)", PamSystemConfig,
              _system_factory, SYSTEM_PRESETS, _system_bench,
              lambda cfg, n: system_cycles(cfg, [n])))
