"""Bench of ``papi_scheduler``: sessions of host writes (``i_host``) and decoding iterations'
output tokens (``i``); expected: the golden model's decisions on ``o``
(:mod:`pimforge.sim.golden.papi.scheduler`).

A session is one ordered list of events (host writes and token beats).  The two input streams
keep that order (:class:`Order`: each beat is offered only after the event before it has
transferred), so a TLP, alpha or <eos> id write lands between the same beats as in the golden
replay, stalls or not.

Token streams come from requests with random output lengths (static batching, PAPI §3.2): in
each iteration every running request sends its TLP tokens, a request that finishes sends its
tokens up to and including its one <eos> (§5.2.2), finished requests send nothing.  Tokens are
packed ``tokens_per_beat`` a beat; some lanes are masked off by ``keep`` and carry the <eos> id
(they must not count).

Phases: a Fig. 5d-like hand example, random batches without stalls, random batches with random
stalls on all three streams, and the edge cases (every request finishing at once, more <eos>
than requests, a batch of 0, the widest values, the iteration counter wrapping).
"""
from __future__ import annotations

import numpy as np

from pimforge.hw.papi.config import HOST_KINDS
from pimforge.sim.golden.papi.scheduler import SchedulerModel
from pimforge.sim.harness.job import Job, Phase
from pimforge.sim.harness.stall import StallPattern

__all__ = ["scheduler_job", "Order", "session_phase", "batch_events", "random_session",
           "fig5d_events", "edge_events", "host", "beats_of"]


def host(kind: str, value: int) -> tuple:
    return ("host", HOST_KINDS[kind], int(value))


def beats_of(cfg, tokens: list, rng=None, hole_p: float = 0.0, eos: int = 0) -> list:
    """One iteration's token ids as beats: ``(tokens, keep, last)``, the last beat padded.
    With ``rng`` and ``hole_p``, masked-off lanes holding the <eos> id are slipped in."""
    n = cfg.tokens_per_beat
    lanes = []                                  # (id, kept)
    for t in tokens:
        while rng is not None and rng.random() < hole_p:
            lanes.append((eos, False))
        lanes.append((t, True))
    while not lanes or len(lanes) % n:
        lanes.append((eos, False))
    out = []
    for b in range(0, len(lanes), n):
        chunk = lanes[b:b + n]
        keep = sum(1 << j for j, (_, k) in enumerate(chunk) if k)
        out.append(("beat", [t for t, _ in chunk], keep, b + n == len(lanes)))
    return out


def _other(cfg, rng, eos: int) -> int:
    """A random token id that is not the <eos> id."""
    t = int(rng.integers(1 << cfg.token_bits))
    return t if t != eos else (t + 1) % (1 << cfg.token_bits)


def batch_events(cfg, rng, lengths, tlps, alpha: int, eos: int, alphas=None,
                 hole_p: float = 0.1) -> list:
    """One batch: the register writes, the start, then each iteration's beats.  Iteration k
    (from 1) decodes ``tlps[k - 1]`` tokens per running request; the write of the next TLP
    (and alpha from ``alphas``) goes before its last beat, so decision k uses it (§5.2.2: the
    TLP of the next decoding)."""
    ev = [host("eos", eos), host("tlp", tlps[0]), host("alpha", alpha), host("start", len(lengths))]
    done = [0] * len(lengths)
    k = 0
    while any(done[r] < lengths[r] for r in range(len(lengths))):
        tlp = tlps[min(k, len(tlps) - 1)]
        toks = []
        for r, length in enumerate(lengths):
            if done[r] >= length:
                continue                        # finished: no tokens (§5.2.2 convention)
            take = min(tlp, length - done[r])
            toks += [_other(cfg, rng, eos) for _ in range(take - 1)]
            toks.append(eos if done[r] + take == length else _other(cfg, rng, eos))
            done[r] += take
        beats = beats_of(cfg, toks, rng, hole_p, eos)
        k += 1
        writes = []
        if k < len(tlps) and tlps[k] != tlp:
            writes.append(host("tlp", tlps[k]))
        if alphas is not None and k < len(alphas):
            writes.append(host("alpha", alphas[k]))
        ev += beats[:-1] + writes + beats[-1:]
    return ev


def random_session(cfg, rng, batches: int = 3, tlp_change_p: float = 0.2) -> list:
    """``batches`` batches of random size (1 .. max_batch), output lengths (1 .. 24 tokens),
    alpha around the middle of RLP x TLP, a TLP that changes mid-run, a new <eos> id each."""
    ev = []
    for _ in range(batches):
        b = int(rng.integers(1, cfg.max_batch + 1))
        lengths = [int(x) for x in rng.integers(1, 25, size=b)]
        tlps = [int(rng.integers(1, cfg.max_tlp + 1))]
        for _ in range(24):
            tlps.append(int(rng.integers(1, cfg.max_tlp + 1)) if rng.random() < tlp_change_p
                        else tlps[-1])
        alpha = int(rng.integers(0, b * cfg.max_tlp + 1))
        ev += batch_events(cfg, rng, lengths, tlps, alpha, int(rng.integers(1 << cfg.token_bits)))
    return ev


def fig5d_events(cfg) -> list:
    """A Fig. 5d-like run: batch 4, TLP 4, alpha 8; output lengths 4, 6, 8, 14 tokens; the host
    lowers TLP to 2 before the third decision (the test works the decisions out by hand)."""
    return batch_events(cfg, np.random.default_rng(5), [4, 6, 8, 14], [4, 4, 2], 8, 2,
                        hole_p=0.0)


def edge_events(cfg) -> list:
    """Every request finishing at once; more <eos> than requests (also more than the
    saturating count holds); a batch of 0; the widest
    batch, TLP and alpha; a one-request batch of 260 iterations (the iteration counter of 8
    bits wraps); masked lanes with the <eos> id."""
    n = cfg.tokens_per_beat
    top_b, top_t = (1 << cfg.rlp_bits) - 1, (1 << cfg.tlp_bits) - 1
    ev = [host("eos", 7), host("tlp", 2), host("alpha", 5), host("start", 6)]
    ev += beats_of(cfg, [7] * 6)                                  # all six finish at once
    ev += [host("start", 2)] + beats_of(cfg, [7, 7, 7])            # 3 <eos> for RLP 2
    ev += [host("start", 3)] + beats_of(cfg, [7] * 20)             # 20 (the count saturates)
    ev += [host("start", 0)]                                       # a batch of 0
    ev += [host("tlp", top_t), host("alpha", (1 << cfg.ai_bits) - 1), host("start", top_b)]
    ev += [host("alpha", top_b * top_t - 1)] + beats_of(cfg, [1] * 4)   # flips to gpu
    ev += beats_of(cfg, [7] * (top_b - 2)) + beats_of(cfg, [7, 7])  # back to pim, then done
    ev += [host("tlp", 1), host("alpha", 0), host("start", 1)]
    ev += [("beat", [7] * n, 0, True)] * 259 + beats_of(cfg, [7])  # keep 0: nothing counts
    return ev


class Order:
    """``Phase.offer_at`` of one input stream: beat k is offered only after the event just
    before it in the session, on the other stream, has transferred (picklable)."""

    def __init__(self, other: str, before: list):
        self.other, self.before = other, before

    def __call__(self, k: int, stamps: dict):
        h = self.before[k]
        if h < 0:
            return 0
        done = stamps[self.other]
        return done[h] + 1 if len(done) > h else None


def _orders(events) -> dict:
    before = {"host": [], "beat": []}
    last = {"host": -1, "beat": -1}
    for ev in events:
        kind = ev[0]
        before[kind].append(last["beat" if kind == "host" else "host"])
        last[kind] += 1
    return {"i_host": Order("i", before["host"]), "i": Order("i_host", before["beat"])}


def session_phase(cfg, name: str, events, stall_p: float = 0.0, seed: int = 0) -> Phase:
    """One phase: the session's beats on ``i_host`` and ``i``, the golden decisions on ``o``."""
    hosts = [e for e in events if e[0] == "host"]
    beats = [e for e in events if e[0] == "beat"]
    w = cfg.token_bits
    inputs = {"i_host": {"kind": [e[1] for e in hosts], "value": [e[2] for e in hosts]},
              "i": {"tokens": [sum(t << (j * w) for j, t in enumerate(e[1])) for e in beats],
                    "keep": [e[2] for e in beats], "last": [int(e[3]) for e in beats]}}
    expected = {"o": SchedulerModel(cfg).replay(events).expected()}
    kw = {}
    if stall_p:
        kw = {"valid_stall": {"i_host": StallPattern.random(stall_p, seed),
                              "i": StallPattern.random(stall_p, seed + 1)},
              "ready_stall": {"o": StallPattern.random(stall_p, seed + 2)}}
    return Phase(name, inputs, expected, offer_at=_orders(events), **kw)


def scheduler_job(cfg, rng, seed: int = 1, stall_p: float = 0.4, stalls: bool = True,
                  batches: int = 8) -> Job:
    phases = [session_phase(cfg, "fig 5d", fig5d_events(cfg)),
              session_phase(cfg, "random batches", random_session(cfg, rng, batches))]
    if stalls:
        phases.append(session_phase(cfg, f"random stalls p={stall_p}",
                                    random_session(cfg, rng, batches), stall_p, seed))
    phases.append(session_phase(cfg, "edge cases", edge_events(cfg), stall_p if stalls else 0.0,
                                seed + 10))
    return Job(phases)


BENCHES = {"papi_scheduler": scheduler_job}
