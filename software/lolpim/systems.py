"""Every system of §8 through one call: the GPU baselines, the AiMX PIM baseline and LoL-PIM's
steps (1) ITPP, (12) + DPA / lazy allocation, (123) + I/O-aware buffering."""
from __future__ import annotations

from dataclasses import dataclass

from pimforge.software.lolpim.config import (
    CHUNK_TOKENS, GPU_GDDR, GPU_HBM, MAX_CONTEXT, system_setup
)
from pimforge.software.lolpim.gpu import gpu_point
from pimforge.software.lolpim.pim import pim_point

__all__ = ["Knobs", "run_system"]


@dataclass(frozen=True)
class Knobs:
    """Settings shared by every system of a run."""

    max_context: int = MAX_CONTEXT
    chunk: int = CHUNK_TOKENS
    batches: int = 3
    seed: int = 0


def run_system(system: str, m, task: str, nodes: int, kn: Knobs = Knobs(), *, tp: int = 0,
               micro: int = 0, setup: dict | None = None):
    """One system's :class:`~pimforge.software.lolpim.pipeline.StepResult` on ``task`` with
    ``nodes`` nodes (GPUs: one per node).  ``setup`` overrides a PIM system's partition / alloc
    / pingpong."""
    if system in ("GPU-HBM", "GPU-GDDR"):
        gpu = GPU_HBM if system == "GPU-HBM" else GPU_GDDR
        return gpu_point(gpu, m, task, nodes, max_context=kn.max_context, batches=kn.batches,
                         seed=kn.seed, name=system)
    s = dict(system_setup(system)) if setup is None else dict(setup)
    return pim_point(m, task, nodes, tp=tp, micro=micro, max_context=kn.max_context,
                     chunk=kn.chunk, batches=kn.batches, seed=kn.seed, name=system, **s)
