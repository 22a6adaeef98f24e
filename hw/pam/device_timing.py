"""The no-stall schedule and the actions of :mod:`pimforge.hw.pam.device`: :class:`DeviceModel`
follows one device between requests; the unit's cycle model is :func:`device_cycle_model`, its
activity model :func:`device_activity_model` (the sum of its PUs' and its RU's)."""
from __future__ import annotations

from collections import Counter
from functools import lru_cache

from pimforge.base.numerics import spread
from pimforge.hw.core.activity import mem_action
from pimforge.hw.pam.config import PamDeviceConfig
from pimforge.hw.pam.pu_timing import pu_activity, pu_schedule
from pimforge.hw.pam.ru_timing import ru_activity, ru_timing

__all__ = ["MASK_FIFO_DEPTH", "ru_go", "DeviceModel", "device_schedule", "device_cycles",
           "device_latency", "device_cycle_model", "device_activity", "device_activity_model"]


MASK_FIFO_DEPTH = 4     # requests whose Q is in while their partials are not yet collected


def ru_go(ru_cfg, beats: list) -> int:
    """Cycle the RU reader starts, given the cycles of a request's input beats."""
    written, stats = ru_timing(ru_cfg)
    return max(beats[-1] + written, beats[-ru_cfg.beats] + stats)


@lru_cache(maxsize=None)
def _pu_tail(pu_cfg, n: int) -> int:
    """Cycles from a PU's first K beat of an n-token set to its first output beat."""
    return pu_schedule(pu_cfg, [n])[0][0] - pu_cfg.beats      # that set's K starts after Q


class DeviceModel:
    """State of one device between requests (all cycles are the first free cycle)."""

    def __init__(self, cfg: PamDeviceConfig):
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
        return ru_go(self.ru_cfg, ru_beats)

    def finish(self, outs: list):
        """The merged partial left at cycles ``outs``; the reader frees the RU input one cycle
        after it has read the last entry (at the second-to-last output transfer)."""
        self.ru_free = outs[-2] + 1


def _tokens(cfg, spec) -> list:
    """Per-PU counts of a request: an int is spread evenly over the PUs (PUs 0.. get the
    extra tokens), a sequence is taken as given."""
    if isinstance(spec, int):
        return spread(spec, [1] * cfg.pus)
    if len(spec) != cfg.pus:
        raise ValueError(f"{len(spec)} per-PU counts for {cfg.pus} PUs")
    return list(spec)


def device_schedule(cfg: PamDeviceConfig, requests) -> list:
    """No-stall schedule of ``pam_device``: for each request (token count, or per-PU counts),
    ``(last_kv, first_out, last_out)`` cycles, or None for a request without tokens."""
    dev, out = DeviceModel(cfg), []
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


def device_cycle_model(cfg, n: int) -> int:
    """Registry cycle model: one request of ``n`` tokens (:func:`device_cycles`)."""
    return device_cycles(cfg, [n])


def device_activity(cfg: PamDeviceConfig, requests) -> dict:
    """The actions of :func:`device_schedule`'s requests, with or without stalls: the sum of
    its parts'.  Each PU with tokens in a request takes one Q load and one token set
    (:func:`~pimforge.hw.pam.pu_timing.pu_activity`); the RU merges one partial per such PU
    (:func:`~pimforge.hw.pam.ru_timing.ru_activity`, one request; none without tokens), and
    its PU mask is pushed into and popped from the mask FIFO once.  The Q fork and the
    collector hold no float operator or memory."""
    pu_cfg, ru_cfg = cfg.pu_config(), cfg.ru_config(False)
    sets, partials = [], []
    for spec in requests:
        active = [c for c in _tokens(cfg, spec) if c]
        sets += active
        if active:
            partials.append(len(active))
    total = Counter(pu_activity(pu_cfg, sets)) if sets else Counter()
    if partials:
        total.update(ru_activity(ru_cfg, partials))
        for access in ("write", "read"):
            total[mem_action(access, MASK_FIFO_DEPTH, cfg.pus, cls="fifo")] += len(partials)
    return dict(total)


def device_activity_model(cfg, n: int) -> dict:
    """Registry activity model: the job of :func:`device_cycle_model`, one request of ``n``
    tokens."""
    return device_activity(cfg, [n])
