"""Golden model of ``papi_scheduler``: PAPI's runtime FC scheduling decisions (§5.2, Fig. 5d).

Two levels, one set of rules:

* :func:`schedule` is the system-level function (the PAPI system model calls it): a batch, the
  TLP of every decision, alpha and the count of <eos> tokens of every decoding iteration give
  the list of :class:`Decision`.  No widths: Python integers.
* :class:`SchedulerModel` replays the unit's two input streams in the order they are accepted
  (host writes on ``i_host``, token beats on ``i``) and gives the exact ``o`` beats at the
  config's field widths; the bench builds its expectations with it.

The rules (§5.2.1 initial scheduling, §5.2.2 runtime scheduling; eq. 2: AI ~ RLP x TLP):

* A batch starts with RLP = batch size and one *initial* decision (iteration 0, freed 0).
* After decoding iteration k (k = 1, 2, ...) the <eos> tokens of its outputs are counted; each
  counts one finished request (the token stream carries one <eos> per request that finishes in
  the iteration, and no tokens of requests that finished before), so
  ``freed = min(count, RLP)`` (the Attn-PIM resources released, §5.2.2) and ``RLP -= freed``.
* ``intensity = RLP x TLP`` with the TLP register's value at that moment (the TLP of the next
  decoding); the FC kernel goes to the GPU (the PUs) when ``intensity > alpha``, else to
  FC-PIM (§5.2.1: "if the estimated value is larger than alpha ... offloaded to PUs").
* ``migrate`` is set only when that placement differs from the placement in force (after
  reset: ``pim``); the placement in force then changes.
* When RLP reaches 0 the decision is the batch's last: ``done``, intensity 0, the placement in
  force kept and no migration (no FC kernel is left to run; the next batch's initial decision
  compares with it).  The unit then accepts no tokens until the next batch starts.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

from pimforge.hw.papi.config import HOST_KINDS, PLACEMENTS, SchedulerConfig

__all__ = ["Decision", "schedule", "finish_iterations", "eos_per_iteration", "SchedulerModel",
           "DECISION_FIELDS"]

DECISION_FIELDS = ("iteration", "rlp", "intensity", "placement", "migrate", "freed", "done")


@dataclass(frozen=True)
class Decision:
    """One scheduling decision.

    Members
    -------
    iteration : 0 for a batch's initial decision, k after decoding iteration k.
    rlp : requests still running (for the next decoding).
    intensity : RLP x TLP, the arithmetic-intensity estimate (eq. 2).
    placement : ``"pim"`` (FC-PIM) or ``"gpu"`` (the PUs of the high-performance processor).
    migrate : the FC kernel moves to ``placement`` (it differs from the one before).
    freed : requests that finished in this iteration (their Attn-PIM resources are free).
    done : RLP is 0: the batch is over.
    """

    iteration: int
    rlp: int
    intensity: int
    placement: str
    migrate: bool
    freed: int
    done: bool

    def fields(self) -> dict:
        """The ``o`` payload fields as integers (placement: :data:`~pimforge.hw.papi.config.PLACEMENTS`)."""
        d = asdict(self)
        d["placement"] = PLACEMENTS[self.placement]
        d["migrate"], d["done"] = int(self.migrate), int(self.done)
        return d


def _decide(iteration, rlp, tlp, alpha, freed, current) -> Decision:
    """§5.2.1 / §5.2.2 steps 3-4: RLP x TLP against alpha; migrate only on a flip."""
    if rlp == 0:
        return Decision(iteration, 0, 0, current, False, freed, True)
    intensity = rlp * tlp
    placement = "gpu" if intensity > alpha else "pim"
    return Decision(iteration, rlp, intensity, placement, placement != current, freed, False)


def schedule(batch: int, tlp, alpha: int, eos_per_iteration, placement: str = "pim") -> list:
    """The decisions of one batch (static batching, §3.2).

    Parameters
    ----------
    batch : the batch size, the initial RLP (§5.2.1).
    tlp : the speculation length: an int for the whole batch, or a sequence with one TLP per
        decision, ``len(eos_per_iteration) + 1`` long (``tlp[0]`` for the initial decision,
        ``tlp[k]`` for the decision after iteration k: the TLP of the next decoding).
    alpha : the memory-boundedness threshold; FC goes to the GPU when RLP x TLP > alpha.
    eos_per_iteration : the <eos> count of each decoding iteration's outputs (one per request
        that finished in it).  Every entry after the one that brings RLP to 0 must be absent.
    placement : the placement in force before the batch (``"pim"`` after reset).

    Returns
    -------
    list of Decision
        ``1 + len(eos_per_iteration)`` decisions: the initial one, then one per iteration; the
        last has ``done`` set if RLP reached 0.
    """
    eos = [int(e) for e in eos_per_iteration]
    if isinstance(tlp, int):
        tlps = [tlp] * (len(eos) + 1)
    else:
        tlps = [int(t) for t in tlp]
        if len(tlps) != len(eos) + 1:
            raise ValueError(f"tlp: one value per decision, {len(eos) + 1} (initial + one per "
                             f"iteration), not {len(tlps)}")
    if batch < 0 or alpha < 0 or min(tlps) < 0 or (eos and min(eos) < 0):
        raise ValueError("batch, tlp, alpha and eos counts must be non-negative")
    if placement not in PLACEMENTS:
        raise ValueError(f"placement: 'pim' or 'gpu', not {placement!r}")
    out = [_decide(0, batch, tlps[0], alpha, 0, placement)]
    rlp, current = batch, out[0].placement
    for k, count in enumerate(eos, start=1):
        if rlp == 0:
            raise ValueError(f"eos_per_iteration: iteration {k} comes after RLP reached 0")
        freed = min(count, rlp)
        rlp -= freed
        out.append(_decide(k, rlp, tlps[k], alpha, freed, current))
        current = out[-1].placement
    return out


def finish_iterations(output_lengths, tlp) -> list:
    """The decoding iteration (1, 2, ...) in which each request emits its <eos>: the first
    whose cumulative tokens reach its output length; ``tlp`` tokens per iteration (an int, or
    one per iteration, the last repeated)."""
    out = []
    for length in output_lengths:
        if length < 1:
            raise ValueError(f"output length must be at least 1 (the <eos> itself), not {length}")
        k, done = 0, 0
        while done < length:
            t = tlp if isinstance(tlp, int) else tlp[min(k, len(tlp) - 1)]
            if t < 1:
                raise ValueError("tlp must be at least 1 while requests run")
            done += t
            k += 1
        out.append(k)
    return out


def eos_per_iteration(output_lengths, tlp) -> list:
    """<eos> count of every iteration up to the last request's (:func:`finish_iterations`)."""
    fin = finish_iterations(output_lengths, tlp)
    counts = [0] * (max(fin) if fin else 0)
    for k in fin:
        counts[k - 1] += 1
    return counts


class SchedulerModel:
    """The unit's registers, replayed beat by beat in acceptance order, at the config's widths.

    Reset values: TLP 1, alpha 0, <eos> id 0, placement ``pim``, no batch.  A register write
    applies to every beat accepted after it: the <eos> id to the beats compared, TLP and alpha
    to the decision of an iteration whose ``last`` beat comes after the write.
    """

    def __init__(self, cfg: SchedulerConfig):
        self.cfg = cfg
        self.tlp, self.alpha, self.eos = 1, 0, 0
        self.current, self.active, self.rlp, self.iteration, self.count = "pim", False, 0, 0, 0
        self.decisions = []

    def host(self, kind: int, value: int):
        """A host write (:data:`~pimforge.hw.papi.config.HOST_KINDS`)."""
        cfg = self.cfg
        if kind == HOST_KINDS["start"]:
            if self.active:
                raise ValueError("a batch starts only after the last one is done")
            self.rlp = value & ((1 << cfg.rlp_bits) - 1)
            self.iteration, self.count = 0, 0
            self._emit(0)
        elif kind == HOST_KINDS["tlp"]:
            self.tlp = value & ((1 << cfg.tlp_bits) - 1)
        elif kind == HOST_KINDS["alpha"]:
            self.alpha = value & ((1 << cfg.ai_bits) - 1)
        elif kind == HOST_KINDS["eos"]:
            self.eos = value & ((1 << cfg.token_bits) - 1)

    def beat(self, tokens, keep: int, last: bool):
        """A beat of ``tokens_per_beat`` token ids; lane j counts only when bit j of ``keep``."""
        if not self.active:
            raise ValueError("token beats come only while a batch runs")
        mask = (1 << self.cfg.token_bits) - 1
        self.count += sum(1 for j, t in enumerate(tokens) if keep >> j & 1 and t & mask == self.eos)
        if last:
            freed = min(self.count, self.rlp)
            self.rlp -= freed
            self.iteration = (self.iteration + 1) % (1 << self.cfg.iter_bits)
            self.count = 0
            self._emit(freed)

    def _emit(self, freed: int):
        d = _decide(self.iteration, self.rlp, self.tlp, self.alpha, freed, self.current)
        self.current, self.active = d.placement, not d.done
        self.decisions.append(d)

    def replay(self, events) -> "SchedulerModel":
        """``events``: ``("host", kind, value)`` and ``("beat", tokens, keep, last)`` in order."""
        for ev in events:
            if ev[0] == "host":
                self.host(ev[1], ev[2])
            else:
                self.beat(ev[1], ev[2], ev[3])
        return self

    def expected(self) -> dict:
        """The ``o`` field lists of every decision so far."""
        rows = [d.fields() for d in self.decisions]
        return {k: [r[k] for r in rows] for k in DECISION_FIELDS}
