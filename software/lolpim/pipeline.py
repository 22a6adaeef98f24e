"""Pipeline-parallel decoding (§4.2, Fig. 2b): micro-batches cycling through PP stages, the
steady-state cycle bound by the busiest stage or by one micro-batch's round trip (bubbles), and
the communication over the HUB and the 10 GB/s node links (§8.1)."""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from pimforge.software.lolpim.config import HOST_SYNC_S, LINK_LATENCY_S, NODE_LINK

__all__ = ["StepResult", "Stages", "allreduce_s", "transfer_s", "cycle", "split",
           "micro_batch_choices", "OOM"]


@dataclass
class StepResult:
    """One system at one batch: ``cycle_s`` seconds for every request of the batch to make one
    token (the pipeline's steady-state cycle); ``parts`` the busiest stage's time by kind."""

    system: str
    batch: int
    tp: int
    pp: int
    micro_batches: int
    cycle_s: float
    flops_per_token: float
    peak_flops: float
    parts: dict = field(default_factory=dict)
    context: float = 0.0        # mean context of the batch's requests (tokens)

    @property
    def tokens_per_s(self) -> float:
        return self.batch / self.cycle_s if self.batch and self.cycle_s > 0 else math.nan

    @property
    def utilization(self) -> float:
        """Useful FLOP/s over the system's peak (Table 8's 'Util.')."""
        return self.tokens_per_s * self.flops_per_token / self.peak_flops


def OOM(system: str, tp: int = 0, pp: int = 0) -> StepResult:
    return StepResult(system, 0, tp, pp, 0, math.nan, 0.0, 1.0)


@dataclass(frozen=True)
class Stages:
    """``pp`` stages of ``tp`` devices over ``layers`` layers (the first ``layers % pp``
    stages one layer more); the last stage also runs the LM head."""

    layers: int
    tp: int
    pp: int

    @property
    def most(self) -> int:
        return -(-self.layers // self.pp)

    @property
    def least(self) -> int:
        return self.layers // self.pp

    def layer_counts(self) -> list:
        extra = self.layers % self.pp
        return [self.least + (1 if s < extra else 0) for s in range(self.pp)]


def transfer_s(nbytes: float, bw: float) -> float:
    return nbytes / bw + LINK_LATENCY_S


def allreduce_s(nbytes: float, tp: int, bw: float) -> float:
    """A ring all-reduce of ``nbytes`` over ``tp`` devices on links of ``bw`` bytes/s."""
    if tp <= 1:
        return 0.0
    return 2 * (tp - 1) / tp * nbytes / bw + 2 * (tp - 1) * LINK_LATENCY_S


def split(ctx: np.ndarray, m: int) -> list:
    """The batch cut into ``m`` micro-batches (consecutive requests)."""
    return [c for c in np.array_split(ctx, m) if len(c)]


def micro_batch_choices(batch: int, pp: int, fixed: int = 0) -> list:
    """Micro-batch counts worth trying: powers of two and multiples of PP, at most the batch."""
    if fixed:
        return [min(fixed, batch)]
    c = {1, pp, 2 * pp} | {2 ** k for k in range(12) if 2 ** k < pp}
    return sorted(x for x in c if x <= batch) or [1]


def cycle(st: Stages, layer_s: np.ndarray, lm_s: np.ndarray, hub_s: np.ndarray,
          node_s: np.ndarray, node_boundaries: int) -> tuple:
    """Steady-state cycle of the pipeline (seconds for every micro-batch to make one token) and
    the busiest stage's busy time in it; the difference is that stage's bubble.

    Parameters
    ----------
    layer_s : seconds of one layer for each micro-batch (compute + TP all-reduces).
    lm_s : seconds of the LM head for each micro-batch (last stage).
    hub_s, node_s : seconds of one stage-to-stage hand-off for each micro-batch over the HUB
        and over a node link; ``node_boundaries`` of the PP - 1 boundaries cross nodes.
    """
    counts = st.layer_counts()
    busy = max(counts[0] * layer_s.sum(), counts[-1] * layer_s.sum() + lm_s.sum())
    hops = (st.pp - 1 - node_boundaries) * hub_s + node_boundaries * node_s
    trip = st.layers * layer_s + lm_s + hops + HOST_SYNC_S
    return max(busy, float(trip.max())), busy
