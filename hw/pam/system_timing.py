"""The no-stall schedule and the actions of :mod:`pimforge.hw.pam.system`: the device model of
each tier (:class:`~pimforge.hw.pam.device_timing.DeviceModel`) and the final RU's timing; the
unit's cycle model is :func:`system_cycle_model`, its activity model
:func:`system_activity_model` (the sum of its devices' and its final RU's)."""
from __future__ import annotations

from collections import Counter

from pimforge.base.numerics import spread
from pimforge.hw.core.activity import mem_action
from pimforge.hw.pam.config import TIERS, PamSystemConfig
from pimforge.hw.pam.device_timing import DeviceModel, device_activity, ru_go
from pimforge.hw.pam.ru_timing import ru_activity, ru_drain_depth

__all__ = ["TIER_FIFO_DEPTH", "system_schedule", "system_cycles", "system_latency",
           "system_cycle_model", "system_activity", "system_activity_model"]


TIER_FIFO_DEPTH = 8     # requests whose Q is in per tier (inactive tiers run ahead)


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


def system_cycle_model(cfg, n: int) -> int:
    """Registry cycle model: one request of ``n`` tokens (:func:`system_cycles`)."""
    return system_cycles(cfg, [n])


def system_activity(cfg: PamSystemConfig, requests) -> dict:
    """The actions of :func:`system_schedule`'s requests, with or without stalls: the sum of
    its parts'.  Each tier's device runs its share of every request, spread evenly over its
    PUs (:func:`~pimforge.hw.pam.device_timing.device_activity`); the final RU merges one
    device partial per tier with tokens (in final mode, one request each).  Every tier gets
    every request's Q load, so each request pushes one activity flag into each tier's FIFO,
    and the collector pops the three together (also for a request without tokens)."""
    tiers = [_tier_tokens(cfg, spec) for spec in requests]
    total = Counter()
    for k, t in enumerate(TIERS):
        dc = cfg.device_config(t)
        total.update(device_activity(dc, [spread(n[k], [1] * dc.pus) for n in tiers]))
    partials = [sum(1 for x in n if x) for n in tiers]
    partials = [p for p in partials if p]
    if partials:
        total.update(ru_activity(cfg.device_config("hbm").ru_config(final=True), partials))
    for access in ("write", "read"):
        total[mem_action(access, TIER_FIFO_DEPTH, 1, cls="fifo")] += len(TIERS) * len(requests)
    return dict(total)


def system_activity_model(cfg, n: int) -> dict:
    """Registry activity model: the job of :func:`system_cycle_model`, one request of ``n``
    tokens."""
    return system_activity(cfg, [n])
