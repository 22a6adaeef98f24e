"""LongBench request lengths (Table 2) and batches sized by the KV capacity left after the weights,
under static, DPA and lazy allocation (§5)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pimforge.software.lolpim.config import TASKS

__all__ = ["sample_inputs", "Batch", "form_batches", "footprint"]

STREAM = 4096        # requests drawn per seed; batches are cut from the front of this stream


def sample_inputs(task: str, n: int, seed: int = 0) -> np.ndarray:
    """``n`` input context lengths of ``task``: a normal with Table 2's mean and std, clipped to
    its min and max, deterministic for a seed."""
    t = TASKS[task]
    rng = np.random.default_rng([seed, sum(map(ord, task))])
    return np.rint(rng.normal(t.mean, t.std, n).clip(t.min, t.max)).astype(np.int64)


def _progress(task: str, n: int, seed: int) -> np.ndarray:
    """Tokens generated so far by each request of a running batch: uniform over its output
    length (continuous batching: requests are at every stage of their decode)."""
    rng = np.random.default_rng([seed, 7, sum(map(ord, task))])
    out = TASKS[task].out_len
    return np.minimum(out - 1, np.floor(rng.random(n) * out)).astype(np.int64)


def footprint(alloc: str, ctx: np.ndarray, total: np.ndarray, max_context: int,
              chunk: int) -> np.ndarray:
    """Tokens of KV space each request holds: ``static`` the maximum context (§5.1), ``dpa``
    its whole input + output rounded up to chunks, ``lazy`` only the chunks its current context
    fills (§5.4)."""
    if alloc == "static":
        return np.full(len(ctx), max_context, np.int64)
    n = total if alloc == "dpa" else ctx
    return -(-n // chunk) * chunk


@dataclass
class Batch:
    """One running batch: the current context of each request (input + generated so far) and
    the KV tokens its allocation holds for it."""

    ctx: np.ndarray
    need: np.ndarray

    @property
    def size(self) -> int:
        return int(len(self.ctx))


def form_batches(task: str, alloc: str, token_capacity: float, *, max_context: int, chunk: int,
                 count: int, seed: int = 0) -> list:
    """``count`` consecutive batches from the seeded request stream, each filled while its
    requests' KV footprint (tokens) fits ``token_capacity``.  An empty list: not even one
    request fits (OOM)."""
    inp = sample_inputs(task, STREAM, seed)
    gen = _progress(task, STREAM, seed)
    ctx = np.minimum(inp + gen, max_context)
    total = np.minimum(inp + TASKS[task].out_len, max_context)
    need = footprint(alloc, ctx, total, max_context, chunk)
    out, start = [], 0
    for _ in range(count):
        cum = np.cumsum(need[start:])
        if start and cum[-1] <= token_capacity:     # the stream's tail is short: start over
            start, cum = 0, np.cumsum(need)
        b = int(np.searchsorted(cum, token_capacity, side="right"))
        if b == 0:
            return []
        out.append(Batch(ctx[start:start + b], need[start:start + b]))
        start = start + b if start + b < STREAM else 0
    return out
