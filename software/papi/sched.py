"""The one coupling of the PAPI system model to the scheduler's golden model (§5.2): where FC
runs in every decoding iteration of a static batch, from the batch size, TLP, alpha and the
per-iteration <eos> counts.

TEMPORARY: until ``pimforge.sim.golden.papi.scheduler`` lands (branch ``papi-sched``) the
decisions come from a local stand-in of §5.2: RLP starts at the batch size, falls by each
iteration's <eos> count, and FC goes to the GPUs when RLP x TLP > alpha, else to FC-PIM.
"""
from __future__ import annotations

__all__ = ["placements"]


def _dynamic(batch: int, tlp: int, alpha: float, eos) -> list:
    out, rlp = [], batch
    for k in range(len(eos)):
        out.append("gpu" if rlp * tlp > alpha else "pim")
        rlp -= int(eos[k])
    return out


def placements(batch: int, tlp: int, alpha: float, eos, mode: str) -> list:
    """'gpu' or 'pim' per iteration: ``mode`` gpu / pim (static systems) or dynamic (§5)."""
    if mode in ("gpu", "pim"):
        return [mode] * len(eos)
    return _dynamic(batch, tlp, alpha, eos)
