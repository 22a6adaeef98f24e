"""Stall patterns for stream drivers (valid side) and monitors (ready side).

A pattern is a finite list of booleans, cycled: ``True`` means "may transfer this cycle" (raise
``valid`` / raise ``ready``).  Random patterns are drawn once, from a seed, so a run is repeatable.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["StallPattern", "NO_STALL"]

_RANDOM_PERIOD = 4099  # prime, so it never locks to a unit's pipeline depth


@dataclass(frozen=True)
class StallPattern:
    """``kind`` is ``none``, ``random`` (each cycle stalls with probability ``p``) or ``cycle``
    (the fixed ``pattern``, like cocotbext-axi's ``itertools.cycle([1, 1, 1, 0])``)."""

    kind: str = "none"
    p: float = 0.0
    seed: int = 0
    pattern: tuple = ()

    @classmethod
    def random(cls, p: float, seed: int) -> "StallPattern":
        if not 0.0 <= p < 1.0:
            raise ValueError(f"stall probability must be in [0, 1), not {p!r}")
        return cls("random", p=p, seed=seed)

    @classmethod
    def cycle(cls, pattern) -> "StallPattern":
        pattern = tuple(bool(x) for x in pattern)
        if not pattern or not any(pattern):
            raise ValueError("a cycle pattern needs at least one active cycle")
        return cls("cycle", pattern=pattern)

    def as_list(self) -> list:
        if self.kind == "none":
            return [True]
        if self.kind == "cycle":
            return list(self.pattern)
        rng = np.random.default_rng(self.seed)
        return (rng.random(_RANDOM_PERIOD) >= self.p).tolist()

    def describe(self) -> str:
        if self.kind == "none":
            return "no stalls"
        if self.kind == "cycle":
            return "cycle " + "".join("1" if x else "0" for x in self.pattern)
        return f"random p={self.p:g} seed={self.seed}"


NO_STALL = StallPattern()
