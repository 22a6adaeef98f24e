"""The operations a decoding step hands to a system, and the host reference that computes them.

One decoder layer of the llama architecture, as :mod:`~pimforge.software.llm.forward` runs it::

    xn = rmsnorm(h) ;  q, k, v = linear("attn_q" | "attn_k" | "attn_v", xn) ;  rope(q, k)
    a  = attention(q, K, V)                 # K, V: the cache, this token's row last
    h  = h + linear("attn_output", a)
    xn = rmsnorm(h) ;  g, u = linear("ffn_gate" | "ffn_up", xn)
    h  = h + linear("ffn_down", swiglu(g, u))

A system overrides the calls its paper puts on its hardware (:class:`Ops` subclasses in
:mod:`pimforge.software.llm.systems`); whatever it leaves alone runs here, on the host, in
float32 with a float64 softmax.  Every array in and out is float32.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["LINEARS", "Step", "Ops", "softmax_attention", "silu"]

# the weight matrices of one layer, in the order a step uses them
LINEARS = ("attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down")


@dataclass
class Step:
    """What a system knows about the step it computes: the position of the token (0-based), the
    context length after it (``pos + 1``) and whether it is a generated token (decode) or one of
    the prompt's (prefill).  ``cycles`` collects the units' cycles of this step, per unit."""
    pos: int
    decode: bool
    cycles: dict = field(default_factory=dict)

    @property
    def context(self) -> int:
        return self.pos + 1

    def add_cycles(self, unit: str, n: int) -> None:
        self.cycles[unit] = self.cycles.get(unit, 0) + int(n)


def silu(x: np.ndarray) -> np.ndarray:
    """x * sigmoid(x) in float32."""
    x = np.asarray(x, dtype=np.float32)
    return (x / (np.float32(1) + np.exp(-x))).astype(np.float32)


def softmax_attention(q, k, v, scale: float) -> np.ndarray:
    """Grouped-query attention of one token: ``q`` (Hq, hd), ``k`` and ``v`` (Hkv, N, hd); query
    head h reads KV head ``h // (Hq // Hkv)``.  Scores in float32, the softmax in float64 (the
    reference's yardstick), the weighted sum in float32."""
    hq, hkv = q.shape[0], k.shape[0]
    grp = hq // hkv
    qg = q.reshape(hkv, grp, -1)
    s = np.einsum("gqd,gnd->gqn", qg, k).astype(np.float64) * scale
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    p /= p.sum(axis=-1, keepdims=True)
    o = np.einsum("gqn,gnd->gqd", p.astype(np.float32), v)
    return o.reshape(hq, -1).astype(np.float32)


class Ops:
    """The host reference.  A system subclasses this and overrides what its hardware computes.

    ``name`` names the system in reports; ``prepare`` sees the model once before the run;
    ``describe`` returns the report's summary of where each operation ran.
    """
    name = "reference"

    def prepare(self, model) -> None:
        self.model = model

    def linear(self, step: Step, layer: int, name: str, w: np.ndarray, x: np.ndarray) -> np.ndarray:
        """``w @ x``: ``w`` (out, in) float32, ``x`` (in,)."""
        return (w @ x).astype(np.float32)

    def attention(self, step: Step, layer: int, q, k, v, scale: float) -> np.ndarray:
        return softmax_attention(q, k, v, scale)

    def swiglu(self, step: Step, layer: int, g, u) -> np.ndarray:
        return (silu(g) * np.asarray(u, dtype=np.float32)).astype(np.float32)

    def describe(self) -> dict:
        return {"host": "every operation, float32 with a float64 softmax"}

    def timing(self, steps: list) -> dict:
        """Per-token time of the decode steps on this system's hardware (the report's timing
        breakdown); the reference has none."""
        return {}
